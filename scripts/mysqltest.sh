#!/usr/bin/env bash
# mysqltest.sh: protocol-fidelity gate with mariadb-test (the mysqltest language). Runs the
# corpus in tests/sql/ against a fresh sandbox (TLS on): each test first directly against the
# primary, then through `sluice serve` (endpoint rw), once per protocol mode. Through sluice it
# must give what the recorded result says; where this server's own output differs from the
# recording (another patch release words a warning otherwise), it must give the server's own
# output of this run instead (noted in the report):
#
#   text      plain text protocol                    (--skip-ssl)
#   ps        binary protocol, COM_STMT_*            (--ps-protocol --skip-ssl)
#   compress  compressed protocol                    (--compress --skip-ssl)
#   ssl       TLS, verified against the sandbox's certificate
#                                                    (--ssl --ssl-ca=CERT --ssl-verify-server-cert)
#
# Before a mode runs, the mariadb client checks that the mode is really in effect (compression
# and TLS are otherwise silently left out when the server does not offer them). Any difference
# from the recorded result fails, unless the mode (or the test in that mode) is expected to fail.
# A summary table (test x mode) and the diffs of the failures are printed.
#
#   ./scripts/mysqltest.sh [TEST...]        TEST is a name in tests/sql (without .test)
#   RECORD=1 ./scripts/mysqltest.sh [TEST...]
#       records tests/sql/r/TEST.result against the primary in text mode; for every other mode
#       in MODES whose direct output differs, also tests/sql/r/TEST.MODE.result (a stale one is
#       removed). sluice is not started.
#
# Environment:
#   MODES="text ps compress ssl"   modes to run, in this order (default: all four);
#                                  MYSQLTEST_MODES, when set, takes precedence
#   TESTS="a b"                    tests to run (default: every tests/sql/*.test; or arguments)
#   EXPECTED_FAIL_MODES="ps compress:large_values"
#                                  failures through sluice that do not fail the run: MODE (every
#                                  test in that mode) or MODE:TEST (MODE may be *); added to the
#                                  entries in tests/sql/expected-fail.txt (EXPECTED_FAIL_FILE).
#                                  sysbench-smoke.sh's modes (noprepare) are ignored, so one
#                                  setting can serve both scripts
#   SLUICE_BIN=path                use this sluice binary instead of building one
#   KEEP=1                         keep the work directory and the sandbox
#   REPLICAS=N                     replicas in the sandbox (default 1)
#   FIDELITY_READS=primary         endpoint rw reads from the primary (default replicas: the
#                                  sandbox's configuration, reads on the replicas at consistency
#                                  session)
#   MYSQLTEST_TIMEOUT=S            limit for one mariadb-test run (default 300 s)
#   SSL_CA=file                    in ssl mode, verify the server certificate against this CA
#                                  (default: the sandbox's self-signed certificate)
#   SSL_VERIFY=0                   in ssl mode, do not verify the server certificate at all
#   POOL_MODE=transaction, POOL_MAX_PER_NODE=N   sluice's pool_mode and pool.max_per_node
#                                (scripts/lib.sh pool_config; default: the sandbox's)
#   DIFF_LINES=N                   lines of each failure's diff to print (default 80)
#
# Exit status: 0 when every test passed directly and through sluice in every mode (or failed
# as expected); 1 otherwise. Everything talks to 127.0.0.1 only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FL_NAME=mysqltest
# shellcheck source=scripts/fidelity-lib.sh
. "$root/scripts/fidelity-lib.sh"

readonly all_modes="text ps compress ssl"
suite=$root/tests/sql
refdir=$suite/r
# Modes of scripts/sysbench-smoke.sh, which shares EXPECTED_FAIL_MODES: ignored here.
readonly other_modes="noprepare"
read -r -a modes <<<"${MYSQLTEST_MODES:-${MODES:-$all_modes}}"
record=${RECORD:-0}
run_timeout=${MYSQLTEST_TIMEOUT:-300}
expected_file=${EXPECTED_FAIL_FILE:-$suite/expected-fail.txt}
diff_lines=${DIFF_LINES:-80}
ssl_verify=${SSL_VERIFY:-1}

