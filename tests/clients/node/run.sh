#!/usr/bin/env bash
# run.sh: the Node.js mysql2 client battery (contract: tests/clients/README.md).
# Installs the pinned mysql2 from package-lock.json into node_modules when it is missing or
# older than the lock file, then runs battery.js.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

command -v node >/dev/null 2>&1 || { echo "run.sh: node not found (apt-get install nodejs npm)" >&2; exit 2; }
if [[ ! -d node_modules || node_modules -ot package-lock.json ]]; then
	command -v npm >/dev/null 2>&1 || { echo "run.sh: npm not found (apt-get install npm)" >&2; exit 2; }
	npm ci --no-audit --no-fund --loglevel=error >&2
	touch node_modules
fi

# Dates are printed in UTC by the battery; the machine's time zone must not matter anyway.
export TZ=UTC
exec node battery.js
