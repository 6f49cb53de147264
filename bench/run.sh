#!/usr/bin/env bash
# bench/run.sh: sysbench throughput, latency and proxy CPU of sluice next to a direct connection
# and HAProxy, all against one 'sluice sandbox up' cluster (1 primary, 2 replicas) on 127.0.0.1.
#
# Systems, run side by side and interleaved (A B C D A B C D ...):
#   A direct    sysbench straight to the primary
#   B haproxy   HAProxy 'mode tcp', nbthread 1, in front of the primary
#   C sluice-p  sluice endpoint rw with every read on the primary (pin_reads)
#   D sluice-r  sluice endpoint rw with the sandbox's read weights (reads on the replicas)
#
# Environment (see bench/README.md):
#   WORKLOADS="oltp_point_select"  any of oltp_point_select oltp_read_only oltp_read_write
#                                  (oltp_read_only always runs with --skip_trx=on)
#   MODES="ps noprepare"           ps: --db-ps-mode=auto; noprepare: --db-ps-mode=disable
#   THREADS=8 TIME=20 REPS=3       sysbench threads, seconds per run, repetitions
#   TABLES=4 TABLE_SIZE=10000      sbtest size
#   SMOKE=1                        TIME=3 REPS=1 and only the first workload
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
read -r -a workloads <<<"${WORKLOADS:-oltp_point_select}"
run_time=${TIME:-20}
reps=${REPS:-3}
threads=${THREADS:-8}
tables=${TABLES:-4}
table_size=${TABLE_SIZE:-10000}
if [[ ${SMOKE:-0} == 1 ]]; then
	run_time=3
	reps=1
	workloads=("${workloads[0]}")
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
for n in "$run_time" "$reps" "$threads" "$tables" "$table_size"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fl_die "TIME, REPS, THREADS, TABLES and TABLE_SIZE must be positive integers"
done
for b in sysbench haproxy mariadb; do
	if ! command -v "$b" >/dev/null 2>&1; then
		if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
			fl_log "$b not found; installing sysbench haproxy mariadb-client"
			apt-get install -y sysbench haproxy mariadb-client >/dev/null || fl_die "apt-get install failed"
		else
			fl_die "$b not found (as root: apt-get install sysbench haproxy mariadb-client)"
		fi
	fi
done
clk_tck=$(getconf CLK_TCK)

haproxy_pid=
pid_p=
pid_r=
fl_begin sluice-bench
out=${OUT:-$work/results.json}

