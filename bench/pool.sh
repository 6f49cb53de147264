# shellcheck shell=bash disable=SC2154,SC2034
# (run.sh's variables: root, work, primary_name, sluice_threads...; FL_RW and FL_SLUICE_ARGS are
# fidelity-lib's, read by fl_sluice_start)
# bench/pool.sh: the pool parts of bench/run.sh (sourced by it; not run on its own): many, poolmodes
# and drivers, each against sluices of its own on fresh ports of run.sh's sandbox.
#
#   many       bench/manyclients: MANY_CLIENTS client connections (opened in steps, e.g. "1000
#              10000") through endpoint rw of sluice-tx (pool_mode: transaction, pool.max_per_node:
#              64, the sandbox's read weights: reads on the replicas), each running a point select
#              every MANY_INTERVAL (jittered) for MANY_TIME seconds per step; node connections per
#              node (/v1/pools), clients per node connection, errors, statement p50/p99, waits at
#              max_per_node, and sluice-tx's RSS per idle client, with its heap profile at idle.
#   poolmodes  sysbench oltp_point_select (MODES: ps, noprepare) through three sluices alike but
#              for pool_mode (pm-off, pm-session, pm-transaction; reads on the primary, like
#              sluice-p), interleaved, REPS reps, medians; transaction/off and session/off.
#   drivers    PHP PDO (bench/drivers/pdo.php) and MariaDB Connector/J (bench/drivers/Drivers.java)
#              doing short transactions through sluice-drv (pool_mode: transaction, max_per_node
#              64): DRV_CLIENTS clients, each DRV_N sessions of one transaction (short) or one
#              session of DRV_N transactions (long); the share of sessions pinned (each session
#              asks SLUICE SHOW LAST ROUTE after its connect and after each COMMIT) and the node
#              connections used (/v1/pools, polled).
#
# Functions: pool_parts_check (flags; before the sandbox), pool_parts_build, pool_parts_run (after
# the other parts), pool_parts_table, pool_parts_json; pool_parts_stop (cleanup). They use
# run.sh's variables and helpers (work, root, FL_*, one_run, medians_of, short_config,
# set_endpoint_key, set_listen, set_threads, free_port, failures...).

read -r -a many_steps <<<"${MANY_CLIENTS:-1000 10000}"
many_time=${MANY_TIME:-20}
many_interval=${MANY_INTERVAL:-3s}
many_max=${MANY_MAX_PER_NODE:-64}
many_consistency=${MANY_CONSISTENCY:-}
pm_threads=${PM_THREADS:-8}
drv_clients=${DRV_CLIENTS:-8}
drv_n=${DRV_N:-200}
pm_modes=("${modes[@]}")
if [[ ${SMOKE:-0} == 1 ]]; then
	read -r -a many_steps <<<"${MANY_CLIENTS:-200}"
	many_time=${MANY_TIME:-5}
	many_interval=${MANY_INTERVAL:-1s}
	drv_n=${DRV_N:-20}
	drv_clients=${DRV_CLIENTS:-4}
	pm_modes=("${modes[0]}")
fi
pool_pids=()
admin_tx=
pid_tx=
many_json=null
many_routes=
many_level=
many_heap_top=
drv_rows=()

