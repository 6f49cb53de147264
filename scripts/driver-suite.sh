#!/usr/bin/env bash
# driver-suite.sh: protocol-fidelity gate. Runs the test suite of go-sql-driver/mysql twice
# against one sandbox (TLS and performance_schema on): first directly against the primary,
# then through `sluice serve`, and compares the top-level results.
#
# Fails when the direct run passes too few tests (the driver's tests skip silently when they
# cannot connect), or when a test that passes directly does not pass through sluice and is not
# listed in scripts/driver-suite-expected.txt.
#
# Environment:
#   SLUICE_BIN=path              use this sluice binary instead of building one
#   KEEP=1                       keep the work directory and leave the sandbox running
#   DRIVER_SUITE_CONCURRENT=0    leave out TestConcurrent (default 1: MYSQL_TEST_CONCURRENT=1)
#   DRIVER_SUITE_MIN_PASS=N      minimum number of direct passes (default 100)
#   DRIVER_SUITE_TIMEOUT=D       go test -timeout for each run (default 5m)
#   DRIVER_SUITE_EXPECTED=file   expectations file (default scripts/driver-suite-expected.txt)
#   POOL_MODE=transaction, POOL_MAX_PER_NODE=N   sluice's pool_mode and pool.max_per_node
#                                (scripts/lib.sh pool_config; default: the sandbox's)
#   DRIVER_SUITE_SAVE_DIRECT=P   keep the direct run's results as P.log and P.rc
#   DRIVER_SUITE_DIRECT=P        take the direct run's results from P.log and P.rc (an earlier
#                                run's DRIVER_SUITE_SAVE_DIRECT) instead of running it again
#   DRIVER_SUITE_READS=primary   pin endpoint rw's reads to the primary (and run sluice without
#                                its monitor); default "replicas": the sandbox's configuration,
#                                reads on the replicas at consistency global (the pool reads on
#                                one connection what another wrote)
#
# Everything talks to 127.0.0.1 only. TestConnectorReturnsTimeout dials a public address and is
# therefore always skipped.
set -euo pipefail

readonly driver_module=github.com/go-sql-driver/mysql
readonly driver_version=v1.10.1
readonly skip_tests='TestConnectorReturnsTimeout'

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
expected_file=${DRIVER_SUITE_EXPECTED:-$root/scripts/driver-suite-expected.txt}
min_pass=${DRIVER_SUITE_MIN_PASS:-100}
run_timeout=${DRIVER_SUITE_TIMEOUT:-5m}
keep=${KEEP:-0}

# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
command -v go >/dev/null 2>&1 || { echo "driver-suite: go not found on PATH" >&2; exit 1; }