for m in "${modes[@]}"; do
	[[ " $all_modes " == *" $m "* ]] || fl_die "unknown mode '$m' in MODES (known: $all_modes)"
done
((${#modes[@]} > 0)) || fl_die "MODES is empty"
for b in mariadb-test mariadb timeout; do
	command -v "$b" >/dev/null 2>&1 || fl_die "$b not found (apt-get install mariadb-test mariadb-client coreutils)"
done

tests=()
if (($# > 0)); then
	tests=("$@")
elif [[ -n ${TESTS:-} ]]; then
	read -r -a tests <<<"$TESTS"
else
	for f in "$suite"/*.test; do
		[[ -e $f ]] || continue
		n=${f##*/}
		tests+=("${n%.test}")
	done
fi
((${#tests[@]} > 0)) || fl_die "no tests in $suite"
for t in "${tests[@]}"; do
	t=${t%.test}
	[[ -f $suite/$t.test ]] || fl_die "no test $suite/$t.test"
done
tests=("${tests[@]%.test}")

fl_begin sluice-sqlt

# mode_flags MODE [cli]: the mariadb-test options of MODE (with "cli", those the mariadb client
# understands), into the array "flags".
mode_flags() {
	case $1 in
	text) flags=(--skip-ssl) ;;
	ps)
		flags=(--skip-ssl)
		if [[ ${2:-} != cli ]]; then
			flags+=(--ps-protocol)
		fi
		;;
	compress) flags=(--skip-ssl --compress) ;;
	ssl)
		flags=(--ssl)
		if [[ $ssl_verify == 1 ]]; then
			flags+=("--ssl-ca=$ssl_ca" --ssl-verify-server-cert)
		fi
		;;
	esac
}

# check_mode ADDR MODE: the mode is in effect on a connection to ADDR (the mariadb client's
# status report, computed on the client side); otherwise prints why and returns 1.
check_mode() {
	local addr=$1 mode=$2 out
	local -a flags
	mode_flags "$mode" cli
	if ! out=$(mariadb --no-defaults --protocol=tcp -h "${addr%:*}" -P "${addr##*:}" \
		-u"$FL_USER" -p"$FL_PASSWORD" "${flags[@]}" -e status 2>&1); then
		echo "cannot connect in $mode mode: $(printf '%s' "$out" | tail -n 1)"
		return 1
	fi
	case $mode in
	compress)
		grep -q '^Protocol:[[:space:]]*Compressed' <<<"$out" && return 0
		echo "compression not negotiated (the server did not offer CLIENT_COMPRESS)"
		return 1
		;;
	ssl)
		grep -q '^SSL:[[:space:]]*Cipher in use' <<<"$out" && return 0
		echo "TLS not in use (the server did not offer CLIENT_SSL)"
		return 1
		;;
	esac
	return 0
}

# now_ms: wall-clock milliseconds.
now_ms() {
	local t=${EPOCHREALTIME/[.,]/}
	echo $((t / 1000))
}

# seconds MS: MS as seconds with one decimal.
seconds() {
	printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100))
}

# reference TEST MODE: the result file TEST is compared with in MODE.
# A test whose recorded result this server words differently (a patch release changes a
# warning's text) is compared through sluice with the server's own output of this run,
# kept in $work/live/MODE/TEST.result.
reference() {
	if [[ -f $work/live/$2/$1.result ]]; then
		echo "$work/live/$2/$1.result"
	elif [[ -f $refdir/$1.$2.result ]]; then
		echo "$refdir/$1.$2.result"
	else
		echo "$refdir/$1.result"
	fi
}