# Stop HAProxy and the sluice of system C (fl_cleanup stops FL_SLUICE_PID, system D's, the
# sandbox, and removes $work).
bench_cleanup() {
	local rc=$?
	set +e
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

# cpu_ticks PID: utime + stime (fields 14 and 15 of /proc/PID/stat), in clock ticks.
cpu_ticks() {
	local s f
	s=$(<"/proc/$1/stat")
	s=${s##*) }
	read -r -a f <<<"$s"
	echo $((f[11] + f[12]))
}


fl_build_sluice "$work/sluice"
fl_sandbox_up "$work/sandbox" --replicas 2
fl_sandbox_read "$work/sandbox"
((${#FL_REPLICAS[@]} == 2)) || fl_die "expected 2 replicas, got ${#FL_REPLICAS[@]}"
fl_log "sandbox: primary $FL_PRIMARY, replicas ${FL_REPLICAS[*]}"
primary_name=$(awk '/^  - name: /{ n = $3 } /^    role: primary/{ print n; exit }' "$FL_SANDBOX_DIR/sluice.yaml")
[[ -n $primary_name ]] || fl_die "no primary backend in $FL_SANDBOX_DIR/sluice.yaml"

# Prepare once on the primary, then wait until both replicas have applied it.
t0=$SECONDS
fl_sql "$FL_PRIMARY" -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
sb "$FL_PRIMARY" oltp_read_write --threads="$tables" prepare >"$work/prepare.log" 2>&1 || {
	fl_tail "$work/prepare.log"
	fl_die "sysbench prepare failed"
}
gtid=$(fl_sql "$FL_PRIMARY" -e 'SELECT @@gtid_binlog_pos')
for r in "${FL_REPLICAS[@]}"; do
	waited=$(fl_sql "$r" -e "SELECT MASTER_GTID_WAIT('$gtid', 120)")
	[[ $waited == 0 ]] || fl_die "replica $r did not reach GTID $gtid within 120 s"
done
fl_log "prepared $tables x $table_size rows in $((SECONDS - t0))s; replicas at $gtid"

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
FL_RW=$addr_r
if [[ -n ${PROFILE_DIR:-} ]]; then
	FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/sluice-r.cpu")
fi
FIDELITY_READS=replicas fl_sluice_start "$work/sluice-r.yaml" "$work/sluice-r.log"
pid_r=$FL_SLUICE_PID
fl_log "direct $FL_PRIMARY, haproxy $haproxy_addr (pid $haproxy_pid), sluice-p $addr_p (pid $pid_p), sluice-r $addr_r (pid $pid_r)"

declare -A addr_of=([direct]=$FL_PRIMARY [haproxy]=$haproxy_addr [sluice-p]=$addr_p [sluice-r]=$addr_r)
declare -A pid_of=([direct]="" [haproxy]=$haproxy_pid [sluice-p]=$pid_p [sluice-r]=$pid_r)

runs=$work/runs.tsv
: >"$runs"
failures=()
total=$((${#workloads[@]} * ${#modes[@]} * reps * ${#systems[@]}))
i=0
for wl in "${workloads[@]}"; do
	extra=()
	if [[ $wl == oltp_read_only ]]; then
		extra=(--skip_trx=on)
	fi
	for m in "${modes[@]}"; do
		ps=auto
		if [[ $m == noprepare ]]; then
			ps=disable
		fi
		for ((rep = 1; rep <= reps; rep++)); do
			for sys in "${systems[@]}"; do
				i=$((i + 1))
				pid=${pid_of[$sys]}
				if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
					fl_die "$sys (pid $pid) is not running any more"
				fi
				log=$work/run-$wl-$m-$sys-$rep.log
				fl_log "[$i/$total] $wl $m $sys rep $rep: ${run_time}s x $threads threads"
				before=0
				if [[ -n $pid ]]; then
					before=$(cpu_ticks "$pid")
				fi
				rc=0
				sb "${addr_of[$sys]}" "$wl" --db-ps-mode="$ps" --threads="$threads" --time="$run_time" \
					--report-interval=0 --percentile=99 ${extra[@]+"${extra[@]}"} run >"$log" 2>&1 || rc=$?
				cpu=-
				if [[ -n $pid ]]; then
					cpu=$(($(cpu_ticks "$pid") - before))
				fi
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
					failures+=("$wl $m $sys rep $rep: exit $rc, ${ignored:-?} ignored errors, ${reconnects:-?} reconnects${fatal:+: $fatal}")
				fi
				cpu_us=-
				if [[ $cpu != - && -n $queries && $queries != 0 ]]; then
					cpu_us=$(awk -v t="$cpu" -v hz="$clk_tck" -v q="$queries" 'BEGIN { printf "%.2f", t / hz * 1e6 / q }')
				fi
				cpu_s=-
				if [[ $cpu != - ]]; then
					cpu_s=$(awk -v t="$cpu" -v hz="$clk_tck" 'BEGIN { printf "%.2f", t / hz }')
				fi
				printf '%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\n' "$wl" "$m" "$sys" "$rep" \
					"${qps:--}" "${avg:--}" "${p99:--}" "${queries:--}" "$errors" "$cpu_s" "$cpu_us" "$rc" >>"$runs"
			done
		done
	done
done

# Medians per workload, mode and system; ratios to direct and to HAProxy.
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
		key = $1 SUBSEP $2 SUBSEP $3
		if (!(key in seen)) { seen[key] = 1; order[++k] = key }
		for (c = 5; c <= 11; c++) if ($c != "-" && c != 8 && c != 10) vals[key, c] = vals[key, c] " " $c
		errs[key] += $9
	}
	END {
		for (i = 1; i <= k; i++) {
			split(order[i], f, SUBSEP)
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", f[1], f[2], f[3],
				median(order[i], 5), median(order[i], 6), median(order[i], 7), errs[order[i]], median(order[i], 11)
		}
	}' "$runs" >"$medians"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

table=$work/table.md
{
	printf '\nsysbench %s, %d threads, %ss per run, %d rep(s), %d x %d rows, systems interleaved; medians.\n' \
		"$(sysbench --version | awk '{ print $2 }')" "$threads" "$run_time" "$reps" "$tables" "$table_size"
	printf 'QPS ×: QPS relative to direct / HAProxy (higher is better); p99 ×: p99 latency relative to direct / HAProxy (lower is better); CPU ×: proxy CPU µs per query relative to HAProxy.\n\n'
	printf '| workload | mode | system | QPS | avg ms | p99 ms | errors | CPU µs/q | QPS × direct | QPS × haproxy | p99 × direct | p99 × haproxy | CPU × haproxy |\n'
	printf '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
	declare -A q99 qq cc
	while IFS=$'\t' read -r wl m sys qps avg p99 errs cpu; do
		qq[$wl/$m/$sys]=$qps
		q99[$wl/$m/$sys]=$p99
		cc[$wl/$m/$sys]=$cpu
	done <"$medians"
	while IFS=$'\t' read -r wl m sys qps avg p99 errs cpu; do
		d=$wl/$m/direct
		h=$wl/$m/haproxy
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$wl" "$m" "$sys" "$qps" "$avg" "$p99" "$errs" "$cpu" \
			"$(ratio "$qps" "${qq[$d]:--}")" "$(ratio "$qps" "${qq[$h]:--}")" \
			"$(ratio "$p99" "${q99[$d]:--}")" "$(ratio "$p99" "${q99[$h]:--}")" \
			"$(ratio "$cpu" "${cc[$h]:--}")"
	done <"$medians"
} >"$table"
cat "$table"

# Results JSON.
jnum() { if [[ $1 == - || -z $1 ]]; then printf 'null'; else printf '%s' "$1"; fi; }
{
	printf '{\n  "sysbench": "%s",\n  "threads": %d,\n  "time": %d,\n  "reps": %d,\n  "tables": %d,\n  "table_size": %d,\n' \
		"$(sysbench --version | awk '{ print $2 }')" "$threads" "$run_time" "$reps" "$tables" "$table_size"
	printf '  "systems": {"direct": "%s", "haproxy": "%s", "sluice-p": "%s", "sluice-r": "%s"},\n' \
		"$FL_PRIMARY" "$haproxy_addr" "$addr_p" "$addr_r"
	printf '  "runs": [\n'
	sep=""
	while IFS=$'\t' read -r wl m sys rep qps avg p99 queries errs cpu_s cpu_us rc; do
		printf '%s    {"workload": "%s", "mode": "%s", "system": "%s", "rep": %d, "qps": %s, "avg_ms": %s, "p99_ms": %s, "queries": %s, "errors": %d, "cpu_s": %s, "cpu_us_per_query": %s, "exit": %d}' \
			"$sep" "$wl" "$m" "$sys" "$rep" "$(jnum "$qps")" "$(jnum "$avg")" "$(jnum "$p99")" "$(jnum "$queries")" "$errs" \
			"$(jnum "$cpu_s")" "$(jnum "$cpu_us")" "$rc"
		sep=$',\n'
	done <"$runs"
	printf '\n  ],\n  "medians": [\n'
	sep=""
	while IFS=$'\t' read -r wl m sys qps avg p99 errs cpu; do
		printf '%s    {"workload": "%s", "mode": "%s", "system": "%s", "qps": %s, "avg_ms": %s, "p99_ms": %s, "errors": %d, "cpu_us_per_query": %s}' \
			"$sep" "$wl" "$m" "$sys" "$(jnum "$qps")" "$(jnum "$avg")" "$(jnum "$p99")" "$errs" "$(jnum "$cpu")"
		sep=$',\n'
	done <"$medians"
	printf '\n  ]\n}\n'
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
