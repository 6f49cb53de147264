#!/usr/bin/env bash
# client-isolation.sh: state isolation between pooled sessions, driven by the client stacks'
# own drivers (the batteries' CB_MODE=isolation, tests/clients/README.md). In each stack, client A
# sets every kind of session state (database, charset, session variables, isolation level, time
# zone, autocommit, user variables, LAST_INSERT_ID, prepared statements; then temporary table,
# GET_LOCK, SQL PREPARE, an open transaction, warnings, LOCK TABLES) and goes idle or leaves;
# client B opens and prints what it sees; A prints its own state again.
#
# Directly against the primary A and B are two server connections, which never share state: that
# output is the ground truth. Through sluice, with pool.max_per_node 1 and one client at a time,
# B lands on A's node connection; any difference fails the run. For every pool mode:
#
#   transaction  every round: idle (A stays open and idle while B runs), leave, locked;
#   session      the rounds where A leaves (an idle A keeps its connection in session mode, so
#                B could not have one at max_per_node 1): leave, locked.
#
# After each stack's run through sluice the pool's reused counter (sluice_pool_reused_total of
# the primary and user app) must have grown, and the pool must hold at most one connection, so
# that the comparison cannot pass with B on a connection of its own.
#
#   ./scripts/client-isolation.sh [STACK...]     STACK: php java node python (default: all four)
#
# Environment:
#   STACKS="php node"       stacks to run (arguments take precedence)
#   POOL_MODES="transaction session"   pool modes to run through (default both)
#   SLUICE_BIN=path         use this sluice binary instead of building one
#   KEEP=1                  keep the work directory (outputs, logs) and the sandbox
#   BATTERY_TIMEOUT=S       limit for one battery run (default 120 s)
#   DIFF_LINES=N            lines of each difference to print (default 60)
#
# Exit status: 0 when every stack printed the same directly and through sluice; 1 otherwise.
# Everything talks to 127.0.0.1 only.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FL_NAME=client-isolation
# shellcheck source=scripts/fidelity-lib.sh
. "$root/scripts/fidelity-lib.sh"

