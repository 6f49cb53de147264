# shellcheck shell=bash disable=SC2034
# fidelity-lib.sh: helpers shared by scripts/mysqltest.sh, scripts/sysbench-smoke.sh and
# bench/run.sh. Source it after setting FL_NAME (the prefix of log lines); it defines functions
# and the FL_* variables below, and runs nothing.
#
#   fl_build_sluice OUT              build ./cmd/sluice into OUT (unless SLUICE_BIN is set)
#   fl_sandbox_up DIR FLAGS...       'sluice sandbox up' on free ports; log in DIR.log
#   fl_sandbox_read DIR              FL_PRIMARY, FL_REPLICAS (array), FL_RW, FL_CERT from
#                                    DIR/sandbox.json
#   fl_sluice_start CONFIG LOG       'sluice serve' in the background (FL_SLUICE_PID), wait for FL_RW;
#                                    POOL_MODE, POOL_MAX_PER_NODE set its pool (lib.sh pool_config)
#   fl_sluice_alive                  the sluice started above is still running
#   fl_sluice_panicked LOG           sluice's log shows a panic (crash or recovered)
#   fl_sluice_stop                   SIGTERM it (SIGKILL after 10 s) and reap it
#   fl_sandbox_down                  stop the sandbox fl_sandbox_up started
#   fl_local ADDR                    fail unless ADDR is 127.0.0.1:PORT or localhost:PORT
#   fl_sql ADDR SQL...               run statements with the mariadb client as app/app
#   sb ADDR ARGS...                  sysbench against ADDR (database $db, $tables x $table_size)
#   fl_sb_prepare LOG                sysbench prepare on the primary, then wait for the replicas
#
# Everything listens on and connects to 127.0.0.1 only.

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FL_NAME=${FL_NAME:-fidelity}
FL_SLUICE=
FL_SLUICE_PID=
FL_SANDBOX_DIR=
FL_PRIMARY=
FL_REPLICAS=()
FL_RW=
FL_CERT=
readonly FL_USER=app FL_PASSWORD=app

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
	PATH=$PATH:/usr/local/go/bin
fi

fl_log() { printf '%s: %s\n' "$FL_NAME" "$*" >&2; }
fl_die() {
	fl_log "FAIL: $*"
	exit 1
}

# fl_tail FILE [N]: the last N (30) lines of FILE on stderr, when it has any.
fl_tail() {
	[[ -s $1 ]] || return 0
	printf '\n----- last %d lines of %s -----\n' "${2:-30}" "$1" >&2
	tail -n "${2:-30}" "$1" >&2
}

fl_build_sluice() {
	if [[ -n ${SLUICE_BIN:-} ]]; then
		[[ -x $SLUICE_BIN ]] || fl_die "SLUICE_BIN=$SLUICE_BIN is not executable"
		FL_SLUICE=$SLUICE_BIN
		return 0
	fi
	command -v go >/dev/null 2>&1 || fl_die "go not found on PATH (nor in /usr/local/go/bin)"
	local root
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	fl_log "building sluice"
	(cd "$root" && go build -o "$1" ./cmd/sluice) || fl_die "go build ./cmd/sluice failed"
	FL_SLUICE=$1
}

fl_local() {
	case $1 in
	127.0.0.1:[0-9]* | localhost:[0-9]*) ;;
	*) fl_die "refusing a non-local address: '$1'" ;;
	esac
}

# fl_json_get FILE KEY: a top-level string or number field of a flat-enough JSON file.
fl_json_get() {
	sed 's/[][{},]/\n&\n/g' "$1" | awk -v want="$2" '
		/^[{[]$/ { depth++; next }
		/^[]}]$/ { depth--; next }
		depth == 1 && /:/ {
			i = index($0, ":")
			k = substr($0, 1, i - 1); v = substr($0, i + 1)
			gsub(/^[ \t\r]*"|"[ \t\r]*$/, "", k)
			gsub(/^[ \t\r]+|[ \t\r]+$/, "", v)
			gsub(/^"|"$/, "", v)
			if (k == want) { print v; exit }
		}'
}

# fl_json_node_field FILE FIELD KEY VALUE: field FIELD of every node (an object of the "nodes"
# array) whose KEY is VALUE, one a line: fl_json_node_field F address role replica.
fl_json_node_field() {
	sed 's/[][{},]/\n&\n/g' "$1" | awk -v field="$2" -v key="$3" -v want="$4" '
		/^[{[]$/ { depth++; if (depth == 3) { delete f } next }
		/^[]}]$/ { if (depth == 3 && f[key] == want) print f[field]; depth--; next }
		depth == 3 && /:/ {
			i = index($0, ":")
			k = substr($0, 1, i - 1); v = substr($0, i + 1)
			gsub(/^[ \t\r]*"|"[ \t\r]*$/, "", k)
			gsub(/^[ \t\r]+|[ \t\r]+$/, "", v)
			gsub(/^"|"$/, "", v)
			f[k] = v
		}'
}

