#!/usr/bin/env bash
# run.sh: the Java battery (MariaDB Connector/J) for scripts/client-batteries.sh; see
# tests/clients/README.md for the contract. Needs javac/java (openjdk-17-jdk-headless) and the
# Debian driver jar (libmariadb-java); installs nothing.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jar=${MARIADB_JAVA_JAR:-/usr/share/java/mariadb-java-client.jar}

for tool in javac java; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "java battery: $tool not found (apt-get install openjdk-17-jdk-headless)" >&2
		exit 3
	}
done
[[ -r $jar ]] || {
	echo "java battery: $jar not found (apt-get install libmariadb-java)" >&2
	exit 3
}

# Compiled classes go to $CB_WORK (or .build/ here, git-ignored), recompiled when the sources or
# the jar change.
classes=${CB_WORK:-$here/.build}/java-classes
stamp=$( (cat "$here"/*.java; sha256sum "$jar") | sha256sum | cut -d' ' -f1)
if [[ ! -f $classes/.stamp || $(cat "$classes/.stamp") != "$stamp" ]]; then
	rm -rf "$classes"
	mkdir -p "$classes"
	javac -encoding UTF-8 -nowarn -d "$classes" -cp "$jar" "$here"/*.java >&2
	echo "$stamp" >"$classes/.stamp"
fi

exec java -Xmx1g -XX:+UseSerialGC -Dfile.encoding=UTF-8 -cp "$classes:$jar" Battery
