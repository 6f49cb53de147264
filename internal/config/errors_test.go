package config

import (
	"strings"
	"testing"
)

// edit returns minimal with each old string replaced (once) by its new one
// and add appended. Appended lines start at line 14, inside endpoints[0]
// when indented by four spaces.
func edit(add string, replace ...string) string {
	s := minimal
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			panic("edit: " + replace[i] + " not in minimal")
		}
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	return s + add
}

const hash = "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"

const replicaBlock = "  - name: replica1\n    address: 127.0.0.1:3307\n    role: replica\n"

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string // one line per error, in the order reported
	}{
		// Unknown and duplicate keys.
		{"unknown key", edit("", "    address: 127.0.0.1:3307", "    adress: 127.0.0.1:3307"), []string{
			`sluice.yaml:8: backends[1].address: required (want host:port)`,
			`sluice.yaml:9: backends[1].adress: unknown key`,
		}},
		{"unknown top-level key", edit("lgo: {level: info}\n"), []string{
			`sluice.yaml:14: lgo: unknown key`,
		}},
		{"unknown nested key", edit("log:\n  level: info\n  colour: true\n"), []string{
			`sluice.yaml:16: log.colour: unknown key`,
		}},
		{"duplicate key", edit("    name: rw2\n"), []string{
			`sluice.yaml:14: endpoints[0].name: duplicate key (first set on line 12)`,
		}},
		{"merge key", edit("defaults: &d {format: json}\nlog:\n  <<: *d\n"), []string{
			`sluice.yaml:14: defaults: unknown key`,
			`sluice.yaml:16: log: merge keys (<<) are not supported`,
		}},
		{"non-scalar key", edit("log:\n  ? [a]\n  : b\n"), []string{
			`sluice.yaml:15: log: keys must be plain names, not a list`,
		}},

		// YAML structure.
		{"syntax error", "users:\n  - name: app\n    password: x: y\n", []string{
			`sluice.yaml:3: invalid YAML: mapping values are not allowed in this context`,
		}},
		{"tab indentation", "users:\n\t- name: app\n", []string{
			`sluice.yaml:2: invalid YAML: found character that cannot start any token`,
		}},
		{"two documents", minimal + "---\nlog: {}\n", []string{
			`sluice.yaml:14: only one YAML document is allowed`,
		}},
		{"top level is a list", "- users\n", []string{
			`sluice.yaml:1: the top level must be a mapping with keys such as users, backends and endpoints, not a list`,
		}},
		{"empty file", "", []string{
			`sluice.yaml:1: users: at least one user is required`,
			`sluice.yaml:1: backends: at least one backend is required`,
			`sluice.yaml:1: endpoints: at least one endpoint is required`,
		}},
		{"list expected", edit("", "users:\n  - name: app\n    password: secret\n", "users: app\n"), []string{
			`sluice.yaml:1: users: expected a list ("- " items), got a single value`,
		}},
		{"mapping expected", edit("", "  - name: rw\n    listen: 127.0.0.1:6033\n", "  - rw\n"), []string{
			`sluice.yaml:12: endpoints[0]: expected a mapping (key: value lines), got a single value`,
		}},
		{"string expected", edit("", "listen: 127.0.0.1:6033", "listen: [127.0.0.1, 6033]"), []string{
			`sluice.yaml:13: endpoints[0].listen: expected a string, got a list`,
		}},
		{"integer expected", edit("    max_connections: lots\n"), []string{
			`sluice.yaml:14: endpoints[0].max_connections: invalid value "lots" (want an integer)`,
		}},
		{"float is not an integer", edit("    max_connections: 1.5\n"), []string{
			`sluice.yaml:14: endpoints[0].max_connections: invalid value "1.5" (want an integer)`,
		}},

		// Users.
		{"no users", edit("", "users:\n  - name: app\n    password: secret\n", "users: []\n"), []string{
			`sluice.yaml:1: users: at least one user is required`,
		}},
		{"users missing", edit("", "users:\n  - name: app\n    password: secret\n", ""), []string{
			`sluice.yaml:1: users: at least one user is required`,
		}},
		{"user without name", edit("", "  - name: app\n    password: secret\n", "  - password: secret\n"), []string{
			`sluice.yaml:2: users[0].name: required`,
		}},
		{"duplicate user", edit("", "    password: secret\n", "    password: secret\n  - name: app\n    password: other\n"), []string{
			`sluice.yaml:4: users[1].name: duplicate name "app" (already used by users[0])`,
		}},
		{"no password", edit("", "    password: secret\n", "    auth_plugin: mysql_native_password\n"), []string{
			`sluice.yaml:2: users[0]: needs password or password_hash`,
		}},
		{"password and hash", edit("", "    password: secret\n", "    password: secret\n    password_hash: \""+hash+"\"\n"), []string{
			`sluice.yaml:4: users[0].password_hash: give either password or password_hash, not both`,
		}},
		{"hash without star", edit("", "    password: secret\n", "    password_hash: "+hash[1:]+"\n"), []string{
			`sluice.yaml:3: users[0].password_hash: invalid value (want "*" followed by 40 hex digits, as in SELECT authentication_string FROM mysql.user)`,
		}},
		{"hash not hex", edit("", "    password: secret\n", "    password_hash: \"*"+strings.Repeat("g", 40)+"\"\n"), []string{
			`sluice.yaml:3: users[0].password_hash: invalid value (want "*" followed by 40 hex digits, as in SELECT authentication_string FROM mysql.user)`,
		}},
		{"empty hash", edit("", "    password: secret\n", "    password_hash: \"\"\n"), []string{
			`sluice.yaml:3: users[0].password_hash: invalid value (want "*" followed by 40 hex digits, as in SELECT authentication_string FROM mysql.user)`,
		}},
		{"bad auth plugin", edit("", "    password: secret\n", "    password: secret\n    auth_plugin: sha256_password\n"), []string{
			`sluice.yaml:4: users[0].auth_plugin: invalid value "sha256_password" (want mysql_native_password or caching_sha2_password, or leave it out to accept either)`,
		}},
		{"caching_sha2 with hash", edit("", "    password: secret\n", "    auth_plugin: caching_sha2_password\n    password_hash: \""+hash+"\"\n"), []string{
			`sluice.yaml:3: users[0].auth_plugin: caching_sha2_password needs password, not password_hash (a mysql_native_password hash cannot verify a caching_sha2_password scramble)`,
		}},

		{"negative max_user_connections", edit("", "    password: secret\n", "    password: secret\n    max_user_connections: -1\n"), []string{
			`sluice.yaml:4: users[0].max_user_connections: must not be negative (0: unlimited)`,
		}},

		// Backends.
		{"no backends", edit("", "backends:\n  - name: primary\n    address: 127.0.0.1:3306\n    role: primary\n"+replicaBlock, "backends: []\n"), []string{
			`sluice.yaml:4: backends: at least one backend is required`,
			`sluice.yaml:6: endpoints[0].mode: a read-write endpoint needs at least one backend with role replica`,
		}},
		{"duplicate backend", edit("", "name: replica1", "name: primary"), []string{
			`sluice.yaml:8: backends[1].name: duplicate name "primary" (already used by backends[0])`,
		}},
		{"backend without name", edit("", "  - name: replica1\n", "  - zone: az1\n"), []string{
			`sluice.yaml:8: backends[1].name: required`,
		}},
		{"address without port", edit("", "127.0.0.1:3307", "127.0.0.1"), []string{
			`sluice.yaml:9: backends[1].address: invalid value "127.0.0.1" (want host:port)`,
		}},
		{"address port 0", edit("", "127.0.0.1:3307", "127.0.0.1:0"), []string{
			`sluice.yaml:9: backends[1].address: invalid value "127.0.0.1:0" (the port must be a number from 1 to 65535)`,
		}},
		{"address port too big", edit("", "127.0.0.1:3307", "127.0.0.1:65536"), []string{
			`sluice.yaml:9: backends[1].address: invalid value "127.0.0.1:65536" (the port must be a number from 1 to 65535)`,
		}},
		{"address service name", edit("", "127.0.0.1:3307", "db2:mysql"), []string{
			`sluice.yaml:9: backends[1].address: invalid value "db2:mysql" (the port must be a number from 1 to 65535)`,
		}},
		{"address without host", edit("", "127.0.0.1:3307", "\":3307\""), []string{
			`sluice.yaml:9: backends[1].address: invalid value ":3307" (want host:port with a host)`,
		}},
		{"bad role", edit("", "role: replica", "role: slave"), []string{
			`sluice.yaml:10: backends[1].role: invalid value "slave" (want primary or replica)`,
			`sluice.yaml:12: endpoints[0].mode: a read-write endpoint needs at least one backend with role replica`,
		}},
		{"missing role", edit("", "    role: replica\n", ""), []string{
			`sluice.yaml:8: backends[1].role: required (want primary or replica)`,
			`sluice.yaml:11: endpoints[0].mode: a read-write endpoint needs at least one backend with role replica`,
		}},
		{"bad proxy_protocol", edit("", "role: replica", "role: replica\n    proxy_protocol: v3"), []string{
			`sluice.yaml:11: backends[1].proxy_protocol: invalid value "v3" (want off, v1 or v2)`,
		}},
		{"no primary", edit("", "role: primary", "role: replica"), []string{
			`sluice.yaml:4: backends: no backend has role primary (exactly one is required)`,
		}},
		{"two primaries", edit("", "role: replica", "role: primary"), []string{
			`sluice.yaml:10: backends[1].role: backends[0] is already the primary (exactly one backend must have role primary)`,
			`sluice.yaml:12: endpoints[0].mode: a read-write endpoint needs at least one backend with role replica`,
		}},

		// Endpoints.
		{"no endpoints", edit("", "endpoints:\n  - name: rw\n    listen: 127.0.0.1:6033\n", "endpoints:\n"), []string{
			`sluice.yaml:11: endpoints: at least one endpoint is required`,
		}},
		{"duplicate endpoint", edit("  - name: rw\n    listen: 127.0.0.1:6034\n"), []string{
			`sluice.yaml:14: endpoints[1].name: duplicate name "rw" (already used by endpoints[0])`,
		}},
		{"control character in an endpoint name", edit("  - name: \"rw\\e[2J\"\n    listen: 127.0.0.1:6034\n"), []string{
			`sluice.yaml:14: endpoints[1].name: name "rw\x1b[2J" holds the control character U+001B (names are printed by sluice ctl and in logs)`,
		}},
		{"newline in a backend name", edit("", "name: replica1", "name: \"replica1\\nfake\""), []string{
			`sluice.yaml:8: backends[1].name: name "replica1\nfake" holds the control character U+000A (names are printed by sluice ctl and in logs)`,
		}},
		{"bidi override in an endpoint name", edit("  - name: \"rw\u202e2\"\n    listen: 127.0.0.1:6034\n"), []string{
			`sluice.yaml:14: endpoints[1].name: name "rw\u202e2" holds the control character U+202E (names are printed by sluice ctl and in logs)`,
		}},
		{"login limits", edit("limits:\n  max_pending_logins: 0\n  max_pending_login_bytes: 1024\ntimeouts:\n  login: 0s\n"), []string{
			`sluice.yaml:15: limits.max_pending_logins: must be at least 1`,
			`sluice.yaml:16: limits.max_pending_login_bytes: must be at least 66560 (one login's largest packet)`,
			`sluice.yaml:18: timeouts.login: invalid value 0s (must be greater than 0)`,
		}},
		{"auth block limits", edit("limits:\n  max_auth_failures: -1\n  auth_block: -1s\n"), []string{
			`sluice.yaml:15: limits.max_auth_failures: must not be negative (0: never block)`,
			`sluice.yaml:16: limits.auth_block: invalid value -1s (must not be negative)`,
		}},
		{"auth block of 0s", edit("limits:\n  auth_block: 0s\n"), []string{
			`sluice.yaml:15: limits.auth_block: invalid value 0s (must be greater than 0)`,
		}},
		{"duplicate listen", edit("  - name: rw2\n    listen: 127.0.0.1:06033\n"), []string{
			`sluice.yaml:15: endpoints[1].listen: address 127.0.0.1:6033 is already used by endpoints[0]`,
		}},
		{"listen missing", edit("", "    listen: 127.0.0.1:6033\n", ""), []string{
			`sluice.yaml:12: endpoints[0].listen: required (want host:port)`,
		}},
		{"listen without port", edit("", "listen: 127.0.0.1:6033", "listen: localhost"), []string{
			`sluice.yaml:13: endpoints[0].listen: invalid value "localhost" (want host:port)`,
		}},
		{"listen bad port", edit("", "listen: 127.0.0.1:6033", "listen: 127.0.0.1:-1"), []string{
			`sluice.yaml:13: endpoints[0].listen: invalid value "127.0.0.1:-1" (the port must be a number from 0 to 65535)`,
		}},
		{"bad mode", edit("    mode: rw\n"), []string{
			`sluice.yaml:14: endpoints[0].mode: invalid value "rw" (want read-write or read-only)`,
		}},
		{"empty mode", edit("    mode: \"\"\n"), []string{
			`sluice.yaml:14: endpoints[0].mode: invalid value "" (want read-write or read-only)`,
		}},
		{"bad balance", edit("    balance: round-robin\n"), []string{
			`sluice.yaml:14: endpoints[0].balance: invalid value "round-robin" (want least-active, weighted or least-connections)`,
		}},
		{"negative max_connections", edit("    max_connections: -1\n"), []string{
			`sluice.yaml:14: endpoints[0].max_connections: invalid value -1 (want 0 for unlimited, or more)`,
		}},
		{"read-only without replica", edit("    mode: read-only\n", replicaBlock, ""), []string{
			`sluice.yaml:11: endpoints[0].mode: a read-only endpoint needs at least one backend with role replica`,
		}},
		{"read_weights unknown backend", edit("    read_weights:\n      primary: 0\n      replica9: 100\n"), []string{
			`sluice.yaml:16: endpoints[0].read_weights.replica9: no backend is named "replica9"`,
		}},
		{"read_weights out of range", edit("    read_weights: {replica1: 10001, primary: -1}\n"), []string{
			`sluice.yaml:14: endpoints[0].read_weights.primary: invalid value -1 (want 0 to 10000)`,
			`sluice.yaml:14: endpoints[0].read_weights.replica1: invalid value 10001 (want 0 to 10000)`,
		}},
		{"read_weights all zero", edit("    read_weights: {primary: 0, replica1: 0}\n"), []string{
			`sluice.yaml:14: endpoints[0].read_weights: every weight is 0, so reads could not be sent anywhere`,
		}},
		{"read_weights empty", edit("    read_weights: {}\n"), []string{
			`sluice.yaml:14: endpoints[0].read_weights: every weight is 0, so reads could not be sent anywhere`,
		}},
		{"read_weights list", edit("    read_weights: [replica1]\n"), []string{
			`sluice.yaml:14: endpoints[0].read_weights: expected a mapping (name: value lines), got a list`,
		}},
		{"read_weights duplicate", edit("    read_weights:\n      replica1: 1\n      replica1: 2\n"), []string{
			`sluice.yaml:16: endpoints[0].read_weights.replica1: duplicate key (first set on line 15)`,
		}},
		{"read_weights bad value", edit("    read_weights: {replica1: heavy}\n"), []string{
			`sluice.yaml:14: endpoints[0].read_weights.replica1: invalid value "heavy" (want an integer)`,
		}},

		// Accounts.
		{"accounts from the primary without a monitor", edit("accounts: {from_primary: true}\n"), []string{
			`sluice.yaml:14: accounts.from_primary: needs the monitor account (monitor.user), which reads them (GRANT SELECT ON mysql.global_priv on MariaDB, mysql.user on MySQL)`,
		}},
		{"accounts refresh too short", edit("accounts: {refresh: 10ms}\n"), []string{
			`sluice.yaml:14: accounts.refresh: invalid value 10ms (at least 1s)`,
		}},
		{"allow bad", edit("    allow: [10.0.0.0/8, nope]\n"), []string{
			`sluice.yaml:14: endpoints[0].allow[1]: invalid value "nope" (want a network such as 10.0.0.0/8, or an address)`,
		}},

		// Admin.
		{"admin off loopback without a token", edit("admin: {listen: '0.0.0.0:6080'}\n"), []string{
			`sluice.yaml:14: admin.token: required when admin.listen is not a loopback address (0.0.0.0:6080): the API changes what sluice does`,
		}},
		{"admin on every interface without a token", edit("admin: {listen: ':6080'}\n"), []string{
			`sluice.yaml:14: admin.token: required when admin.listen is not a loopback address (:6080): the API changes what sluice does`,
		}},
		{"admin token without listen", edit("admin: {token: t}\n"), []string{
			`sluice.yaml:14: admin.token: set without admin.listen`,
		}},
		{"admin tls without a certificate", edit("admin: {listen: '127.0.0.1:6080', tls: true}\n"), []string{
			`sluice.yaml:14: admin.tls: needs tls.cert and tls.key`,
		}},
		{"admin listen bad", edit("admin: {listen: 'localhost'}\n"), []string{
			`sluice.yaml:14: admin.listen: invalid value "localhost" (want host:port)`,
		}},

		// Monitor, log, timeouts.
		{"monitor password without user", edit("monitor:\n  password: x\n"), []string{
			`sluice.yaml:15: monitor.password: set without monitor.user`,
		}},
		{"monitor interval 0", edit("monitor: {user: m, interval: 0s}\n"), []string{
			`sluice.yaml:14: monitor.interval: invalid value 0s (must be greater than 0)`,
		}},
		{"connections_from nodes without a monitor", edit("    connections_from: nodes\n"), []string{
			`sluice.yaml:14: endpoints[0].connections_from: nodes needs the monitor (monitor.user), which polls Threads_connected`,
		}},
		{"connections_from cluster without a store", edit("    connections_from: cluster\n"), []string{
			`sluice.yaml:14: endpoints[0].connections_from: cluster needs store.etcd: the counts come from the other sluice nodes`,
		}},
		{"connections_from unknown", edit("    connections_from: all\n"), []string{
			`sluice.yaml:14: endpoints[0].connections_from: invalid value "all" (want proxy, nodes or cluster)`,
		}},
		{"monitor interval under 100ms", edit("monitor: {user: m, interval: 50ms}\n"), []string{
			`sluice.yaml:14: monitor.interval: invalid value 50ms (at least 100ms)`,
		}},
		{"consistency unknown", edit("    consistency: strong\n"), []string{
			`sluice.yaml:14: endpoints[0].consistency: invalid value "strong" (want eventual, session, global or latest)`,
		}},
		{"consistency session without a monitor", edit("    consistency: session\n"), []string{
			`sluice.yaml:14: endpoints[0].consistency: session needs the monitor (monitor.user), which tracks the nodes' GTID positions`,
		}},
		{"consistency on a read-only endpoint", edit("    mode: read-only\n    consistency: global\nmonitor: {user: m}\n"), []string{
			`sluice.yaml:15: endpoints[0].consistency: global applies to read-write endpoints only`,
		}},
		{"consistency_timeout over 60s", edit("    consistency_timeout: 2m\n"), []string{
			`sluice.yaml:14: endpoints[0].consistency_timeout: invalid value 2m0s (at most 1m0s)`,
		}},
		{"monitor down_after 0", edit("monitor: {user: m, down_after: 0}\n"), []string{
			`sluice.yaml:14: monitor.down_after: invalid value 0 (want 1 or more)`,
		}},
		{"duration without unit", edit("monitor:\n  interval: 5\n"), []string{
			`sluice.yaml:15: monitor.interval: invalid value "5" (want a duration with a unit, such as 5s, 250ms or 1m)`,
		}},
		{"duration as list", edit("timeouts:\n  idle: [1s]\n"), []string{
			`sluice.yaml:15: timeouts.idle: expected a duration, got a list`,
		}},
		{"bad log format", edit("log: {format: xml}\n"), []string{
			`sluice.yaml:14: log.format: invalid value "xml" (want text or json)`,
		}},
		{"bad log level", edit("log:\n  level: trace\n"), []string{
			`sluice.yaml:15: log.level: invalid value "trace" (want debug, info, warn or error)`,
		}},
		{"negative timeouts", edit("timeouts:\n  read: -1s\n  idle: -5m\n  shutdown: -1ms\n"), []string{
			`sluice.yaml:15: timeouts.read: invalid value -1s (must not be negative)`,
			`sluice.yaml:16: timeouts.idle: invalid value -5m0s (must not be negative)`,
			`sluice.yaml:17: timeouts.shutdown: invalid value -1ms (must not be negative)`,
		}},
		{"zero connect and write", edit("timeouts:\n  write: 0s\n  connect: 0\n"), []string{
			`sluice.yaml:15: timeouts.write: invalid value 0s (must be greater than 0)`,
			`sluice.yaml:16: timeouts.connect: invalid value 0s (must be greater than 0)`,
		}},

		{"negative threads", edit("threads: -1\n"), []string{
			`sluice.yaml:14: threads: must be between 0 (every CPU) and 1024`,
		}},

		// Several problems: all reported, sorted by line.
		{"sorted by line", edit("    mode: rw\nlog: {level: loud}\n", "role: primary", "role: primry", "name: app", "name: app\n    bogus: 1"), []string{
			`sluice.yaml:3: users[0].bogus: unknown key`,
			`sluice.yaml:5: backends: no backend has role primary (exactly one is required)`,
			`sluice.yaml:8: backends[0].role: invalid value "primry" (want primary or replica)`,
			`sluice.yaml:15: endpoints[0].mode: invalid value "rw" (want read-write or read-only)`,
			`sluice.yaml:16: log.level: invalid value "loud" (want debug, info, warn or error)`,
		}},
		// A value that failed to decode is not complained about again.
		{"no follow-on errors", edit("", "role: primary", "role: [primary]"), []string{
			`sluice.yaml:7: backends[0].role: expected a string, got a list`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse("sluice.yaml", []byte(tc.src), env(nil))
			if err == nil {
				t.Fatalf("no error; config = %+v\nsource:\n%s", c, tc.src)
			}
			if c != nil {
				t.Errorf("config = %+v, want nil on error", c)
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("error:\n%s\nwant:\n%s\nsource:\n%s", got, want, tc.src)
			}
		})
	}
}