log() { printf 'driver-suite: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# SLUICE_BIN made absolute, so the commands printed for KEEP=1 work from any directory.
sluice_bin=
if [[ -n ${SLUICE_BIN:-} ]]; then
	case $SLUICE_BIN in
	*/*) sluice_bin=$(cd "$(dirname "$SLUICE_BIN")" && pwd)/$(basename "$SLUICE_BIN") ;;
	*) sluice_bin=$(command -v "$SLUICE_BIN") || die "SLUICE_BIN=$SLUICE_BIN: not found" ;;
	esac
	[[ -x $sluice_bin ]] || die "SLUICE_BIN=$SLUICE_BIN: not an executable"
fi

start=$SECONDS
# The sandbox puts unix sockets below this directory, so keep its path short, and let the
# server user reach it when we run as root (the sandbox then runs the servers as another user).
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-drv.XXXXXX")
chmod 755 "$work"
sbx=$work/sandbox
sluice=${sluice_bin:-$work/sluice}
sluice_pid=
sandbox_up=0
status=failed

show_tail() { # file...
	local f
	for f in "$@"; do
		[[ -s $f ]] || continue
		printf '\n----- last 30 lines of %s -----\n' "$f" >&2
		tail -n 30 "$f" >&2
	done
}

# show_test_log FILE: the outcome lines of a go test log (its tail is goroutine dumps after a
# panic or timeout, and fuzz seeds otherwise).
show_test_log() {
	[[ -s $1 ]] || return 0
	printf '\n----- failures and panics in %s -----\n' "$1" >&2
	grep -nE '^(--- FAIL|panic:|FAIL|ok  |PASS$)' "$1" | head -n 60 >&2 || true
}

# test_errors LOG TEST: the first distinct error lines a top-level test (and its subtests)
# logged.
test_errors() {
	awk -v t="$2" '
		$0 ~ "^=== (RUN|CONT|NAME|PAUSE) +" t "(/|$)" { on = 1; next }
		/^=== (RUN|CONT|NAME|PAUSE) / { on = 0 }
		on && /_test\.go:[0-9]+:/ && !seen[$0]++ { print; if (++n == 3) exit }' "$1"
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	if [[ -n $sluice_pid ]] && kill -0 "$sluice_pid" 2>/dev/null; then
		kill -TERM "$sluice_pid" 2>/dev/null
		for _ in $(seq 50); do
			kill -0 "$sluice_pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$sluice_pid" 2>/dev/null
		wait "$sluice_pid" 2>/dev/null
	fi
	if [[ $status != ok ]]; then
		# The sandbox log matters only when the runs did not happen (status "failed").
		[[ $status == mismatch ]] || show_tail "$work/sandbox.log"
		show_tail "$work/sluice.log"
		show_test_log "$work/direct.log"
		show_test_log "$work/sluice-run.log"
	fi
	if [[ $keep == 1 ]]; then
		log "KEEP=1: work directory $work kept (logs: direct.log, sluice-run.log, sluice.log)"
		if [[ $sandbox_up == 1 ]]; then
			log "KEEP=1: sandbox left running; stop it with: $sluice sandbox down --dir $sbx"
		fi
	else
		if [[ $sandbox_up == 1 ]]; then
			"$sluice" sandbox down --dir "$sbx" >>"$work/sandbox.log" 2>&1 ||
				log "sandbox down failed; see above"
		fi
		rm -rf "$work"
	fi
	log "took $((SECONDS - start))s"
	exit "$rc"
}
trap cleanup EXIT
trap 'log interrupted; exit 130' INT
trap 'log terminated; exit 143' TERM

# json_fields FILE prints "key=value" for the top-level string/number fields of sandbox.json,
# and "primary=ADDRESS" and "primary_name=NAME" for the node whose role is primary. It needs
# only sed and awk (no jq): the values it reads contain no commas, braces or brackets.
json_fields() {
	sed 's/[][{},]/\n&\n/g' "$1" | awk '
		function unquote(s) {
			gsub(/^[ \t\r]+|[ \t\r]+$/, "", s)
			gsub(/^"|"$/, "", s)
			return s
		}
		/^[{[]$/ { depth++; if (depth == 3) { role = ""; addr = ""; name = "" } next }
		/^[]}]$/ {
			if (depth == 3 && role == "primary") { print "primary=" addr; print "primary_name=" name }
			depth--
			next
		}
		/:/ {
			i = index($0, ":")
			k = unquote(substr($0, 1, i - 1)); v = unquote(substr($0, i + 1))
			if (depth == 1 && v != "") print k "=" v
			if (depth == 3 && k == "role") role = v
			if (depth == 3 && k == "address") addr = v
			if (depth == 3 && k == "name") name = v
		}'
}

# wait_port HOST:PORT SECONDS waits until a TCP connect succeeds.
wait_port() {
	local host=${1%:*} port=${1##*:} deadline=$((SECONDS + $2))
	while ((SECONDS < deadline)); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
			return 0
		fi
		if [[ -n $sluice_pid ]] && ! kill -0 "$sluice_pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.2
	done
	return 1
}

# 1. sluice binary.
if [[ -z $sluice_bin ]]; then
	log "building sluice"
	(cd "$root" && go build -o "$sluice" ./cmd/sluice)
fi
[[ -x $sluice ]] || die "no sluice binary at $sluice"

# 2. The driver's module source, copied out of the module cache so it is writable.
log "fetching $driver_module@$driver_version"
export GOWORK=off
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
mod_dir=$(cd "$work" && go mod download -json "$driver_module@$driver_version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[[ -n $mod_dir && -f $mod_dir/driver_test.go ]] || die "go mod download gave no module directory with driver_test.go"
gsd=$work/go-sql-driver
cp -r "$mod_dir" "$gsd"
chmod -R u+w "$gsd"
# Compile the tests once now (dependencies come from the driver's own go.mod/go.sum), so a
# build problem is reported as such and both runs below measure only the tests.
(cd "$gsd" && go mod download && go test -count=1 -run '^$' . >"$work/build.log" 2>&1) ||
	{ cat "$work/build.log" >&2; die "cannot build the driver's tests"; }

# 3. Sandbox: TLS for TestTLS/TestIssue1567, performance_schema for TestConnectionAttributes,
# max_connections=50 as upstream CI uses for TestConcurrent. One replica is enough. Free ports
# everywhere, so this runs next to a ./scripts/sandbox.sh on the default ports.
log "starting sandbox in $sbx"
sandbox_up=1
if ! "$sluice" sandbox up --dir "$sbx" --replicas 1 --tls --performance-schema \
	--max-connections 50 --base-port 0 --rw-port 0 --ro-port 0 --admin-port -1 >"$work/sandbox.log" 2>&1; then
	die "sluice sandbox up failed"
fi
declare -A sb=()
while IFS='=' read -r k v; do
	sb[$k]=$v
done < <(json_fields "$sbx/sandbox.json")
primary=${sb[primary]:-}
rw=${sb[rw]:-}
[[ -n $primary ]] || die "no primary address in $sbx/sandbox.json"
[[ -n $rw ]] || die "no rw address in $sbx/sandbox.json"
for a in "$primary" "$rw"; do
	case $a in
	127.0.0.1:* | localhost:*) ;;
	*) die "refusing a non-local address: $a" ;;
	esac
done
log "sandbox: ${sb[flavor]:-?} ${sb[version]:-?}, primary $primary, sluice rw $rw"

# run_suite NAME ADDR runs the suite against ADDR, output in $work/NAME.log.
run_suite() {
	local name=$1 addr=$2 t0=$SECONDS rc=0
	local -a env=(MYSQL_TEST_USER=app MYSQL_TEST_PASS=app MYSQL_TEST_PROT=tcp
		"MYSQL_TEST_ADDR=$addr" MYSQL_TEST_DBNAME=gotest)
	if [[ ${DRIVER_SUITE_CONCURRENT:-1} == 1 ]]; then
		env+=(MYSQL_TEST_CONCURRENT=1)
	fi
	log "running the suite $name ($addr)"
	(cd "$gsd" && env -u MYSQL_TEST_CONCURRENT "${env[@]}" \
		go test -count=1 -v -timeout "$run_timeout" -skip "$skip_tests" . >"$work/$name.log" 2>&1) || rc=$?
	printf '%s %s\n' "$rc" "$((SECONDS - t0))" >"$work/$name.rc"
}

# results LOG prints "STATUS NAME" for every top-level test (subtests are indented and have a
# '/' in their name).
results() {
	sed -n 's/^--- \(PASS\|FAIL\|SKIP\): \([^ /]*\) .*/\1 \2/p' "$1"
}

