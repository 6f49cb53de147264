#!/usr/bin/env bash
# bench/switchover.sh: load proof for the topology monitor. A 'sluice sandbox up' cluster (1
# primary, 2 replicas) on 127.0.0.1 with 'sluice serve' in front (the sandbox's configuration:
# reads on the replicas, a monitor account), then two phases through sluice's rw endpoint:
#
#   A  switchover under load: sysbench oltp_update_index (text protocol) and oltp_point_select
#      (prepared statements) at once, 8 threads each, for DUR seconds; at DUR/3,
#      'sluice sandbox switchover replica1' makes replica1 the primary. Afterwards SUM(k) over
#      the sbtest tables on replica1 (directly) must have grown by exactly the number of UPDATEs
#      sysbench saw acknowledged: every acknowledged write is on the new primary, none twice.
#   B  a replica crash under read load: sysbench oltp_read_only --skip_trx=on, 8 threads, for
#      DUR2 seconds; at DUR2/3 'sluice sandbox stop replica2' (SIGKILL), at 2*DUR2/3 'sandbox
#      start replica2'.
#   C  a drain under read load: sysbench oltp_read_only --skip_trx=on through the rw endpoint and
#      through the ro endpoint at once, DUR3 seconds; at DUR3/3 'sluice ctl drain replica2'
#      (admin API), which must reach "drained" (0 connections from sluice) within its timeout
#      with no client error; at 2*DUR3/3 'sluice ctl undrain replica2'.
#   D  the admin API under load: sysbench oltp_point_select (ps) through rw, DUR4 seconds per run,
#      alternately without and with bench/adminload (one HTTP client: GET /v1/proxy, a PATCH of
#      the rw endpoint's max_replica_lag, a /metrics scrape, ADMIN_RATE rounds a second),
#      2 runs each; the QPS with the loop against without (reported), and no error.
#   E  a replica removed and added back under read load: sysbench oltp_read_only --skip_trx=on
#      through rw and ro at once, DUR5 seconds; at DUR5/4 'sluice ctl drain replica2', once it is
#      drained 'sluice ctl delete-node replica2', then 'sluice ctl create-node replica2
#      address=... read_weights=rw:100,ro:100', which must be up in sluice (its first monitor
#      check) and take reads again before the end, with no client error.
#
# Every sysbench runs with --mysql-ignore-errors=all, so an error does not stop it: it is
# counted ("ignored errors", "reconnects") and fails the script. Prints a Markdown table: queries,
# rates, errors, reconnects, the longest statement (max latency) and the longest run of seconds
# without a single transaction.
#
# Environment (see bench/README.md):
#   DUR=30                 seconds of phase A (SMOKE=1: 12)
#   DUR2=25                seconds of phase B (SMOKE=1: 12)
#   DUR3=15                seconds of phase C (SMOKE=1: 9)
#   DUR4=8                 seconds of each phase D run (SMOKE=1: 4)
#   DUR5=15                seconds of phase E (SMOKE=1: 9)
#   ADMIN_RATE=10          phase D's rounds of admin calls per second (3 calls each; 0: as fast
#                          as they answer)
#   MONITOR_INTERVAL=1s    monitor.interval of the sluice under test
#   SWITCHOVER_TIMEOUT=    monitor.switchover_timeout (default: sluice's own, 10s)
#   THREADS=8              sysbench threads of each run
#   TABLES=4 TABLE_SIZE=10000   sbtest size
#   SMOKE=1                DUR=12 DUR2=12 (unless set)
#   OUT=path               results JSON
#   SLUICE_BIN=path        use this sluice binary instead of building one
#   KEEP=1                 keep the work directory and the sandbox
#
# Exit status: 0 when neither phase had an error or reconnect, the SUM(k) check held and sluice
# is still running at the end; 1 otherwise. Everything talks to 127.0.0.1 only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck disable=SC2034 # read by fidelity-lib.sh
FL_NAME=switchover
# shellcheck source=scripts/fidelity-lib.sh disable=SC1091
. "$root/scripts/fidelity-lib.sh"

dur=${DUR:-30}
dur2=${DUR2:-25}
dur3=${DUR3:-15}
dur4=${DUR4:-8}
dur5=${DUR5:-15}
admin_rate=${ADMIN_RATE:-10}
if [[ ${SMOKE:-0} == 1 ]]; then
	dur4=${DUR4:-4}
	dur5=${DUR5:-9}
	dur=${DUR:-12}
	dur2=${DUR2:-12}
	dur3=${DUR3:-9}
fi
threads=${THREADS:-8}
tables=${TABLES:-4}
table_size=${TABLE_SIZE:-10000}
monitor_interval=${MONITOR_INTERVAL:-1s}
switchover_timeout=${SWITCHOVER_TIMEOUT:-}
readonly db=sbtest new_primary=replica1 victim=replica2