stacks=()
if (($# > 0)); then
	stacks=("$@")
else
	read -r -a stacks <<<"${STACKS:-php java node python}"
fi
read -r -a pool_modes <<<"${POOL_MODES:-transaction session}"
battery_timeout=${BATTERY_TIMEOUT:-120}
diff_lines=${DIFF_LINES:-60}
for s in "${stacks[@]}"; do
	[[ -x $root/tests/clients/$s/run.sh && $s != cli ]] ||
		fl_die "unknown stack '$s' (php, java, node, python: tests/clients/STACK/run.sh with CB_MODE=isolation)"
done
for m in "${pool_modes[@]}"; do
	[[ $m == transaction || $m == session ]] || fl_die "unknown pool mode '$m' in POOL_MODES (transaction, session)"
done

fl_begin client-isolation
fl_build_sluice "$work/sluice"
fl_sandbox_up "$work/sandbox" --replicas 1 --admin-port 0
fl_sandbox_read "$work/sandbox"
admin=$(fl_json_get "$work/sandbox/sandbox.json" admin)
[[ -n $admin ]] || fl_die "the sandbox wrote no admin address"
fl_local "$admin"

sql=
for s in "${stacks[@]}"; do
	sql+="CREATE DATABASE cb_$s;"
done
fl_sql "$FL_PRIMARY" -e "$sql"
cp "$work/sandbox/sluice.yaml" "$work/sluice.yaml.orig"

# battery STACK ROUNDS ADDR OUT: one isolation run of a stack; stdout in OUT, stderr in OUT.err.
battery() {
	local stack=$1 rounds=$2 addr=$3 out=$4 rc=0
	fl_local "$addr"
	mkdir -p "$work/scratch-$stack"
	env CB_HOST="${addr%:*}" CB_PORT="${addr##*:}" CB_USER="$FL_USER" CB_PASSWORD="$FL_PASSWORD" \
		CB_USER2="$FL_USER" CB_PASSWORD2="$FL_PASSWORD" CB_DB="cb_$stack" CB_MODE=isolation \
		CB_ROUNDS="$rounds" CB_WORK="$work/scratch-$stack" \
		timeout --kill-after=10 "$battery_timeout" "$root/tests/clients/$stack/run.sh" \
		>"$out" 2>"$out.err" </dev/null || rc=$?
	if ((rc != 0)); then
		fl_log "$stack isolation against $addr exited $rc$( ((rc == 124)) && echo " (timed out after ${battery_timeout}s)")"
		fl_tail "$out.err" 20
		return 1
	fi
	[[ -s $out ]] || {
		fl_log "$stack isolation against $addr printed nothing"
		fl_tail "$out.err" 20
		return 1
	}
}

# pool_figure NAME: the value of sluice's metric NAME for the primary and user app (0 when absent;
# for sluice_pool_connections the sum over states).
pool_figure() {
	curl -fsS --max-time 5 "http://$admin/metrics" |
		awk -v name="$1" '$1 ~ "^" name "[{]" && index($1, "node=\"primary\"") && index($1, "user=\"app\"") { n += $2 }
			END { printf "%d\n", n }'
}

results=()
failures=0
for mode in "${pool_modes[@]}"; do
	rounds="idle leave locked"
	[[ $mode == session ]] && rounds="leave locked"
	cp "$work/sluice.yaml.orig" "$work/sandbox/sluice.yaml"
	POOL_MODE=$mode POOL_MAX_PER_NODE=1 POOL_ACQUIRE_TIMEOUT=5s fl_sluice_start "$work/sandbox/sluice.yaml" "$work/sluice-$mode.log"
	for s in "${stacks[@]}"; do
		t0=$SECONDS
		d=$work/$s-$mode-direct.out p=$work/$s-$mode-sluice.out verdict=same
		reused0=$(pool_figure sluice_pool_reused_total)
		if ! battery "$s" "$rounds" "$FL_PRIMARY" "$d"; then
			verdict="broken directly"
		elif ! battery "$s" "$rounds" "$FL_RW" "$p"; then
			verdict="broken through sluice"
		elif ! cmp -s "$d" "$p"; then
			verdict=DIFFERENT
			printf '\n----- %s isolation, pool_mode %s: direct (-) vs through sluice (+) -----\n' "$s" "$mode" >&2
			diff -u "$d" "$p" | sed -n "3,$((diff_lines + 2))p" >&2 || true
		fi
		reused=$(($(pool_figure sluice_pool_reused_total) - reused0))
		open=$(pool_figure sluice_pool_connections)
		if ((reused == 0)); then
			verdict="$verdict; nothing reused (vacuous)"
		elif ((open > 1)); then
			verdict="$verdict; $open connections open at max_per_node 1"
		fi
		fl_sluice_alive || verdict="$verdict; sluice died"
		[[ $verdict == same ]] || failures=$((failures + 1))
		results+=("$(printf '%-8s %-12s %-40s %4d lines %3d reused %3ds' "$s" "$mode" "$verdict" \
			"$(wc -l <"$d" 2>/dev/null || echo 0)" "$reused" $((SECONDS - t0)))")
		fl_sluice_alive || {
			fl_tail "$work/sluice-$mode.log" 40
			fl_die "sluice is no longer running"
		}
	done
	if fl_sluice_panicked "$work/sluice-$mode.log"; then
		fl_tail "$work/sluice-$mode.log" 60
		fl_log "sluice logged a panic"
		failures=$((failures + 1))
	fi
	fl_sluice_stop
done

printf '\n%-8s %-12s %-40s\n' stack pool_mode result
printf '%s\n' "${results[@]}"
if ((failures > 0)); then
	fl_log "FAIL: $failures difference(s)"
	exit 1
fi
status=ok
fl_log "PASS: every stack printed the same directly and through sluice"
