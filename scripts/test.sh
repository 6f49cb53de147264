#!/usr/bin/env bash
# test.sh: sluice's test command. Run from anywhere: ./scripts/test.sh
#
# Steps: install MariaDB, mariadb-test and sysbench when missing (Debian/Ubuntu, as root or
# with password-less sudo; otherwise it prints the command and integration tests skip), gofmt,
# go vet, staticcheck, build, go test ./..., scripts/driver-suite.sh (go-sql-driver/mysql's
# test suite directly against MariaDB and through sluice), scripts/mysqltest.sh,
# scripts/sysbench-smoke.sh, the benchmark harness in its smoke mode (SMOKE=1 bench/run.sh,
# about a minute), so that it keeps working, the switchover and replica-crash load proof in its
# smoke mode (SMOKE=1 bench/switchover.sh, about 30 s: 0 client errors, every write kept), and
# scripts/client-batteries.sh (PHP, Java, Node and Python client stacks, directly and through
# sluice; installs their runtimes when missing), then the batteries' rw mode and the mysqltest
# corpus in text mode and the driver suite again through pool_mode transaction (POOL_MODE,
# scripts/lib.sh).
#
# Every step runs even when an earlier one failed; the exit status is non-zero if any failed.
# With CI=true nothing may be skipped: a missing server is a failure, and CI=true is passed to
# the Go tests, whose integration tests then fail instead of skipping.
#
# Environment:
#   CI=true              strict mode (see above)
#   RACE=1               go test -race (needs cgo; default off, see go_test below)
#   GO_TEST_TIMEOUT=D    go test -timeout (default 5m, per package)
#   FUZZTIME=D           how long each Fuzz target runs beyond its seeds (default 3s)
#   SKIP_DRIVER_SUITE=1  leave out scripts/driver-suite.sh (ignored with CI=true)
#   SKIP_MYSQLTEST=1     leave out scripts/mysqltest.sh (ignored with CI=true)
#   SKIP_SYSBENCH=1      leave out scripts/sysbench-smoke.sh (ignored with CI=true)
#   SKIP_BENCH=1         leave out SMOKE=1 bench/run.sh (ignored with CI=true)
#   SKIP_SWITCHOVER=1    leave out SMOKE=1 bench/switchover.sh (ignored with CI=true)
#   SKIP_CLIENTS=1       leave out scripts/client-batteries.sh (ignored with CI=true)
#   SKIP_POOL_TRANSACTION=1  leave out the pool_mode transaction runs (ignored with CI=true)
#   EXPECTED_FAIL_MODES  failures scripts/mysqltest.sh and scripts/sysbench-smoke.sh tolerate
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

case ${CI:-} in
true | TRUE | True | 1 | yes)
	ci=true
	export CI=true
	;;
*) ci=false ;;
esac

readonly staticcheck_version=0.8.2
readonly skipped=77
bin_dir=$root/.cache/bin
start=$SECONDS
summary=()
failed=()
have_server=true

# step NAME COMMAND...: runs COMMAND with errexit in force (a subshell outside any '||'
# context, where bash would silently disable errexit), and records the outcome. Exit status
# $skipped means "skipped".
step() {
	local name=$1 t0=$SECONDS rc
	shift
	printf '\n==> %s\n' "$name"
	set +e
	(
		set -e
		"$@"
	)
	rc=$?
	set -e
	local took=$((SECONDS - t0))
	if [[ $rc == "$skipped" && $ci == true ]]; then
		echo "CI=true: a step may not be skipped" >&2
		rc=1
	fi
	case $rc in
	0) summary+=("$name ok (${took}s)") ;;
	"$skipped") summary+=("$name skipped") ;;
	*)
		summary+=("$name FAILED (${took}s)")
		failed+=("$name")
		printf '!!! %s FAILED (exit %d)\n' "$name" "$rc"
		;;
	esac
}