for n in "$dur" "$dur2" "$dur3" "$dur5" "$threads" "$tables" "$table_size"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || fl_die "DUR, DUR2, DUR3, DUR5, THREADS, TABLES and TABLE_SIZE must be positive integers"
done
((dur >= 6 && dur2 >= 6 && dur3 >= 6 && dur5 >= 8)) || fl_die "DUR, DUR2 and DUR3 must be at least 6 seconds (events at a third and two thirds), DUR5 at least 8"
[[ $monitor_interval =~ ^[0-9]+(ms|s|m)$ ]] || fl_die "MONITOR_INTERVAL must be a duration like 1s or 500ms, got '$monitor_interval'"
[[ -z $switchover_timeout || $switchover_timeout =~ ^[0-9]+(ms|s|m)$ ]] ||
	fl_die "SWITCHOVER_TIMEOUT must be a duration like 10s, got '$switchover_timeout'"
# Nothing is installed here: scripts/test.sh (or the command below) does that.
missing=()
for b in sysbench mariadb mariadbd; do
	have_bin "$b" || missing+=("$b")
done
((${#missing[@]} == 0)) ||
	fl_die "missing ${missing[*]}; install them with: sudo apt-get update && sudo apt-get install -y sysbench mariadb-client mariadb-server"

bg_pids=()
fl_begin sluice-switchover
# shellcheck disable=SC2154 # $work, $status: set by fl_begin
out=${OUT:-$work/results.json}

# Stop the sysbench runs still going (fl_cleanup then stops sluice and the sandbox and removes
# $work).
switchover_cleanup() {
	local rc=$? p
	set +e
	for p in ${bg_pids[@]+"${bg_pids[@]}"}; do
		fl_stop_pid "$p"
	done
	bg_pids=()
	(exit "$rc")
	fl_cleanup
}
trap switchover_cleanup EXIT

# node_field NAME KEY: field KEY (address, role, ...) of node NAME in the sandbox's sandbox.json.
node_field() { fl_json_node_field "$FL_SANDBOX_DIR/sandbox.json" "$2" name "$1" | head -n 1; }

# set_monitor CONFIG: interval (and switchover_timeout, when set) in the monitor section of a
# sandbox sluice.yaml, right under "monitor:". Returns 3 when there is no monitor section.
set_monitor() {
	awk -v iv="$monitor_interval" -v st="$switchover_timeout" '
		/^monitor:/ {
			print
			print "  interval: " iv
			if (st != "") print "  switchover_timeout: " st
			changed = 1
			next
		}
		{ print }
		END { if (!changed) exit 3 }' "$1" >"$1.new" || return
	mv "$1.new" "$1"
}

# sum_k ADDR: SUM(k) over every sbtest table, directly on that node.
sum_k() {
	local sql="" t
	for ((t = 1; t <= tables; t++)); do
		sql+="${sql:+ UNION ALL }SELECT SUM(k) AS s FROM $db.sbtest$t"
	done
	fl_sql "$1" -e "SELECT SUM(s) FROM ($sql) AS t"
}

# show_nodes: /*PROXY_INTERNAL*/ SHOW NODES through endpoint rw, as a table (-c keeps the comment).
show_nodes() { fl_sql "$FL_RW" -c --table --column-names -e '/*PROXY_INTERNAL*/ SHOW NODES'; }

# sluice_node NAME COLUMN: column COLUMN (3 role, 5 state) of node NAME in SHOW NODES through
# endpoint rw.
sluice_node() { fl_sql "$FL_RW" -c -e '/*PROXY_INTERNAL*/ SHOW NODES' | awk -F '\t' -v n="$1" -v c="$2" '$1 == n { print $c }'; }

# catch_up ADDR...: wait (up to 60 s) until each node has applied what the primary (sandbox.json's
# primary now) has written.
catch_up() {
	local p gtid a waited
	p=$(fl_json_nodes "$FL_SANDBOX_DIR/sandbox.json" primary | head -n 1)
	gtid=$(fl_sql "$p" -e 'SELECT @@gtid_binlog_pos')
	for a in "$@"; do
		waited=$(fl_sql "$a" -e "SELECT MASTER_GTID_WAIT('$gtid', 60)")
		[[ $waited == 0 ]] || return 1
	done
}

# now: seconds since the epoch, with microseconds.
now() { printf '%s' "$EPOCHREALTIME"; }
# since T: seconds (1 decimal) from T to now.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
# sleep_until T0 OFFSET: sleep until OFFSET seconds after T0 (not at all when that has passed).
sleep_until() {
	local s
	s=$(awk -v t0="$1" -v o="$2" -v n="$EPOCHREALTIME" 'BEGIN { d = t0 + o - n; printf "%.3f", (d > 0 ? d : 0) }')
	sleep "$s"
}

# sb_bg LOG WORKLOAD ARGS...: sysbench WORKLOAD through endpoint rw in the background, every error
# ignored (counted) so that the run goes on; its pid is appended to bg_pids. --verbosity=5 makes
# sysbench log the errors it ignores ("Ignoring error N ..."), so that a failure names them.
sb_bg() {
	local log=$1 wl=$2
	shift 2
	sb "${SB_ADDR:-$FL_RW}" "$wl" --threads="$threads" --report-interval=1 --mysql-ignore-errors=all --verbosity=5 "$@" \
		run >"$log" 2>&1 &
	bg_pids+=($!)
}

# wait_bg SECONDS: wait for every background sysbench, for at most SECONDS; sets sb_rc[pid] to its
# exit status, or to "timeout" for one still running then (stopped). sysbench 1.0 runs an event
# again after an ignored error without looking at --time, so while every statement fails it never
# ends by itself.
declare -A sb_rc=()
wait_bg() {
	local p rc deadline=$((SECONDS + $1))
	for p in "${bg_pids[@]}"; do
		while kill -0 "$p" 2>/dev/null && ((SECONDS < deadline)); do
			sleep 0.2
		done
		if kill -0 "$p" 2>/dev/null; then
			fl_stop_pid "$p"
			sb_rc[$p]=timeout
			continue
		fi
		rc=0
		wait "$p" || rc=$?
		sb_rc[$p]=$rc
	done
	bg_pids=()
}

# per_second LOG: from sysbench's per-second reports, the longest run of consecutive seconds
# with tps 0 (0 when none) and the lowest tps of any second ("-" without reports).
per_second() {
	awk '
		/^\[ *[0-9]+s \]/ {
			for (i = 1; i < NF; i++) if ($i == "tps:") { tps = $(i + 1) + 0; break }
			run = (tps == 0) ? run + 1 : 0
			if (run > best) best = run
			if (n++ == 0 || tps < low) low = tps
		}
		END { print best + 0, (n ? low : "-") }' "$1"
}

# parse PREFIX LOG RC: the numbers of one sysbench report, as PREFIX_queries, PREFIX_qps,
# PREFIX_tps, PREFIX_writes, PREFIX_other, PREFIX_ignored, PREFIX_reconnects, PREFIX_max,
# PREFIX_stall (longest run of 0-tps seconds), PREFIX_low (lowest tps of a second) and
# PREFIX_problem (why it failed; empty when it did not).
declare -A r=()
parse() {
	local p=$1 log=$2 rc=$3 fatal
	r[${p}_queries]=$(report_value "$log" queries)
	r[${p}_qps]=$(rate "$log" queries)
	r[${p}_tps]=$(rate "$log" transactions)
	r[${p}_writes]=$(report_value "$log" write)
	r[${p}_other]=$(report_value "$log" other)
	r[${p}_ignored]=$(report_value "$log" 'ignored errors')
	r[${p}_reconnects]=$(report_value "$log" reconnects)
	r[${p}_max]=$(report_value "$log" max)
	read -r "r[${p}_stall]" "r[${p}_low]" < <(per_second "$log")
	fatal=$(grep -m 1 -E 'FATAL|ALERT' "$log" || true)
	local why=()
	if [[ $rc == timeout ]]; then
		why+=("sysbench still running 60 s after its --time (every statement failing?); stopped")
	elif ((rc != 0)); then
		why+=("sysbench exit $rc")
	fi
	[[ -z $fatal ]] || why+=("$fatal")
	[[ -n ${r[${p}_ignored]} && -n ${r[${p}_queries]} ]] || why+=("no statistics in the report")
	[[ ${r[${p}_ignored]:-0} == 0 ]] || why+=("${r[${p}_ignored]} ignored errors")
	[[ ${r[${p}_reconnects]:-0} == 0 ]] || why+=("${r[${p}_reconnects]} reconnects")
	r[${p}_problem]=$(
		IFS=';'
		echo "${why[*]}"
	)
}

fl_build_sluice "$work/sluice"
command -v go >/dev/null 2>&1 || fl_die "go not found: needed to build bench/adminload (phase D)"
(cd "$root" && go build -o "$work/adminload" ./bench/adminload) || fl_die "go build ./bench/adminload failed"
fl_sandbox_up "$work/sandbox" --replicas 2 --max-connections 300 --admin-port 0
fl_sandbox_read "$work/sandbox"
ro_addr=$(fl_json_get "$work/sandbox/sandbox.json" ro)
admin_addr=$(fl_json_get "$work/sandbox/sandbox.json" admin)
[[ -n $ro_addr && -n $admin_addr ]] || fl_die "no ro or admin address in $work/sandbox/sandbox.json"
ctl() { "$FL_SLUICE" ctl --admin "$admin_addr" "$@"; }
# ctl_node NODE COLUMN: a column of sluice ctl status's node table (3 state, 6 connections).
ctl_node() { ctl status | awk -v n="$1" -v c="$2" '$1 == n { print $c; exit }'; }
((${#FL_REPLICAS[@]} == 2)) || fl_die "expected 2 replicas, got ${#FL_REPLICAS[@]}"
new_addr=$(node_field "$new_primary" address)
old_addr=$(node_field primary address)
victim_addr=$(node_field "$victim" address)
for a in "$new_addr" "$old_addr" "$victim_addr"; do
	[[ -n $a ]] || fl_die "no address of primary, $new_primary or $victim in $FL_SANDBOX_DIR/sandbox.json"
	fl_local "$a"
done
fl_log "sandbox: primary $old_addr, $new_primary $new_addr, $victim $victim_addr; sluice rw $FL_RW"

set_monitor "$FL_SANDBOX_DIR/sluice.yaml" || fl_die "no monitor section in $FL_SANDBOX_DIR/sluice.yaml"
fl_sb_prepare "$work/prepare.log"

# The sandbox's own read weights: reads on the replicas, which phase B needs.
FIDELITY_READS=replicas fl_sluice_start "$FL_SANDBOX_DIR/sluice.yaml" "$work/sluice.log"
fl_log "sluice serve: pid $FL_SLUICE_PID, monitor interval $monitor_interval${switchover_timeout:+, switchover_timeout $switchover_timeout}"

# Phase A: switchover under writes and reads.
sum_before=$(sum_k "$old_addr")
[[ $sum_before =~ ^[0-9]+$ ]] || fl_die "SUM(k) on the primary: '$sum_before'"
at=$((dur / 3))
fl_log "phase A: oltp_update_index (text) + oltp_point_select (ps), ${dur}s x $threads threads each; switchover to $new_primary at ${at}s; SUM(k) before: $sum_before"
t0=$(now)
sb_bg "$work/a-update.log" oltp_update_index --time="$dur" --db-ps-mode=disable
pid_upd=${bg_pids[-1]}
sb_bg "$work/a-select.log" oltp_point_select --time="$dur"
pid_sel=${bg_pids[-1]}
sleep_until "$t0" "$at"
so_start=$(since "$t0")
ts=$(now)
so_rc=0
"$FL_SLUICE" sandbox switchover "$new_primary" --dir "$FL_SANDBOX_DIR" >"$work/switchover.out" 2>&1 || so_rc=$?
so_secs=$(since "$ts")
fl_log "switchover at ${so_start}s: exit $so_rc in ${so_secs}s; its output:"
sed 's/^/    /' "$work/switchover.out" >&2
wait_bg $((dur + 60 - at))
parse upd "$work/a-update.log" "${sb_rc[$pid_upd]}"
parse sel "$work/a-select.log" "${sb_rc[$pid_sel]}"

# The check. oltp_update_index runs one 'UPDATE sbtestN SET k=k+1 WHERE id=?' per event
# (index_updates=1; ids 1..table_size all exist), so each one that succeeded added exactly 1 to
# SUM(k). sysbench 1.0 (drv_mysql.c) counts a statement as "write" only when it succeeded with
# affected rows > 0 (succeeded with 0 rows: "other"; failed: "ignored errors" or, for a lost
# connection, "reconnects" — never "write"; sysbench then runs the event again, a new statement
# counted on its own). So SUM(k) after - before must equal "write:": fewer
# means an acknowledged write is missing on the new primary, more means one was applied twice
# (or a statement sysbench saw fail was applied anyway, which also shows as errors > 0).
expected=${r[upd_writes]:-}
sum_after=$(sum_k "$new_addr")
[[ $sum_after =~ ^[0-9]+$ ]] || fl_die "SUM(k) on $new_primary: '$sum_after'"
found=$((sum_after - sum_before))
sumk_ok=false
if [[ $expected =~ ^[0-9]+$ ]] && ((found == expected)); then
	sumk_ok=true
fi
fl_log "SUM(k) on $new_primary: $sum_before -> $sum_after: +$found; sysbench writes: ${expected:-?} (other: ${r[upd_other]:-?}): $([[ $sumk_ok == true ]] && echo ok || echo MISMATCH)"

# The other nodes (the old primary, now a replica, and $victim) replicate from the new primary:
# they must reach its position and hold the same SUM(k).
replicas_ok=true
replica_sums=""
if catch_up "$old_addr" "$victim_addr"; then
	for a in "$old_addr" "$victim_addr"; do
		s=$(sum_k "$a")
		replica_sums+="${replica_sums:+, }$a $s"
		[[ $s == "$sum_after" ]] || replicas_ok=false
	done
else
	replicas_ok=false
	replica_sums="did not catch up with $new_primary within 60 s"
fi
fl_log "replicas after the switchover: $replica_sums: $([[ $replicas_ok == true ]] && echo same || echo DIFFERENT)"

# Two monitor rounds, so that SHOW NODES shows the nodes as they are now (lag included).
sleep "$(awk -v d="$monitor_interval" 'BEGIN { n = d + 0; if (d ~ /ms$/) n /= 1000; else if (d ~ /m$/) n *= 60; printf "%.3f", 2 * n }')"
primary_role=$(node_field "$new_primary" role)
sluice_sees=$(sluice_node "$new_primary" 3 || true)
fl_log "sandbox.json: $new_primary is $primary_role; sluice's SHOW NODES: $new_primary is ${sluice_sees:-?}"
show_nodes || fl_log "SHOW NODES through sluice failed"

# Phase B: a replica killed and restarted under reads.
[[ $(node_field "$victim" role) == replica ]] || fl_die "$victim is not a replica after the switchover"
at1=$((dur2 / 3))
at2=$((2 * dur2 / 3))
fl_log "phase B: oltp_read_only --skip_trx=on, ${dur2}s x $threads threads; SIGKILL $victim at ${at1}s, start it at ${at2}s"
t0=$(now)
sb_bg "$work/b-read.log" oltp_read_only --time="$dur2" --skip_trx=on
pid_ro=${bg_pids[-1]}
sleep_until "$t0" "$at1"
kill_at=$(since "$t0")
kill_rc=0
"$FL_SLUICE" sandbox stop "$victim" --dir "$FL_SANDBOX_DIR" >"$work/stop.out" 2>&1 || kill_rc=$?
fl_log "stop $victim at ${kill_at}s: exit $kill_rc $(tr '\n' ' ' <"$work/stop.out")"
sleep_until "$t0" "$at2"
start_at=$(since "$t0")
ts=$(now)
start_rc=0
"$FL_SLUICE" sandbox start "$victim" --dir "$FL_SANDBOX_DIR" >"$work/start.out" 2>&1 || start_rc=$?
fl_log "start $victim at ${start_at}s: exit $start_rc in $(since "$ts")s $(tr '\n' ' ' <"$work/start.out")"
# How long after it answers again sluice counts it up (SHOW NODES state "up"; at most 30 s).
ts=$(now)
back_s=-
deadline=$((SECONDS + 30))
while ((start_rc == 0)); do
	if [[ $(sluice_node "$victim" 5 || true) == up ]]; then
		back_s=$(since "$ts")
		break
	fi
	((SECONDS < deadline)) || break
	sleep 0.1
done
fl_log "$victim up again in sluice's SHOW NODES: $([[ $back_s == - ]] && echo 'not within 30 s' || echo "${back_s}s after it answered")"
wait_bg $((dur2 + 60 - at2))
parse ro "$work/b-read.log" "${sb_rc[$pid_ro]}"
show_nodes || fl_log "SHOW NODES through sluice failed"

# Phase C: a drain under reads through both endpoints.
drained=$victim
c1=$((dur3 / 3))
c2=$((2 * dur3 / 3))
drain_timeout=$((c2 - c1))
# After phase A the old primary is a replica: the ro endpoint reads from it and from $drained
# (its sessions bound to $drained then have somewhere to go), changed through the admin API.
ctl endpoint ro "read_weights=primary:100,$new_primary:0,$drained:100" >"$work/ro-weights.out" 2>&1 ||
	fl_die "sluice ctl endpoint ro read_weights=...: $(cat "$work/ro-weights.out")"
fl_log "phase C: oltp_read_only --skip_trx=on through rw and ro, ${dur3}s x $threads threads each; drain $drained at ${c1}s (timeout ${drain_timeout}s), undrain at ${c2}s"
t0=$(now)
sb_bg "$work/c-rw.log" oltp_read_only --time="$dur3" --skip_trx=on
pid_crw=${bg_pids[-1]}
SB_ADDR=$ro_addr sb_bg "$work/c-ro.log" oltp_read_only --time="$dur3" --skip_trx=on
pid_cro=${bg_pids[-1]}
sleep_until "$t0" "$c1"
conns_before=$(ctl_node "$drained" 6 || true)
drain_at=$(since "$t0")
ts=$(now)
drain_rc=0
ctl drain "$drained" --timeout "${drain_timeout}s" >"$work/drain.out" 2>&1 || drain_rc=$?
drained_s=-
while ((drain_rc == 0)); do
	if [[ $(ctl_node "$drained" 3 || true) == drained ]]; then
		drained_s=$(since "$ts")
		break
	fi
	awk -v a="$(since "$t0")" -v b="$c2" 'BEGIN { exit !(a < b) }' || break
	sleep 0.05
done
conns_drained=$(ctl_node "$drained" 6 || true)
fl_log "drain $drained at ${drain_at}s: exit $drain_rc, $conns_before connections before; drained: $([[ $drained_s == - ]] && echo "not within ${drain_timeout}s" || echo "in ${drained_s}s, $conns_drained connections")"
sleep_until "$t0" "$c2"
undrain_rc=0
ctl undrain "$drained" >"$work/undrain.out" 2>&1 || undrain_rc=$?
wait_bg $((dur3 + 60 - c2))
parse crw "$work/c-rw.log" "${sb_rc[$pid_crw]}"
parse cro "$work/c-ro.log" "${sb_rc[$pid_cro]}"

# Phase D: admin calls in a loop beside a point-select load, against the same load alone.
# bench/adminload: one keep-alive HTTP client, each round a describe, a PATCH and a /metrics
# scrape, ADMIN_RATE rounds a second (far above an operator's and a scraper's pace).
[[ $admin_rate =~ ^[0-9]+$ ]] || fl_die "ADMIN_RATE must be a whole number"
fl_log "phase D: oltp_point_select (ps) through rw, ${dur4}s per run, without and with bench/adminload ($admin_rate rounds/s), 2 runs each"
admin_calls=0 admin_failed=0 admin_p99=-
for rep in 1 2; do
	for mode in plain admin; do
		loop_pid=
		if [[ $mode == admin ]]; then
			"$work/adminload" -admin "$admin_addr" -duration "$((dur4 + 1))s" -rate "$admin_rate" >"$work/adminload-$rep.json" 2>&1 &
			loop_pid=$!
		fi
		sb_bg "$work/d-$mode-$rep.log" oltp_point_select --time="$dur4"
		pid_d=${bg_pids[-1]}
		wait_bg $((dur4 + 60))
		if [[ -n $loop_pid ]]; then
			wait "$loop_pid" || admin_failed=$((admin_failed + 1))
			admin_calls=$((admin_calls + $(fl_json_get "$work/adminload-$rep.json" calls || echo 0)))
			admin_p99=$(fl_json_get "$work/adminload-$rep.json" p99_ms || echo -)
		fi
		parse "d${mode}${rep}" "$work/d-$mode-$rep.log" "${sb_rc[$pid_d]}"
	done
done
d_plain=$(awk -v a="${r[dplain1_qps]:-0}" -v b="${r[dplain2_qps]:-0}" 'BEGIN { printf "%.2f", (a + b) / 2 }')
d_admin=$(awk -v a="${r[dadmin1_qps]:-0}" -v b="${r[dadmin2_qps]:-0}" 'BEGIN { printf "%.2f", (a + b) / 2 }')
d_ratio=$(awk -v a="$d_admin" -v b="$d_plain" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.3f", a / b }')
fl_log "phase D: point select QPS $d_plain alone, $d_admin beside $admin_calls admin calls (x $d_ratio; a call's p99 $admin_p99 ms)"

# Phase E: a replica drained, removed and added back (admin API) under reads through both
# endpoints.
removed=$drained
removed_addr=$(node_field "$removed" address)
e1=$((dur5 / 4))
fl_log "phase E: oltp_read_only --skip_trx=on through rw and ro, ${dur5}s x $threads threads each; at ${e1}s drain, delete and create $removed again"
t0=$(now)
sb_bg "$work/e-rw.log" oltp_read_only --time="$dur5" --skip_trx=on
pid_erw=${bg_pids[-1]}
SB_ADDR=$ro_addr sb_bg "$work/e-ro.log" oltp_read_only --time="$dur5" --skip_trx=on
pid_ero=${bg_pids[-1]}
sleep_until "$t0" "$e1"
e_at=$(since "$t0")
ts=$(now)
e_step=drain e_rc=0 e_removed_s=- e_up_s=- e_reads=0
ctl drain "$removed" --timeout "$((dur5 / 2))s" >"$work/e.out" 2>&1 || e_rc=$?
while ((e_rc == 0)) && [[ $(ctl_node "$removed" 3 || true) != drained ]]; do
	if awk -v a="$(since "$ts")" -v b="$((dur5 / 2))" 'BEGIN { exit !(a >= b) }'; then
		e_rc=1
		echo "not drained within $((dur5 / 2))s" >>"$work/e.out"
	fi
	sleep 0.05
done
if ((e_rc == 0)); then
	e_step=delete-node
	ctl delete-node "$removed" >>"$work/e.out" 2>&1 || e_rc=$?
fi
if ((e_rc == 0)); then
	e_removed_s=$(since "$ts")
	e_step=create-node
	ts=$(now)
	ctl create-node "$removed" "address=$removed_addr" read_weights=rw:100,ro:100 >>"$work/e.out" 2>&1 || e_rc=$?
fi
if ((e_rc == 0)); then
	e_step="up again"
	while [[ $(ctl_node "$removed" 3 || true) != up ]]; do
		if awk -v a="$(since "$t0")" -v b="$((dur5 - 2))" 'BEGIN { exit !(a >= b) }'; then
			e_rc=1
			echo "not up within the run" >>"$work/e.out"
			break
		fi
		sleep 0.05
	done
	((e_rc != 0)) || e_up_s=$(since "$ts")
fi
if ((e_rc == 0)); then
	# Reads on it again: the node's own count of SELECTs grows by more than sluice's monitor
	# and binlog stream alone make it (a few a second) under 16 reading clients.
	e_step="reads again"
	e_reads=$(fl_sql "$removed_addr" -e "SHOW GLOBAL STATUS LIKE 'Com_select'" | awk '{ print $2 }')
	sleep 1
	e_reads=$(($(fl_sql "$removed_addr" -e "SHOW GLOBAL STATUS LIKE 'Com_select'" | awk '{ print $2 }') - ${e_reads:-0}))
	((e_reads > 100)) || {
		e_rc=1
		echo "only $e_reads SELECTs on $removed in the second after it was up" >>"$work/e.out"
	}
fi
wait_bg $((dur5 + 60))
parse erw "$work/e-rw.log" "${sb_rc[$pid_erw]}"
parse ero "$work/e-ro.log" "${sb_rc[$pid_ero]}"
fl_log "phase E: $removed drained and removed in ${e_removed_s}s, added back and up in ${e_up_s}s, $e_reads SELECTs on it in the second after; $([[ $e_rc == 0 ]] && echo ok || echo "FAILED at $e_step: $(tr '\n' ' ' <"$work/e.out")")"

# Verdict.
failures=()
for p in upd sel ro crw cro dplain1 dadmin1 dplain2 dadmin2 erw ero; do
	[[ -z ${r[${p}_problem]} ]] || failures+=("$p: ${r[${p}_problem]}")
done
((so_rc == 0)) || failures+=("sandbox switchover exited $so_rc")
((kill_rc == 0)) || failures+=("sandbox stop $victim exited $kill_rc")
((start_rc == 0)) || failures+=("sandbox start $victim exited $start_rc")
[[ $back_s != - ]] || failures+=("sluice did not count $victim up again within 30 s of its restart")
[[ $sumk_ok == true ]] || failures+=("SUM(k) on $new_primary grew by $found, sysbench counted ${expected:-?} writes")
[[ $replicas_ok == true ]] || failures+=("replicas after the switchover: $replica_sums (want $sum_after)")
[[ $primary_role == primary ]] || failures+=("sandbox.json: $new_primary is '$primary_role', not primary")
[[ $sluice_sees == primary ]] || failures+=("sluice's SHOW NODES: $new_primary is '${sluice_sees:-?}', not primary")
((drain_rc == 0)) || failures+=("sluice ctl drain $drained exited $drain_rc: $(cat "$work/drain.out")")
((undrain_rc == 0)) || failures+=("sluice ctl undrain $drained exited $undrain_rc: $(cat "$work/undrain.out")")
[[ $drained_s != - ]] || failures+=("$drained was not drained within ${drain_timeout}s")
((admin_failed == 0)) || failures+=("admin calls failed: $(cat "$work"/adminload-*.json | tr '\n' ' ')")
((admin_calls > 0)) || failures+=("no admin call was made in phase D")
((e_rc == 0)) || failures+=("phase E failed at $e_step: $(tr '\n' ' ' <"$work/e.out")")
sluice_alive=true
if ! fl_sluice_alive; then
	sluice_alive=false
	failures+=("sluice (pid $FL_SLUICE_PID) is not running any more")
fi
if fl_sluice_panicked "$work/sluice.log"; then
	failures+=("sluice logged a panic")
fi

# Results.
sb_version=$(sysbench --version | awk '{ print $2 }')
{
	printf '\nsysbench %s, %d threads per run, %d x %d rows, through sluice rw %s (monitor interval %s).\n' \
		"$sb_version" "$threads" "$tables" "$table_size" "$FL_RW" "$monitor_interval"
	printf 'A: %ss; switchover to %s at %ss took %ss. B: %ss; %s SIGKILLed at %ss, started at %ss, up in sluice %ss after it answered.\n' \
		"$dur" "$new_primary" "$so_start" "$so_secs" "$dur2" "$victim" "$kill_at" "$start_at" "$back_s"
	printf 'C: %ss; %s drained at %ss (%s connections from sluice), drained (0 connections) %ss later, undrained at %ss.\n' \
		"$dur3" "$drained" "$drain_at" "${conns_before:-?}" "$drained_s" "$c2"
	printf 'D: %ss per run; point select QPS %s alone, %s beside %s admin calls (GET /v1/proxy, PATCH, /metrics; %s rounds/s; p99 %s ms): x %s.\n' \
		"$dur4" "$d_plain" "$d_admin" "$admin_calls" "$admin_rate" "$admin_p99" "$d_ratio"
	printf 'E: %ss; %s drained and removed at %ss in %ss, created again and up %ss later, %s SELECTs on it in the second after.\n' \
		"$dur5" "$removed" "$e_at" "$e_removed_s" "$e_up_s" "$e_reads"
	printf 'tps, qps: over the whole run; lowest 1 s tps: the worst per-second report; max ms: the longest event (one\n'
	printf 'statement in A, one 14-statement read-only transaction in B); 0-tps s: the longest run of seconds without one event.\n\n'
	printf '| phase | workload | queries | tps | qps | lowest 1 s tps | ignored errors | reconnects | max ms | 0-tps s | SUM(k) check |\n'
	printf '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n'
	row() { # PREFIX PHASE WORKLOAD CHECK
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" "$3" "${r[${1}_queries]:--}" \
			"${r[${1}_tps]:--}" "${r[${1}_qps]:--}" "${r[${1}_low]:--}" "${r[${1}_ignored]:--}" \
			"${r[${1}_reconnects]:--}" "${r[${1}_max]:--}" "${r[${1}_stall]:--}" "$4"
	}
	check="expected +${expected:-?}, found +$found: $([[ $sumk_ok == true ]] && echo ok || echo MISMATCH)"
	row upd "A switchover" "oltp_update_index (text)" "$check"
	row sel "A switchover" "oltp_point_select (ps)" "-"
	row ro "B replica kill" "oltp_read_only --skip_trx=on" "-"
	row crw "C drain" "oltp_read_only --skip_trx=on (rw)" "-"
	row cro "C drain" "oltp_read_only --skip_trx=on (ro)" "-"
	for rep in 1 2; do
		row "dplain$rep" "D alone" "oltp_point_select (ps)" "-"
		row "dadmin$rep" "D admin calls" "oltp_point_select (ps)" "-"
	done
	row erw "E remove, add back" "oltp_read_only --skip_trx=on (rw)" "-"
	row ero "E remove, add back" "oltp_read_only --skip_trx=on (ro)" "-"
	echo
} | tee "$work/table.md"

jnum() { if [[ -z $1 || $1 == - ]]; then printf 'null'; else printf '%s' "$1"; fi; }
jstr() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
jrun() { # PREFIX WORKLOAD
	printf '{"workload": %s, "queries": %s, "tps": %s, "qps": %s, "lowest_1s_tps": %s, "writes": %s, "ignored_errors": %s, "reconnects": %s, "max_latency_ms": %s, "longest_zero_tps_s": %s, "problem": %s}' \
		"$(jstr "$2")" "$(jnum "${r[${1}_queries]}")" "$(jnum "${r[${1}_tps]}")" "$(jnum "${r[${1}_qps]}")" "$(jnum "${r[${1}_low]}")" \
		"$(jnum "${r[${1}_writes]}")" "$(jnum "${r[${1}_ignored]}")" "$(jnum "${r[${1}_reconnects]}")" \
		"$(jnum "${r[${1}_max]}")" "$(jnum "${r[${1}_stall]}")" "$(jstr "${r[${1}_problem]}")"
}
{
	printf '{\n  "sysbench": %s,\n  "threads": %d,\n  "tables": %d,\n  "table_size": %d,\n  "monitor_interval": %s,\n' \
		"$(jstr "$sb_version")" "$threads" "$tables" "$table_size" "$(jstr "$monitor_interval")"
	printf '  "phase_a": {\n    "seconds": %d,\n    "switchover": {"node": %s, "at_s": %s, "took_s": %s, "exit": %d},\n' \
		"$dur" "$(jstr "$new_primary")" "$so_start" "$so_secs" "$so_rc"
	printf '    "runs": [%s,\n      %s],\n' "$(jrun upd oltp_update_index)" "$(jrun sel oltp_point_select)"
	printf '    "sum_k": {"before": %s, "after": %s, "expected_delta": %s, "found_delta": %s, "ok": %s, "replicas_same": %s}\n  },\n' \
		"$sum_before" "$sum_after" "$(jnum "$expected")" "$found" "$sumk_ok" "$replicas_ok"
	printf '  "phase_b": {\n    "seconds": %d,\n    "node": %s, "killed_at_s": %s, "started_at_s": %s, "up_in_sluice_after_s": %s, "stop_exit": %d, "start_exit": %d,\n' \
		"$dur2" "$(jstr "$victim")" "$kill_at" "$start_at" "$(jnum "$back_s")" "$kill_rc" "$start_rc"
	printf '    "runs": [%s]\n  },\n' "$(jrun ro "oltp_read_only --skip_trx=on")"
	printf '  "phase_c": {\n    "seconds": %d,\n    "node": %s, "drain_at_s": %s, "connections_before": %s, "drained_after_s": %s, "undrain_at_s": %s,\n' \
		"$dur3" "$(jstr "$drained")" "$drain_at" "$(jnum "$conns_before")" "$(jnum "$drained_s")" "$c2"
	printf '    "runs": [%s,\n      %s]\n  },\n' "$(jrun crw "oltp_read_only --skip_trx=on (rw)")" "$(jrun cro "oltp_read_only --skip_trx=on (ro)")"
	printf '  "phase_d": {"seconds_per_run": %d, "qps_alone": %s, "qps_with_admin_calls": %s, "ratio": %s, "admin_calls": %d},\n' \
		"$dur4" "$d_plain" "$d_admin" "$(jnum "$d_ratio")" "$admin_calls"
	printf '  "phase_e": {\n    "seconds": %d,\n    "node": %s, "at_s": %s, "removed_after_s": %s, "up_again_after_s": %s, "reads_after": %d, "ok": %s,\n' \
		"$dur5" "$(jstr "$removed")" "$e_at" "$(jnum "$e_removed_s")" "$(jnum "$e_up_s")" "$e_reads" "$([[ $e_rc == 0 ]] && echo true || echo false)"
	printf '    "runs": [%s,\n      %s]\n  },\n' "$(jrun erw "oltp_read_only --skip_trx=on (rw)")" "$(jrun ero "oltp_read_only --skip_trx=on (ro)")"
	printf '  "sluice_alive": %s,\n  "failures": [' "$sluice_alive"
	sep=""
	for f in ${failures[@]+"${failures[@]}"}; do
		printf '%s%s' "$sep" "$(jstr "$f")"
		sep=", "
	done
	printf ']\n}\n'
} >"$out"
fl_log "results: $out"

if ((${#failures[@]} > 0)); then
	for f in "${failures[@]}"; do
		fl_log "failed: $f"
	done
	for f in "$work"/a-update.log "$work"/a-select.log "$work"/b-read.log "$work"/c-rw.log "$work"/c-ro.log "$work"/e-rw.log "$work"/e-ro.log; do
		if grep -qE 'FATAL|ALERT|Ignoring error|(ignored errors|reconnects):[[:space:]]*[1-9]' "$f"; then
			# The errors sysbench ignored, one line per error code and message.
			printf '\n----- %s: errors sysbench ignored (first of each) -----\n' "$f" >&2
			grep -E 'FATAL|ALERT|Ignoring error' "$f" | sed 's/ for connection [0-9]*//' | awk '!seen[$0]++' | head -n 20 >&2
			fl_tail "$f" 20
		fi
	done
	if grep -qE 'level=(WARN|ERROR)' "$work/sluice.log"; then
		printf '\n----- sluice.log: warnings and errors (last 40) -----\n' >&2
		grep -E 'level=(WARN|ERROR)' "$work/sluice.log" | tail -n 40 >&2
	fi
	# shellcheck disable=SC2034 # read by fl_cleanup
	status=mismatch
	fl_die "${#failures[@]} check(s) failed"
fi
# shellcheck disable=SC2034 # read by fl_cleanup
status=ok
fl_log ok