# 4. Directly against the primary (or, with DRIVER_SUITE_DIRECT, the results of an earlier direct
# run of the same driver version, on a sandbox like this one: scripts/test.sh runs the suite
# through two pool modes against one direct run).
if [[ -n ${DRIVER_SUITE_DIRECT:-} ]]; then
	[[ -s $DRIVER_SUITE_DIRECT.log && -s $DRIVER_SUITE_DIRECT.rc ]] ||
		die "DRIVER_SUITE_DIRECT=$DRIVER_SUITE_DIRECT: no $DRIVER_SUITE_DIRECT.log and .rc of an earlier direct run"
	cp "$DRIVER_SUITE_DIRECT.log" "$work/direct.log"
	cp "$DRIVER_SUITE_DIRECT.rc" "$work/direct.rc"
	log "the direct run's results: $DRIVER_SUITE_DIRECT.log (not run again)"
else
	run_suite direct "$primary"
	if [[ -n ${DRIVER_SUITE_SAVE_DIRECT:-} ]]; then
		cp "$work/direct.log" "$DRIVER_SUITE_SAVE_DIRECT.log"
		cp "$work/direct.rc" "$DRIVER_SUITE_SAVE_DIRECT.rc"
	fi
fi

# Start the sluice run from an empty database, whatever the direct run left behind.
if command -v mariadb >/dev/null 2>&1; then
	MYSQL_PWD=app mariadb --no-defaults --protocol=tcp -h "${primary%:*}" -P "${primary##*:}" -uapp \
		-e 'DROP DATABASE IF EXISTS gotest; CREATE DATABASE gotest' ||
		log "could not recreate database gotest; continuing"