# pool_parts_check: the flags of the pool parts; raises the open-files limit for part many.
pool_parts_check() {
	local n prev=0
	for n in "${many_steps[@]}"; do
		if ! [[ $n =~ ^[1-9][0-9]*$ ]] || ((n <= prev)); then
			fl_die "MANY_CLIENTS must be positive counts in increasing order"
		fi
		prev=$n
	done
	for n in "$many_time" "$many_max" "$pm_threads" "$drv_clients" "$drv_n"; do
		[[ $n =~ ^[1-9][0-9]*$ ]] || fl_die "MANY_TIME, MANY_MAX_PER_NODE, PM_THREADS, DRV_CLIENTS and DRV_N must be positive integers"
	done
	[[ -z $many_consistency || $many_consistency =~ ^(eventual|session|global)$ ]] || fl_die "MANY_CONSISTENCY must be eventual, session or global"
	[[ $many_interval =~ ^[0-9]+(\.[0-9]+)?(ms|s)$ ]] || fl_die "MANY_INTERVAL must be a duration like 3s or 500ms"
	if has_part many; then
		# sluice-tx holds a socket per client and bench/manyclients one per connection; both
		# inherit this shell's limit: raised to the hard limit.
		ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
		local lim
		lim=$(ulimit -n)
		if [[ $lim =~ ^[0-9]+$ ]] && ((prev + 300 > lim)); then
			fl_die "MANY_CLIENTS up to $prev needs ulimit -n of at least $((prev + 300)) (the hard limit is $lim)"
		fi
	fi
}

# pool_parts_build: the Go tool of part many; the Java class of part drivers (javac).
pool_parts_build() {
	if has_part many; then
		command -v go >/dev/null 2>&1 || fl_die "go not found: needed to build bench/manyclients"
		(cd "$root" && go build -o "$work/manyclients" ./bench/manyclients) || fl_die "go build ./bench/manyclients failed"
	fi
	if has_part many || has_part drivers; then
		ensure_packages "jq curl" "jq curl" || fl_die "jq and curl are needed by parts many and drivers"
	fi
}

# pool_parts_stop: stop the pool parts' sluices, the last started (FL_SLUICE_PID) too: the next
# fl_sluice_start overwrites FL_SLUICE_PID, and fl_cleanup stops only the one it names then.
pool_parts_stop() {
	local p
	for p in ${pool_pids[@]+"${pool_pids[@]}"}; do
		fl_stop_pid "$p"
		if [[ $p == "$FL_SLUICE_PID" ]]; then
			FL_SLUICE_PID=
		fi
	done
	pool_pids=()
}

# pool_sluice NAME MODE MAX WEIGHTS ADMIN [CONSISTENCY]: start a sluice from the sandbox's configuration with
# endpoint rw on a fresh port at pool_mode MODE (with pool.max_per_node MAX unless it is 0),
# reads on the primary (WEIGHTS primary) or on the replicas (replicas), an admin API when ADMIN
# is 1, at consistency CONSISTENCY when given (else the sandbox's); sets pool_addr, pool_admin,
# pool_pid.
pool_sluice() {
	local name=$1 f=$work/$1.yaml
	pool_addr=127.0.0.1:$(free_port)
	cp "$FL_SANDBOX_DIR/sluice.yaml" "$f"
	if [[ $4 == primary ]]; then
		pin_reads "$f" "$primary_name" || fl_die "cannot rewrite read_weights in $name.yaml"
	fi
	set_listen "$f" rw "$pool_addr" || fl_die "cannot rewrite the rw listen address of $name.yaml"
	set_listen "$f" ro "127.0.0.1:$(free_port)" || fl_die "cannot rewrite the ro listen address of $name.yaml"
	set_threads "$f" "$sluice_threads"
	set_endpoint_key "$f" rw pool_mode "$2" || fl_die "cannot add pool_mode to $name.yaml"
	if (($3 > 0)); then
		set_endpoint_key "$f" rw pool "{max_per_node: $3}" || fl_die "cannot add pool to $name.yaml"
	fi
	if [[ -n ${6:-} ]]; then
		awk -v lv="$6" '/^  - name: / { in_rw = ($3 == "rw") }
			in_rw && /^    consistency: / { print "    consistency: " lv; next } { print }' "$f" >"$f.new" ||
			fl_die "cannot set the consistency of $name.yaml"
		mv "$f.new" "$f"
	fi
	pool_admin=
	if [[ $5 == 1 ]]; then
		pool_admin=127.0.0.1:$(free_port)
		printf 'admin: {listen: "%s"}\n' "$pool_admin" >>"$f"
	fi
	accepts "$f" "$work/check-$name.log" || {
		fl_tail "$work/check-$name.log"
		fl_die "sluice serve --check refused $name.yaml"
	}
	FL_RW=$pool_addr
	FL_SLUICE_ARGS=()
	if [[ -n ${PROFILE_DIR:-} && $name != sluice-tx ]]; then
		# (sluice-tx is profiled per load phase by bench/manyclients -cpu instead)
		FL_SLUICE_ARGS=(--cpuprofile "$PROFILE_DIR/$name.cpu")
	fi
	FIDELITY_READS=replicas fl_sluice_start "$f" "$work/$name.log"
	pool_pid=$FL_SLUICE_PID
	pool_pids+=("$pool_pid")
}