# fl_json_nodes FILE ROLE: the addresses of the nodes with that role (primary, replica), one a line.
fl_json_nodes() { fl_json_node_field "$1" address role "$2"; }

fl_sandbox_up() {
	local dir=$1
	shift
	FL_SANDBOX_DIR=$dir
	fl_log "starting sandbox in $dir ($*)"
	if ! "$FL_SLUICE" sandbox up --dir "$dir" --base-port 0 --rw-port 0 --ro-port 0 --admin-port -1 "$@" >"$dir.log" 2>&1; then
		fl_tail "$dir.log"
		fl_die "sluice sandbox up failed"
	fi
}

fl_sandbox_read() {
	local json=$1/sandbox.json
	[[ -s $json ]] || fl_die "no $json"
	FL_PRIMARY=$(fl_json_nodes "$json" primary | head -n 1)
	mapfile -t FL_REPLICAS < <(fl_json_nodes "$json" replica)
	FL_RW=$(fl_json_get "$json" rw)
	FL_CERT=$(fl_json_get "$json" cert_file)
	[[ -n $FL_PRIMARY ]] || fl_die "no primary address in $json"
	[[ -n $FL_RW ]] || fl_die "no rw address in $json"
	fl_local "$FL_PRIMARY"
	fl_local "$FL_RW"
	local r
	for r in ${FL_REPLICAS[@]+"${FL_REPLICAS[@]}"}; do
		fl_local "$r"
	done
}

fl_sandbox_down() {
	[[ -n $FL_SANDBOX_DIR && -d $FL_SANDBOX_DIR ]] || return 0
	"$FL_SLUICE" sandbox down --dir "$FL_SANDBOX_DIR" >>"$FL_SANDBOX_DIR.log" 2>&1 ||
		fl_log "sandbox down failed; see $FL_SANDBOX_DIR.log"
	FL_SANDBOX_DIR=
}

# fl_wait_port HOST:PORT SECONDS: until a TCP connect succeeds (or the sluice we started died).
fl_wait_port() {
	local host=${1%:*} port=${1##*:} deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
			return 0
		fi
		if [[ -n $FL_SLUICE_PID ]] && ! kill -0 "$FL_SLUICE_PID" 2>/dev/null; then
			return 1
		fi
		sleep 0.2
	done
	return 1
}

fl_sluice_start() {
	local config=$1 log=$2
	# Endpoint rw reads from the primary unless FIDELITY_READS=replicas (the sandbox's weights:
	# reads on the replicas, at consistency session, so a client reads its own writes).
	if [[ ${FIDELITY_READS:-primary} != replicas ]]; then
		pin_reads "$config" primary || fl_die "cannot rewrite read_weights in $config"
	else
		# A replica read waits up to 2 s for the session's last commit, not the default 10 ms:
		# on a loaded test machine a 10 ms wait sometimes times out and the read goes to the
		# primary instead, and then a table-less statement's warnings (which MariaDB keeps
		# across statements that use no table) are on another node than the next one's. The
		# corpus checks results, not timing; the README lists that limit.
		sed -i 's/^    consistency: session$/    consistency: session\n    consistency_timeout: 2s/' "$config" ||
			fl_die "cannot rewrite consistency_timeout in $config"
	fi
	# The suites fail logins on purpose, far more than limits.max_auth_failures allows.
	no_auth_block "$config" || fl_die "cannot set limits.max_auth_failures in $config"
	# POOL_MODE, POOL_MAX_PER_NODE (lib.sh's pool_config): the suite through another pool mode.
	local applied
	applied=$(pool_config "$config") || fl_die "cannot set the pool in $config"
	[[ -z $applied ]] || fl_log "$applied"
	# FL_SLUICE_ARGS: more 'sluice serve' flags, e.g. (--cpuprofile FILE).
	"$FL_SLUICE" serve --config "$config" ${FL_SLUICE_ARGS[@]+"${FL_SLUICE_ARGS[@]}"} >>"$log" 2>&1 &
	FL_SLUICE_PID=$!
	if ! fl_wait_port "$FL_RW" 30; then
		fl_tail "$log"
		fl_die "sluice serve did not listen on $FL_RW"
	fi
}

# fl_sluice_panicked LOG: sluice's log shows a panic (a crash, or one recovered in a session).
fl_sluice_panicked() {
	grep -qE '^panic:|session panic' "$1" 2>/dev/null
}

fl_sluice_alive() {
	[[ -n $FL_SLUICE_PID ]] && kill -0 "$FL_SLUICE_PID" 2>/dev/null
}

# fl_stop_pid PID: SIGTERM, up to 10 s to exit, then SIGKILL; reaps it.
fl_stop_pid() {
	[[ -n $1 ]] || return 0
	if kill -0 "$1" 2>/dev/null; then
		kill -TERM "$1" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$1" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$1" 2>/dev/null || true
	fi
	wait "$1" 2>/dev/null || true
}

fl_sluice_stop() {
	fl_stop_pid "$FL_SLUICE_PID"
	FL_SLUICE_PID=
}

fl_sql() {
	local addr=$1
	shift
	fl_local "$addr"
	mariadb --no-defaults --protocol=tcp -h "${addr%:*}" -P "${addr##*:}" \
		-u"$FL_USER" -p"$FL_PASSWORD" --skip-ssl -N -B "$@"
}

# fl_begin PREFIX makes the run's work directory ($work, under $TMPDIR) and sets the traps that
# stop sluice and the sandbox and remove it on any exit (KEEP=1 keeps them). It sets start,
# work and status (the caller sets status=ok when the run passed).
fl_begin() {
	start=$SECONDS
	work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	chmod 755 "$work"
	status=failed
	trap fl_cleanup EXIT
	trap 'fl_log interrupted; exit 130' INT
	trap 'fl_log terminated; exit 143' TERM
}

fl_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	fl_sluice_stop
	if [[ $status == failed ]]; then
		fl_tail "$work/sandbox.log"
		fl_tail "$work/sluice.log"
	fi
	if [[ ${KEEP:-0} == 1 ]]; then
		fl_log "KEEP=1: work directory $work kept (logs, sluice.log)"
		if [[ -n $FL_SANDBOX_DIR ]]; then
			fl_log "KEEP=1: sandbox left running; stop it with: $FL_SLUICE sandbox down --dir $FL_SANDBOX_DIR"
		fi
	else
		fl_sandbox_down
		rm -rf "$work"
	fi
	fl_log "took $((SECONDS - start))s"
	exit "$rc"
}

