#!/usr/bin/env bash
# sandbox.sh: try sluice on a local MariaDB primary + replicas.
#
#   ./scripts/sandbox.sh                 cluster in a temp dir, proxy on 127.0.0.1:6033 (rw)
#                                        and 127.0.0.1:6034 (ro); Ctrl-C stops and removes it
#   ./scripts/sandbox.sh --proxies 3 --zones az1,az2
#                                        the same with 3 sluice nodes sharing their configuration
#                                        through etcd (p1 on 6033/6034, p2 on 6035/6036, ...)
#   ./scripts/sandbox.sh up --dir D ...  any other 'sluice sandbox' subcommand and flags
#
# Installs mariadb-server and mariadb-client when missing (and etcd-server with --proxies;
# Debian/Ubuntu, as root or with password-less sudo), builds sluice into .cache/bin, then runs
# 'sluice sandbox "$@"'.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

if ! ensure_packages "mariadbd mariadb" "mariadb-server mariadb-client"; then
	echo "sandbox.sh: the MariaDB server is required; install it as shown above and run again" >&2
	exit 1
fi
for arg in "$@"; do
	case $arg in
	--proxies | --proxies=* | -proxies | -proxies=*)
		if ! ensure_packages "etcd" "etcd-server"; then
			echo "sandbox.sh: --proxies needs an etcd server; install it as shown above and run again" >&2
			exit 1
		fi
		break
		;;
	esac
done
command -v go >/dev/null 2>&1 || { echo "sandbox.sh: go not found on PATH" >&2; exit 1; }

bin=$root/.cache/bin/sluice
(cd "$root" && go build -o "$bin" ./cmd/sluice)
exec "$bin" sandbox "$@"
