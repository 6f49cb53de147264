#!/usr/bin/env bash
# bench/run.sh: sysbench throughput, latency, proxy CPU and memory of sluice next to a direct
# connection and HAProxy, all against one 'sluice sandbox up' cluster (1 primary, 2 replicas) on
# 127.0.0.1; then what idle client connections cost sluice in memory.
#
# Systems, run side by side and interleaved (A B C D A B C D ...):
#   A direct    sysbench straight to the primary
#   B haproxy   HAProxy 'mode tcp', nbthread 1, in front of the primary
#   C sluice-p  sluice endpoint rw with every read on the primary (pin_reads), threads: 1
#   E sluice-pa sluice-p again, with bench/adminload calling its admin API beside the load
#               (ADMIN_RATE rounds a second of GET /v1/proxy, a PATCH written back, a /metrics scrape)
#   D sluice-r  sluice endpoint rw with the sandbox's read weights (reads on the replicas), threads: 1
#   F sluice-b  only with SLUICE_BASE_BIN: sluice-p's configuration run by another sluice binary (the
#               one before a change), interleaved with the rest: a before/after pair on one machine
#
# Then the cost of the consistency levels: a third sluice (sluice-c, threads: 1) with four more
# read-write endpoints, cons-eventual, cons-session, cons-global and cons-latest (reads on the
# replicas), each at that level; sysbench oltp_read_only --skip_trx=on and oltp_point_select through the four,
# interleaved, each with a concurrent writer through the same endpoint (sysbench
# oltp_update_non_index, one thread, CONS_WRITE_RATE commits/s: the position a read must see keeps
# moving), and bench/ryw (read-your-writes: UPDATE then SELECT on one connection) through each;
# then, under the same read and write load on cons-latest, bench/ryw -direct: writes that bypass
# sluice (straight to the primary) and how long they take to be visible through cons-latest.
#
# Then short connections (part short): bench/shortconn's SHORT_CLIENTS clients each loop over
# connect, one point select, disconnect, for SHORT_TIME seconds, through direct, haproxy,
# sluice-off (a sluice with endpoint rw at pool_mode: off, reads on the primary) and
# sluice-session (pool_mode: session), interleaved; connections per second and p50/p99 of an
# iteration. A binary that does not know the key pool_mode runs sluice-off without it (no pool:
# what off means) and has no sluice-session (reported as not available).
#
# Environment (see bench/README.md):
#   WORKLOADS="oltp_point_select oltp_read_only oltp_read_write"
#                                  (oltp_read_only always runs with --skip_trx=on)
#   MODES="ps noprepare"           ps: --db-ps-mode=auto; noprepare: --db-ps-mode=disable
#   THREADS="8"                    sysbench threads; a list ("1 8 64 256") is a thread sweep
#   TIME=N                         seconds per run (default: 10 for oltp_point_select, 5 for the others)
#   REPS=3                         repetitions
#   TABLES=4 TABLE_SIZE=10000      sbtest size
#   SLUICE_THREADS=1               'threads:' (GOMAXPROCS) of the sluices; 0 = every CPU
#   IDLE_CONNS=1000                idle client connections opened through sluice-p at the end; 0 skips
#   IDLE_QUERY="SELECT 1"          the statement each idle connection runs once after its login ("": none)
#                                  (with them open, SCRAPES /metrics scrapes measure a scrape's cost)
#   ADMIN_RATE=10                  rounds a second of bench/adminload beside system sluice-pa
#   SCRAPES=100                    /metrics scrapes of sluice-p without and with the idle connections
#   PARTS="systems idle consistency short many poolmodes drivers"  which parts run (any of them,
#                                  in that order; many, poolmodes, drivers: bench/pool.sh says what
#                                  they run and their settings MANY_CLIENTS, MANY_TIME, MANY_INTERVAL,
#                                  MANY_MAX_PER_NODE, MANY_CONSISTENCY, PM_THREADS,
#                                  DRV_CLIENTS, DRV_N)
#   CONS_WORKLOADS="oltp_read_only oltp_point_select"  sysbench workloads of the consistency part
#   CONS_THREADS=8                 sysbench threads of the consistency part
#   CONS_TIMEOUT=                  consistency_timeout of the cons-* endpoints (default: sluice's, 10ms)
#   CONS_WRITE_RATE=200            commits/s of the consistency part's concurrent writer (0: none)
#   RYW_N=2000                     write-then-read pairs per level (bench/ryw)
#   SHORT_CLIENTS=16               clients of the short part (bench/shortconn)
#   SHORT_TIME=10                  seconds per short-connection run
#   SMOKE=1                        TIME=3 REPS=1, only the first workload, IDLE_CONNS=100; consistency
#                                  part: only the first mode, RYW_N=200; SHORT_TIME=2; MANY_CLIENTS=200
#                                  MANY_TIME=5 MANY_INTERVAL=1s; poolmodes: only the first mode;
#                                  DRV_CLIENTS=4 DRV_N=20
#   OUT=path                       results JSON (default: the work directory, see README)
#   SLUICE_BIN=path                use this sluice binary instead of building one
#   SLUICE_BASE_BIN=path           also run system sluice-b with this binary (e.g. one built from the
#                                  commit before a change: git worktree add /tmp/base HEAD~1 &&
#                                  go build -o /tmp/sluice-base ./cmd/sluice in it), and in the
#                                  consistency part sluice-cb: global and latest served by it
#                                  (levels global-before, latest-before), interleaved
#   KEEP=1                         keep the work directory and the sandbox
#   PROFILE_DIR=dir                write CPU profiles of the sluices there (sluice-p.cpu,
#                                  sluice-r.cpu, sluice-c.cpu, sluice-off.cpu, sluice-session.cpu;
#                                  read with 'go tool pprof BINARY FILE')
#
# Exit status: 0 when every run finished without errors (and no stale read at session, global or latest),
# 1 otherwise. The consistency levels' QPS targets are reported, never a failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FL_NAME=bench
# shellcheck source=scripts/fidelity-lib.sh
. "$root/scripts/fidelity-lib.sh"

readonly all_modes="ps noprepare" all_workloads="oltp_point_select oltp_read_only oltp_read_write"
read -r -a modes <<<"${MODES:-$all_modes}"
read -r -a workloads <<<"${WORKLOADS:-$all_workloads}"
read -r -a thread_counts <<<"${THREADS:-8}"
run_time=${TIME:-}
reps=${REPS:-3}
tables=${TABLES:-4}
table_size=${TABLE_SIZE:-10000}
sluice_threads=${SLUICE_THREADS:-1}
read -r -a idle_counts <<<"${IDLE_CONNS:-1000}"
idle_query=${IDLE_QUERY-SELECT 1}
admin_rate=${ADMIN_RATE:-10}
scrapes=${SCRAPES:-100}
readonly all_parts="systems idle consistency short many poolmodes drivers" all_cons_workloads="oltp_read_only oltp_point_select"
read -r -a parts <<<"${PARTS:-$all_parts}"
read -r -a cons_workloads <<<"${CONS_WORKLOADS:-$all_cons_workloads}"
cons_threads=${CONS_THREADS:-8}
cons_timeout=${CONS_TIMEOUT:-}
cons_write_rate=${CONS_WRITE_RATE:-200}
ryw_n=${RYW_N:-2000}
short_clients=${SHORT_CLIENTS:-16}
short_time=${SHORT_TIME:-10}
cons_modes=("${modes[@]}")
if [[ ${SMOKE:-0} == 1 ]]; then
	run_time=3
	reps=1
	workloads=("${workloads[0]}")
	read -r -a idle_counts <<<"${IDLE_CONNS:-100}"
	cons_modes=("${modes[0]}")
	ryw_n=${RYW_N:-200}
	short_time=${SHORT_TIME:-2}
fi
systems=(direct haproxy sluice-p sluice-pa sluice-r)
base_bin=${SLUICE_BASE_BIN:-}
if [[ -n $base_bin ]]; then
	[[ -x $base_bin ]] || fl_die "SLUICE_BASE_BIN=$base_bin is not an executable file"
	systems+=(sluice-b)
fi
readonly db=sbtest systems levels=(eventual session global latest)

