#!/usr/bin/env bash
# sysbench-smoke.sh: a short sysbench load through sluice that must finish without a single
# error. Starts a sandbox and `sluice serve`, prepares sbtest (TABLES x TABLE_SIZE rows) on the
# primary, waits until the replicas have applied it, then runs each workload through sluice's
# rw endpoint in each mode:
#
#   ps          sysbench's default: server-side prepared statements (--db-ps-mode=auto)
#   noprepare   text protocol only (--db-ps-mode=disable)
#
# A run fails when sysbench exits non-zero, prints FATAL or ALERT lines, or reports any ignored
# error or reconnect. --mysql-ignore-errors is left at sysbench's default, so the first error
# other than a deadlock (1213), lock wait timeout (1205) or 1020 aborts the run; those three are
# counted as "ignored errors" and fail it too. Prints transactions and queries per second.
#
# Environment:
#   MODES="ps noprepare"        modes to run (default: both); SYSBENCH_MODES takes precedence
#   WORKLOADS="oltp_read_write oltp_point_select"
#   TIME=10                     seconds per run
#   THREADS=8                   sysbench threads
#   TABLES=4 TABLE_SIZE=10000   sbtest size
#   BASELINE=1                  also run everything directly against the primary, for comparison
#   EXPECTED_FAIL_MODES="ps"    failures through sluice that do not fail the script: MODE or
#                               MODE:WORKLOAD (MODE may be *); mysqltest.sh's modes (text,
#                               compress, ssl) are ignored, so one setting can serve both scripts
#   SLUICE_BIN=path             use this sluice binary instead of building one
#   KEEP=1                      keep the work directory and the sandbox
#   REPLICAS=N                  replicas in the sandbox (default 1)
#   POOL_MODE=transaction, POOL_MAX_PER_NODE=N   sluice's pool_mode and pool.max_per_node
#                                (scripts/lib.sh pool_config; default: the sandbox's)
#   SPLIT=0                     leave out the read/write-splitting runs (oltp_read_only --skip_trx=on
#                               and oltp_read_write with reads on the replicas, Com_select per node)
#
# Exit status: 0 when every run through sluice passed (or failed as expected), 1 otherwise.
# Everything talks to 127.0.0.1 only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FL_NAME=sysbench-smoke
# shellcheck source=scripts/fidelity-lib.sh
. "$root/scripts/fidelity-lib.sh"

readonly all_modes="ps noprepare"
# Modes of scripts/mysqltest.sh, which shares EXPECTED_FAIL_MODES: ignored here.
readonly other_modes="text compress ssl"
read -r -a modes <<<"${SYSBENCH_MODES:-${MODES:-$all_modes}}"
read -r -a workloads <<<"${WORKLOADS:-oltp_read_write oltp_point_select}"
run_time=${TIME:-10}
threads=${THREADS:-8}
tables=${TABLES:-4}
table_size=${TABLE_SIZE:-10000}
baseline=${BASELINE:-0}
readonly db=sbtest