# run_test WHERE MODE TEST [--record]: one mariadb-test run against the primary (WHERE=direct)
# or sluice (WHERE=sluice). Files go to $work/run/WHERE-MODE/: TEST.result (a copy of the
# reference, or the recording), TEST.reject, TEST.out. Prints pass, fail, skip or timeout.
run_test() {
	local where=$1 mode=$2 name=$3 extra=${4:-} addr dir vardir rc=0
	local -a flags
	addr=$FL_PRIMARY
	if [[ $where == sluice ]]; then
		addr=$FL_RW
	fi
	dir=$work/run/$where-$mode
	vardir=$work/var
	mkdir -p "$dir" "$vardir/$where-$mode"
	rm -f "$dir/$name.reject" "$dir/$name.out"
	if [[ $extra == --record ]]; then
		rm -f "$dir/$name.result"
	else
		cp "$(reference "$name" "$mode")" "$dir/$name.result"
	fi
	mode_flags "$mode"
	MYSQLTEST_VARDIR=$vardir MYSQL_TMP_DIR=$vardir/$where-$mode \
		SQLT_MODE=$mode SQLT_HOST=${addr%:*} SQLT_PORT=${addr##*:} \
		SQLT_USER=$FL_USER SQLT_PASSWORD=$FL_PASSWORD \
		timeout "$run_timeout" mariadb-test --no-defaults \
		--host="${addr%:*}" --port="${addr##*:}" --user="$FL_USER" --password="$FL_PASSWORD" \
		--database=test --max-connect-retries=3 --logdir="$dir" \
		--test-file="$suite/$name.test" --result-file="$dir/$name.result" \
		"${flags[@]}" ${extra:+"$extra"} >"$dir/$name.out" 2>&1 || rc=$?
	case $rc in
	0) echo pass ;;
	62) echo skip ;;
	124) echo timeout ;;
	*) echo fail ;;
	esac
}

# show_failure WHERE MODE TEST: what went wrong in one run.
show_failure() {
	local dir=$work/run/$1-$2 name=$3
	printf '\n===== %s, %s mode, %s =====\n' "$name" "$2" "$([[ $1 == direct ]] && echo "directly against the primary" || echo "through sluice")"
	if [[ -s $dir/$name.reject ]]; then
		printf -- '--- expected (%s)\n+++ got\n' "$(reference "$name" "$2" | sed "s|^$root/||")"
		diff -a -u "$dir/$name.result" "$dir/$name.reject" | tail -n +3 | cat -v | head -n "$diff_lines" || true
	fi
	grep -av '^\(ok\|not ok\|skipped\)$' "$dir/$name.out" | grep -av '^[-+@ ]' | cat -v | tail -n 15 || true
}