deps() {
	# etcd (etcd-server): the store several sluice nodes share (internal/cli TestProxyCluster,
	# the sandbox's --proxies).
	if ensure_packages "mariadbd mariadb mariadb-test sysbench haproxy etcd" \
		"mariadb-server mariadb-client mariadb-test sysbench haproxy etcd-server"; then
		return 0
	fi
	if [[ $ci == true ]]; then
		echo "CI=true: the packages above are required" >&2
		return 1
	fi
	echo "continuing: integration tests will skip" >&2
	return "$skipped"
}

check_gofmt() {
	local list
	local -a out=()
	list=$(find . -type d \( -name .git -o -name .cache -o -name vendor -o -name testdata \) -prune \
		-o -type f -name '*.go' -print0 | xargs -0 -r gofmt -l)
	[[ -z $list ]] || mapfile -t out <<<"$list"
	if ((${#out[@]} > 0)); then
		echo "gofmt -l lists files that need formatting (run gofmt -w on them):"
		printf '  %s\n' "${out[@]}"
		return 1
	fi
}

# staticcheck_bin prints the path of staticcheck $staticcheck_version, installing it into
# .cache/bin when neither PATH nor $(go env GOPATH)/bin has that version.
staticcheck_bin() {
	local c
	for c in "$(command -v staticcheck || true)" "$(go env GOPATH)/bin/staticcheck" "$bin_dir/staticcheck"; do
		[[ -n $c && -x $c ]] || continue
		if "$c" -version 2>/dev/null | grep -qF "($staticcheck_version)"; then
			echo "$c"
			return 0
		fi
	done
	echo "installing staticcheck v$staticcheck_version into $bin_dir" >&2
	GOBIN=$bin_dir go install "honnef.co/go/tools/cmd/staticcheck@v$staticcheck_version" >&2
	echo "$bin_dir/staticcheck"
}

run_staticcheck() {
	local sc
	sc=$(staticcheck_bin)
	"$sc" ./...
}

build() {
	# No stale binary may stand in for a failed build in the driver suite.
	rm -f "$bin_dir/sluice"
	go build ./...
	go build -o "$bin_dir/sluice" ./cmd/sluice
}

# -race is off by default: measured here, it made go test take about 4 minutes instead of 40 s
# (mostly internal/mysql's compression tests), and it needs cgo, i.e. a C compiler, which a
# fresh machine may lack. RACE=1 turns it on.
go_test() {
	# A hung package must not eat the whole CI budget (go test's default is 10 minutes).
	local -a flags=(-count=1 -timeout "${GO_TEST_TIMEOUT:-5m}")
	if [[ ${RACE:-0} == 1 ]]; then
		if [[ $(go env CGO_ENABLED) != 1 ]]; then
			echo "RACE=1: -race needs cgo, and cgo is disabled (no C compiler? apt-get install gcc)" >&2
			return 1
		fi
		flags+=(-race)
	fi
	echo "+ go test ${flags[*]} ./...   (CI=${CI:-unset})"
	go test "${flags[@]}" ./...
}

# fuzz runs every Fuzz target of the tree for FUZZTIME (default 3s) each, beyond its seed
# corpus (which go test ./... already runs). A crasher lands in the package's testdata/fuzz.
fuzz() {
	local t=${FUZZTIME:-3s} line file pkg name
	local -a targets=()
	while IFS= read -r line; do
		targets+=("$line")
	done < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' internal | sed 's/:func /:/')
	for line in "${targets[@]}"; do
		file=${line%%:*} name=${line#*:}
		pkg=./$(dirname "$file")
		echo "+ go test -run '^\$' -fuzz '^$name\$' -fuzztime $t $pkg"
		local try
		for try in 1 2; do
			go test -run '^$' -fuzz "^$name\$" -fuzztime "$t" "$pkg" >"$bin_dir/fuzz.log" 2>&1 && break
			# The fuzzing engine itself sometimes times out talking to a worker on a loaded
			# machine ("context deadline exceeded", no input written): that is not a finding, so
			# the target runs once more. Anything else, or a second failure, fails the step.
			if [[ $try == 1 ]] && grep -q 'context deadline exceeded' "$bin_dir/fuzz.log" &&
				! grep -q 'Failing input written' "$bin_dir/fuzz.log"; then
				echo "  (the fuzzing engine timed out talking to a worker; running $name again)"
				continue
			fi
			tail -n 30 "$bin_dir/fuzz.log"
			return 1
		done
	done
}

driver_suite() {
	if [[ ${SKIP_DRIVER_SUITE:-0} == 1 && $ci != true ]]; then
		echo "SKIP_DRIVER_SUITE=1: skipped"
		return "$skipped"
	fi
	if [[ $have_server != true && $ci != true ]]; then
		echo "no MariaDB server installed: skipped"
		return "$skipped"
	fi
	if [[ ! -x $bin_dir/sluice ]]; then
		echo "no sluice binary: the build step failed"
		return 1
	fi
	# The direct run's results are kept for the run through pool_mode transaction (pool_transaction).
	rm -f "$bin_dir/driver-direct.log" "$bin_dir/driver-direct.rc"
	DRIVER_SUITE_SAVE_DIRECT=$bin_dir/driver-direct SLUICE_BIN=$bin_dir/sluice "$root/scripts/driver-suite.sh"
}

if ! command -v go >/dev/null 2>&1; then
	echo "test.sh: go not found on PATH (nor in /usr/local/go/bin)" >&2
	exit 1
fi
mkdir -p "$bin_dir"
echo "test.sh: $(go version), CI=$ci, in $root"

# fidelity_suite SKIPVAR "TOOL..." SCRIPT [VAR=VALUE...] runs one of the fidelity scripts (SCRIPT
# relative to the repository root) with the binary built here, in an environment with the VARs.
fidelity_suite() {
	local skipvar=$1 tools=$2 script=$3 tool
	shift 3
	if [[ ${!skipvar:-0} == 1 && $ci != true ]]; then
		echo "$skipvar=1: skipped"
		return "$skipped"
	fi
	if [[ $ci != true ]]; then
		for tool in mariadbd $tools; do
			if ! have_bin "$tool"; then
				echo "no $tool installed: skipped"
				return "$skipped"
			fi
		done
	fi
	if [[ ! -x $bin_dir/sluice ]]; then
		echo "no sluice binary: the build step failed"
		return 1
	fi
	env SLUICE_BIN="$bin_dir/sluice" "$@" "$root/$script"
}
# Then the diagnostics test again with reads over two replicas: with one, the node a warning
# was raised on and the node SHOW WARNINGS runs on can only differ by primary against replica.
mysqltest_suite() {
	fidelity_suite SKIP_MYSQLTEST mariadb-test scripts/mysqltest.sh &&
		fidelity_suite SKIP_MYSQLTEST mariadb-test scripts/mysqltest.sh REPLICAS=2 TESTS=warnings_errors MODES="text ps"
}
sysbench_smoke() { fidelity_suite SKIP_SYSBENCH sysbench scripts/sysbench-smoke.sh; }
bench_smoke() { fidelity_suite SKIP_BENCH "sysbench haproxy" bench/run.sh SMOKE=1; }
switchover_smoke() { fidelity_suite SKIP_SWITCHOVER "sysbench mariadb" bench/switchover.sh SMOKE=1; }

# The client stacks of tests/clients need their runtimes: PHP (mysqli, PDO), Java
# (Connector/J), Node (npm), Python (PyMySQL, MySQLdb in Debian's own python3).
client_deps() {
	local ok=true
	ensure_packages "php javac java" "php-cli php-mysql openjdk-17-jdk-headless" || ok=false
	if [[ ! -f /usr/share/java/mariadb-java-client.jar ]]; then
		ensure_packages "__mariadb_java_client__" "libmariadb-java" || true
		[[ -f /usr/share/java/mariadb-java-client.jar ]] || ok=false
	fi
	# Node from another source (nodesource) bundles npm and conflicts with Debian's npm.
	if ! have_bin node || ! have_bin npm; then
		ensure_packages "node npm" "nodejs npm" || ok=false
	fi
	if ! /usr/bin/python3 -c 'import pymysql, MySQLdb' 2>/dev/null; then
		ensure_packages "__python3_mysql__" "python3-pymysql python3-mysqldb" || true
		/usr/bin/python3 -c 'import pymysql, MySQLdb' 2>/dev/null || ok=false
	fi
	[[ $ok == true ]]
}
client_batteries() {
	if [[ ${SKIP_CLIENTS:-0} == 1 && $ci != true ]]; then
		echo "SKIP_CLIENTS=1: skipped"
		return "$skipped"
	fi
	if ! client_deps; then
		if [[ $ci == true ]]; then
			echo "CI=true: the client stacks are required" >&2
			return 1
		fi
		echo "client stacks missing: skipped"
		return "$skipped"
	fi
	fidelity_suite SKIP_CLIENTS "" scripts/client-batteries.sh
}

# pool_transaction: the cheapest runs of the fidelity suites that still compare every client
# stack with the server through pool_mode transaction (connections given back between
# statements, state carried): the client batteries' rw mode for every stack, the mysqltest
# corpus in text mode and go-sql-driver's test suite. max_per_node stays unlimited: the batteries' sessions leave node
# connections busy (statements they time out on purpose, pins held to their end), and a small
# limit turns that into waits and error 1040, not into findings; sessions still share the
# connections they give back (Connector/J's start-up SET of an expression pins nothing: it is
# evaluated and replayed as values, so Java's battery shows what transaction pooling moves).
# Then the batteries' isolation mode (every stack, Java
# included), through sluice restarted at max_per_node 1 under transaction and session, on the
# same sandbox (~40 s).
pool_transaction() {
	if [[ ${SKIP_POOL_TRANSACTION:-0} == 1 && $ci != true ]]; then
		echo "SKIP_POOL_TRANSACTION=1: skipped"
		return "$skipped"
	fi
	local rc=0
	if client_deps; then
		fidelity_suite SKIP_CLIENTS "" scripts/client-batteries.sh POOL_MODE=transaction MODES="rw isolation" \
			STACKS="cli php java node python" ISOLATION_STACKS="php java node python" || rc=1
	elif [[ $ci == true ]]; then
		echo "CI=true: the client stacks are required" >&2
		rc=1
	fi
	fidelity_suite SKIP_MYSQLTEST mariadb-test scripts/mysqltest.sh POOL_MODE=transaction MODES=text || rc=$?
	if [[ ${SKIP_DRIVER_SUITE:-0} == 1 && $ci != true ]]; then
		echo "SKIP_DRIVER_SUITE=1: the driver suite through pool_mode transaction skipped"
	elif [[ -x $bin_dir/sluice ]]; then
		local direct=()
		if [[ -s $bin_dir/driver-direct.log && -s $bin_dir/driver-direct.rc ]]; then
			direct=(DRIVER_SUITE_DIRECT="$bin_dir/driver-direct") # the driver-suite step's direct run
		fi
		env "${direct[@]}" POOL_MODE=transaction SLUICE_BIN="$bin_dir/sluice" "$root/scripts/driver-suite.sh" || rc=1
	else
		echo "no sluice binary: the build step failed" >&2
		rc=1
	fi
	return "$rc"
}

step deps deps
have_bin mariadbd || have_server=false
step gofmt check_gofmt
step vet go vet ./...
step staticcheck run_staticcheck
step build build
step go-test go_test
step fuzz fuzz
step driver-suite driver_suite
step mysqltest mysqltest_suite
step sysbench-smoke sysbench_smoke
step bench-smoke bench_smoke
step switchover-smoke switchover_smoke
step client-batteries client_batteries
step pool-transaction pool_transaction

took=$((SECONDS - start))
printf '\n==> summary\n'
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
	printf 'test.sh: FAIL (%dm%02ds): %s failed\n' $((took / 60)) $((took % 60)) "${failed[*]}"
	exit 1
fi
printf 'test.sh: PASS (%dm%02ds)\n' $((took / 60)) $((took % 60))