((${#modes[@]} > 0)) || fl_die "MODES is empty"
for m in "${modes[@]}"; do
	[[ " $all_modes " == *" $m "* ]] || fl_die "unknown mode '$m' in MODES (known: $all_modes)"
done
((${#workloads[@]} > 0)) || fl_die "WORKLOADS is empty"
for n in "$run_time" "$threads" "$tables" "$table_size"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fl_die "TIME, THREADS, TABLES and TABLE_SIZE must be positive integers"
done
for b in sysbench mariadb; do
	command -v "$b" >/dev/null 2>&1 || fl_die "$b not found (apt-get install sysbench mariadb-client)"
done

declare -A expected=()
ef=${EXPECTED_FAIL_MODES:-}
for e in ${ef//,/ }; do
	m=${e%%:*}
	if [[ " $other_modes " == *" $m "* ]]; then
		continue
	fi
	[[ $m == "*" || " $all_modes " == *" $m "* ]] || fl_die "EXPECTED_FAIL_MODES entry '$e': unknown mode '$m'"
	expected[$e]=1
done
is_expected() { # MODE WORKLOAD
	[[ -n ${expected[$1]+x} || -n ${expected[$1:$2]+x} || -n ${expected[*:$2]+x} ]]
}

fl_begin sluice-sb

# run WHERE WORKLOAD MODE [ARGS...]: one sysbench run (ARGS go to sysbench); sets "verdict" (pass or the reason it failed) and
# "numbers" (tps, qps, average and 95th percentile latency in ms; - when missing).
run() {
	local where=$1 wl=$2 mode=$3 addr=$FL_RW log rc=0 ignored reconnects fatal ps=auto
	shift 3
	if [[ $where == direct ]]; then
		addr=$FL_PRIMARY
	fi
	if [[ $mode == noprepare ]]; then
		ps=disable
	fi
	log=$work/$where-$wl-$mode.log
	sb "$addr" "$wl" --db-ps-mode="$ps" --threads="$threads" --time="$run_time" --report-interval=0 \
		--percentile=95 "$@" run >"$log" 2>&1 || rc=$?
	local tps qps avg p95
	tps=$(rate "$log" transactions)
	qps=$(rate "$log" queries)
	avg=$(report_value "$log" avg)
	p95=$(report_value "$log" '95th percentile')
	numbers=$(printf '%10s %10s %8s %8s' "${tps:--}" "${qps:--}" "${avg:--}" "${p95:--}")
	ignored=$(report_value "$log" 'ignored errors')
	reconnects=$(report_value "$log" reconnects)
	# The first error sysbench names (its "MySQL error: N" line), else its first FATAL line.
	fatal=$(grep -m 1 -E 'MySQL error|error [0-9]+' "$log" || grep -m 1 -E 'FATAL|ALERT' "$log" || true)
	if ((rc != 0)); then
		verdict="exit $rc${fatal:+: $fatal}"
	elif [[ -n $fatal ]]; then
		verdict=$fatal
	elif [[ -z $ignored || -z $qps ]]; then
		verdict="no statistics in the report"
	elif [[ $ignored != 0 ]]; then
		verdict="$ignored ignored errors: $(grep -m 1 -iE 'ignoring error|deadlock|lock wait' "$log" || echo 'see log')"
	elif [[ ${reconnects:-0} != 0 ]]; then
		verdict="$reconnects reconnects"
	else
		verdict=pass
	fi
}

fl_build_sluice "$work/sluice"
fl_sandbox_up "$work/sandbox" --replicas "${REPLICAS:-1}"
fl_sandbox_read "$work/sandbox"
fl_log "sandbox: primary $FL_PRIMARY, replicas ${FL_REPLICAS[*]:-none}, sluice rw $FL_RW"
# The sandbox's own configuration (reads on the replicas), before fl_sluice_start pins reads.
cp "$FL_SANDBOX_DIR/sluice.yaml" "$work/replicas.yaml"

fl_sb_prepare "$work/prepare.log"

fl_log "starting sluice serve"
fl_sluice_start "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice.log"

wheres=(sluice)
if [[ $baseline == 1 ]]; then
	wheres=(direct sluice)
fi
lines=()
failures=()
xfails=()
xpasses=()
for wl in "${workloads[@]}"; do
	for m in "${modes[@]}"; do
		for w in "${wheres[@]}"; do
			if [[ $w == sluice ]] && ! fl_sluice_alive; then
				lines+=("$(printf '%-18s %-10s %-7s sluice had exited; restarted' "$wl" "$m" "$w")")
				failures+=("sluice had exited before $wl $m; restarted")
				fl_sluice_stop
				fl_sluice_start "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice.log"
			fi
			fl_log "$wl, $m, $w: ${run_time}s x $threads threads"
			run "$w" "$wl" "$m"
			outcome=$verdict
			if [[ $w == direct ]]; then
				if [[ $verdict != pass ]]; then
					failures+=("$wl $m directly: $verdict")
				fi
			elif [[ $verdict == pass ]]; then
				if is_expected "$m" "$wl"; then
					outcome=XPASS
					xpasses+=("$m:$wl")
				fi
			elif is_expected "$m" "$wl"; then
				outcome="xfail: $verdict"
				xfails+=("$m:$wl")
			else
				outcome="FAIL: $verdict"
				failures+=("$wl $m through sluice: $verdict")
			fi
			lines+=("$(printf '%-18s %-10s %-7s %s  %s' "$wl" "$m" "$w" "$numbers" "$outcome")")
		done
	done
done

# Read/write splitting: the same sysbench through endpoint rw with the sandbox's read weights
# (reads on the replicas), counting Com_select on every node. sysbench's reads inside its
# transactions stay on the primary; oltp_read_only --skip_trx=on reads in autocommit, which
# must land on the replicas. Any error fails the run.
com_select() { fl_sql "$1" -e "SHOW GLOBAL STATUS LIKE 'Com_select'" | awk '{ print $2 }'; }
split_lines=()
if [[ ${SPLIT:-1} == 1 ]]; then
	fl_sluice_stop
	FIDELITY_READS=replicas fl_sluice_start "$work/replicas.yaml" "$work/sluice-split.log"
	nodes=("$FL_PRIMARY" ${FL_REPLICAS[@]+"${FL_REPLICAS[@]}"})
	for spec in "oltp_read_only --skip_trx=on" "oltp_read_write"; do
		read -r -a args <<<"$spec"
		declare -A before=()
		for n in "${nodes[@]}"; do before[$n]=$(com_select "$n"); done
		fl_log "split: $spec, ps, sluice: ${run_time}s x $threads threads"
		run sluice "${args[0]}" ps "${args[@]:1}"
		deltas=""
		replica_reads=0
		for n in "${nodes[@]}"; do
			d=$(($(com_select "$n") - before[$n]))
			deltas+=" $n=$d"
			if [[ $n != "$FL_PRIMARY" ]]; then
				replica_reads=$((replica_reads + d))
			fi
		done
		outcome=$verdict
		if [[ $verdict != pass ]]; then
			failures+=("split $spec: $verdict")
		elif [[ $spec == oltp_read_only* ]] && ((replica_reads == 0)); then
			outcome="FAIL: no read reached a replica"
			failures+=("split $spec: no read reached a replica")
		fi
		split_lines+=("$(printf '%-34s %s  %s  Com_select:%s' "$spec" "$numbers" "$outcome" "$deltas")")
		unset before
	done
fi

printf '\nsysbench %s, %d threads, %ss per run, %d x %d rows; sluice rw %s\n\n' \
	"$(sysbench --version | awk '{ print $2 }')" "$threads" "$run_time" "$tables" "$table_size" "$FL_RW"
printf '%-18s %-10s %-7s %10s %10s %8s %8s  %s\n' workload mode target tps qps 'avg ms' 'p95 ms' result
printf '%s\n' "${lines[@]}"
if ((${#split_lines[@]} > 0)); then
	printf '\nRead/write splitting (endpoint rw with the sandbox read weights; Com_select per node):\n'
	printf '%s\n' "${split_lines[@]}"
fi
if ((${#xfails[@]} > 0)); then
	printf '\nExpected failures: %s\n' "${xfails[*]}"
fi
if ((${#xpasses[@]} > 0)); then
	printf '\nPassed though expected to fail (remove from EXPECTED_FAIL_MODES): %s\n' "${xpasses[*]}"
fi
echo
if ! fl_sluice_alive; then
	failures+=("sluice is not running any more")
fi
if fl_sluice_panicked "$work/sluice.log"; then
	failures+=("sluice logged a panic")
fi
if ((${#failures[@]} > 0)); then
	for f in "${failures[@]}"; do
		fl_log "failed: $f"
	done
	for f in "$work"/sluice-*.log; do
		if grep -qE 'FATAL|ALERT|ignored errors:[[:space:]]*[1-9]' "$f"; then
			fl_tail "$f" 15
		fi
	done
	status=mismatch
	fl_die "${#failures[@]} run(s) failed"
fi
status=ok
fl_log "ok"