# part many.
pool_part_many() {
	local steps heap=$work/many-heap rc=0
	pool_sluice sluice-tx transaction "$many_max" replicas 1 "$many_consistency"
	many_level=$(awk '/^  - name: / { in_rw = ($3 == "rw") } in_rw && /^    consistency: / { print $2; exit }' "$work/sluice-tx.yaml")
	admin_tx=$pool_admin pid_tx=$pool_pid
	mkdir -p "$heap"
	steps=$(
		IFS=,
		echo "${many_steps[*]}"
	)
	fl_log "many clients: $steps through sluice-tx $pool_addr (pid $pid_tx, pool_mode transaction, max_per_node $many_max), ${many_time}s per step, a point select every $many_interval each"
	"$work/manyclients" -addr "$pool_addr" -admin "$admin_tx" -pid "$pid_tx" -steps "$steps" \
		-duration "${many_time}s" -interval "$many_interval" -user "$FL_USER" -password "$FL_PASSWORD" \
		-db "$db" -table sbtest1 -rows "$table_size" -heap "$heap" ${PROFILE_DIR:+-cpu "$PROFILE_DIR"} >"$work/many.json" 2>"$work/many.log" || rc=$?
	if ((rc != 0)) || ! jq -e . "$work/many.json" >/dev/null 2>&1; then
		fl_tail "$work/many.log"
		failures+=("many clients: bench/manyclients exit $rc: $(tail -n 1 "$work/many.log")")
		jq -e . "$work/many.json" >/dev/null 2>&1 || return 0
	fi
	many_json=$(tr -d '\n' <"$work/many.json")
	# Where the statements went (all steps): sluice_statements_total of endpoint rw.
	many_routes=$(curl -fsS --max-time 10 "http://$admin_tx/metrics" | awk '/^sluice_statements_total\{endpoint="rw"/ {
		match($0, /node="[^"]*"/); n = substr($0, RSTART + 6, RLENGTH - 7)
		match($0, /reason="[^"]*"/); r = substr($0, RSTART + 8, RLENGTH - 9)
		printf "%s%s %s: %d", sep, n, r, $NF; sep = ", " }') || many_routes=
	if [[ -n ${PROFILE_DIR:-} ]]; then
		cp "$heap"/heap-*.pb.gz "$PROFILE_DIR/" 2>/dev/null || true
	fi
	local last=${many_steps[-1]}
	if [[ -f $heap/heap-$last.pb.gz ]]; then
		# Where sluice-tx's heap goes with the most idle clients: the top of inuse_space.
		many_heap_top=$(cd "$root" && go tool pprof -sample_index=inuse_space -top -nodecount=12 \
			"$FL_SLUICE" "$heap/heap-$last.pb.gz" 2>/dev/null | sed -n '/^Showing\|^ *flat/,$p' | head -n 16) || many_heap_top=
	fi
	if fl_sluice_panicked "$work/sluice-tx.log"; then
		failures+=("sluice-tx logged a panic (see $work/sluice-tx.log)")
	fi
	local over
	over=$(jq -r --argjson m "$many_max" '[.steps[].max_open | to_entries[] | select(.value > $m)] | length' "$work/many.json")
	if [[ $over != 0 ]]; then
		failures+=("many clients: a node had more than max_per_node $many_max connections open")
	fi
	pool_parts_stop
}