// TestValidConfigs covers corner cases that must be accepted.
func TestValidConfigs(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"listen port 0 twice", edit("  - name: rw2\n    listen: 127.0.0.1:0\n", "listen: 127.0.0.1:6033", "listen: 127.0.0.1:0")},
		{"listen without host", edit("", "listen: 127.0.0.1:6033", "listen: \":6033\"")},
		{"ipv6 addresses", edit("", "127.0.0.1:3306", "\"[::1]:3306\"", "listen: 127.0.0.1:6033", "listen: \"[::1]:6033\"")},
		{"reads only from primary", edit("    read_weights: {primary: 1}\n")},
		{"read-only endpoint", edit("  - name: ro\n    listen: 127.0.0.1:6034\n    mode: read-only\n    balance: weighted\n")},
		{"monitor user without password", edit("monitor: {user: mon}\n")},
		{"aliases", edit("timeouts:\n  connect: &t 2s\n  write: *t\n")},
		{"comments and document marker", "# sluice\n---\n" + minimal + "...\n"},
		{"threads", edit("threads: 2\n")},
		{"explicit zero durations", edit("timeouts: {read: 0s, idle: 0, shutdown: 0s}\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parse("sluice.yaml", []byte(tc.src), env(nil)); err != nil {
				t.Errorf("%v\nsource:\n%s", err, tc.src)
			}
		})
	}
}

// TestParseAllowMapped: an allow entry in IPv4-mapped IPv6 form is the IPv4 network it maps;
// other IPv6 networks stay as written.
func TestParseAllowMapped(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:127.0.0.0/104": "127.0.0.0/8",
		"::ffff:10.1.2.3":      "10.1.2.3/32",
		"::ffff:10.1.2.3/128":  "10.1.2.3/32",
		"::ffff:0:0/96":        "0.0.0.0/0",
		"::/0":                 "::/0",
		"2001:db8::/32":        "2001:db8::/32",
		"10.0.0.1/8":           "10.0.0.0/8",
	} {
		p, err := ParseAllow(in)
		if err != nil || p.String() != want {
			t.Errorf("ParseAllow(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
}
