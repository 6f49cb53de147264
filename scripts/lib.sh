# shellcheck shell=bash
# lib.sh: helpers shared by scripts/test.sh and scripts/sandbox.sh. Source it; it defines
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
		echo "not a Debian/Ubuntu system: install the MariaDB server and client (and mariadb-test, sysbench) with your package manager" >&2
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
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null ||
		! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}" </dev/null; then
		echo "apt-get failed" >&2
		return 1
	fi
	missing=()
	for b in "${bins[@]}"; do
		have_bin "$b" || missing+=("$b")
	done
	if ((${#missing[@]} > 0)); then
		echo "still missing after apt-get: ${missing[*]}" >&2
		return 1
	fi
	return 0
}