fi

# 5. Through sluice, with the sandbox's configuration: endpoint rw reads on the replicas, at
# consistency global rather than the sandbox's session: the suite writes on one connection of
# database/sql's pool and reads back on another (a test that cancels a query loses that
# connection and reads on a new one), which only global promises to see; at session such a
# read found a replica a few rows behind once, on a loaded machine
# (DRIVER_SUITE_READS=primary pins the reads to the primary instead).
config=$work/sluice.yaml
cp "$sbx/sluice.yaml" "$config"
# The driver's tests fail logins on purpose; sluice must not block 127.0.0.1 for them.
no_auth_block "$config" || die "cannot set limits.max_auth_failures in $config"
reads=${DRIVER_SUITE_READS:-replicas}
case $reads in
primary)
	rc=0
	pin_reads "$config" "${sb[primary_name]:-primary}" || rc=$?
	case $rc in
	0) ;;
	3) log "endpoint rw in sluice.yaml has no read_weights; using it unchanged" ;;
	*) die "cannot rewrite read_weights in $config" ;;
	esac
	;;
replicas)
	sed -i 's/^    consistency: session$/    consistency: global/' "$config" ||
		die "cannot rewrite the consistency level in $config"
	grep -q '^    consistency: global$' "$config" || die "no 'consistency: session' line to rewrite in $config"
	;;
*) die "DRIVER_SUITE_READS must be primary or replicas, not $reads" ;;
esac
# TestConcurrent opens exactly @@max_connections (50) connections at once: a monitor connection
# of sluice's own to the primary would take one of them (its account has no CONNECTION ADMIN
# for the spare slot). With reads on the primary, sluice runs without the monitor; reads on the
# replicas need it (consistency session tracks GTID positions).
if [[ $reads == primary ]]; then
	drop_monitor "$config" || die "cannot remove the monitor section from $config"
fi
# POOL_MODE, POOL_MAX_PER_NODE (lib.sh's pool_config): the suite through another pool mode.
pool_applied=$(pool_config "$config") || die "cannot set the pool in $config"
[[ -z $pool_applied ]] || log "$pool_applied"
"$sluice" serve --config "$config" --check >"$work/sluice.log" 2>&1 ||
	die "sluice serve --check rejects $config"
log "starting sluice serve (rw endpoint reads: $reads)"
"$sluice" serve --config "$config" >"$work/sluice.log" 2>&1 &
sluice_pid=$!
wait_port "$rw" 30 || die "sluice did not listen on $rw"
run_suite sluice-run "$rw"
kill -0 "$sluice_pid" 2>/dev/null || die "sluice exited during the run"

