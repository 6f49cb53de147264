#!/usr/bin/env bash
# bench/run.sh: sysbench throughput, latency, proxy CPU and memory of sluice next to a direct
# connection and HAProxy, all against one 'sluice sandbox up' cluster (1 primary, 2 replicas) on
# 127.0.0.1; then what idle client connections cost sluice in memory.
#
# Systems, run side by side and interleaved (A B C D A B C D ...):
#   A direct    sysbench straight to the primary
#   B haproxy   HAProxy 'mode tcp', nbthread 1, in front of the primary
#   C sluice-p  sluice endpoint rw with every read on the primary (pin_reads), threads: 1
#   D sluice-r  sluice endpoint rw with the sandbox's read weights (reads on the replicas), threads: 1
#
# Environment (see bench/README.md):
#   WORKLOADS="oltp_point_select oltp_read_only oltp_read_write"
#                                  (oltp_read_only always runs with --skip_trx=on)
#   MODES="ps noprepare"           ps: --db-ps-mode=auto; noprepare: --db-ps-mode=disable
#   THREADS="8"                    sysbench threads; a list ("1 8 64 256") is a thread sweep
#   TIME=N                         seconds per run (default: 10 for oltp_point_select, 5 for the others)
#   REPS=3                         repetitions
#   TABLES=4 TABLE_SIZE=10000      sbtest size
#   SLUICE_THREADS=1               'threads:' (GOMAXPROCS) of both sluices; 0 = every CPU
#   IDLE_CONNS=1000                idle client connections opened through sluice-p at the end; 0 skips
#   SMOKE=1                        TIME=3 REPS=1, only the first workload, IDLE_CONNS=100
#   OUT=path                       results JSON (default: the work directory, see README)
#   SLUICE_BIN=path                use this sluice binary instead of building one
#   KEEP=1                         keep the work directory and the sandbox
#   PROFILE_DIR=dir                write CPU profiles of both sluices there (sluice-p.cpu,
#                                  sluice-r.cpu; read with 'go tool pprof BINARY FILE')
#
# Exit status: 0 when every run finished without errors, 1 otherwise.
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
idle_conns=${IDLE_CONNS:-1000}
if [[ ${SMOKE:-0} == 1 ]]; then
	run_time=3
	reps=1
	workloads=("${workloads[0]}")
	idle_conns=${IDLE_CONNS:-100}
fi
readonly db=sbtest systems=(direct haproxy sluice-p sluice-r)