# part poolmodes.
pool_part_modes() {
	local sys m rep i=0 total secs
	declare -gA pm_addr=() pm_pid=()
	for sys in off session transaction; do
		pool_sluice "pm-$sys" "$sys" 0 primary 0
		pm_addr[$sys]=$pool_addr pm_pid[$sys]=$pool_pid
	done
	pm_runs=$work/pm-runs.tsv
	: >"$pm_runs"
	secs=$(time_of oltp_point_select)
	total=$((${#pm_modes[@]} * reps * 3))
	fl_log "pool modes: $total runs of oltp_point_select, ${secs}s x $pm_threads threads: pm-off ${pm_addr[off]}, pm-session ${pm_addr[session]}, pm-transaction ${pm_addr[transaction]}"
	for m in "${pm_modes[@]}"; do
		for ((rep = 1; rep <= reps; rep++)); do
			for sys in off session transaction; do
				i=$((i + 1))
				fl_log "[pool modes $i/$total] $m pm-$sys rep $rep"
				one_run "pm-$sys" "${pm_addr[$sys]}" "${pm_pid[$sys]}" oltp_point_select "$m" "$pm_threads" "$rep" "$secs" "$pm_runs"
			done
		done
	done
	for sys in off session transaction; do
		if fl_sluice_panicked "$work/pm-$sys.log"; then
			failures+=("pm-$sys logged a panic (see $work/pm-$sys.log)")
		fi
	done
	medians_of "$pm_runs" "$work/pm-medians.tsv"
	pool_parts_stop
}

# pools_totals ADMIN: "created reused waits" summed over /v1/pools.
pools_totals() {
	curl -fsS --max-time 10 "http://$1/v1/pools" | jq -r '[.pools[].created] + [0] | add' 2>/dev/null
}

# one_driver DRIVER MODE: one run of a driver program (pdo, connectorj, or connectorj-nt: Connector/J
# with jdbcCompliantTruncation=false) through sluice-drv ($drv_addr), with
# /v1/pools polled beside it; appends a row to drv_rows: driver mode clients sessions
# transactions pinned pins startup_pins errors first_error max_open_by_node created seconds.
one_driver() {
	local drv=$1 mode=$2 out=$work/drv-$1-$2 poll_pid created0 created1 t0 k rc=0 secs
	: >"$out.poll"
	(
		while :; do
			curl -fsS --max-time 5 "http://$drv_admin/v1/pools" | jq -r '.pools[] | "\(.node) \(.open) \(.in_use)"' >>"$out.poll" 2>/dev/null || true
			sleep 0.1
		done
	) &
	poll_pid=$!
	created0=$(pools_totals "$drv_admin")
	t0=$(date +%s.%N)
	local -a env=(DRV_HOST="${drv_addr%:*}" DRV_PORT="${drv_addr##*:}" DRV_USER="$FL_USER" DRV_PASSWORD="$FL_PASSWORD"
		DRV_DB="$db" DRV_MODE="$mode" DRV_N="$drv_n" DRV_ROWS="$table_size" DRV_CLIENTS="$drv_clients")
	: >"$out.jsonl"
	if [[ $drv == pdo ]]; then
		local pids=()
		for ((k = 0; k < drv_clients; k++)); do
			env "${env[@]}" php -d display_errors=stderr -d error_reporting=-1 "$root/bench/drivers/pdo.php" \
				>"$out.$k.json" 2>"$out.$k.log" &
			pids+=("$!")
		done
		for k in "${!pids[@]}"; do
			wait "${pids[$k]}" || rc=$?
			cat "$out.$k.json" >>"$out.jsonl"
		done
	else
		if [[ $drv == connectorj-nt ]]; then
			# Connector/J without its start-up SET sql_mode = concat(@@sql_mode, …) (which pins).
			env+=(DRV_JDBC_OPTS=jdbcCompliantTruncation=false)
		fi
		env "${env[@]}" java -Xmx256m -XX:+UseSerialGC -cp "$work/drivers-classes:$drv_jar" Drivers >"$out.jsonl" 2>"$out.log" || rc=$?
	fi
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	kill "$poll_pid" 2>/dev/null || true
	wait "$poll_pid" 2>/dev/null || true
	created1=$(pools_totals "$drv_admin")
	if ((rc != 0)); then
		failures+=("drivers $drv $mode: exit $rc: $(cat "$out".*log "$out.log" 2>/dev/null | tail -n 1)")
	fi
	# Sum the clients' JSON lines.
	local sum
	sum=$(jq -s -r '{s: (map(.sessions) | add), t: (map(.transactions) | add), p: (map(.pinned_sessions) | add),
		e: (map(.errors) | add), pins: (map(.pins | to_entries[]) | group_by(.key) | map("\(.[0].key) \(map(.value) | add)") | join(", ")),
		su: (map(.startup_pins // empty) | unique | join("; ")), fe: (map(.first_error) | map(select(. != "")) | first // "")}
		| [.s, .t, .p, .e, (if .pins == "" then "-" else .pins end), (if .su == "" then "(none)" else .su end), (if .fe == "" then "-" else .fe end)] | @tsv' "$out.jsonl" 2>/dev/null) ||
		sum=$'0\t0\t0\t1\t-\t-\tno result'
	local maxopen
	# Per node: the most open (idle ones left by earlier runs of this sluice included) / the most
	# in use at once.
	maxopen=$(awk '{ if ($2 > m[$1]) m[$1] = $2; if ($3 > u[$1]) u[$1] = $3 } END { for (n in m) { printf "%s%s %d / %d", sep, n, m[n], u[n]; sep = ", " } }' "$out.poll")
	drv_rows+=("$drv	$mode	$drv_clients	$sum	${maxopen:--}	$((${created1:-0} - ${created0:-0}))	$secs")
}

# part drivers.
pool_part_drivers() {
	local have=()
	if command -v php >/dev/null 2>&1 && php -m 2>/dev/null | grep -qi '^pdo_mysql$'; then
		have+=(pdo)
	else
		fl_log "note: php with pdo_mysql not found (apt-get install php-cli php-mysql): no PDO runs"
		drv_rows+=("pdo	-	-	not run: php-cli with pdo_mysql is not installed")
	fi
	drv_jar=${MARIADB_JAVA_JAR:-/usr/share/java/mariadb-java-client.jar}
	if command -v javac >/dev/null 2>&1 && [[ -r $drv_jar ]]; then
		mkdir -p "$work/drivers-classes"
		javac -encoding UTF-8 -nowarn -d "$work/drivers-classes" -cp "$drv_jar" "$root/bench/drivers/Drivers.java" >"$work/javac.log" 2>&1 ||
			fl_die "javac bench/drivers/Drivers.java failed: $(tail -n 3 "$work/javac.log")"
		have+=(connectorj connectorj-nt)
	else
		fl_log "note: javac or $drv_jar not found (apt-get install openjdk-17-jdk-headless libmariadb-java): no Connector/J runs"
		drv_rows+=("connectorj	-	-	not run: javac or libmariadb-java is not installed")
	fi
	((${#have[@]} > 0)) || return 0
	pool_sluice sluice-drv transaction "$many_max" primary 1
	drv_addr=$pool_addr drv_admin=$pool_admin
	fl_log "drivers: ${have[*]} through sluice-drv $drv_addr (pid $pool_pid, pool_mode transaction, max_per_node $many_max): $drv_clients clients x $drv_n"
	local d m
	for d in "${have[@]}"; do
		for m in short long; do
			fl_log "[drivers] $d $m"
			one_driver "$d" "$m"
		done
	done
	if fl_sluice_panicked "$work/sluice-drv.log"; then
		failures+=("sluice-drv logged a panic (see $work/sluice-drv.log)")
	fi
	pool_parts_stop
}

pool_parts_run() {
	if has_part many; then pool_part_many; fi
	if has_part poolmodes; then pool_part_modes; fi
	if has_part drivers; then pool_part_drivers; fi
}

# pool_parts_table: the markdown of the pool parts that ran.
pool_parts_table() {
	if has_part many && [[ $many_json != null ]]; then
		printf '\nMany clients (bench/manyclients): client connections through sluice-tx (endpoint rw, pool_mode: transaction, pool.max_per_node: %s, reads on the replicas at consistency %s, sluice threads: %s), opened in steps; at each step, idle RSS first (VmRSS of sluice-tx once settled, before the new clients ran anything), then %s s of load: every client a point select (SELECT c FROM sbtest1 WHERE id = <random>, text protocol) every %s, jittered. Latencies: a statement as the client sees it. node conns: the most open per node in /v1/pools polled every 200 ms (p: primary). waits: statements that waited for a connection at max_per_node (/v1/pools waits; their share ≤ 1 %% means a p99 wait of 0). Baseline RSS: %s MiB.\n\n' \
			"$many_max" "$many_level" "$sluice_threads" "$many_time" "$many_interval" "$(mib "$(jq -r .baseline_rss_kib <<<"$many_json")")"
		printf '| clients | open s | idle RSS MiB | KiB per idle client | statements | QPS | errors | p50 ms | p99 ms | p99.9 ms | max ms | node conns (max open) | in use (max) | clients per node conn | created | reused | waits | wait s | sluice CPU µs/stmt | sluice / clients CPU s | machine busy |\n'
		printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|\n'
		jq -r '.steps[] | "| \(.clients) | \(.open_seconds) | \(.idle_rss_kib / 1024 * 10 | floor / 10) | \(.kib_per_idle_client) | \(.statements) | \(.qps) | \(.errors) | \(.p50_ms) | \(.p99_ms) | \(.p999_ms) | \(.max_ms) | \(.max_open | to_entries | map("\(.key) \(.value)") | join(", ")) | \(.max_in_use | to_entries | map("\(.key) \(.value)") | join(", ")) | \(.clients_per_node_connection) | \(.created) | \(.reused) | \(.waits) | \(.wait_seconds) | \(.sluice_cpu_us_per_statement) | \(.sluice_cpu_s) / \(.client_cpu_s) | \(.machine_busy * 100 | floor) % |"' <<<"$many_json"
		printf '\nStatements by node and routing reason (sluice_statements_total, every step): %s.\n' "${many_routes:-?}"
		if [[ -n $many_heap_top ]]; then
			# shellcheck disable=SC2016 # the backquotes are markdown's
			printf '\nsluice-tx heap at idle with %s clients (go tool pprof -sample_index=inuse_space -top):\n\n```\n%s\n```\n' "${many_steps[-1]}" "$many_heap_top"
		fi
	fi
	if has_part poolmodes && [[ -s $work/pm-medians.tsv ]]; then
		printf '\nPool modes: sysbench oltp_point_select through pm-off, pm-session, pm-transaction (sluices alike but for endpoint rw'"'"'s pool_mode; reads on the primary; sluice threads: %s), %s thread(s), %s s per run, %d rep(s), interleaved; medians. Under transaction, a prepared statement (ps) runs on whichever connection it takes: prepared there once (per-connection statement cache), or again where it was not.\n\n' \
			"$sluice_threads" "$pm_threads" "$(time_of oltp_point_select)" "$reps"
		printf '| mode | pool_mode | QPS | avg ms | p99 ms | errors | CPU µs/q | QPS × off | p99 × off | target |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n'
		declare -A pq p9
		local wl m th sys qps avg p99 errs cpu _r
		while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu _r; do
			pq[$m/$sys]=$qps
			p9[$m/$sys]=$p99
		done <"$work/pm-medians.tsv"
		while IFS=$'\t' read -r wl m th sys qps avg p99 errs cpu _r; do
			local tgt=- r
			r=$(ratio "$qps" "${pq[$m/pm-off]:--}")
			case $sys in
			pm-session) tgt="≥ 0.95 (no regression): $(meets "$r" 0.95)" ;;
			pm-transaction) tgt="≥ 0.90: $(meets "$r" 0.90)" ;;
			esac
			printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$m" "${sys#pm-}" "$qps" "$avg" "$p99" "$errs" "$cpu" \
				"$r" "$(ratio "$p99" "${p9[$m/pm-off]:--}")" "$tgt"
		done <"$work/pm-medians.tsv"
	fi
	if has_part drivers && ((${#drv_rows[@]} > 0)); then
		printf '\nDrivers through sluice-drv (pool_mode: transaction, max_per_node %s, reads on the primary): each transaction is BEGIN, SELECT c by id, UPDATE sbtest1 SET k = k + 1 by id, SELECT c, COMMIT (prepared statements as the driver does them by default: emulated / client-side, text protocol). short: each client runs %s sessions of one transaction (connect … disconnect); long: each client one session of %s transactions. connectorj-nt: Connector/J with jdbcCompliantTruncation=false (no start-up SET sql_mode = concat(@@sql_mode, …)). pinned: sessions whose SLUICE SHOW LAST ROUTE, asked after the connect and after each COMMIT, named a pin. node conns: per node, the most open (idle ones left by the runs before on this sluice included) / the most in use at once, in /v1/pools polled every 100 ms; created: node connections dialed during the run.\n\n' \
			"$many_max" "$drv_n" "$drv_n"
		printf '| driver | mode | clients | sessions | transactions | pinned sessions | pins seen (sessions) | pins after connect | errors | first error | node conns (open / in use) | created | seconds |\n'
		printf '|---|---|---:|---:|---:|---:|---|---|---:|---|---|---:|---:|\n'
		local row d m c s t p e pins su fe mo cr sec
		for row in "${drv_rows[@]}"; do
			IFS=$'\t' read -r d m c s t p e pins su fe mo cr sec <<<"$row"
			if [[ $m == - ]]; then
				printf '| %s | %s |||||||||||\n' "$d" "$s"
				continue
			fi
			local share
			share=$(awk -v p="$p" -v s="$s" 'BEGIN { if (s > 0) printf "%.1f %%", 100 * p / s; else print "-" }')
			printf '| %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s |\n' "$d" "$m" "$c" "$s" "$t" "$p" "$share" \
				"$(tr '|' '/' <<<"$pins")" "$su" "$e" "$(tr '|' '/' <<<"$fe")" "$mo" "$cr" "$sec"
		done
	fi
}

# pool_parts_json: the pool parts as one JSON object (null for a part that did not run).
pool_parts_json() {
	local pm=null drv=null row
	if has_part poolmodes && [[ -s $work/pm-medians.tsv ]]; then
		pm=$(printf '[\n'
			json_medians "$work/pm-medians.tsv" '      '
			printf '\n    ]')
	fi
	if has_part drivers && ((${#drv_rows[@]} > 0)); then
		drv=$(for row in "${drv_rows[@]}"; do printf '%s\n' "$row"; done | jq -R -s -c 'split("\n") | map(select(. != "") | split("\t")
			| {driver: .[0], mode: .[1], clients: .[2], sessions: .[3], transactions: .[4], pinned_sessions: .[5], errors: .[6],
			   pins: .[7], startup_pins: .[8], first_error: .[9], max_open: .[10], created: .[11], seconds: .[12]})')
	fi
	printf '{"many": %s, "poolmodes": %s, "drivers": %s}' "$many_json" "$pm" "$drv"
}