# 6. Compare.
declare -A direct=() proxied=() expected=()
while read -r s n; do direct[$n]=$s; done < <(results "$work/direct.log")
while read -r s n; do proxied[$n]=$s; done < <(results "$work/sluice-run.log")
while IFS= read -r line; do
	reason=${line#*#}
	[[ $reason == "$line" ]] && reason=
	line=${line%%#*}
	read -r name _ <<<"$line" || true
	[[ -n ${name:-} ]] || continue
	reason=${reason#"${reason%%[![:space:]]*}"}
	expected[$name]=${reason:-"(no reason given)"}
done <"$expected_file"

count() { # assoc-name status
	local -n m=$1
	local n=0 k
	for k in "${!m[@]}"; do
		[[ ${m[$k]} == "$2" ]] && n=$((n + 1))
	done
	echo "$n"
}

read -r direct_rc direct_secs <"$work/direct.rc"
read -r sluice_rc sluice_secs <"$work/sluice-run.rc"
printf '\ngo-sql-driver/mysql %s suite (top-level tests)\n' "$driver_version"
printf '  %-14s %8s %8s\n' "" direct sluice
for s in PASS FAIL SKIP; do
	printf '  %-14s %8s %8s\n' "$s" "$(count direct "$s")" "$(count proxied "$s")"
done
printf '  %-14s %8s %8s\n' total "${#direct[@]}" "${#proxied[@]}"
printf '  %-14s %8s %8s\n' "go test exit" "$direct_rc" "$sluice_rc"
printf '  %-14s %7ss %7ss\n' time "$direct_secs" "$sluice_secs"

unexpected=()
unexpected_names=()
allowed=()
while read -r n; do
	[[ ${direct[$n]} == PASS ]] || continue
	got=${proxied[$n]:-MISSING}
	[[ $got == PASS ]] && continue
	if [[ -n ${expected[$n]+x} ]]; then
		allowed+=("$(printf '%-40s %-7s expected: %s' "$n" "$got" "${expected[$n]}")")
	else
		unexpected+=("$(printf '%-40s %-7s NOT EXPECTED' "$n" "$got")")
		unexpected_names+=("$n")
	fi
done < <(printf '%s\n' "${!direct[@]}" | sort)

printf '\nPass direct, not through sluice: %d (%d expected, %d unexpected)\n' \
	$((${#allowed[@]} + ${#unexpected[@]})) "${#allowed[@]}" "${#unexpected[@]}"
for l in ${allowed[@]+"${allowed[@]}"} ${unexpected[@]+"${unexpected[@]}"}; do
	printf '  %s\n' "$l"
done
for n in ${unexpected_names[@]+"${unexpected_names[@]}"}; do
	printf '\n  %s through sluice:\n' "$n"
	test_errors "$work/sluice-run.log" "$n" | sed 's/^[[:space:]]*/    /' | cut -c1-240
done

fixed=()
stale=()
while read -r n; do
	[[ -n $n ]] || continue
	if [[ -z ${direct[$n]+x} ]]; then
		stale+=("$n")
	elif [[ ${proxied[$n]:-} == PASS ]]; then
		fixed+=("$n")
	fi
done < <(printf '%s\n' "${!expected[@]}" | sort)
if ((${#fixed[@]} > 0)); then
	printf '\nNow pass through sluice; can be removed from %s:\n' "${expected_file#"$root"/}"
	printf '  %s\n' "${fixed[@]}"
fi
if ((${#stale[@]} > 0)); then
	printf '\nListed in %s but not run directly (renamed or misspelt?):\n' "${expected_file#"$root"/}"
	printf '  %s\n' "${stale[@]}"
fi
direct_bad=()
while read -r n; do
	[[ -n $n && ${direct[$n]} == FAIL ]] && direct_bad+=("$n")
done < <(printf '%s\n' "${!direct[@]}" | sort)
if ((${#direct_bad[@]} > 0)); then
	printf '\nWarning: fail even directly against the server (not compared):\n'
	printf '  %s\n' "${direct_bad[@]}"
fi
echo

passes=$(count direct PASS)
if ((passes < min_pass)); then
	die "the direct run passed only $passes tests (minimum $min_pass): the driver's tests skip when they cannot connect"
fi
if ((${#unexpected[@]} > 0)); then
	status=mismatch
	die "${#unexpected[@]} test(s) pass directly but not through sluice and are not in ${expected_file#"$root"/}"
fi
status=ok
log "ok: $passes pass directly, $(count proxied PASS) through sluice, ${#allowed[@]} expected differences"