((${#modes[@]} > 0)) || fl_die "MODES is empty"
for m in "${modes[@]}"; do
	[[ " $all_modes " == *" $m "* ]] || fl_die "unknown mode '$m' in MODES (known: $all_modes)"
done
((${#workloads[@]} > 0)) || fl_die "WORKLOADS is empty"
for w in "${workloads[@]}"; do
	[[ " $all_workloads " == *" $w "* ]] || fl_die "unknown workload '$w' (known: $all_workloads)"
done
((${#thread_counts[@]} > 0)) || fl_die "THREADS is empty"
for n in ${run_time:+"$run_time"} "$reps" "$tables" "$table_size" "${thread_counts[@]}"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fl_die "TIME, REPS, THREADS, TABLES and TABLE_SIZE must be positive integers"
done
for n in "$sluice_threads" "$idle_conns"; do
	[[ $n =~ ^[0-9]+$ ]] || fl_die "SLUICE_THREADS and IDLE_CONNS must be integers >= 0"
done
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

# Every node's max_connections: the widest sysbench run through sluice-r (one connection per
# client on the primary and on each replica, with room for both sluices' monitors), and the idle
# connections, each of which holds a primary connection through sluice-p.
max_threads=0
for t in "${thread_counts[@]}"; do
	if ((t > max_threads)); then max_threads=$t; fi
done
max_conns=200
if ((2 * max_threads + 50 > max_conns)); then max_conns=$((2 * max_threads + 50)); fi
if ((idle_conns + 100 > max_conns)); then max_conns=$((idle_conns + 100)); fi

haproxy_pid=
pid_p=
idle_pid=
idle_fd=
fl_begin sluice-bench
out=${OUT:-$work/results.json}

# Stop the idle-connection opener, HAProxy and the sluice of system C (fl_cleanup stops
# FL_SLUICE_PID, system D's, the sandbox, and removes $work).
bench_cleanup() {
	local rc=$?
	set +e
	if [[ -n $idle_fd ]]; then
		exec {idle_fd}>&-
	fi
	fl_stop_pid "$idle_pid"
	fl_stop_pid "$haproxy_pid"
	haproxy_pid=
	if [[ -n $pid_p && $pid_p != "$FL_SLUICE_PID" ]]; then
		fl_stop_pid "$pid_p"
	fi
	pid_p=
	if [[ $status == failed ]]; then
		fl_tail "$work/haproxy.log"
		fl_tail "$work/sluice-p.log"
		fl_tail "$work/sluice-r.log"
		fl_tail "$work/idleconns.log"
	fi
	(exit "$rc")
	fl_cleanup
}
trap bench_cleanup EXIT

# free_port: a 127.0.0.1 port nothing answers on.
free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 40000))
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

fl_build_sluice "$work/sluice"
if ((idle_conns > 0)); then
	command -v go >/dev/null 2>&1 || fl_die "go not found: needed to build bench/idleconns (IDLE_CONNS=0 skips that step)"
	(cd "$root" && go build -o "$work/idleconns" ./bench/idleconns) || fl_die "go build ./bench/idleconns failed"
fi
fl_sandbox_up "$work/sandbox" --replicas 2 --max-connections "$max_conns"
fl_sandbox_read "$work/sandbox"
((${#FL_REPLICAS[@]} == 2)) || fl_die "expected 2 replicas, got ${#FL_REPLICAS[@]}"
fl_log "sandbox: primary $FL_PRIMARY, replicas ${FL_REPLICAS[*]}, max_connections $max_conns"
primary_name=$(awk '/^  - name: /{ n = $3 } /^    role: primary/{ print n; exit }' "$FL_SANDBOX_DIR/sluice.yaml")
[[ -n $primary_name ]] || fl_die "no primary backend in $FL_SANDBOX_DIR/sluice.yaml"
readonly node_labels=(p r1 r2)
nodes=("$FL_PRIMARY" "${FL_REPLICAS[@]}")

fl_sb_prepare "$work/prepare.log"

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

# C: sluice with reads pinned to the primary, on the sandbox's rw/ro ports.
sandbox_rw=$FL_RW
cp "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice-p.yaml"
pin_reads "$work/sluice-p.yaml" "$primary_name" || fl_die "cannot rewrite read_weights in sluice-p.yaml"
set_threads "$work/sluice-p.yaml" "$sluice_threads"
FL_SLUICE_ARGS=()
if [[ -n ${PROFILE_DIR:-} ]]; then
	mkdir -p "$PROFILE_DIR"
	PROFILE_DIR=$(cd "$PROFILE_DIR" && pwd)
	cp "$FL_SLUICE" "$PROFILE_DIR/sluice"
	FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/sluice-p.cpu")
fi
FIDELITY_READS=replicas fl_sluice_start "$work/sluice-p.yaml" "$work/sluice-p.log"
pid_p=$FL_SLUICE_PID
addr_p=$sandbox_rw

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

declare -A addr_of=([direct]=$FL_PRIMARY [haproxy]=$haproxy_addr [sluice-p]=$addr_p [sluice-r]=$addr_r)
declare -A pid_of=([direct]="" [haproxy]=$haproxy_pid [sluice-p]=$pid_p [sluice-r]=$pid_r)

# Peak RSS per run needs clear_refs (own processes, or root); without it VmHWM is the peak
# since the proxy started.
rss_peak=run
if ! reset_peak "$pid_p"; then
	rss_peak=start
	fl_log "note: /proc/$pid_p/clear_refs is not writable: peak RSS is the peak since the proxy started, not per run"
fi

# Runs: one TSV line each (columns: see the JSON writer below).
runs=$work/runs.tsv
: >"$runs"
failures=()
total_time=0
for wl in "${workloads[@]}"; do
	total_time=$((total_time + $(time_of "$wl") * ${#modes[@]} * ${#thread_counts[@]} * reps * ${#systems[@]}))
done
total=$((${#workloads[@]} * ${#modes[@]} * ${#thread_counts[@]} * reps * ${#systems[@]}))
fl_log "$total runs, ${total_time}s of sysbench"
i=0
for wl in "${workloads[@]}"; do
	extra=()
	if [[ $wl == oltp_read_only ]]; then
		extra=(--skip_trx=on)
	fi
	secs=$(time_of "$wl")
	for m in "${modes[@]}"; do
		ps=auto
		if [[ $m == noprepare ]]; then
			ps=disable
		fi
		for th in "${thread_counts[@]}"; do
			for ((rep = 1; rep <= reps; rep++)); do
				for sys in "${systems[@]}"; do
					i=$((i + 1))
					pid=${pid_of[$sys]}
					if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
						fl_die "$sys (pid $pid) is not running any more"
					fi
					log=$work/run-$wl-$m-$th-$sys-$rep.log
					fl_log "[$i/$total] $wl $m $sys rep $rep: ${secs}s x $th threads"
					sel_before=()
					for n in "${nodes[@]}"; do sel_before+=("$(com_select "$n")"); done
					before=0
					if [[ -n $pid ]]; then
						if [[ $rss_peak == run ]]; then
							reset_peak "$pid" || fl_die "clear_refs of $sys (pid $pid) failed"
						fi
						before=$(cpu_ticks "$pid")
					fi
					rc=0
					sb "${addr_of[$sys]}" "$wl" --db-ps-mode="$ps" --threads="$th" --time="$secs" \
						--report-interval=0 --percentile=99 ${extra[@]+"${extra[@]}"} run >"$log" 2>&1 || rc=$?
					cpu=-
					rss=-
					if [[ -n $pid ]]; then
						cpu=$(($(cpu_ticks "$pid") - before))
						rss=$(mem_kib "$pid" VmHWM)
					fi
					sel=()
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
					cpu_us=-
					if [[ $cpu != - && -n $queries && $queries != 0 ]]; then
						cpu_us=$(awk -v t="$cpu" -v hz="$clk_tck" -v q="$queries" 'BEGIN { printf "%.2f", t / hz * 1e6 / q }')
					fi
					cpu_s=-
					if [[ $cpu != - ]]; then
						cpu_s=$(awk -v t="$cpu" -v hz="$clk_tck" 'BEGIN { printf "%.2f", t / hz }')
					fi
					printf '%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%d\t%d\t%d\n' "$wl" "$m" "$th" "$sys" "$rep" \
						"${qps:--}" "${avg:--}" "${p99:--}" "${queries:--}" "$errors" "$cpu_s" "$cpu_us" "$rc" "${rss:--}" \
						"${sel[0]}" "${sel[1]}" "${sel[2]}" >>"$runs"
				done
			done
		done
	done
done

# Idle connections: what IDLE_CONNS logged-in, idle client sessions cost sluice-p in RSS.
idle_json=null
idle_table=
if ((idle_conns > 0)); then
	p_alive || fl_die "sluice-p (pid $pid_p) is not running any more"
	fl_log "idle connections: opening $idle_conns through sluice-p ($addr_p)"
	conns_before=$(primary_conns)
	rss_before=$(mem_kib "$pid_p" VmRSS)
	t0=$SECONDS
	mkfifo "$work/idleconns.in"
	# Holding the fifo open read-write keeps the opener's stdin open until we close it.
	exec {idle_fd}<>"$work/idleconns.in"
	: >"$work/idleconns.out"
	"$work/idleconns" -addr "$addr_p" -n "$idle_conns" -user "$FL_USER" -password "$FL_PASSWORD" \
		<"$work/idleconns.in" {idle_fd}>&- >"$work/idleconns.out" 2>"$work/idleconns.log" &
	idle_pid=$!
	until grep -q '^opened ' "$work/idleconns.out"; do
		if ! kill -0 "$idle_pid" 2>/dev/null; then
			fl_tail "$work/idleconns.log"
			fl_die "idleconns exited before opening $idle_conns connections"
		fi
		((SECONDS - t0 < 180)) || fl_die "idleconns did not open $idle_conns connections within 180 s"
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
	p_alive || fl_die "sluice-p died with $idle_conns idle connections"
	exec {idle_fd}>&-
	idle_fd=
	fl_stop_pid "$idle_pid"
	idle_pid=
	diff_kib=$((rss_after - rss_before))
	per_conn=$(awk -v d="$diff_kib" -v n="$idle_conns" 'BEGIN { printf "%.1f", d / n }')
	per_1000=$(awk -v d="$diff_kib" -v n="$idle_conns" 'BEGIN { printf "%.1f", d / n * 1000 / 1024 }')
	fl_log "idle connections: $idle_conns open in ${open_s}s; sluice-p RSS $(mib "$rss_before") -> $(mib "$rss_after") MiB; primary connections $conns_before -> $conns_after"
	idle_table=$(
		printf '\nIdle client connections through sluice-p (logged in as %s, then idle; RSS = VmRSS of sluice-p).\n\n' "$FL_USER"
		printf '| idle connections | RSS before MiB | RSS with them MiB | difference MiB | KiB per connection | MiB per 1 000 | primary connections before → with |\n'
		printf '|---:|---:|---:|---:|---:|---:|---:|\n'
		printf '| %d | %s | %s | %s | %s | %s | %s → %s |\n' "$idle_conns" "$(mib "$rss_before")" "$(mib "$rss_after")" \
			"$(mib "$diff_kib")" "$per_conn" "$per_1000" "$conns_before" "$conns_after"
	)
	idle_json=$(printf '{"connections": %d, "rss_before_kib": %d, "rss_after_kib": %d, "rss_diff_kib": %d, "kib_per_connection": %s, "mib_per_1000": %s, "primary_connections_before": %d, "primary_connections_after": %d, "open_seconds": %d}' \
		"$idle_conns" "$rss_before" "$rss_after" "$diff_kib" "$per_conn" "$per_1000" "$conns_before" "$conns_after" "$open_s")
fi

# Medians per workload, mode, threads and system (QPS, latencies, CPU per query, peak RSS);
# errors and Com_select deltas summed over the reps. Columns of $runs:
#   1 workload 2 mode 3 threads 4 system 5 rep 6 qps 7 avg 8 p99 9 queries 10 errors 11 cpu_s
#   12 cpu_us 13 exit 14 peak_rss_kib 15 com_select_p 16 com_select_r1 17 com_select_r2
medians=$work/medians.tsv
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
		for (c = 15; c <= 17; c++) sel[key, c] += $c
	}
	END {
		for (i = 1; i <= k; i++) {
			key = order[i]
			split(key, f, SUBSEP)
			rss = median(key, 14)
			if (rss != "-") rss = sprintf("%.1f", rss / 1024)
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\n", f[1], f[2], f[3], f[4],
				median(key, 6), median(key, 7), median(key, 8), errs[key], median(key, 12), rss,
				sel[key, 15], sel[key, 16], sel[key, 17]
		}
	}' "$runs" >"$medians"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
# spread P R1 R2: "p 0% / r1 50% / r2 50%".
spread() {
	awk -v p="$1" -v a="$2" -v b="$3" 'BEGIN {
		t = p + a + b
		if (t <= 0) { print "-"; exit }
		printf "p %.0f%% / r1 %.0f%% / r2 %.0f%%", 100 * p / t, 100 * a / t, 100 * b / t }'
}

sb_version=$(sysbench --version | awk '{ print $2 }')
times=""
for wl in "${workloads[@]}"; do
	times+="${times:+, }$wl $(time_of "$wl") s"
done
rss_note="peak during the run (VmHWM after clear_refs)"
if [[ $rss_peak == start ]]; then
	rss_note="peak since the proxy started (VmHWM; clear_refs was not writable)"
fi
table=$work/table.md
{
	printf '\nsysbench %s, %s thread(s), %s per run, %d rep(s), %d x %d rows, systems interleaved; medians. sluice threads: %s.\n' \
		"$sb_version" "${thread_counts[*]}" "$times" "$reps" "$tables" "$table_size" "$sluice_threads"
	printf 'QPS ×: QPS relative to direct / HAProxy (higher is better); p99 ×: p99 latency relative to direct / HAProxy (lower is better); CPU ×: proxy CPU µs per query relative to HAProxy.\n'
	printf 'RSS MiB: the proxy'"'"'s %s, median. reads: share of Com_select per node (primary, replica1, replica2), summed over the reps.\n\n' "$rss_note"
	printf '| workload | mode | threads | system | QPS | avg ms | p99 ms | errors | CPU µs/q | RSS MiB | reads | QPS × direct | QPS × haproxy | p99 × direct | p99 × haproxy | CPU × haproxy |\n'
	printf '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n'
	declare -A q99 qq cc
	while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu rss s1 s2 s3; do
		qq[$wl/$m/$th/$sys]=$qps
		q99[$wl/$m/$th/$sys]=$p99
		cc[$wl/$m/$th/$sys]=$cpu
	done <"$medians"
	while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu rss s1 s2 s3; do
		d=$wl/$m/$th/direct
		h=$wl/$m/$th/haproxy
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
			"$wl" "$m" "$th" "$sys" "$qps" "$avg" "$p99" "$errs" "$cpu" "$rss" "$(spread "$s1" "$s2" "$s3")" \
			"$(ratio "$qps" "${qq[$d]:--}")" "$(ratio "$qps" "${qq[$h]:--}")" \
			"$(ratio "$p99" "${q99[$d]:--}")" "$(ratio "$p99" "${q99[$h]:--}")" \
			"$(ratio "$cpu" "${cc[$h]:--}")"
	done <"$medians"
	if [[ -n $idle_table ]]; then
		printf '%s\n' "$idle_table"
	fi
} >"$table"
cat "$table"

# Results JSON.
jnum() { if [[ $1 == - || -z $1 ]]; then printf 'null'; else printf '%s' "$1"; fi; }
{
	printf '{\n  "sysbench": "%s",\n  "threads": [%s],\n  "time": {' "$sb_version" "$(
		IFS=,
		echo "${thread_counts[*]}"
	)"
	sep=""
	for wl in "${workloads[@]}"; do
		printf '%s"%s": %d' "$sep" "$wl" "$(time_of "$wl")"
		sep=", "
	done
	printf '},\n  "reps": %d,\n  "tables": %d,\n  "table_size": %d,\n  "sluice_threads": %d,\n  "rss_peak_since": "%s",\n' \
		"$reps" "$tables" "$table_size" "$sluice_threads" "$rss_peak"
	printf '  "systems": {"direct": "%s", "haproxy": "%s", "sluice-p": "%s", "sluice-r": "%s"},\n' \
		"$FL_PRIMARY" "$haproxy_addr" "$addr_p" "$addr_r"
	printf '  "nodes": {"%s": "%s", "%s": "%s", "%s": "%s"},\n' \
		"${node_labels[0]}" "${nodes[0]}" "${node_labels[1]}" "${nodes[1]}" "${node_labels[2]}" "${nodes[2]}"
	printf '  "runs": [\n'
	sep=""
	while IFS=$'\t' read -r wl m th sys rep qps avg p99 queries errs cpu_s cpu_us rc rss s1 s2 s3; do
		printf '%s    {"workload": "%s", "mode": "%s", "threads": %d, "system": "%s", "rep": %d, "qps": %s, "avg_ms": %s, "p99_ms": %s, "queries": %s, "errors": %d, "cpu_s": %s, "cpu_us_per_query": %s, "peak_rss_kib": %s, "com_select": {"p": %d, "r1": %d, "r2": %d}, "exit": %d}' \
			"$sep" "$wl" "$m" "$th" "$sys" "$rep" "$(jnum "$qps")" "$(jnum "$avg")" "$(jnum "$p99")" "$(jnum "$queries")" "$errs" \
			"$(jnum "$cpu_s")" "$(jnum "$cpu_us")" "$(jnum "$rss")" "$s1" "$s2" "$s3" "$rc"
		sep=$',\n'
	done <"$runs"
	printf '\n  ],\n  "medians": [\n'
	sep=""
	while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu rss s1 s2 s3; do
		printf '%s    {"workload": "%s", "mode": "%s", "threads": %d, "system": "%s", "qps": %s, "avg_ms": %s, "p99_ms": %s, "errors": %d, "cpu_us_per_query": %s, "peak_rss_mib": %s, "com_select_sum": {"p": %d, "r1": %d, "r2": %d}}' \
			"$sep" "$wl" "$m" "$th" "$sys" "$(jnum "$qps")" "$(jnum "$avg")" "$(jnum "$p99")" "$errs" "$(jnum "$cpu")" "$(jnum "$rss")" "$s1" "$s2" "$s3"
		sep=$',\n'
	done <"$medians"
	printf '\n  ],\n  "idle": %s\n}\n' "$idle_json"
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