# Expected failures: "MODE" or "MODE:TEST" from the file and from EXPECTED_FAIL_MODES.
declare -A expected=()
add_expected() {
	local e=$1 m=${1%%:*}
	if [[ " $other_modes " == *" $m "* ]]; then
		return 0
	fi
	[[ $m == "*" || " $all_modes " == *" $m "* ]] || fl_die "expected failure '$e': unknown mode '$m'"
	if [[ $e == *:* && ! -f $suite/${e#*:}.test ]]; then
		fl_log "warning: expected failure '$e' names no test in $suite"
	fi
	expected[$e]=1
}
if [[ -f $expected_file ]]; then
	while IFS= read -r line || [[ -n $line ]]; do
		line=${line%%#*}
		for e in $line; do add_expected "$e"; done
	done <"$expected_file"
fi
ef=${EXPECTED_FAIL_MODES:-}
for e in ${ef//,/ }; do add_expected "$e"; done
is_expected() { # MODE TEST
	[[ -n ${expected[$1]+x} || -n ${expected[$1:$2]+x} || -n ${expected[*:$2]+x} ]]
}

# Through sluice with the sandbox's configuration as a user runs it: endpoint rw reads on the
# replicas at consistency session (FIDELITY_READS=primary pins its reads to the primary).
export FIDELITY_READS=${FIDELITY_READS:-replicas}
fl_build_sluice "$work/sluice"
# The sandbox puts unix sockets below the work directory; its path stays short.
fl_sandbox_up "$work/sandbox" --tls --replicas "${REPLICAS:-1}"
fl_sandbox_read "$work/sandbox"
ssl_ca=${SSL_CA:-$FL_CERT}
if [[ " ${modes[*]} " == *" ssl "* && $ssl_verify == 1 && ( -z $ssl_ca || ! -s $ssl_ca ) ]]; then
	fl_die "ssl mode needs a CA file: the sandbox certificate (cert_file in sandbox.json) or SSL_CA"
fi
fl_log "sandbox: primary $FL_PRIMARY, sluice rw $FL_RW; modes: ${modes[*]}; ${#tests[@]} tests"
for m in "${modes[@]}"; do
	why=$(check_mode "$FL_PRIMARY" "$m") || fl_die "directly against the primary: $why"
done

# --- RECORD=1: write the result files, then stop.
if [[ $record == 1 ]]; then
	wrote=0
	variants=0
	bad=()
	for t in "${tests[@]}"; do
		t0=$SECONDS
		out=$(run_test direct text "$t" --record)
		if [[ $out != pass ]]; then
			bad+=("$t (text: $out)")
			show_failure direct text "$t"
			continue
		fi
		cp "$work/run/direct-text/$t.result" "$refdir/$t.result"
		wrote=$((wrote + 1))
		note=
		for m in "${modes[@]}"; do
			[[ $m == text ]] && continue
			out=$(run_test direct "$m" "$t" --record)
			case $out in
			pass)
				if cmp -s "$work/run/direct-$m/$t.result" "$refdir/$t.result"; then
					rm -f "$refdir/$t.$m.result"
				else
					cp "$work/run/direct-$m/$t.result" "$refdir/$t.$m.result"
					variants=$((variants + 1))
					note+=" $m-variant"
				fi
				;;
			skip) note+=" $m-skipped" ;;
			*)
				bad+=("$t ($m: $out)")
				show_failure direct "$m" "$t"
				;;
			esac
		done
		printf '  %-22s recorded in %3ds%s\n' "$t" $((SECONDS - t0)) "$note"
	done
	printf '\nwrote %d result files and %d mode variants into %s\n' "$wrote" "$variants" "${refdir#"$root"/}"
	if ((${#bad[@]} > 0)); then
		printf 'could not record:\n'
		printf '  %s\n' "${bad[@]}"
		status=mismatch
		exit 1
	fi
	status=ok
	exit 0
fi

for t in "${tests[@]}"; do
	[[ -f $refdir/$t.result ]] || fl_die "no recorded result $refdir/$t.result (run RECORD=1 $0 $t)"
done

# --- Replay: per mode, each test directly and then through sluice.
fl_log "starting sluice serve"
fl_sluice_start "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice.log"

declare -A cell=() direct_ms=() sluice_ms=()
failures=() # "where mode test" of the unexpected failures that have a diff to show
unexpected=0
xfails=()
xpasses=()
notes=()
for m in "${modes[@]}"; do
	direct_ms[$m]=0
	sluice_ms[$m]=0
	sluice_ok=1
	if ! why=$(check_mode "$FL_RW" "$m"); then
		sluice_ok=0
		notes+=("$m: through sluice, $why; its tests were not run through sluice")
	fi
	fl_log "mode $m"
	for t in "${tests[@]}"; do
		t0=$(now_ms)
		d=$(run_test direct "$m" "$t")
		direct_ms[$m]=$((direct_ms[$m] + $(now_ms) - t0))
		if [[ $d == fail && $record != 1 && -s $work/run/direct-$m/$t.reject ]]; then
			# The server answered, otherwise than recorded: its own answer is the reference.
			mkdir -p "$work/live/$m"
			cp "$work/run/direct-$m/$t.reject" "$work/live/$m/$t.result"
			notes+=("$t ($m): this server's output differs from the recorded result; compared through sluice with this server's own")
			d=pass
		fi
		if [[ $sluice_ok == 1 ]]; then
			if ! fl_sluice_alive; then
				# A crash is a failure (the run goes on, so the rest is still reported).
				notes+=("FAIL: sluice had exited before $t in $m mode; restarted")
				unexpected=$((unexpected + 1))
				fl_sluice_stop
				fl_sluice_start "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice.log"
			fi
			t0=$(now_ms)
			s=$(run_test sluice "$m" "$t")
			sluice_ms[$m]=$((sluice_ms[$m] + $(now_ms) - t0))
			if ! fl_sluice_alive; then
				notes+=("FAIL: sluice exited during $t in $m mode")
				unexpected=$((unexpected + 1))
			fi
		else
			s=unsupported
		fi
		case $d in
		pass | skip) ;;
		*)
			cell[$t:$m]="BROKEN"
			failures+=("direct $m $t")
			unexpected=$((unexpected + 1))
			continue
			;;
		esac
		case $s in
		pass)
			if is_expected "$m" "$t"; then
				cell[$t:$m]=XPASS
				xpasses+=("$m:$t")
			else
				cell[$t:$m]=pass
			fi
			;;
		skip) cell[$t:$m]=skip ;;
		*)
			if is_expected "$m" "$t"; then
				cell[$t:$m]=xfail
				xfails+=("$m:$t")
			else
				cell[$t:$m]=FAIL
				unexpected=$((unexpected + 1))
				[[ $s == unsupported ]] || failures+=("sluice $m $t")
			fi
			if [[ $s == timeout ]]; then
				notes+=("$t in $m mode through sluice: timed out after ${run_timeout}s")
			fi
			;;
		esac
	done