((${#modes[@]} > 0)) || fl_die "MODES is empty"
for m in "${modes[@]}"; do
	[[ " $all_modes " == *" $m "* ]] || fl_die "unknown mode '$m' in MODES (known: $all_modes)"
done
((${#workloads[@]} > 0)) || fl_die "WORKLOADS is empty"
for w in "${workloads[@]}"; do
	[[ " $all_workloads " == *" $w "* ]] || fl_die "unknown workload '$w' (known: $all_workloads)"
done
((${#thread_counts[@]} > 0)) || fl_die "THREADS is empty"
for n in ${run_time:+"$run_time"} "$reps" "$tables" "$table_size" "${thread_counts[@]}" "$cons_threads" "$ryw_n" "$short_clients" "$short_time"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fl_die "TIME, REPS, THREADS, TABLES, TABLE_SIZE, CONS_THREADS, RYW_N, SHORT_CLIENTS and SHORT_TIME must be positive integers"
done
[[ $admin_rate =~ ^[0-9]+(\.[0-9]+)?$ ]] || fl_die "ADMIN_RATE must be a number of rounds a second"
for n in "$sluice_threads" "$scrapes"; do
	[[ $n =~ ^[0-9]+$ ]] || fl_die "SLUICE_THREADS and SCRAPES must be integers >= 0"
done
# IDLE_CONNS: 0 (skip the idle step), or counts in increasing order, opened in steps.
if [[ ${idle_counts[*]} == 0 ]]; then
	idle_counts=()
fi
prev=0
for n in ${idle_counts[@]+"${idle_counts[@]}"}; do
	if ! [[ $n =~ ^[1-9][0-9]*$ ]] || ((n <= prev)); then
		fl_die "IDLE_CONNS must be 0 or positive counts in increasing order (got '${IDLE_CONNS:-}')"
	fi
	prev=$n
done
# sluice-p holds two sockets per idle session (the client's and its primary connection) within
# this shell's open-files limit, which it inherits: counts above it are reported as skipped.
fd_limit=$(ulimit -n)
[[ $fd_limit =~ ^[0-9]+$ ]] || fd_limit=1048576
idle_fit=() idle_skipped=()
for n in ${idle_counts[@]+"${idle_counts[@]}"}; do
	if ((2 * n + 200 <= fd_limit)); then idle_fit+=("$n"); else idle_skipped+=("$n"); fi
done
idle_conns=0
if ((${#idle_fit[@]} > 0)); then idle_conns=${idle_fit[-1]}; fi
((${#parts[@]} > 0)) || fl_die "PARTS is empty"
for part in "${parts[@]}"; do
	[[ " $all_parts " == *" $part "* ]] || fl_die "unknown part '$part' in PARTS (known: $all_parts)"
done
((${#cons_workloads[@]} > 0)) || fl_die "CONS_WORKLOADS is empty"
for w in "${cons_workloads[@]}"; do
	[[ " $all_workloads " == *" $w "* ]] || fl_die "unknown workload '$w' in CONS_WORKLOADS (known: $all_workloads)"
done
[[ -z $cons_timeout || $cons_timeout =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || fl_die "CONS_TIMEOUT must be a duration like 10ms or 1s"
[[ $cons_write_rate =~ ^[0-9]+$ ]] || fl_die "CONS_WRITE_RATE must be a number of commits per second (0: no writer)"

# has_part PART: PART is in PARTS.
has_part() { [[ " ${parts[*]} " == *" $1 "* ]]; }
# The pool parts (many, poolmodes, drivers).
# shellcheck source=bench/pool.sh
. "$root/bench/pool.sh"
pool_parts_check
want_systems=0 want_idle=0 want_cons=0 want_short=0
if has_part systems; then want_systems=1; fi
if has_part idle && ((${#idle_fit[@]} > 0)); then want_idle=1; fi
if has_part idle && ((${#idle_fit[@]} == 0 && ${#idle_skipped[@]} > 0)); then
	fl_log "note: every IDLE_CONNS count needs more open files than ulimit -n ($fd_limit) allows: the idle step is skipped"
fi
if has_part consistency; then want_cons=1; fi
if has_part short; then want_short=1; fi
# Missing tools: apt-get update, then install (as root or with password-less sudo), or say how.
ensure_packages "sysbench haproxy mariadb mariadbd" "sysbench haproxy mariadb-client mariadb-server" ||
	fl_die "sysbench, haproxy and MariaDB are needed (see above)"
if [[ -n ${GOMAXPROCS:-} ]]; then
	# It would win over the sluices' 'threads:' setting.
	fl_log "GOMAXPROCS=$GOMAXPROCS is set; unsetting it (SLUICE_THREADS sets the sluices' threads)"
	unset GOMAXPROCS
fi
clk_tck=$(getconf CLK_TCK)

# time_of WORKLOAD: seconds per run.
time_of() {
	if [[ -n $run_time ]]; then
		echo "$run_time"
	elif [[ $1 == oltp_point_select ]]; then
		echo 10
	else
		echo 5
	fi
}

# Every node's max_connections: the widest sysbench run through sluice-r or sluice-c (one
# connection per client on the primary and on each replica, with room for the sluices' monitors
# and binlog streams), and the idle connections, each of which holds a primary connection through
# sluice-p. The sluices pool their node connections (pool_mode: session, the default): a client
# that leaves leaves its connections open for pool.idle_timeout (60 s), so what one part used
# is still open in the next: every part's count is added, not the widest taken. The short part's
# clients also leave server threads ending behind them.
max_threads=$cons_threads
for t in "${thread_counts[@]}"; do
	if ((t > max_threads)); then max_threads=$t; fi
done
max_conns=$((200 + 6 * max_threads))
if ((want_idle)); then max_conns=$((max_conns + 2 * idle_conns)); fi
if ((want_short)); then max_conns=$((max_conns + 8 * short_clients)); fi
# The pool parts: at most max_per_node per node for sluice-tx and sluice-drv, pm-* one per thread.
if has_part many || has_part drivers || has_part poolmodes; then max_conns=$((max_conns + 2 * many_max + 6 * pm_threads + 100)); fi

haproxy_pid=
pid_p=
admin_p=
pid_c=
pid_cb=
pid_r=
pid_b=
pid_so=
pid_ss=
idle_pids=()
idle_fds=()
fl_begin sluice-bench
out=${OUT:-$work/results.json}

# stop_idle: close the idle-connection openers' stdin and stop them.
stop_idle() {
	local f p
	for f in ${idle_fds[@]+"${idle_fds[@]}"}; do
		exec {f}>&-
	done
	idle_fds=()
	for p in ${idle_pids[@]+"${idle_pids[@]}"}; do
		fl_stop_pid "$p"
	done
	idle_pids=()
}

# Stop the idle-connection openers, HAProxy, the sluice of system C and sluice-c (fl_cleanup stops
# FL_SLUICE_PID, system D's, the sandbox, and removes $work).
bench_cleanup() {
	local rc=$?
	set +e
	stop_idle
	fl_stop_pid "$haproxy_pid"
	haproxy_pid=
	if [[ -n $pid_p && $pid_p != "$FL_SLUICE_PID" ]]; then
		fl_stop_pid "$pid_p"
	fi
	pid_p=
	# With sluice-b, FL_SLUICE_PID is sluice-b's: system D's is stopped here.
	if [[ -n $pid_r && $pid_r != "$FL_SLUICE_PID" ]]; then
		fl_stop_pid "$pid_r"
	fi
	pid_r=
	fl_stop_pid "$pid_c"
	pid_c=
	fl_stop_pid "$pid_cb"
	pid_cb=
	# sluice-b and the short part's sluices; the last one started is FL_SLUICE_PID (fl_cleanup's).
	local p
	for p in "$pid_b" "$pid_so" "$pid_ss"; do
		if [[ -n $p && $p != "$FL_SLUICE_PID" ]]; then
			fl_stop_pid "$p"
		fi
	done
	pid_b=""
	pid_so=""
	pid_ss=""
	pool_parts_stop
	if [[ $status == failed ]]; then
		for f in "$work"/sluice-tx.log "$work"/pm-*.log "$work"/sluice-drv.log "$work"/many.log; do
			[[ -f $f ]] && fl_tail "$f"
		done
		fl_tail "$work/haproxy.log"
		fl_tail "$work/sluice-p.log"
		fl_tail "$work/sluice-r.log"
		fl_tail "$work/sluice-b.log"
		for f in "$work"/idleconns-*.log; do
			fl_tail "$f"
		done
		fl_tail "$work/sluice-c.log"
		fl_tail "$work/sluice-off.log"
		fl_tail "$work/sluice-session.log"
	fi
	(exit "$rc")
	fl_cleanup
}
trap bench_cleanup EXIT

# free_port: a 127.0.0.1 port nothing answers on, below the kernel's ephemeral range (a port in
# it can be taken, between this check and sluice's listen, as the source port of any outgoing
# connection: sysbench's, sluice's own to the nodes) and off the sandbox's default ports.
free_port() {
	local p hi
	hi=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	((hi > 21000)) || hi=32768
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % (hi - 20000)))
		if ((p >= 23306 && p < 23376)); then
			continue
		fi
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	fl_die "no free port found"
}

# set_listen CONFIG ENDPOINT ADDR: rewrite the listen line of that endpoint in a sandbox sluice.yaml.
set_listen() {
	awk -v ep="$2" -v addr="$3" '
		/^  - name: / { in_ep = ($3 == ep) }
		in_ep && /^    listen:/ { print "    listen: " addr; changed = 1; next }
		{ print }
		END { if (!changed) exit 3 }' "$1" >"$1.new" || return
	mv "$1.new" "$1"
}

# set_threads CONFIG N: the top-level 'threads:' key (GOMAXPROCS) of a sluice.yaml, replacing any.
set_threads() {
	grep -v '^threads:' "$1" >"$1.new" || true
	printf 'threads: %s\n' "$2" >>"$1.new"
	mv "$1.new" "$1"
}

# cpu_ticks PID: utime + stime (fields 14 and 15 of /proc/PID/stat), in clock ticks.
cpu_ticks() {
	local s f
	s=$(<"/proc/$1/stat")
	s=${s##*) }
	read -r -a f <<<"$s"
	echo $((f[11] + f[12]))
}

# mem_kib PID FIELD: VmRSS, VmHWM, ... of /proc/PID/status, in KiB.
mem_kib() { awk -v f="$2:" '$1 == f { print $2; exit }' "/proc/$1/status"; }

# reset_peak PID: start VmHWM afresh at the current RSS (clear_refs 5); fails when not allowed.
reset_peak() { { echo 5 >"/proc/$1/clear_refs"; } 2>/dev/null; }

mib() { awk -v k="$1" 'BEGIN { if (k == "" || k == "-") print "-"; else printf "%.1f", k / 1024 }'; }

# com_select ADDR: the node's global Com_select counter.
com_select() { fl_sql "$1" -e "SHOW GLOBAL STATUS LIKE 'Com_select'" | awk '{ print $2 }'; }

# primary_conns: Threads_connected on the primary.
primary_conns() { fl_sql "$FL_PRIMARY" -e "SHOW GLOBAL STATUS LIKE 'Threads_connected'" | awk '{ print $2 }'; }

# p_alive: sluice-p is still running.
p_alive() { kill -0 "$pid_p" 2>/dev/null; }

# one_run SYSTEM ADDR PID WORKLOAD MODE THREADS REP SECONDS TSV: one sysbench run through ADDR,
# with the CPU time and peak RSS of the proxy PID (none when empty) and every node's Com_select
# read around it; appends one line to TSV (columns: see the medians below), and to failures when
# the run had an error. The log is $work/run-WORKLOAD-MODE-THREADS-SYSTEM-REP.log.
one_run() {
	local sys=$1 addr=$2 pid=$3 wl=$4 m=$5 th=$6 rep=$7 secs=$8 tsv=$9
	local ps=auto extra=() log sel_before=() sel=() before=0 rc=0 cpu=- rss=- k n
	local qps queries avg p99 ignored reconnects errors fatal cpu_us=- cpu_s=-
	if [[ $m == noprepare ]]; then
		ps=disable
	fi
	if [[ $wl == oltp_read_only ]]; then
		extra=(--skip_trx=on)
	fi
	if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
		fl_die "$sys (pid $pid) is not running any more"
	fi
	log=$work/run-$wl-$m-$th-$sys-$rep.log
	for n in "${nodes[@]}"; do sel_before+=("$(com_select "$n")"); done
	if [[ -n $pid ]]; then
		if [[ $rss_peak == run ]]; then
			reset_peak "$pid" || fl_die "clear_refs of $sys (pid $pid) failed"
		fi
		before=$(cpu_ticks "$pid")
	fi
	local admin_pid=""
	if [[ $sys == sluice-pa ]]; then
		# The admin calls run as long as sysbench does.
		"$work/adminload" -admin "$admin_p" -duration "${secs}s" -rate "$admin_rate" \
			>"$work/admin-$wl-$m-$th-$rep.json" 2>&1 &
		admin_pid=$!
	fi
	sb "$addr" "$wl" --db-ps-mode="$ps" --threads="$th" --time="$secs" \
		--report-interval=0 --percentile=99 ${extra[@]+"${extra[@]}"} run >"$log" 2>&1 || rc=$?
	if [[ -n $admin_pid ]] && ! wait "$admin_pid"; then
		failures+=("$wl $m $th threads $sys rep $rep: admin calls failed: $(tr '\n' ' ' <"$work/admin-$wl-$m-$th-$rep.json")")
	fi
	if [[ -n $pid ]]; then
		cpu=$(($(cpu_ticks "$pid") - before))
		rss=$(mem_kib "$pid" VmHWM)
	fi
	for k in "${!nodes[@]}"; do sel+=($(($(com_select "${nodes[$k]}") - sel_before[k]))); done
	qps=$(rate "$log" queries)
	queries=$(report_value "$log" queries)
	avg=$(report_value "$log" avg)
	p99=$(report_value "$log" '99th percentile')
	ignored=$(report_value "$log" 'ignored errors')
	reconnects=$(report_value "$log" reconnects)
	errors=$((${ignored:-0} + ${reconnects:-0}))
	fatal=$(grep -m 1 -E 'FATAL|ALERT|MySQL error' "$log" || true)
	if ((rc != 0)) || [[ -n $fatal || -z $qps || -z $ignored ]]; then
		errors=$((errors + 1))
	fi
	if ((errors > 0)); then
		failures+=("$wl $m $th threads $sys rep $rep: exit $rc, ${ignored:-?} ignored errors, ${reconnects:-?} reconnects${fatal:+: $fatal}")
	fi
	if [[ $cpu != - && -n $queries && $queries != 0 ]]; then
		cpu_us=$(awk -v t="$cpu" -v hz="$clk_tck" -v q="$queries" 'BEGIN { printf "%.2f", t / hz * 1e6 / q }')
	fi
	if [[ $cpu != - ]]; then
		cpu_s=$(awk -v t="$cpu" -v hz="$clk_tck" 'BEGIN { printf "%.2f", t / hz }')
	fi
	printf '%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%d\t%d\t%d\n' "$wl" "$m" "$th" "$sys" "$rep" \
		"${qps:--}" "${avg:--}" "${p99:--}" "${queries:--}" "$errors" "$cpu_s" "$cpu_us" "$rc" "${rss:--}" \
		"${sel[0]}" "${sel[1]}" "${sel[2]}" >>"$tsv"
}

fl_build_sluice "$work/sluice"
if ((want_idle)); then
	command -v go >/dev/null 2>&1 || fl_die "go not found: needed to build bench/idleconns (IDLE_CONNS=0 skips that step)"
	(cd "$root" && go build -o "$work/idleconns" ./bench/idleconns) || fl_die "go build ./bench/idleconns failed"
fi
if ((want_systems || want_idle)); then
	command -v go >/dev/null 2>&1 || fl_die "go not found: needed to build bench/adminload"
	(cd "$root" && go build -o "$work/adminload" ./bench/adminload) || fl_die "go build ./bench/adminload failed"
fi
if ((want_cons)); then
	command -v go >/dev/null 2>&1 || fl_die "go not found: needed to build bench/ryw (PARTS without consistency skips that part)"
	(cd "$root" && go build -o "$work/ryw" ./bench/ryw) || fl_die "go build ./bench/ryw failed"
fi
if ((want_short)); then
	command -v go >/dev/null 2>&1 || fl_die "go not found: needed to build bench/shortconn (PARTS without short skips that part)"
	(cd "$root" && go build -o "$work/shortconn" ./bench/shortconn) || fl_die "go build ./bench/shortconn failed"
fi
pool_parts_build
fl_sandbox_up "$work/sandbox" --replicas 2 --max-connections "$max_conns"
fl_sandbox_read "$work/sandbox"
((${#FL_REPLICAS[@]} == 2)) || fl_die "expected 2 replicas, got ${#FL_REPLICAS[@]}"
fl_log "sandbox: primary $FL_PRIMARY, replicas ${FL_REPLICAS[*]}, max_connections $max_conns"
primary_name=$(awk '/^  - name: /{ n = $3 } /^    role: primary/{ print n; exit }' "$FL_SANDBOX_DIR/sluice.yaml")
[[ -n $primary_name ]] || fl_die "no primary backend in $FL_SANDBOX_DIR/sluice.yaml"
readonly node_labels=(p r1 r2)
nodes=("$FL_PRIMARY" "${FL_REPLICAS[@]}")
# node_pids: each node's mariadbd pid (from its @@pid_file), for the CPU the nodes spend in the
# short part; empty where the file cannot be read (that part then shows no node CPU).
node_pids=()
for n in "${nodes[@]}"; do
	f=$(fl_sql "$n" -e 'SELECT @@pid_file' 2>/dev/null || true)
	if [[ -n $f && -r $f ]] && read -r p <"$f" && [[ $p =~ ^[0-9]+$ ]] && [[ -r /proc/$p/stat ]]; then
		node_pids+=("$p")
	else
		node_pids=()
		break
	fi
done
# nodes_cpu_ticks: the nodes' CPU so far (sum of cpu_ticks), - without node_pids.
nodes_cpu_ticks() {
	local t=0 p
	((${#node_pids[@]} > 0)) || { echo -; return; }
	for p in "${node_pids[@]}"; do
		t=$((t + $(cpu_ticks "$p")))
	done
	echo "$t"
}

fl_sb_prepare "$work/prepare.log"

haproxy_addr=
addr_p=
addr_r=
pid_r=
sandbox_rw=$FL_RW
if ((want_systems || want_short)); then
	# B: HAProxy.
	haproxy_addr=127.0.0.1:$(free_port)
	sed -e "s/@LISTEN@/$haproxy_addr/" -e "s/@PRIMARY@/$FL_PRIMARY/" "$root/bench/haproxy.cfg" >"$work/haproxy.cfg"
	haproxy -c -q -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 || {
		fl_tail "$work/haproxy.log"
		fl_die "haproxy rejected $work/haproxy.cfg"
	}
	haproxy -db -f "$work/haproxy.cfg" >>"$work/haproxy.log" 2>&1 &
	haproxy_pid=$!
	fl_wait_port "$haproxy_addr" 10 || fl_die "haproxy did not listen on $haproxy_addr"
fi

FL_SLUICE_ARGS=()
if [[ -n ${PROFILE_DIR:-} ]]; then
	mkdir -p "$PROFILE_DIR"
	PROFILE_DIR=$(cd "$PROFILE_DIR" && pwd)
	cp "$FL_SLUICE" "$PROFILE_DIR/sluice"
fi
if ((want_systems || want_idle)); then
	# C: sluice with reads pinned to the primary, on the sandbox's rw/ro ports.
	cp "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice-p.yaml"
	pin_reads "$work/sluice-p.yaml" "$primary_name" || fl_die "cannot rewrite read_weights in sluice-p.yaml"
	set_threads "$work/sluice-p.yaml" "$sluice_threads"
	# Its admin API, for system sluice-pa and the cost of a scrape (the sandbox writes none).
	admin_p=127.0.0.1:$(free_port)
	printf 'admin: {listen: "%s"}\n' "$admin_p" >>"$work/sluice-p.yaml"
	if [[ -n ${PROFILE_DIR:-} ]]; then
		FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/sluice-p.cpu")
	fi
	FIDELITY_READS=replicas fl_sluice_start "$work/sluice-p.yaml" "$work/sluice-p.log"
	pid_p=$FL_SLUICE_PID
	addr_p=$sandbox_rw
fi

if ((want_systems)); then
	# D: sluice with the sandbox's read weights, on fresh ports.
	addr_r=127.0.0.1:$(free_port)
	cp "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice-r.yaml"
	set_listen "$work/sluice-r.yaml" rw "$addr_r" || fl_die "cannot rewrite the rw listen address"
	set_listen "$work/sluice-r.yaml" ro "127.0.0.1:$(free_port)" || fl_die "cannot rewrite the ro listen address"
	set_threads "$work/sluice-r.yaml" "$sluice_threads"
	FL_RW=$addr_r
	if [[ -n ${PROFILE_DIR:-} ]]; then
		FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/sluice-r.cpu")
	fi
	FIDELITY_READS=replicas fl_sluice_start "$work/sluice-r.yaml" "$work/sluice-r.log"
	pid_r=$FL_SLUICE_PID
	fl_log "direct $FL_PRIMARY, haproxy $haproxy_addr (pid $haproxy_pid), sluice-p $addr_p (pid $pid_p), sluice-r $addr_r (pid $pid_r), sluice threads: $sluice_threads"
fi

addr_b=""
if ((want_systems)) && [[ -n $base_bin ]]; then
	# F: sluice-p's configuration (reads on the primary, no admin API) on fresh ports, run by
	# the baseline binary.
	addr_b=127.0.0.1:$(free_port)
	cp "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice-b.yaml"
	pin_reads "$work/sluice-b.yaml" "$primary_name" || fl_die "cannot rewrite read_weights in sluice-b.yaml"
	set_listen "$work/sluice-b.yaml" rw "$addr_b" || fl_die "cannot rewrite the rw listen address"
	set_listen "$work/sluice-b.yaml" ro "127.0.0.1:$(free_port)" || fl_die "cannot rewrite the ro listen address"
	set_threads "$work/sluice-b.yaml" "$sluice_threads"
	FL_RW=$addr_b
	FL_SLUICE_ARGS=()
	if [[ -n ${PROFILE_DIR:-} ]]; then
		FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/sluice-b.cpu")
	fi
	own_sluice=$FL_SLUICE
	FL_SLUICE=$base_bin
	FIDELITY_READS=replicas fl_sluice_start "$work/sluice-b.yaml" "$work/sluice-b.log"
	FL_SLUICE=$own_sluice
	pid_b=$FL_SLUICE_PID
	fl_log "sluice-b $addr_b (pid $pid_b): $base_bin"
fi

declare -A addr_of=([direct]=$FL_PRIMARY [haproxy]=$haproxy_addr [sluice-p]=$addr_p [sluice-pa]=$addr_p [sluice-r]=$addr_r [sluice-b]=$addr_b)
declare -A pid_of=([direct]="" [haproxy]=$haproxy_pid [sluice-p]=$pid_p [sluice-pa]=$pid_p [sluice-r]=$pid_r [sluice-b]=$pid_b)

# Peak RSS per run needs clear_refs (own processes, or root); without it VmHWM is the peak
# since the proxy started.
rss_peak=run
if ! reset_peak "$$"; then
	rss_peak=start
	fl_log "note: /proc/PID/clear_refs is not writable: peak RSS is the peak since the proxy started, not per run"
fi

# Runs: one TSV line each (columns: see the JSON writer below).
runs=$work/runs.tsv
: >"$runs"
failures=()
if ((want_systems)); then
	total_time=0
	for wl in "${workloads[@]}"; do
		total_time=$((total_time + $(time_of "$wl") * ${#modes[@]} * ${#thread_counts[@]} * reps * ${#systems[@]}))
	done
	total=$((${#workloads[@]} * ${#modes[@]} * ${#thread_counts[@]} * reps * ${#systems[@]}))
	fl_log "$total runs, ${total_time}s of sysbench"
	i=0
	for wl in "${workloads[@]}"; do
		secs=$(time_of "$wl")
		for m in "${modes[@]}"; do
			for th in "${thread_counts[@]}"; do
				for ((rep = 1; rep <= reps; rep++)); do
					for sys in "${systems[@]}"; do
						i=$((i + 1))
						fl_log "[$i/$total] $wl $m $sys rep $rep: ${secs}s x $th threads"
						one_run "$sys" "${addr_of[$sys]}" "${pid_of[$sys]}" "$wl" "$m" "$th" "$rep" "$secs" "$runs"
					done
				done
			done
		done
	done
fi

# Idle connections: what IDLE_CONNS logged-in, idle client sessions cost sluice-p in RSS.
idle_json=null
idle_table=
# scrape_cost NAME: SCRAPES /metrics scrapes of sluice-p one after another (bench/adminload);
# prints "p50_ms p99_ms cpu_ms_per_scrape bytes", the CPU being sluice-p's over all of them.
scrape_cost() {
	local before ticks
	before=$(cpu_ticks "$pid_p")
	"$work/adminload" -admin "$admin_p" -calls metrics -rounds "$scrapes" >"$work/scrapes-$1.json" 2>&1 ||
		fl_die "the /metrics scrapes ($1) failed: $(cat "$work/scrapes-$1.json")"
	ticks=$(($(cpu_ticks "$pid_p") - before))
	printf '%s %s %s %s\n' "$(fl_json_get "$work/scrapes-$1.json" p50_ms)" "$(fl_json_get "$work/scrapes-$1.json" p99_ms)" \
		"$(awk -v t="$ticks" -v hz="$clk_tck" -v n="$scrapes" 'BEGIN { printf "%.2f", t / hz * 1000 / n }')" \
		"$(fl_json_get "$work/scrapes-$1.json" metrics_bytes)"
}

if ((want_idle)); then
	p_alive || fl_die "sluice-p (pid $pid_p) is not running any more"
	read -r sc0_p50 sc0_p99 sc0_cpu sc0_bytes <<<"$(scrape_cost none)"
	fl_log "idle connections: opening ${idle_fit[*]} (in steps) through sluice-p ($addr_p)${idle_skipped[*]:+; skipped: ${idle_skipped[*]} (open files: ulimit -n is $fd_limit)}"
	conns_before=$(primary_conns)
	rss_before=$(mem_kib "$pid_p" VmRSS)
	t0=$SECONDS
	prev=0
	idle_rows=()
	idle_levels_json=""
	for c in "${idle_fit[@]}"; do
		more=$((c - prev))
		# One more opener for this step, with a fifo of its own as stdin: holding it open
		# read-write keeps the opener's stdin open until we close it. It holds none of the
		# earlier steps' fifos (closed in the subshell before the exec).
		mkfifo "$work/idleconns-$c.in"
		exec {fd}<>"$work/idleconns-$c.in"
		: >"$work/idleconns-$c.out"
		(
			for f in ${idle_fds[@]+"${idle_fds[@]}"} "$fd"; do
				exec {f}>&-
			done
			exec "$work/idleconns" -addr "$addr_p" -n "$more" -user "$FL_USER" -password "$FL_PASSWORD" -query "$idle_query" \
				<"$work/idleconns-$c.in" >"$work/idleconns-$c.out" 2>"$work/idleconns-$c.log"
		) &
		idle_pids+=("$!")
		idle_fds+=("$fd")
		t1=$SECONDS
		until grep -q '^opened ' "$work/idleconns-$c.out"; do
			if ! kill -0 "${idle_pids[-1]}" 2>/dev/null; then
				fl_tail "$work/idleconns-$c.log"
				fl_die "idleconns exited before opening $more more connections (to $c)"
			fi
			((SECONDS - t1 < 180 + more / 50)) || fl_die "idleconns did not open $more more connections (to $c) within $((180 + more / 50)) s"
			sleep 0.2
		done
		open_s=$((SECONDS - t0))
		# Let sluice settle (a session may still be finishing its backend login): RSS unchanged
		# over one second, at most 10 s.
		rss_after=$(mem_kib "$pid_p" VmRSS)
		for _ in $(seq 10); do
			sleep 1
			r=$(mem_kib "$pid_p" VmRSS)
			[[ $r == "$rss_after" ]] && break
			rss_after=$r
		done
		conns_after=$(primary_conns)
		p_alive || fl_die "sluice-p died with $c idle connections"
		diff_kib=$((rss_after - rss_before))
		per_conn=$(awk -v d="$diff_kib" -v n="$c" 'BEGIN { printf "%.1f", d / n }')
		per_1000=$(awk -v d="$diff_kib" -v n="$c" 'BEGIN { printf "%.1f", d / n * 1000 / 1024 }')
		marginal=- marginal_json=null
		if ((prev > 0)); then
			marginal=$(awk -v d="$((rss_after - rss_prev))" -v n="$more" 'BEGIN { printf "%.1f", d / n }')
			marginal_json=$marginal
		fi
		fl_log "idle connections: $c open after ${open_s}s; sluice-p RSS $(mib "$rss_before") -> $(mib "$rss_after") MiB ($per_conn KiB each); primary connections $conns_before -> $conns_after"
		idle_rows+=("$(printf '| %d | %s | %s | %s | %s | %s | %s | %s → %s |' "$c" "$(mib "$rss_before")" "$(mib "$rss_after")" \
			"$(mib "$diff_kib")" "$per_conn" "$per_1000" "$marginal" "$conns_before" "$conns_after")")
		idle_levels_json+="${idle_levels_json:+, }$(printf '{"connections": %d, "rss_kib": %d, "rss_diff_kib": %d, "kib_per_connection": %s, "kib_per_connection_since_previous": %s, "primary_connections": %d, "open_seconds": %d}' \
			"$c" "$rss_after" "$diff_kib" "$per_conn" "$marginal_json" "$conns_after" "$open_s")"
		prev=$c
		rss_prev=$rss_after
	done
	idle_conns=$prev
	read -r sc_p50 sc_p99 sc_cpu sc_bytes <<<"$(scrape_cost idle)"
	p_alive || fl_die "sluice-p died with $idle_conns idle connections"
	stop_idle
	for c in ${idle_skipped[@]+"${idle_skipped[@]}"}; do
		idle_rows+=("$(printf '| %d | skipped: sluice-p needs 2 open files per idle session (the client'"'"'s socket and its primary connection), %d with its own; ulimit -n is %d | | | | | | |' \
			"$c" "$((2 * c + 200))" "$fd_limit")")
	done
	idle_table=$(
		printf '\nIdle client connections through sluice-p (logged in as %s, then idle; RSS = VmRSS of sluice-p; opened in steps, each count including the ones before; since previous: the RSS growth from the row before, per connection added).\n\n' "$FL_USER"
		printf '| idle connections | RSS before MiB | RSS with them MiB | difference MiB | KiB per connection | MiB per 1 000 | KiB per connection since previous | primary connections before → with |\n'
		printf '|---:|---:|---:|---:|---:|---:|---:|---:|\n'
		printf '%s\n' "${idle_rows[@]}"
		printf '\nA /metrics scrape of sluice-p over HTTP (bench/adminload, %d scrapes one after another; CPU: sluice-p'"'"'s over them, per scrape).\n\n' "$scrapes"
		printf '| client sessions | p50 ms | p99 ms | sluice CPU ms per scrape | bytes |\n|---:|---:|---:|---:|---:|\n'
		printf '| 0 | %s | %s | %s | %s |\n| %d | %s | %s | %s | %s |\n' "$sc0_p50" "$sc0_p99" "$sc0_cpu" "$sc0_bytes" \
			"$idle_conns" "$sc_p50" "$sc_p99" "$sc_cpu" "$sc_bytes"
	)
	# The top-level fields are the largest count's, as before there were steps.
	idle_json=$(printf '{"connections": %d, "rss_before_kib": %d, "rss_after_kib": %d, "rss_diff_kib": %d, "kib_per_connection": %s, "mib_per_1000": %s, "primary_connections_before": %d, "primary_connections_after": %d, "open_seconds": %d, "levels": [%s], "skipped": [%s], "open_files_limit": %d, "scrapes": %d, "scrape_without": {"p50_ms": %s, "p99_ms": %s, "cpu_ms": %s, "bytes": %s}, "scrape_with": {"p50_ms": %s, "p99_ms": %s, "cpu_ms": %s, "bytes": %s}}' \
		"$idle_conns" "$rss_before" "$rss_after" "$diff_kib" "$per_conn" "$per_1000" "$conns_before" "$conns_after" "$open_s" \
		"$idle_levels_json" "$(
			IFS=,
			echo "${idle_skipped[*]}"
		)" "$fd_limit" \
		"$scrapes" "$sc0_p50" "$sc0_p99" "$sc0_cpu" "$sc0_bytes" "$sc_p50" "$sc_p99" "$sc_cpu" "$sc_bytes")
fi

# Consistency levels: what session, global and latest cost next to eventual, with healthy
# replicas, on a sluice of their own (sluice-c) whose only endpoints are cons-eventual,
# cons-session, cons-global and cons-latest (read-write, the sandbox's read weights: reads on the
# replicas).
cons_runs=$work/cons-runs.tsv
: >"$cons_runs"
cons_writes=$work/cons-writes.tsv
: >"$cons_writes"
bypass_done=0
declare -A cons_addr=()
cons_sources=
cons_timeout_ms=
ryw_levels=()
if ((want_cons)); then
	# Healthy replicas: both have everything the parts before wrote.
	gtid=$(fl_sql "$FL_PRIMARY" -e 'SELECT @@gtid_binlog_pos')
	for r in "${FL_REPLICAS[@]}"; do
		waited=$(fl_sql "$r" -e "SELECT MASTER_GTID_WAIT('$gtid', 60)")
		[[ $waited == 0 ]] || fl_die "replica $r did not reach GTID $gtid within 60 s"
	done
	weights=$(awk '/^  - name: / { in_rw = ($3 == "rw") }
		in_rw && /^    read_weights:/ { sub(/^    read_weights: */, ""); print; exit }' "$FL_SANDBOX_DIR/sluice.yaml")
	[[ $weights == *"$primary_name: 0"* ]] || fl_die "unexpected read_weights of endpoint rw in the sandbox's sluice.yaml: '$weights'"
	used=" "
	# cons_config NAME LABEL...: NAME.yaml, the sandbox's configuration with its endpoints
	# replaced by one read-write endpoint cons-LABEL per label, at the level the label starts
	# with (latest-before: latest), on fresh ports (cons_addr[LABEL]).
	cons_config() {
		local name=$1 lv port
		shift
		: >"$work/$name-endpoints.yaml"
		for lv in "$@"; do
			port=$(free_port)
			while [[ $used == *" $port "* ]]; do port=$(free_port); done
			used+="$port "
			cons_addr[$lv]=127.0.0.1:$port
			printf '  - name: cons-%s\n    listen: %s\n    mode: read-write\n    read_weights: %s\n    balance: least-active\n    consistency: %s\n' \
				"$lv" "${cons_addr[$lv]}" "$weights" "${lv%-before}" >>"$work/$name-endpoints.yaml"
			if [[ -n $cons_timeout ]]; then
				printf '    consistency_timeout: %s\n' "$cons_timeout" >>"$work/$name-endpoints.yaml"
			fi
		done
		awk -v f="$work/$name-endpoints.yaml" '
			/^endpoints:$/ { print; while ((getline l < f) > 0) print l; skip = 1; done = 1; next }
			skip && /^[^ ]/ { skip = 0 }
			!skip { print }
			END { if (!done) exit 3 }' "$FL_SANDBOX_DIR/sluice.yaml" >"$work/$name.yaml" ||
			fl_die "cannot write $name.yaml (no endpoints section in the sandbox's sluice.yaml?)"
		set_threads "$work/$name.yaml" "$sluice_threads"
	}
	# cons_start NAME BIN LABEL...: run BIN with NAME.yaml (cons_started: its pid), wait until
	# each label's endpoint listens and says its level.
	cons_start() {
		local name=$1 bin=$2 lv t0 row ep level timeout_ms args=()
		shift 2
		if [[ -n ${PROFILE_DIR:-} ]]; then
			args=(--cpuprofile "$PROFILE_DIR/$name.cpu")
		fi
		"$bin" serve --config "$work/$name.yaml" ${args[@]+"${args[@]}"} >"$work/$name.log" 2>&1 &
		cons_started=$!
		for lv in "$@"; do
			t0=$SECONDS
			until (exec 3<>"/dev/tcp/127.0.0.1/${cons_addr[$lv]##*:}") 2>/dev/null; do
				kill -0 "$cons_started" 2>/dev/null || fl_die "$name exited (see $work/$name.log)"
				((SECONDS - t0 < 30)) || fl_die "$name did not listen on ${cons_addr[$lv]}"
				sleep 0.2
			done
			row=$(fl_sql "${cons_addr[$lv]}" -c -e '/*PROXY_INTERNAL*/ SHOW CONSISTENCY') || fl_die "SHOW CONSISTENCY through cons-$lv failed"
			IFS=$'\t' read -r ep level timeout_ms _ _ <<<"$row"
			[[ $ep == "cons-$lv" && $level == "${lv%-before}" ]] || fl_die "cons-$lv: SHOW CONSISTENCY says endpoint '$ep', consistency '$level'"
			cons_timeout_ms=$timeout_ms
		done
	}
	cons_config sluice-c "${levels[@]}"
	cons_start sluice-c "$FL_SLUICE" "${levels[@]}"
	pid_c=$cons_started
	# The systems run: every level on sluice-c; with SLUICE_BASE_BIN, global and latest again
	# on sluice-cb, the base binary (labels global-before, latest-before), interleaved.
	cons_systems=("${levels[@]}")
	declare -A cons_pid=()
	for lv in "${levels[@]}"; do cons_pid[$lv]=$pid_c; done
	if [[ -n $base_bin ]]; then
		cons_config sluice-cb global-before latest-before
		cons_start sluice-cb "$base_bin" global-before latest-before
		pid_cb=$cons_started
		cons_systems+=(global-before latest-before)
		cons_pid[global-before]=$pid_cb
		cons_pid[latest-before]=$pid_cb
	fi
	for _ in $(seq 75); do
		cons_sources=$(fl_sql "${cons_addr[eventual]}" -c -e '/*PROXY_INTERNAL*/ SHOW NODES' |
			awk -F '\t' '{ printf "%s%s: %s", sep, $1, $13; sep = ", " }')
		[[ -n $cons_sources && $cons_sources != *poll* && $cons_sources != *NULL* ]] && break
		sleep 0.2
	done
	if [[ $cons_sources == *poll* || $cons_sources == *NULL* ]]; then
		fl_log "note: not every node's position comes from its binlog stream after 15 s ($cons_sources)"
	fi
	fl_log "sluice-c (pid $pid_c): cons-eventual ${cons_addr[eventual]}, cons-session ${cons_addr[session]}, cons-global ${cons_addr[global]}; consistency_timeout ${cons_timeout_ms} ms; positions: $cons_sources"

	# cons_writer_start ADDR SECS LOG: the concurrent writer of a consistency run, in the
	# background (cons_writer_pid), through ADDR for SECS seconds: one thread of
	# oltp_update_non_index (an autocommit UPDATE by primary key, no SELECT: the nodes' Com_select
	# stays the readers'), CONS_WRITE_RATE events/s.
	cons_writer_pid=
	cons_writer_start() {
		cons_writer_pid=
		((cons_write_rate > 0)) || return 0
		SB_EXEC=1 sb "$1" oltp_update_non_index --db-ps-mode=disable --threads=1 --rate="$cons_write_rate" --time="$2" \
			--report-interval=0 run >"$3" 2>&1 &
		cons_writer_pid=$!
	}
	# cons_writer_end LABEL LOG TSV: wait for the writer, count its failure, append its commits/s.
	cons_writer_end() {
		[[ -n $cons_writer_pid ]] || return 0
		local wrc=0 wtps
		wait "$cons_writer_pid" || wrc=$?
		cons_writer_pid=
		wtps=$(rate "$2" transactions)
		if ((wrc != 0)) || [[ -z $wtps ]] || grep -q -m 1 -E 'FATAL|ALERT' "$2"; then
			failures+=("$1: the concurrent writer failed (exit $wrc): $(grep -m 1 -E 'FATAL|ALERT' "$2" || tail -n 1 "$2")")
		fi
		printf '%s\t%s\n' "$1" "${wtps:--}" >>"$3"
	}
	cons_total=$((${#cons_workloads[@]} * ${#cons_modes[@]} * reps * ${#cons_systems[@]}))
	cons_time=0
	for wl in "${cons_workloads[@]}"; do
		cons_time=$((cons_time + $(time_of "$wl") * ${#cons_modes[@]} * reps * ${#cons_systems[@]}))
	done
	fl_log "consistency: $cons_total runs, ${cons_time}s of sysbench"
	i=0
	for wl in "${cons_workloads[@]}"; do
		secs=$(time_of "$wl")
		for m in "${cons_modes[@]}"; do
			for ((rep = 1; rep <= reps; rep++)); do
				for lv in "${cons_systems[@]}"; do
					i=$((i + 1))
					fl_log "[consistency $i/$cons_total] $wl $m cons-$lv rep $rep: ${secs}s x $cons_threads threads, writer ${cons_write_rate}/s"
					cons_writer_start "${cons_addr[$lv]}" "$secs" "$work/writer-$wl-$m-cons-$lv-$rep.log"
					one_run "cons-$lv" "${cons_addr[$lv]}" "${cons_pid[$lv]}" "$wl" "$m" "$cons_threads" "$rep" "$secs" "$cons_runs"
					cons_writer_end "$wl $m cons-$lv rep $rep" "$work/writer-$wl-$m-cons-$lv-$rep.log" "$cons_writes"
				done
			done
		done
	done

	# Read-your-writes, one level after the other (SHOW CONSISTENCY's counters are sluice-c's).
	for lv in "${levels[@]}"; do
		kill -0 "$pid_c" 2>/dev/null || fl_die "sluice-c (pid $pid_c) is not running any more"
		fl_log "read-your-writes: $ryw_n write-then-read pairs through cons-$lv"
		if ! "$work/ryw" -addr "${cons_addr[$lv]}" -n "$ryw_n" -user "$FL_USER" -password "$FL_PASSWORD" -db "$db" \
			>"$work/ryw-$lv.json" 2>"$work/ryw-$lv.log"; then
			fl_tail "$work/ryw-$lv.log"
			failures+=("read-your-writes cons-$lv: bench/ryw failed: $(tail -n 1 "$work/ryw-$lv.log")")
			continue
		fi
		ryw_levels+=("$lv")
		stale=$(fl_json_get "$work/ryw-$lv.json" stale)
		if [[ $lv != eventual && $stale != 0 ]]; then
			failures+=("read-your-writes cons-$lv: $stale stale read(s) of $ryw_n (must be 0 at $lv)")
		fi
	done
	# Writes that bypass sluice (straight to the primary), under the point-select load and the
	# writer through cons-latest: how long until a read through cons-latest sees each (the
	# primary's binlog stream must have delivered it).
	if [[ -n ${cons_addr[latest]:-} ]]; then
		fl_log "bypass window: $ryw_n writes straight to the primary, each read back through cons-latest, under $cons_threads point-select threads and the writer"
		SB_EXEC=1 sb "${cons_addr[latest]}" oltp_point_select --threads="$cons_threads" --time=600 --report-interval=0 run >"$work/bypass-load.log" 2>&1 &
		bypass_load=$!
		cons_writer_start "${cons_addr[latest]}" 600 "$work/bypass-writer.log"
		bypass_writer=$cons_writer_pid
		cons_writer_pid=
		sleep 1
		if "$work/ryw" -direct "$FL_PRIMARY" -addr "${cons_addr[latest]}" -n "$ryw_n" -id 3 -user "$FL_USER" -password "$FL_PASSWORD" -db "$db" \
			>"$work/ryw-bypass.json" 2>"$work/ryw-bypass.log"; then
			bypass_done=1
		else
			fl_tail "$work/ryw-bypass.log"
			failures+=("bypass window through cons-latest: bench/ryw -direct failed: $(tail -n 1 "$work/ryw-bypass.log")")
		fi
		kill "$bypass_load" ${bypass_writer:+"$bypass_writer"} 2>/dev/null || true
		wait "$bypass_load" ${bypass_writer:+"$bypass_writer"} 2>/dev/null || true
		if grep -q -m 1 -E 'FATAL|ALERT' "$work/bypass-load.log" "$work/bypass-writer.log" 2>/dev/null; then
			failures+=("bypass window: the load through cons-latest failed: $(grep -h -m 1 -E 'FATAL|ALERT' "$work/bypass-load.log" "$work/bypass-writer.log")")
		fi
	fi
	kill -0 "$pid_c" 2>/dev/null || fl_die "sluice-c (pid $pid_c) is not running any more"
	if fl_sluice_panicked "$work/sluice-c.log"; then
		failures+=("sluice-c logged a panic (see $work/sluice-c.log)")
	fi
	if [[ -n $pid_cb ]] && fl_sluice_panicked "$work/sluice-cb.log"; then
		failures+=("sluice-cb logged a panic (see $work/sluice-cb.log)")
	fi
fi

# Short connections: SHORT_CLIENTS clients of bench/shortconn, each looping over connect, one
# point select, disconnect, through direct, haproxy, sluice-off and sluice-session, interleaved.
# sluice-off and sluice-session are sluices of their own on fresh ports, endpoint rw with reads
# on the primary (like sluice-p, for a like-for-like point select), at pool_mode off / session.
short_runs=$work/short-runs.tsv
: >"$short_runs"
short_systems=()
addr_so=""
addr_ss=""
pool_off_key=absent
pool_session=no
pool_session_note=
# set_endpoint_key CONFIG ENDPOINT KEY VALUE: add "KEY: VALUE" to that endpoint of a sandbox
# sluice.yaml (right under its name line).
set_endpoint_key() {
	awk -v ep="$2" -v line="    $3: $4" '
		{ print }
		/^  - name: / && $3 == ep { print line; changed = 1 }
		END { if (!changed) exit 3 }' "$1" >"$1.new" || return
	mv "$1.new" "$1"
}
# short_config NAME: the sandbox's sluice.yaml for a short-part sluice: reads pinned to the
# primary, endpoints on fresh ports, threads SLUICE_THREADS; prints rw's address.
short_config() {
	local f=$work/$1.yaml addr
	addr=127.0.0.1:$(free_port)
	cp "$FL_SANDBOX_DIR/sluice.yaml" "$f"
	pin_reads "$f" "$primary_name" || fl_die "cannot rewrite read_weights in $1.yaml"
	set_listen "$f" rw "$addr" || fl_die "cannot rewrite the rw listen address of $1.yaml"
	set_listen "$f" ro "127.0.0.1:$(free_port)" || fl_die "cannot rewrite the ro listen address of $1.yaml"
	set_threads "$f" "$sluice_threads"
	echo "$addr"
}
# accepts CONFIG LOG: 'sluice serve --check' passes on CONFIG (the nodes are up, so its monitor
# login works: a failure is the configuration's).
accepts() { "$FL_SLUICE" serve --config "$1" --check >"$2" 2>&1; }
# one_short SYSTEM ADDR PID REP: one bench/shortconn run through ADDR, with the proxy PID's CPU
# time and peak RSS (none when PID is empty) and every node's Connections counter (logins
# accepted) read around it; appends one line to $short_runs (columns: see the medians below).
one_short() {
	local sys=$1 addr=$2 pid=$3 rep=$4 rc=0 before=0 cpu=- rss=- n k json log
	local logins_before=0 logins=0 conns cps p50 p99 avg cp50 cp99 errs cpu_us=- per_conn=-
	local nodes_before nodes_cpu=- node_us=- client_us
	if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
		fl_die "$sys (pid $pid) is not running any more"
	fi
	json=$work/short-$sys-$rep.json
	log=$work/short-$sys-$rep.log
	for n in "${nodes[@]}"; do
		logins_before=$((logins_before + $(fl_sql "$n" -e "SHOW GLOBAL STATUS LIKE 'Connections'" | awk '{ print $2 }')))
	done
	if [[ -n $pid ]]; then
		if [[ $rss_peak == run ]]; then
			reset_peak "$pid" || fl_die "clear_refs of $sys (pid $pid) failed"
		fi
		before=$(cpu_ticks "$pid")
	fi
	nodes_before=$(nodes_cpu_ticks)
	"$work/shortconn" -addr "$addr" -clients "$short_clients" -duration "${short_time}s" \
		-user "$FL_USER" -password "$FL_PASSWORD" -db "$db" -table sbtest1 -rows "$table_size" >"$json" 2>"$log" || rc=$?
	if [[ -n $pid ]]; then
		cpu=$(($(cpu_ticks "$pid") - before))
		rss=$(mem_kib "$pid" VmHWM)
	fi
	if [[ $nodes_before != - ]]; then
		nodes_cpu=$(($(nodes_cpu_ticks) - nodes_before))
	fi
	for n in "${nodes[@]}"; do
		logins=$((logins + $(fl_sql "$n" -e "SHOW GLOBAL STATUS LIKE 'Connections'" | awk '{ print $2 }')))
	done
	# Each node's 'after' read is a login of its own, counted in its answer.
	logins=$((logins - logins_before - ${#nodes[@]}))
	conns=$(fl_json_get "$json" connections || true)
	errs=$(fl_json_get "$json" errors || true)
	cps=$(fl_json_get "$json" cps || true)
	p50=$(fl_json_get "$json" p50_ms || true)
	p99=$(fl_json_get "$json" p99_ms || true)
	avg=$(fl_json_get "$json" avg_ms || true)
	cp50=$(fl_json_get "$json" connect_p50_ms || true)
	cp99=$(fl_json_get "$json" connect_p99_ms || true)
	client_us=$(fl_json_get "$json" client_cpu_us_per_conn || true)
	if ((rc != 0)) || [[ -z $conns || -z $errs ]]; then
		failures+=("short connections $sys rep $rep: exit $rc, ${errs:-?} failed iterations: $(tail -n 1 "$log")")
	fi
	if [[ -z $conns || -z $errs ]]; then
		# No result at all: the run counts as one error.
		errs=$((${errs:-0} + 1))
	fi
	if [[ -n $conns && $conns != 0 ]]; then
		per_conn=$(awk -v l="$logins" -v c="$conns" 'BEGIN { printf "%.2f", l / c }')
		if [[ $cpu != - ]]; then
			cpu_us=$(awk -v t="$cpu" -v hz="$clk_tck" -v c="$conns" 'BEGIN { printf "%.1f", t / hz * 1e6 / c }')
		fi
		if [[ $nodes_cpu != - ]]; then
			node_us=$(awk -v t="$nodes_cpu" -v hz="$clk_tck" -v c="$conns" 'BEGIN { printf "%.1f", t / hz * 1e6 / c }')
		fi
	fi
	for k in cps p50 p99 avg cp50 cp99 client_us; do
		[[ -n ${!k} ]] || printf -v "$k" '%s' -
	done
	printf '%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n' "$sys" "$rep" "$rc" "${conns:-0}" "$errs" \
		"$cps" "$p50" "$p99" "$avg" "$cp50" "$cp99" "$cpu_us" "$rss" "$per_conn" "$logins" "$node_us" "$client_us" >>"$short_runs"
}

if ((want_short)); then
	# sluice-off: pool_mode: off when this binary knows the key; without it, today's sluice (no pool).
	addr_so=$(short_config sluice-off) || fl_die "cannot write sluice-off.yaml"
	accepts "$work/sluice-off.yaml" "$work/check-sluice-off.log" || {
		fl_tail "$work/check-sluice-off.log"
		fl_die "sluice serve --check refused sluice-off.yaml (without pool_mode)"
	}
	cp "$work/sluice-off.yaml" "$work/probe-off.yaml"
	set_endpoint_key "$work/probe-off.yaml" rw pool_mode off || fl_die "cannot add pool_mode to probe-off.yaml"
	if accepts "$work/probe-off.yaml" "$work/check-pool-off.log"; then
		mv "$work/probe-off.yaml" "$work/sluice-off.yaml"
		pool_off_key=off
	else
		fl_log "note: this sluice refuses pool_mode: off ($(grep -m 1 -i pool_mode "$work/check-pool-off.log" || head -n 1 "$work/check-pool-off.log")); sluice-off runs without the key (no pool)"
	fi
	FL_RW=$addr_so
	FL_SLUICE_ARGS=()
	if [[ -n ${PROFILE_DIR:-} ]]; then
		FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/sluice-off.cpu")
	fi
	FIDELITY_READS=replicas fl_sluice_start "$work/sluice-off.yaml" "$work/sluice-off.log"
	pid_so=$FL_SLUICE_PID
	short_systems=(direct haproxy sluice-off)

	# sluice-session: only when this binary accepts pool_mode: session.
	ss_addr=$(short_config sluice-session) || fl_die "cannot write sluice-session.yaml"
	set_endpoint_key "$work/sluice-session.yaml" rw pool_mode session || fl_die "cannot add pool_mode to sluice-session.yaml"
	if accepts "$work/sluice-session.yaml" "$work/check-pool-session.log"; then
		addr_ss=$ss_addr
		pool_session=yes
		FL_RW=$addr_ss
		if [[ -n ${PROFILE_DIR:-} ]]; then
			FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/sluice-session.cpu")
		fi
		FIDELITY_READS=replicas fl_sluice_start "$work/sluice-session.yaml" "$work/sluice-session.log"
		pid_ss=$FL_SLUICE_PID
		short_systems+=(sluice-session)
	else
		pool_session_note=$(grep -m 1 -i pool_mode "$work/check-pool-session.log" || head -n 1 "$work/check-pool-session.log")
		fl_log "note: this sluice refuses pool_mode: session ($pool_session_note): sluice-session is not available in this binary"
	fi
	fl_log "short connections: direct $FL_PRIMARY, haproxy $haproxy_addr, sluice-off $addr_so (pid $pid_so, pool_mode key: $pool_off_key), sluice-session ${addr_ss:-not available} ${pid_ss:+(pid $pid_ss)}"

	declare -A short_addr=([direct]=$FL_PRIMARY [haproxy]=$haproxy_addr [sluice-off]=$addr_so [sluice-session]=$addr_ss)
	declare -A short_pid=([direct]="" [haproxy]=$haproxy_pid [sluice-off]=$pid_so [sluice-session]=$pid_ss)
	total=$((reps * ${#short_systems[@]}))
	fl_log "short connections: $total runs of ${short_time}s x $short_clients clients"
	i=0
	for ((rep = 1; rep <= reps; rep++)); do
		for sys in "${short_systems[@]}"; do
			i=$((i + 1))
			fl_log "[short $i/$total] $sys rep $rep"
			one_short "$sys" "${short_addr[$sys]}" "${short_pid[$sys]}" "$rep"
		done
	done
	for p in sluice-off sluice-session; do
		if fl_sluice_panicked "$work/$p.log"; then
			failures+=("$p logged a panic (see $work/$p.log)")
		fi
	done
fi

# Medians per workload, mode, threads and system (QPS, latencies, CPU per query, peak RSS);
# errors, Com_select deltas and queries summed over the reps. Columns of $runs and $cons_runs:
#   1 workload 2 mode 3 threads 4 system 5 rep 6 qps 7 avg 8 p99 9 queries 10 errors 11 cpu_s
#   12 cpu_us 13 exit 14 peak_rss_kib 15 com_select_p 16 com_select_r1 17 com_select_r2
# and of the medians: workload mode threads system qps avg p99 errors cpu_us rss_mib
# com_select_p com_select_r1 com_select_r2 queries.
medians_of() {
	awk -F '\t' '
		function median(key, col,   n, i, j, t, a) {
			n = split(vals[key, col], a, " ")
			if (n == 0) return "-"
			for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
			if (n % 2) return a[(n + 1) / 2]
			return (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{
			key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4
			if (!(key in seen)) { seen[key] = 1; order[++k] = key }
			for (c = 6; c <= 14; c++) if ($c != "-" && (c == 6 || c == 7 || c == 8 || c == 12 || c == 14)) vals[key, c] = vals[key, c] " " $c
			errs[key] += $10
			if ($9 != "-") queries[key] += $9
			for (c = 15; c <= 17; c++) sel[key, c] += $c
		}
		END {
			for (i = 1; i <= k; i++) {
				key = order[i]
				split(key, f, SUBSEP)
				rss = median(key, 14)
				if (rss != "-") rss = sprintf("%.1f", rss / 1024)
				printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", f[1], f[2], f[3], f[4],
					median(key, 6), median(key, 7), median(key, 8), errs[key], median(key, 12), rss,
					sel[key, 15], sel[key, 16], sel[key, 17], queries[key]
			}
		}' "$1" >"$2"
}
medians=$work/medians.tsv
medians_of "$runs" "$medians"
cons_medians=$work/cons-medians.tsv
medians_of "$cons_runs" "$cons_medians"
# The pool parts (bench/pool.sh; they use medians_of).
pool_parts_run
# Medians of the short part per system (connections and errors summed over the reps). Columns
# of $short_runs:
#   1 system 2 rep 3 exit 4 connections 5 errors 6 cps 7 p50_ms 8 p99_ms 9 avg_ms
#   10 connect_p50_ms 11 connect_p99_ms 12 cpu_us_per_conn 13 peak_rss_kib 14 node_logins_per_conn
#   15 node_logins 16 node_cpu_us_per_conn 17 client_cpu_us_per_conn
# and of the medians: system cps p50 p99 avg connect_p50 connect_p99 errors cpu_us rss_mib
# node_logins_per_conn connections node_cpu_us client_cpu_us.
short_medians=$work/short-medians.tsv
awk -F '\t' '
	function median(key, col,   n, i, j, t, a) {
		n = split(vals[key, col], a, " ")
		if (n == 0) return "-"
		for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		if (n % 2) return a[(n + 1) / 2]
		return (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		key = $1
		if (!(key in seen)) { seen[key] = 1; order[++k] = key }
		for (c = 6; c <= 17; c++) if (c != 15 && $c != "-" && $c != "") vals[key, c] = vals[key, c] " " $c
		errs[key] += $5
		conns[key] += $4
	}
	END {
		for (i = 1; i <= k; i++) {
			key = order[i]
			rss = median(key, 13)
			if (rss != "-") rss = sprintf("%.1f", rss / 1024)
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n", key, median(key, 6), median(key, 7),
				median(key, 8), median(key, 9), median(key, 10), median(key, 11), errs[key], median(key, 12), rss,
				median(key, 14), conns[key], median(key, 16), median(key, 17)
		}
	}' "$short_runs" >"$short_medians"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
# spread P R1 R2: "p 0% / r1 50% / r2 50%".
spread() {
	awk -v p="$1" -v a="$2" -v b="$3" 'BEGIN {
		t = p + a + b
		if (t <= 0) { print "-"; exit }
		printf "p %.0f%% / r1 %.0f%% / r2 %.0f%%", 100 * p / t, 100 * a / t, 100 * b / t }'
}

# The consistency levels' QPS against eventual's, per workload, mode and threads: one line each
# (workload mode threads session/eventual global/eventual session-met global-met).
readonly session_target=0.95 global_target=0.90 latest_target=0.90
# meets RATIO TARGET: yes, no, or - (no ratio).
meets() { awk -v r="$1" -v t="$2" 'BEGIN { if (r == "-") print "-"; else if (r + 0 >= t + 0) print "yes"; else print "no" }'; }
declare -A cq c99
while IFS=$'\t' read -r wl m th sys qps avg p99 _; do
	cq[$wl/$m/$th/$sys]=$qps
	c99[$wl/$m/$th/$sys]=$p99
done <"$cons_medians"
cons_ratios=$work/cons-ratios.tsv
: >"$cons_ratios"
while IFS=$'\t' read -r wl m th sys _; do
	[[ $sys == cons-eventual ]] || continue
	rs=$(ratio "${cq[$wl/$m/$th/cons-session]:--}" "${cq[$wl/$m/$th/cons-eventual]:--}")
	rg=$(ratio "${cq[$wl/$m/$th/cons-global]:--}" "${cq[$wl/$m/$th/cons-eventual]:--}")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$wl" "$m" "$th" "$rs" "$rg" "$(meets "$rs" "$session_target")" "$(meets "$rg" "$global_target")" >>"$cons_ratios"
done <"$cons_medians"

sb_version=$(sysbench --version | awk '{ print $2 }')
times=""
for wl in "${workloads[@]}"; do
	times+="${times:+, }$wl $(time_of "$wl") s"
done
cons_times=""
for wl in "${cons_workloads[@]}"; do
	cons_times+="${cons_times:+, }$wl $(time_of "$wl") s"
done
rss_note="peak during the run (VmHWM after clear_refs)"
if [[ $rss_peak == start ]]; then
	rss_note="peak since the proxy started (VmHWM; clear_refs was not writable)"
fi
# ryw LEVEL KEY: a field of bench/ryw's output for that level.
ryw() { fl_json_get "$work/ryw-$1.json" "$2"; }
# The short part's target: sluice-session's conn/s at least twice direct's.
readonly short_target=2
short_ratio=- short_met=-
short_verdict="not measured (no short part)"
if ((want_short)); then
	short_verdict="not measured: sluice-session is not available in this binary"
	if [[ $pool_session == yes ]]; then
		short_ratio=$(ratio "$(awk -F '\t' '$1 == "sluice-session" { print $2 }' "$short_medians")" \
			"$(awk -F '\t' '$1 == "direct" { print $2 }' "$short_medians")")
		short_met=$(meets "$short_ratio" "$short_target")
		short_verdict="$short_ratio x ($short_met)"
	fi
fi
table=$work/table.md
{
	if ((want_systems)); then
		printf '\nsysbench %s, %s thread(s), %s per run, %d rep(s), %d x %d rows, systems interleaved; medians. sluice threads: %s.\n' \
			"$sb_version" "${thread_counts[*]}" "$times" "$reps" "$tables" "$table_size" "$sluice_threads"
		printf 'QPS ×: QPS relative to direct / HAProxy (higher is better); p99 ×: p99 latency relative to direct / HAProxy (lower is better); CPU ×: proxy CPU µs per query relative to HAProxy.\n'
		printf 'RSS MiB: the proxy'"'"'s %s, median. reads: share of Com_select per node (primary, replica1, replica2), summed over the reps.\n\n' "$rss_note"
		printf '| workload | mode | threads | system | QPS | avg ms | p99 ms | errors | CPU µs/q | RSS MiB | reads | QPS × direct | QPS × haproxy | p99 × direct | p99 × haproxy | CPU × haproxy |\n'
		printf '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n'
		declare -A q99 qq cc
		while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu rss s1 s2 s3 _; do
			qq[$wl/$m/$th/$sys]=$qps
			q99[$wl/$m/$th/$sys]=$p99
			cc[$wl/$m/$th/$sys]=$cpu
		done <"$medians"
		while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu rss s1 s2 s3 _; do
			d=$wl/$m/$th/direct
			h=$wl/$m/$th/haproxy
			printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
				"$wl" "$m" "$th" "$sys" "$qps" "$avg" "$p99" "$errs" "$cpu" "$rss" "$(spread "$s1" "$s2" "$s3")" \
				"$(ratio "$qps" "${qq[$d]:--}")" "$(ratio "$qps" "${qq[$h]:--}")" \
				"$(ratio "$p99" "${q99[$d]:--}")" "$(ratio "$p99" "${q99[$h]:--}")" \
				"$(ratio "$cpu" "${cc[$h]:--}")"
		done <"$medians"
		printf '\nAdmin calls beside the load: sluice-pa is sluice-p with bench/adminload making %s rounds a second (GET /v1/proxy, a PATCH validated, applied and written back, a /metrics scrape) while sysbench runs. calls, p99: over the reps.\n\n' "$admin_rate"
		printf '| workload | mode | threads | QPS sluice-p | QPS sluice-pa | QPS × sluice-p | admin calls | admin call p99 ms (worst rep) |\n|---|---|---:|---:|---:|---:|---:|---:|\n'
		while IFS=$'\t' read -r wl m th sys qps _; do
			[[ $sys == sluice-pa ]] || continue
			calls=0 worst=0
			for f in "$work/admin-$wl-$m-$th"-*.json; do
				[[ -f $f ]] || continue
				calls=$((calls + $(fl_json_get "$f" calls || echo 0)))
				worst=$(awk -v a="$worst" -v b="$(fl_json_get "$f" p99_ms || echo 0)" 'BEGIN { print (b + 0 > a + 0) ? b : a }')
			done
			printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$wl" "$m" "$th" "${qq[$wl/$m/$th/sluice-p]:--}" "$qps" \
				"$(ratio "$qps" "${qq[$wl/$m/$th/sluice-p]:--}")" "$calls" "$worst"
		done <"$medians"
	fi
	if [[ -n $idle_table ]]; then
		printf '%s\n' "$idle_table"
	fi
	if ((want_cons)); then
		printf '\nConsistency levels, healthy replicas: sysbench %s through sluice-c'"'"'s endpoints cons-eventual, cons-session, cons-global, cons-latest (and sluice-cb'"'"'s with SLUICE_BASE_BIN; reads on the replicas, consistency_timeout %s ms, sluice threads: %s), %s thread(s), %s per run, %d rep(s), endpoints interleaved; medians.\n' \
			"$sb_version" "$cons_timeout_ms" "$sluice_threads" "$cons_threads" "$cons_times" "$reps"
		printf 'CPU µs/q: sluice-c'"'"'s CPU per query. node selects/q: Com_select of all three nodes per query (sluice'"'"'s position reads and waits included). reads: share of Com_select per node.\n'
		printf 'QPS × eventual: the level'"'"'s QPS relative to cons-eventual'"'"'s (targets: session ≥ %s, global ≥ %s, latest ≥ %s); p99 × eventual likewise. Positions: %s.\n' \
			"$session_target" "$global_target" "$latest_target" "${cons_sources:-?}"
		if ((cons_write_rate > 0)); then
			printf 'Concurrent writer in every run: sysbench oltp_update_non_index, 1 thread, --rate=%s, through the endpoint measured; commits/s achieved, median over the runs: %s.\n\n' \
				"$cons_write_rate" "$(awk -F '\t' '$2 != "-" { print $2 }' "$cons_writes" | sort -n | awk '{ v[++n] = $1 } END { if (!n) print "-"; else print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')"
		else
			printf 'No concurrent writer (CONS_WRITE_RATE=0): the positions reads must see do not move during the runs.\n\n'
		fi
		printf '| workload | mode | threads | level | QPS | avg ms | p99 ms | errors | CPU µs/q | node selects/q | reads | QPS × eventual | p99 × eventual | target | met |\n'
		printf '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|\n'
		while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu _ s1 s2 s3 q; do
			lv=${sys#cons-}
			e=$wl/$m/$th/cons-eventual
			r=$(ratio "$qps" "${cq[$e]:--}")
			target=- met=-
			case $lv in
			session) target="≥ $session_target" met=$(meets "$r" "$session_target") ;;
			global) target="≥ $global_target" met=$(meets "$r" "$global_target") ;;
			latest) target="≥ $latest_target" met=$(meets "$r" "$latest_target") ;;
			esac
			printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
				"$wl" "$m" "$th" "$lv" "$qps" "$avg" "$p99" "$errs" "$cpu" "$(ratio $((s1 + s2 + s3)) "$q")" \
				"$(spread "$s1" "$s2" "$s3")" "$r" "$(ratio "$p99" "${c99[$e]:--}")" "$target" "$met"
		done <"$cons_medians"
		if ((bypass_done)); then
			printf '\nWrites that bypass sluice (bench/ryw -direct): %s x (UPDATE straight to the primary, then SELECT through cons-latest, repeated until it returns the value), under %s point-select threads and the writer through cons-latest. visible: from the UPDATE'"'"'s answer to the end of the first read that returned its value (ms); first reads stale: reads right after the UPDATE that did not see it yet.\n\n' \
				"$(fl_json_get "$work/ryw-bypass.json" pairs)" "$cons_threads"
			printf '| visible p50 ms | visible p99 ms | visible max ms | first reads stale | repeated reads |\n|---:|---:|---:|---:|---:|\n'
			printf '| %s | %s | %s | %s | %s |\n' "$(fl_json_get "$work/ryw-bypass.json" visible_p50_ms)" \
				"$(fl_json_get "$work/ryw-bypass.json" visible_p99_ms)" "$(fl_json_get "$work/ryw-bypass.json" visible_max_ms)" \
				"$(fl_json_get "$work/ryw-bypass.json" first_reads_stale || echo 0)" "$(fl_json_get "$work/ryw-bypass.json" repeated_reads || echo 0)"
		fi
		if ((${#ryw_levels[@]} > 0)); then
			printf '\nRead-your-writes (bench/ryw): one connection, %d x (UPDATE sbtest1 SET k = <new value> WHERE id = 1, then SELECT k of that row), text protocol, after %d unmeasured pairs; latencies in ms.\n' \
				"$ryw_n" "$(ryw "${ryw_levels[0]}" warmup)"
			printf 'stale: reads that did not return the value just written. replica reads: SHOW LAST ROUTE says a replica (reason "read"); waited: of those, the ones for which sluice counted a wait (SHOW CONSISTENCY'"'"'s waits moved). primary after timeout: reason "consistency: no replica reached the position". waits, timeouts: SHOW CONSISTENCY'"'"'s counters, after - before.\n\n'
			printf '| level | timeout ms | pairs | write p50 | read p50 | read p99 | pair p50 | pair p99 | stale | replica reads | waited | primary after timeout | other | waits | timeouts |\n'
			printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
			for lv in "${ryw_levels[@]}"; do
				n=$(ryw "$lv" pairs)
				rr=$(ryw "$lv" replica_reads)
				printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s%%) | %s | %s | %s | %s | %s |\n' \
					"$lv" "$(ryw "$lv" consistency_timeout_ms)" "$n" "$(ryw "$lv" write_p50_ms)" \
					"$(ryw "$lv" read_p50_ms)" "$(ryw "$lv" read_p99_ms)" "$(ryw "$lv" pair_p50_ms)" "$(ryw "$lv" pair_p99_ms)" \
					"$(ryw "$lv" stale)" "$rr" "$(awk -v a="$rr" -v b="$n" 'BEGIN { printf "%.1f", 100 * a / b }')" \
					"$(ryw "$lv" replica_reads_waited)" "$(ryw "$lv" primary_timeout_reads)" "$(ryw "$lv" other_reads)" \
					"$(ryw "$lv" waits)" "$(ryw "$lv" timeouts)"
			done
		fi
	fi
	if ((want_short)); then
		printf '\nShort connections (bench/shortconn): %d clients, each looping over connect (a new TCP connection and a full mysql_native_password login, no TLS), SELECT c FROM sbtest1 WHERE id = <random> (text protocol), disconnect (COM_QUIT); %s s per run, %d rep(s), systems interleaved; medians. sluice threads: %s; sluice-off and sluice-session read from the primary.\n' \
			"$short_clients" "$short_time" "$reps" "$sluice_threads"
		printf 'conn/s: iterations completed per second. p50, p99, avg ms: one iteration (connect + query + disconnect). connect p50/p99 ms: the connect and login alone. node logins/conn: logins the three nodes accepted (their Connections counters) per client connection. CPU µs/conn: the proxy'"'"'s CPU per client connection; node CPU: the three mariadbd'"'"'s; client CPU: bench/shortconn'"'"'s own; all CPU: the three summed, what one connection costs this machine (client, proxy and nodes share its CPUs, so conn/s can exceed direct'"'"'s only as far as all CPU falls below it). RSS MiB: its %s. × direct, × haproxy: conn/s relative to theirs (higher is better); p99 × direct: lower is better.\n\n' "$rss_note"
		printf '| system | pool_mode | conn/s | p50 ms | p99 ms | avg ms | connect p50 ms | connect p99 ms | errors | node logins/conn | CPU µs/conn | node CPU µs/conn | client CPU µs/conn | all CPU µs/conn | RSS MiB | conn/s × direct | conn/s × haproxy | p99 × direct |\n'
		printf '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
		declare -A sc s99
		while IFS=$'\t' read -r sys cps p50 p99 _; do
			sc[$sys]=$cps
			s99[$sys]=$p99
		done <"$short_medians"
		while IFS=$'\t' read -r sys cps p50 p99 avg cp50 cp99 errs cpu rss lpc _ ncpu ccpu; do
			pm=-
			case $sys in
			sluice-off) pm=off; [[ $pool_off_key == off ]] || pm="(no pool_mode key: no pool)" ;;
			sluice-session) pm=session ;;
			esac
			if [[ $lpc != - ]]; then
				lpc=$(awk -v v="$lpc" 'BEGIN { printf "%.2f", v }')
			fi
			allcpu=$(awk -v a="$cpu" -v b="${ncpu:--}" -v c="${ccpu:--}" 'BEGIN {
				if (b == "-" || c == "-") { print "-"; exit }
				printf "%.1f", (a == "-" ? 0 : a) + b + c }')
			printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$sys" "$pm" "$cps" "$p50" "$p99" "$avg" \
				"$cp50" "$cp99" "$errs" "$lpc" "$cpu" "${ncpu:--}" "${ccpu:--}" "$allcpu" "$rss" "$(ratio "$cps" "${sc[direct]:--}")" "$(ratio "$cps" "${sc[haproxy]:--}")" \
				"$(ratio "$p99" "${s99[direct]:--}")"
		done <"$short_medians"
		if [[ $pool_session != yes ]]; then
			printf '| sluice-session | session | not available in this binary (%s) | | | | | | | | | | | | | | | |\n' "$(tr '|' '/' <<<"$pool_session_note")"
		fi
		printf '\nTarget (issue 22): sluice-session ≥ 2 x direct'"'"'s conn/s: %s.\n' "$short_verdict"
	fi
	pool_parts_table
} >"$table"
cat "$table"

# Results JSON.
jnum() { if [[ $1 == - || -z $1 ]]; then printf 'null'; else printf '%s' "$1"; fi; }
# jstr TEXT: TEXT with its double quotes and backslashes escaped, for a JSON string.
jstr() {
	local t=${1//\\/\\\\}
	printf '%s' "${t//\"/\\\"}"
}
jbool() { case $1 in yes) printf true ;; no) printf false ;; *) printf null ;; esac; }
# jlist WORD...: a JSON array of strings.
jlist() {
	local sep="" w
	printf '['
	for w in "$@"; do
		printf '%s"%s"' "$sep" "$w"
		sep=", "
	done
	printf ']'
}
# jtimes WORKLOAD...: {"WORKLOAD": seconds per run, ...}.
jtimes() {
	local sep="" wl
	printf '{'
	for wl in "$@"; do
		printf '%s"%s": %d' "$sep" "$wl" "$(time_of "$wl")"
		sep=", "
	done
	printf '}'
}
# json_runs TSV INDENT: the runs of TSV as JSON objects, one a line, comma-separated.
json_runs() {
	local sep="" wl m th sys rep qps avg p99 queries errs cpu_s cpu_us rc rss s1 s2 s3
	while IFS=$'\t' read -r wl m th sys rep qps avg p99 queries errs cpu_s cpu_us rc rss s1 s2 s3; do
		printf '%s%s{"workload": "%s", "mode": "%s", "threads": %d, "system": "%s", "rep": %d, "qps": %s, "avg_ms": %s, "p99_ms": %s, "queries": %s, "errors": %d, "cpu_s": %s, "cpu_us_per_query": %s, "peak_rss_kib": %s, "com_select": {"p": %d, "r1": %d, "r2": %d}, "exit": %d}' \
			"$sep" "$2" "$wl" "$m" "$th" "$sys" "$rep" "$(jnum "$qps")" "$(jnum "$avg")" "$(jnum "$p99")" "$(jnum "$queries")" "$errs" \
			"$(jnum "$cpu_s")" "$(jnum "$cpu_us")" "$(jnum "$rss")" "$s1" "$s2" "$s3" "$rc"
		sep=$',\n'
	done <"$1"
}
# json_medians TSV INDENT: likewise for medians.
json_medians() {
	local sep="" wl m th sys qps avg p99 errs cpu rss s1 s2 s3 q
	while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu rss s1 s2 s3 q; do
		printf '%s%s{"workload": "%s", "mode": "%s", "threads": %d, "system": "%s", "qps": %s, "avg_ms": %s, "p99_ms": %s, "errors": %d, "cpu_us_per_query": %s, "peak_rss_mib": %s, "com_select_sum": {"p": %d, "r1": %d, "r2": %d}, "queries_sum": %d}' \
			"$sep" "$2" "$wl" "$m" "$th" "$sys" "$(jnum "$qps")" "$(jnum "$avg")" "$(jnum "$p99")" "$errs" "$(jnum "$cpu")" "$(jnum "$rss")" "$s1" "$s2" "$s3" "$q"
		sep=$',\n'
	done <"$1"
}
{
	printf '{\n  "sysbench": "%s",\n  "parts": %s,\n  "threads": [%s],\n  "time": %s' "$sb_version" "$(jlist "${parts[@]}")" "$(
		IFS=,
		echo "${thread_counts[*]}"
	)" "$(jtimes "${workloads[@]}")"
	printf ',\n  "reps": %d,\n  "tables": %d,\n  "table_size": %d,\n  "sluice_threads": %d,\n  "rss_peak_since": "%s",\n' \
		"$reps" "$tables" "$table_size" "$sluice_threads" "$rss_peak"
	printf '  "systems": {"direct": "%s", "haproxy": "%s", "sluice-p": "%s", "sluice-pa": "%s", "sluice-r": "%s", "sluice-b": "%s"},\n  "base_bin": "%s",\n  "admin_rate": %s,\n' \
		"$FL_PRIMARY" "$haproxy_addr" "$addr_p" "$addr_p" "$addr_r" "$addr_b" "$base_bin" "$admin_rate"
	printf '  "nodes": {"%s": "%s", "%s": "%s", "%s": "%s"},\n' \
		"${node_labels[0]}" "${nodes[0]}" "${node_labels[1]}" "${nodes[1]}" "${node_labels[2]}" "${nodes[2]}"
	printf '  "runs": [\n'
	json_runs "$runs" '    '
	printf '\n  ],\n  "medians": [\n'
	json_medians "$medians" '    '
	printf '\n  ],\n  "idle": %s,\n  "consistency": ' "$idle_json"
	if ((want_cons)); then
		printf '{\n    "endpoints": {"eventual": "%s", "session": "%s", "global": "%s"},\n' \
			"${cons_addr[eventual]}" "${cons_addr[session]}" "${cons_addr[global]}"
		printf '    "consistency_timeout_ms": %s,\n    "position_sources": "%s",\n' "$(jnum "$cons_timeout_ms")" "$cons_sources"
		printf '    "threads": %d,\n    "workloads": %s,\n    "modes": %s,\n    "time": %s,\n    "reps": %d,\n    "runs": [\n' \
			"$cons_threads" "$(jlist "${cons_workloads[@]}")" "$(jlist "${cons_modes[@]}")" "$(jtimes "${cons_workloads[@]}")" "$reps"
		json_runs "$cons_runs" '      '
		printf '\n    ],\n    "medians": [\n'
		json_medians "$cons_medians" '      '
		printf '\n    ],\n    "qps_vs_eventual": [\n'
		sep=""
		while IFS=$'\t' read -r wl m th rs rg ms mg; do
			printf '%s      {"workload": "%s", "mode": "%s", "threads": %d, "session": %s, "global": %s, "session_target": %s, "global_target": %s, "session_met": %s, "global_met": %s}' \
				"$sep" "$wl" "$m" "$th" "$(jnum "$rs")" "$(jnum "$rg")" "$session_target" "$global_target" "$(jbool "$ms")" "$(jbool "$mg")"
			sep=$',\n'
		done <"$cons_ratios"
		printf '\n    ],\n    "write_rate": %s,\n    "writer_commits_per_s": [' "$cons_write_rate"
		sep=""
		while IFS=$'\t' read -r label wtps; do
			printf '%s{"run": "%s", "commits_per_s": %s}' "$sep" "$label" "$(jnum "$wtps")"
			sep=", "
		done <"$cons_writes"
		printf '],\n    "bypass": %s' "$( ((bypass_done)) && tr -d '\n' <"$work/ryw-bypass.json" || echo null)"
		printf ',\n    "read_your_writes": {'
		sep=""
		for lv in "${ryw_levels[@]}"; do
			printf '%s\n      "%s": %s' "$sep" "$lv" "$(tr -d '\n' <"$work/ryw-$lv.json")"
			sep=","
		done
		printf '\n    }\n  }'
	else
		printf 'null'
	fi
	printf ',\n  "short": '
	if ((want_short)); then
		printf '{\n    "clients": %d,\n    "time": %d,\n    "reps": %d,\n    "pool_mode_off_key": %s,\n    "pool_mode_session": %s,\n    "pool_mode_session_refused": "%s",\n' \
			"$short_clients" "$short_time" "$reps" "$([[ $pool_off_key == off ]] && echo true || echo false)" \
			"$([[ $pool_session == yes ]] && echo true || echo false)" "$(jstr "$pool_session_note")"
		printf '    "systems": {"direct": "%s", "haproxy": "%s", "sluice-off": "%s", "sluice-session": "%s"},\n    "runs": [\n' \
			"$FL_PRIMARY" "$haproxy_addr" "$addr_so" "$addr_ss"
		sep=""
		while IFS=$'\t' read -r sys rep rc conns errs cps p50 p99 avg cp50 cp99 cpu rss lpc logins ncpu ccpu; do
			printf '%s      {"system": "%s", "rep": %d, "connections": %d, "errors": %d, "cps": %s, "p50_ms": %s, "p99_ms": %s, "avg_ms": %s, "connect_p50_ms": %s, "connect_p99_ms": %s, "cpu_us_per_connection": %s, "node_cpu_us_per_connection": %s, "client_cpu_us_per_connection": %s, "peak_rss_kib": %s, "node_logins": %d, "node_logins_per_connection": %s, "exit": %d}' \
				"$sep" "$sys" "$rep" "$conns" "$errs" "$(jnum "$cps")" "$(jnum "$p50")" "$(jnum "$p99")" "$(jnum "$avg")" "$(jnum "$cp50")" \
				"$(jnum "$cp99")" "$(jnum "$cpu")" "$(jnum "${ncpu:--}")" "$(jnum "${ccpu:--}")" "$(jnum "$rss")" "$logins" "$(jnum "$lpc")" "$rc"
			sep=$',\n'
		done <"$short_runs"
		printf '\n    ],\n    "medians": [\n'
		sep=""
		while IFS=$'\t' read -r sys cps p50 p99 avg cp50 cp99 errs cpu rss lpc conns ncpu ccpu; do
			printf '%s      {"system": "%s", "cps": %s, "p50_ms": %s, "p99_ms": %s, "avg_ms": %s, "connect_p50_ms": %s, "connect_p99_ms": %s, "errors": %d, "cpu_us_per_connection": %s, "node_cpu_us_per_connection": %s, "client_cpu_us_per_connection": %s, "peak_rss_mib": %s, "node_logins_per_connection": %s, "connections_sum": %d}' \
				"$sep" "$sys" "$(jnum "$cps")" "$(jnum "$p50")" "$(jnum "$p99")" "$(jnum "$avg")" "$(jnum "$cp50")" "$(jnum "$cp99")" \
				"$errs" "$(jnum "$cpu")" "$(jnum "${ncpu:--}")" "$(jnum "${ccpu:--}")" "$(jnum "$rss")" "$(jnum "$lpc")" "$conns"
			sep=$',\n'
		done <"$short_medians"
		printf '\n    ],\n    "session_vs_direct": %s,\n    "target": %s,\n    "met": %s\n  }' "$(jnum "$short_ratio")" "$short_target" "$(jbool "$short_met")"
	else
		printf 'null'
	fi
	printf ',\n  "pool": %s' "$(pool_parts_json)"
	printf '\n}\n'
} >"$out"
fl_log "results: $out"
if [[ -z ${OUT:-} && ${KEEP:-0} != 1 ]]; then
	fl_log "note: $out is removed with the work directory on exit; set OUT=path or KEEP=1 to keep it"
fi

if ((${#failures[@]} > 0)); then
	for f in "${failures[@]}"; do
		fl_log "errors: $f"
	done
	status=errors
	fl_die "${#failures[@]} run(s) had errors"
fi
status=ok
fl_log ok
