#!/usr/bin/env bash
# run.sh: the mariadb command-line client's battery (libmariadb, as Debian ships it); see
# tests/clients/README.md for the contract. Needs mariadb-client; installs nothing.
#
# The CLI is libmariadb's strictest reader of error packets (an ERR whose code is a client
# library's own is shown as "ERROR 2027 (HY000): Received malformed packet"), and what most
# operators type into first. Every statement runs with -c (hints and /*PROXY_INTERNAL*/ comments
# are sent, not stripped), --batch output, and --force so that an error is printed and the
# battery goes on.
set -euo pipefail
for v in CB_HOST CB_PORT CB_USER CB_DB CB_MODE; do
	[[ -n ${!v:-} ]] || { echo "cli battery: $v is not set" >&2; exit 2; }
done
[[ $CB_HOST == 127.0.0.1 || $CB_HOST == localhost ]] || { echo "cli battery: CB_HOST must be 127.0.0.1" >&2; exit 2; }
cli=$(command -v mariadb || command -v mysql || true)
[[ -n $cli ]] || { echo "cli battery: mariadb not found (apt-get install mariadb-client)" >&2; exit 3; }

# q [ARGS...]: the CLI on the battery's database, statements on stdin; errors in line.
q() {
	"$cli" --no-defaults --protocol=tcp -h "$CB_HOST" -P "$CB_PORT" -u "$CB_USER" --password="${CB_PASSWORD:-}" \
		--connect-timeout=10 -c --batch --force "$@" 2>&1 || true
}

case $CB_MODE in
errors)
	# An error sluice raises itself (scripts/client-batteries.sh's errors phase): one line,
	# 'mariadb: ok' or 'mariadb: error CODE STATE MESSAGE', the login's error included.
	[[ -n ${CB_SQL:-} ]] || { echo "cli battery: CB_SQL is not set" >&2; exit 2; }
	# (On an error the CLI echoes the statement between dashes first: only the ERROR line.)
	got=$(printf '%s\n' "$CB_SQL" | q "$CB_DB" | grep -m1 '^ERROR ' || true)
	if [[ $got =~ ^ERROR\ ([0-9]+)\ \(([0-9A-Z]+)\)(\ at\ line\ [0-9]+)?:\ (.*)$ ]]; then
		printf 'mariadb: error %s %s %s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[4]}"
	elif [[ -n $got ]]; then
		printf 'mariadb: error ? ? %s\n' "$got"
	else
		echo "mariadb: ok"
	fi
	exit 0
	;;
rw | ro) ;;
*) echo "cli battery: CB_MODE must be rw, ro or errors" >&2; exit 2 ;;
esac

# The first connection must work: otherwise the battery cannot run at all.
"$cli" --no-defaults --protocol=tcp -h "$CB_HOST" -P "$CB_PORT" -u "$CB_USER" --password="${CB_PASSWORD:-}" \
	--connect-timeout=10 -e 'SELECT 1' "$CB_DB" >/dev/null || { echo "cli battery: cannot connect" >&2; exit 2; }

echo "# cli battery, mode $CB_MODE"
if [[ $CB_MODE == rw ]]; then
	echo "== setup"
	q "$CB_DB" <<'SQL'
DROP TABLE IF EXISTS t_cli;
CREATE TABLE t_cli (id INT PRIMARY KEY, v VARCHAR(40), d DECIMAL(10,2), dt DATETIME(3)) DEFAULT CHARSET=utf8mb4;
INSERT INTO t_cli VALUES (1, 'one', 1.50, '2024-02-29 12:34:56.789'), (2, 'héllo ✓', NULL, NULL), (3, 'tab	and \\ backslash', -0.01, '1000-01-01 00:00:00');
SQL
	echo "== dml"
	q "$CB_DB" <<'SQL'
UPDATE t_cli SET v = CONCAT(v, '!') WHERE id = 1;
SELECT ROW_COUNT() AS updated;
INSERT INTO t_cli VALUES (1, 'dup', 0, NULL);
INSERT INTO t_cli (id, v) VALUES (4, REPEAT('x', 41));
SELECT ROW_COUNT() AS inserted, @@warning_count AS warnings;
SELECT * FROM t_cli ORDER BY id;
SQL
	echo "== transaction"
	q "$CB_DB" <<'SQL'
START TRANSACTION;
INSERT INTO t_cli (id, v) VALUES (10, 'rolled back');
SELECT COUNT(*) AS in_tx FROM t_cli;
ROLLBACK;
SELECT COUNT(*) AS after FROM t_cli;
SQL
fi
echo "== reads"
q "$CB_DB" <<'SQL'
SELECT id, v, d, dt, LENGTH(v) AS len FROM t_cli ORDER BY id;
SELECT 1 AS a, 'two' AS b, NULL AS c, 3.25 AS d; SELECT 'second' AS multi;
SELECT * FROM t_nope;
SELECT 1 +;
SELECT CAST('2024-13-01' AS DATE) AS bad_date;
SHOW WARNINGS;
SQL
echo "== end"
