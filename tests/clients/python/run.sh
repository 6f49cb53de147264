#!/usr/bin/env bash
# The Python battery (PyMySQL and MySQLdb): see README.md and ../README.md for the contract.
# Debian's interpreter, which python3-pymysql and python3-mysqldb install into; not the PATH's.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
if [[ ! -x $py ]] || ! "$py" -c 'import pymysql, MySQLdb' 2>/dev/null; then
	echo "python battery: $py with pymysql and MySQLdb needed (apt-get install python3-pymysql python3-mysqldb)" >&2
	exit 2
fi
# -I: isolated (no PYTHON* variables, no user site-packages); -B: no __pycache__ in the tree.
exec "$py" -I -B "$here/battery.py"