# sb ADDR ARGS...: sysbench with the connection options and the table options of the caller
# ($db, $tables, $table_size). With SB_EXEC=1 (only for a call in the background: SB_EXEC=1
# sb ... &) the subshell becomes sysbench itself, so that $! is sysbench's pid and killing it
# stops the load (a plain sb in the background leaves sysbench running when its subshell is
# killed).
# shellcheck disable=SC2154 # set by the sourcing script
sb() {
	local addr=$1
	shift
	fl_local "$addr"
	local cmd=(sysbench --db-driver=mysql --mysql-host="${addr%:*}" --mysql-port="${addr##*:}"
		--mysql-user="$FL_USER" --mysql-password="$FL_PASSWORD" --mysql-db="$db"
		--tables="$tables" --table-size="$table_size" --rand-type=uniform "$@")
	if [[ ${SB_EXEC:-0} == 1 ]]; then
		exec "${cmd[@]}"
	fi
	"${cmd[@]}"
}

# fl_sb_prepare LOG: recreate database $db on the primary, let sysbench prepare its tables there
# ($tables x $table_size rows; output in LOG), and wait until every replica has applied them.
fl_sb_prepare() {
	local log=$1 t0=$SECONDS gtid r waited
	fl_sql "$FL_PRIMARY" -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
	sb "$FL_PRIMARY" oltp_read_write --threads="$tables" prepare >"$log" 2>&1 || {
		fl_tail "$log"
		fl_die "sysbench prepare failed"
	}
	gtid=$(fl_sql "$FL_PRIMARY" -e 'SELECT @@gtid_binlog_pos')
	for r in ${FL_REPLICAS[@]+"${FL_REPLICAS[@]}"}; do
		waited=$(fl_sql "$r" -e "SELECT MASTER_GTID_WAIT('$gtid', 120)")
		[[ $waited == 0 ]] || fl_die "replica $r did not reach GTID $gtid within 120 s"
	done
	fl_log "prepared $tables x $table_size rows in $((SECONDS - t0))s; replicas at $gtid"
}

# report_value LOG LABEL: the first number after "LABEL:" in a sysbench report ("" if none).
report_value() {
	sed -n "s/^[[:space:]]*$2:[[:space:]]*\([0-9][0-9.]*\).*/\1/p" "$1" | head -n 1
}

# rate LOG LABEL: the "(N per sec.)" of a sysbench report line.
rate() {
	sed -n "s/^[[:space:]]*$2:.*(\([0-9][0-9.]*\) per sec\.).*/\1/p" "$1" | head -n 1
}