done

if fl_sluice_panicked "$work/sluice.log"; then
	notes+=("FAIL: sluice logged a panic (see $work/sluice.log)")
	unexpected=$((unexpected + 1))
fi

# --- Report.
printf '\nmariadb-test through sluice (%s), %d tests; direct runs against the primary first\n\n' "$FL_RW" "${#tests[@]}"
printf '  %-22s' test
for m in "${modes[@]}"; do printf ' %-9s' "$m"; done
printf '\n'
for t in "${tests[@]}"; do
	printf '  %-22s' "$t"
	for m in "${modes[@]}"; do printf ' %-9s' "${cell[$t:$m]:--}"; done
	printf '\n'
done
printf '  %-22s' "seconds, direct"
for m in "${modes[@]}"; do printf ' %-9s' "$(seconds "${direct_ms[$m]}")"; done
printf '\n  %-22s' "seconds, sluice"
for m in "${modes[@]}"; do printf ' %-9s' "$(seconds "${sluice_ms[$m]}")"; done
printf '\n\n  pass: same as recorded; FAIL: differs through sluice; BROKEN: differs even directly\n'
printf '  (the test or its result needs fixing); xfail/XPASS: failed/passed though expected to fail\n'
if ((${#notes[@]} > 0)); then
	printf '\nNotes:\n'
	printf '  %s\n' "${notes[@]}"
fi
if ((${#xfails[@]} > 0)); then
	printf '\nExpected failures (%d): %s\n' "${#xfails[@]}" "${xfails[*]}"
fi
if ((${#xpasses[@]} > 0)); then
	printf '\nPassed though expected to fail (remove from the expectations): %s\n' "${xpasses[*]}"
fi
for f in ${failures[@]+"${failures[@]}"}; do
	read -r where m t <<<"$f"
	show_failure "$where" "$m" "$t"
done
leftover=$(fl_sql "$FL_PRIMARY" -e "SHOW DATABASES LIKE 'sqlt\\_%'" 2>/dev/null | tr '\n' ' ' || true)
if [[ -n $leftover ]]; then
	printf '\nDatabases left behind on the primary (a failing test stops before its cleanup): %s\n' "$leftover"
fi
echo

if ((unexpected > 0)); then
	status=mismatch
	fl_die "$unexpected unexpected failure(s) (EXPECTED_FAIL_MODES / ${expected_file#"$root"/} list the allowed ones)"
fi
status=ok
fl_log "ok: ${#tests[@]} tests x ${#modes[@]} modes, ${#xfails[@]} expected failures"
