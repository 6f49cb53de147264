# shellcheck shell=bash
# lib.sh: helpers shared by the scripts under scripts/. Source it; it defines
# functions and sets nothing else but PATH (Go, and the sbin directories that hold mariadbd).

# Go from the official tarball lives in /usr/local/go/bin, which is not always on PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
	PATH=$PATH:/usr/local/go/bin
fi

# have_bin NAME: NAME is on PATH or in a directory the sandbox also searches (an ordinary
# user's PATH on Debian lacks /usr/sbin, where mariadbd lives).
have_bin() {
	local d
	command -v "$1" >/dev/null 2>&1 && return 0
	for d in /usr/sbin /usr/local/sbin /usr/local/bin /usr/local/mysql/bin; do
		[[ -x $d/$1 ]] && return 0
	done
	return 1
}

# is_debian: apt-get exists and this is Debian or a derivative (Ubuntu, ...).
is_debian() {
	command -v apt-get >/dev/null 2>&1 || return 1
	[[ -f /etc/debian_version ]] && return 0
	grep -qiE '^(ID|ID_LIKE)=.*(debian|ubuntu)' /etc/os-release 2>/dev/null
}

# ensure_packages "BIN..." "PACKAGE...": when any BIN is missing, install the PACKAGEs with
# apt-get (as root, or through sudo when it works without a password). Otherwise print the
# command to run. Returns 0 when every BIN is present afterwards, 1 when some are missing.
ensure_packages() {
	local -a bins pkgs missing=() sudo=()
	read -r -a bins <<<"$1"
	read -r -a pkgs <<<"$2"
	local b
	for b in "${bins[@]}"; do
		have_bin "$b" || missing+=("$b")
	done
	((${#missing[@]} == 0)) && return 0

	local cmd="apt-get update && apt-get install -y ${pkgs[*]}"
	echo "missing: ${missing[*]}" >&2
	if ! is_debian; then
		echo "not a Debian/Ubuntu system: install the equivalents of ${pkgs[*]} with your package manager" >&2
		return 1
	fi
	if ((EUID != 0)); then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo=(sudo -n)
		else
			echo "not root and no password-less sudo; install them with:" >&2
			echo "    sudo sh -c '$cmd'" >&2
			return 1
		fi
	fi
	echo "+ ${sudo[*]:+${sudo[*]} }$cmd" >&2
	local apt_ok=true
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null ||
		! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}" </dev/null; then
		apt_ok=false
	fi
	missing=()
	for b in "${bins[@]}"; do
		have_bin "$b" || missing+=("$b")
	done
	if ((${#missing[@]} > 0)); then
		[[ $apt_ok == true ]] || echo "apt-get failed" >&2
		echo "still missing: ${missing[*]}" >&2
		return 1
	fi
	# In a container without an init system, mariadb-server's post-install script may fail to
	# start the system service; the binaries are what we need.
	[[ $apt_ok == true ]] || echo "warning: apt-get reported an error, but all of ${bins[*]} are installed" >&2
	return 0
}

# drop_monitor CONFIG removes, in place, the monitor section of the sluice.yaml that 'sluice
# sandbox up' writes: sluice then watches no node over a connection of its own.
drop_monitor() {
	awk '
		/^monitor:/ { skip = 1; next }
		skip && /^  / { next }
		{ skip = 0; print }' "$1" >"$1.new" || return
	mv "$1.new" "$1"
}

# no_auth_block CONFIG sets, in place, limits.max_auth_failures: 0 in the sluice.yaml that
# 'sluice sandbox up' writes (which has no limits section): the suites fail logins on purpose
# (wrong passwords, unknown users, failed changes of user, in every mode and stack, all from
# 127.0.0.1), more than the 10 after which sluice would block the address. Idempotent.
no_auth_block() {
	awk '
		/^limits:/ { print; print "  max_auth_failures: 0"; done = 1; next }
		/^  max_auth_failures:/ { next }
		{ print }
		END { if (!done) { print "limits:"; print "  max_auth_failures: 0" } }' "$1" >"$1.new" || return
	mv "$1.new" "$1"
}

# pin_reads CONFIG PRIMARY_NAME rewrites, in place, the read_weights line of endpoint rw in
# the sluice.yaml that 'sluice sandbox up' writes (one "key: {...}" line per setting) so that
# reads go to the primary only (backends not listed get weight 0). Returns 3 when the
# endpoint has no read_weights line.
pin_reads() {
	awk -v primary="$2" '
		/^  - name: / { in_rw = ($3 == "rw") }
		in_rw && /^    read_weights:/ {
			print "    read_weights: {" primary ": 100}"
			changed = 1
			next
		}
		{ print }
		END { if (!changed) exit 3 }' "$1" >"$1.new" || return
	mv "$1.new" "$1"
}

# pool_config CONFIG sets, in place, the pool of the sluice.yaml that 'sluice sandbox up' writes
# (endpoints without pool_mode, no pool section) from the environment, so that every fidelity
# suite can run through each pool mode:
#   POOL_MODE=off|session|transaction   pool_mode of every endpoint (unset: the sandbox's, i.e.
#                                       sluice's default, session)
#   POOL_MAX_PER_NODE=N                 pool.max_per_node (unset: 0, unlimited). Small values
#                                       force a suite's concurrent sessions onto shared node
#                                       connections under transaction; a session that holds one
#                                       (transaction, pin) makes the others wait, up to
#                                       POOL_ACQUIRE_TIMEOUT (default 10s), then error 1040
# Prints what it applied (nothing when nothing is set). Returns 2 on a bad value.
pool_config() {
	local mode=${POOL_MODE:-} max=${POOL_MAX_PER_NODE:-} wait=${POOL_ACQUIRE_TIMEOUT:-10s}
	[[ -n $mode || -n $max ]] || return 0
	case $mode in
	'' | off | session | transaction) ;;
	*)
		echo "POOL_MODE must be off, session or transaction, not '$mode'" >&2
		return 2
		;;
	esac
	if [[ -n $max && ! $max =~ ^[0-9]+$ ]]; then
		echo "POOL_MAX_PER_NODE must be a number, not '$max'" >&2
		return 2
	fi
	awk -v mode="$mode" -v max="$max" -v wait="$wait" '
		/^[a-z]/ { in_ep = ($0 ~ /^endpoints:/) }
		/^pool:/ { exit 3 }
		{ print }
		in_ep && mode != "" && /^    listen: / { print "    pool_mode: " mode }
		END {
			if (max != "") { print "pool:"; print "  max_per_node: " max; print "  acquire_timeout: " wait }
		}' "$1" >"$1.new" || return
	mv "$1.new" "$1"
	echo "pool: pool_mode ${mode:-session (default)}, max_per_node ${max:-0 (unlimited)}"
}
