package config

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// Validate checks the whole configuration and returns every problem found,
// sorted by line and joined with errors.Join, or nil. It does not apply
// defaults: a Config built in code should call ApplyDefaults first.
func (c *Config) Validate() error {
	return joinErrors(c.validate())
}

// given reports whether key was written in the file c was parsed from.
func (c *Config) given(key string) bool { return c.pos.given(key) }

// checker collects validation problems for one Config.
type checker struct {
	c    *Config
	errs []*Error
}

func (k *checker) errorf(key, format string, args ...any) {
	k.errs = append(k.errs, &Error{
		File: k.c.pos.fileOf(key, k.c.Path),
		Line: k.c.pos.lineOf(key),
		Key:  key,
		Msg:  fmt.Sprintf(format, args...),
	})
}

func (c *Config) validate() []*Error {
	k := &checker{c: c}
	k.users()
	replicas, named := k.backends()
	k.monitor()
	k.endpoints(replicas, named)
	k.admin()
	k.store()
	k.accounts()
	k.oneOf("log.format", c.Log.Format, LogFormatText, LogFormatJSON)
	k.oneOf("log.level", c.Log.Level, LogLevelDebug, LogLevelInfo, LogLevelWarn, LogLevelError)
	// connect and write must be positive: the proxy uses them as socket
	// deadlines, where 0 would mean "already expired", not "none".
	k.duration("timeouts.connect", c.Timeouts.Connect, true)
	k.duration("timeouts.read", c.Timeouts.Read, false)
	k.duration("timeouts.write", c.Timeouts.Write, true)
	k.duration("timeouts.shutdown", c.Timeouts.Shutdown, false)
	k.duration("timeouts.idle", c.Timeouts.Idle, false)
	k.duration("timeouts.login", c.Timeouts.Login, true)
	k.tls()
	if c.Limits.MaxPreparedStatements < 1 {
		k.errorf("limits.max_prepared_statements", "must be at least 1")
	}
	if c.Limits.MaxLongData < 1 {
		k.errorf("limits.max_long_data", "must be at least 1")
	}
	if c.Limits.MaxPendingLogins < 1 {
		k.errorf("limits.max_pending_logins", "must be at least 1")
	}
	if c.Limits.MaxPendingLoginBytes < MinPendingLoginBytes {
		k.errorf("limits.max_pending_login_bytes", "must be at least %d (one login's largest packet)", MinPendingLoginBytes)
	}
	if c.Limits.MaxAuthFailures < 0 {
		k.errorf("limits.max_auth_failures", "must not be negative (0: never block)")
	}
	k.duration("limits.auth_block", c.Limits.AuthBlock, c.Limits.MaxAuthFailures > 0)
	k.pool("pool", c.Pool)
	for i, u := range c.Users {
		k.pool(indexKey("users", i)+".pool", u.Pool)
	}
	if c.Threads < 0 || c.Threads > 1024 {
		k.errorf("threads", "must be between 0 (every CPU) and 1024")
	}
	return k.errs
}

func (k *checker) users() {
	c := k.c
	if len(c.Users) == 0 && !c.Accounts.FromPrimary {
		k.errorf("users", "at least one user is required")
	}
	k.uniqueNames("users", len(c.Users), func(i int) string { return c.Users[i].Name })
	for i, u := range c.Users {
		p := indexKey("users", i)
		// Presence of the key, not a non-empty value, is what counts, so
		// that an account without a password can be written as password: "".
		hasPassword := u.Password != "" || c.given(p+".password")
		hasHash := u.PasswordHash != "" || c.given(p+".password_hash")
		switch {
		case hasPassword && hasHash:
			k.errorf(p+".password_hash", "give either password or password_hash, not both")
		case !hasPassword && !hasHash:
			k.errorf(p, "needs password or password_hash")
		}
		// The hash is never echoed: it is as good as the password for
		// mysql_native_password.
		if hasHash && !validNativeHash(u.PasswordHash) {
			k.errorf(p+".password_hash", `invalid value (want "*" followed by 40 hex digits, as in SELECT authentication_string FROM mysql.user)`)
		}
		if u.MaxUserConnections < 0 {
			k.errorf(p+".max_user_connections", "must not be negative (0: unlimited)")
		}
		switch u.AuthPlugin {
		case "", AuthNativePassword:
		case AuthCachingSHA2:
			if hasHash {
				k.errorf(p+".auth_plugin", "caching_sha2_password needs password, not password_hash (a mysql_native_password hash cannot verify a caching_sha2_password scramble)")
			}
		default:
			k.errorf(p+".auth_plugin", "invalid value %q (want %s or %s, or leave it out to accept either)", u.AuthPlugin, AuthNativePassword, AuthCachingSHA2)
		}
	}
}

// validNativeHash reports whether h looks like a mysql_native_password
// hash: "*" and the hex of SHA1(SHA1(password)), in either case.
func validNativeHash(h string) bool {
	if len(h) != 41 || h[0] != '*' {
		return false
	}
	for i := 1; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// backends checks the backends and returns how many replicas there are,
// and how many of them have a name (and so can be given a read weight).
func (k *checker) backends() (replicas, named int) {
	c := k.c
	if len(c.Backends) == 0 {
		k.errorf("backends", "at least one backend is required")
	}
	k.uniqueNames("backends", len(c.Backends), func(i int) string { return c.Backends[i].Name })
	k.printableNames("backends", len(c.Backends), func(i int) string { return c.Backends[i].Name })
	var primaries []int
	for i, b := range c.Backends {
		p := indexKey("backends", i)
		k.address(p+".address", b.Address, false)
		k.oneOf(p+".role", b.Role, RolePrimary, RoleReplica)
		k.oneOf(p+".proxy_protocol", b.ProxyProtocol, ProxyProtocolOff, ProxyProtocolV1, ProxyProtocolV2)
		switch b.Role {
		case RolePrimary:
			primaries = append(primaries, i)
		case RoleReplica:
			replicas++
			if b.Name != "" {
				named++
			}
		}
	}
	if len(c.Backends) > 0 && len(primaries) == 0 {
		k.errorf("backends", "no backend has role primary (exactly one is required)")
	}
	for j := 1; j < len(primaries); j++ {
		i := primaries[j]
		k.errorf(indexKey("backends", i)+".role", "%s is already the primary (exactly one backend must have role primary)", indexKey("backends", primaries[0]))
	}
	return replicas, named
}

func (k *checker) monitor() {
	m := k.c.Monitor
	if m.User == "" && m.Password != "" {
		k.errorf("monitor.password", "set without monitor.user")
	}
	// 0 would make the monitor poll in a busy loop.
	k.duration("monitor.interval", m.Interval, true)
	if m.Interval.Duration > 0 && m.Interval.Duration < MinMonitorInterval {
		k.errorf("monitor.interval", "invalid value %s (at least %s)", m.Interval.Duration, MinMonitorInterval)
	}
	if m.DownAfter < 1 {
		k.errorf("monitor.down_after", "invalid value %d (want 1 or more)", m.DownAfter)
	}
	k.duration("monitor.switchover_timeout", m.SwitchoverTimeout, false)
	if m.SwitchoverTimeout.Duration > MaxSwitchoverTimeout {
		k.errorf("monitor.switchover_timeout", "invalid value %s (at most %s)", m.SwitchoverTimeout.Duration, MaxSwitchoverTimeout)
	}
}

func (k *checker) accounts() {
	a := k.c.Accounts
	k.duration("accounts.refresh", a.Refresh, true)
	if a.Refresh.Duration > 0 && a.Refresh.Duration < time.Second {
		k.errorf("accounts.refresh", "invalid value %s (at least 1s)", a.Refresh.Duration)
	}
	for i, u := range a.TopologyUsers {
		if u == "" {
			k.errorf(indexKey("accounts.topology_users", i), "empty user name")
		}
	}
	if a.FromPrimary && k.c.Monitor.User == "" {
		k.errorf("accounts.from_primary", "needs the monitor account (monitor.user), which reads them (GRANT SELECT ON mysql.global_priv on MariaDB, mysql.user on MySQL)")
	}
	for i, e := range k.c.Endpoints {
		for j, a := range e.Allow {
			if _, err := ParseAllow(a); err != nil {
				k.errorf(fmt.Sprintf("%s.allow[%d]", indexKey("endpoints", i), j), "invalid value %q (want a network such as 10.0.0.0/8, or an address)", a)
			}
		}
	}
}

// ParseAllow reads one entry of an endpoint's allow list: a CIDR network, or one address.
//
// An IPv4-mapped IPv6 network (::ffff:127.0.0.0/104) is read as the IPv4 network it maps
// (127.0.0.0/8): clients are compared by their IPv4 address. A wider IPv6 network that holds
// the mapped range (::/0, ::/80) also covers IPv4 clients; the proxy's check takes care of that.
func ParseAllow(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		p = p.Masked()
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			return netip.PrefixFrom(a.Unmap(), p.Bits()-96), nil
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

func (k *checker) admin() {
	a := k.c.Admin
	if a.Listen == "" {
		if a.Token != "" {
			k.errorf("admin.token", "set without admin.listen")
		}
		if a.TLS {
			k.errorf("admin.tls", "set without admin.listen")
		}
		return
	}
	addr, ok := k.address("admin.listen", a.Listen, true)
	if !ok {
		return
	}
	if host, _, _ := net.SplitHostPort(addr); a.Token == "" && !IsLoopback(host) {
		k.errorf("admin.token", "required when admin.listen is not a loopback address (%s): the API changes what sluice does", a.Listen)
	}
	if a.TLS && k.c.TLS.Cert == "" {
		k.errorf("admin.tls", "needs tls.cert and tls.key")
	}
}

// IsLoopback reports whether host (of a host:port) names the loopback interface only:
// localhost or a loopback IP. An empty host (every interface) is not.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (k *checker) endpoints(replicas, namedReplicas int) {
	c := k.c
	if len(c.Endpoints) == 0 {
		k.errorf("endpoints", "at least one endpoint is required")
	}
	k.uniqueNames("endpoints", len(c.Endpoints), func(i int) string { return c.Endpoints[i].Name })
	k.printableNames("endpoints", len(c.Endpoints), func(i int) string { return c.Endpoints[i].Name })
	listens := map[string]int{}
	for i, e := range c.Endpoints {
		p := indexKey("endpoints", i)
		if addr, ok := k.address(p+".listen", e.Listen, true); ok {
			// Several ":0" listeners each get their own port, so only
			// fixed ports can clash.
			if _, port, _ := net.SplitHostPort(addr); port != "0" {
				if j, dup := listens[addr]; dup {
					k.errorf(p+".listen", "address %s is already used by %s", addr, indexKey("endpoints", j))
				} else {
					listens[addr] = i
				}
			}
		}
		k.oneOf(p+".mode", e.Mode, ModeReadWrite, ModeReadOnly)
		if replicas == 0 && (e.Mode == ModeReadWrite || e.Mode == ModeReadOnly) {
			k.errorf(p+".mode", "a %s endpoint needs at least one backend with role replica", e.Mode)
		}
		k.oneOf(p+".pool_mode", e.PoolMode, PoolModeOff, PoolModeSession, PoolModeTransaction)
		k.pool(p+".pool", e.Pool)
		for j, u := range c.Users {
			// A user's own min_idle or max_per_node against the other from the endpoint.
			both := poolKeyMinIdle | poolKeyMaxPerNode
			if set := u.poolSet & both; set == 0 || set == both { // both: the section's own check
				continue
			}
			if up := c.PoolOf(&e, u.Name); up.MaxPerNode > 0 && up.MinIdle > up.MaxPerNode {
				k.errorf(indexKey("users", j)+".pool.min_idle", "%d is more than max_per_node (%d) on endpoint %s: at most max_per_node connections are open",
					up.MinIdle, up.MaxPerNode, e.Name)
			}
		}
		k.oneOf(p+".balance", e.Balance, BalanceLeastActive, BalanceWeighted, BalanceLeastConnections)
		k.oneOf(p+".connections_from", e.ConnectionsFrom, ConnectionsFromProxy, ConnectionsFromNodes, ConnectionsFromCluster)
		if e.ConnectionsFrom == ConnectionsFromNodes && c.Monitor.User == "" {
			k.errorf(p+".connections_from", "nodes needs the monitor (monitor.user), which polls Threads_connected")
		}
		if e.ConnectionsFrom == ConnectionsFromCluster && !c.Store.Enabled() {
			k.errorf(p+".connections_from", "cluster needs store.etcd: the counts come from the other sluice nodes")
		}
		if e.Consistency == ConsistencySession || e.Consistency == ConsistencyGlobal || e.Consistency == ConsistencyLatest {
			switch {
			case e.Mode == ModeReadOnly:
				// A read-only endpoint never uses the primary: there is nowhere to go for a read
				// its replica cannot serve at the level.
				k.errorf(p+".consistency", "%s applies to read-write endpoints only", e.Consistency)
			case c.Monitor.User == "":
				k.errorf(p+".consistency", "%s needs the monitor (monitor.user), which tracks the nodes' GTID positions", e.Consistency)
			}
		}
		if e.MaxConnections < 0 {
			k.errorf(p+".max_connections", "invalid value %d (want 0 for unlimited, or more)", e.MaxConnections)
		}
		k.readWeights(p+".read_weights", e.ReadWeights, namedReplicas)
	}
}

func (k *checker) readWeights(key string, weights map[string]int, namedReplicas int) {
	if weights == nil {
		k.errorf(key, "not set (ApplyDefaults fills in the default)")
		return
	}
	names := make([]string, 0, len(weights))
	for name := range weights {
		names = append(names, name)
	}
	// Map order is random; report in file order so output is stable.
	sort.Slice(names, func(i, j int) bool {
		li, lj := k.c.pos.lineOf(childKey(key, names[i])), k.c.pos.lineOf(childKey(key, names[j]))
		if li != lj {
			return li < lj
		}
		return names[i] < names[j]
	})
	total, bad := 0, false
	for _, name := range names {
		w, wk := weights[name], childKey(key, name)
		switch {
		case k.c.Backend(name) == nil:
			k.errorf(wk, "no backend is named %q", name)
			bad = true
		case w < 0 || w > MaxReadWeight:
			k.errorf(wk, "invalid value %d (want 0 to %d)", w, MaxReadWeight)
			bad = true
		default:
			total += w
		}
	}
	// Without a (named) replica the endpoint or the backend is already
	// reported, and the zero total would only be a consequence of that.
	if total == 0 && !bad && namedReplicas > 0 {
		k.errorf(key, "every weight is 0, so reads could not be sent anywhere")
	}
}

// uniqueNames checks that every item of a list has a name and no name is
// used twice.
func (k *checker) uniqueNames(list string, n int, name func(int) string) {
	seen := make(map[string]int, n)
	for i := range n {
		key := indexKey(list, i) + ".name"
		nm := name(i)
		if nm == "" {
			k.errorf(key, "required")
			continue
		}
		if j, dup := seen[nm]; dup {
			k.errorf(key, "duplicate name %q (already used by %s)", nm, indexKey(list, j))
			continue
		}
		seen[nm] = i
	}
}

// printableNames refuses names with control characters (or invalid UTF-8): node and endpoint
// names are printed by sluice ctl, logged and exported as metric labels, where a newline or an
// escape sequence would forge lines or drive the operator's terminal.
func (k *checker) printableNames(list string, n int, name func(int) string) {
	for i := range n {
		if err := CheckName(name(i)); err != nil {
			k.errorf(indexKey(list, i)+".name", "%v", err)
		}
	}
}

// CheckName reports whether s may name a node or an endpoint: valid UTF-8 without control
// characters (C0, DEL, C1) or Unicode format characters (bidirectional overrides and the like,
// which reorder what a terminal shows).
func CheckName(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("name %q is not valid UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("name %q holds the control character %U (names are printed by sluice ctl and in logs)", s, r)
		}
	}
	return nil
}

// oneOf checks an enumerated setting.
func (k *checker) oneOf(key, value string, allowed ...string) {
	if slices.Contains(allowed, value) {
		return
	}
	if value == "" && !k.c.given(key) {
		k.errorf(key, "required (want %s)", wantList(allowed))
		return
	}
	k.errorf(key, "invalid value %q (want %s)", value, wantList(allowed))
}

// address checks a host:port setting and returns it in canonical form
// (so "[::1]:06033" and "[::1]:6033" compare equal). A listen address may
// leave out the host (all interfaces) and use port 0 (any free port, for
// tests); a backend address needs both.
func (k *checker) address(key, addr string, listen bool) (string, bool) {
	if addr == "" {
		if k.c.given(key) {
			k.errorf(key, "invalid value \"\" (want host:port)")
		} else {
			k.errorf(key, "required (want host:port)")
		}
		return "", false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		k.errorf(key, "invalid value %q (want host:port)", addr)
		return "", false
	}
	minPort := 1
	if listen {
		minPort = 0
	}
	// Service names such as "mysql" are refused: they depend on the
	// host's /etc/services, and a number is what everyone means.
	n, err := strconv.Atoi(port)
	if err != nil || !isDigits(port) || n < minPort || n > 65535 {
		k.errorf(key, "invalid value %q (the port must be a number from %d to 65535)", addr, minPort)
		return "", false
	}
	if host == "" && !listen {
		k.errorf(key, "invalid value %q (want host:port with a host)", addr)
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// pool checks a pool section at key.
func (k *checker) pool(key string, p Pool) {
	if p.MaxPerNode < 0 {
		k.errorf(key+".max_per_node", "must not be negative (0: unlimited)")
	}
	if p.MinIdle < 0 {
		k.errorf(key+".min_idle", "must not be negative (0: none kept)")
	}
	if p.MaxPerNode > 0 && p.MinIdle > p.MaxPerNode {
		k.errorf(key+".min_idle", "%d is more than max_per_node (%d): at most max_per_node connections are open", p.MinIdle, p.MaxPerNode)
	}
	k.duration(key+".idle_timeout", p.IdleTimeout, false)
	k.duration(key+".max_lifetime", p.MaxLifetime, false)
	k.duration(key+".acquire_timeout", p.AcquireTimeout, false)
}

// duration checks that d is not negative and, if positive is set, not 0.
func (k *checker) duration(key string, d Duration, positive bool) {
	switch {
	case d.Duration < 0:
		k.errorf(key, "invalid value %s (must not be negative)", d.Duration)
	case d.Duration == 0 && positive:
		k.errorf(key, "invalid value 0s (must be greater than 0)")
	}
}

// tls checks the certificate settings and that the files they name can be used, so that a
// typo fails at startup with the line of the key rather than at the first TLS client.
func (k *checker) tls() {
	c := k.c
	switch {
	case c.TLS.Cert != "" && c.TLS.Key == "":
		k.errorf("tls.key", "is required with tls.cert")
	case c.TLS.Key != "" && c.TLS.Cert == "":
		k.errorf("tls.cert", "is required with tls.key")
	case c.TLS.Cert != "":
		if _, err := tls.LoadX509KeyPair(c.TLS.Cert, c.TLS.Key); err != nil {
			k.errorf("tls.cert", "cannot load the certificate and key: %v", err)
		}
	}
	for i, e := range c.Endpoints {
		p := indexKey("endpoints", i)
		k.oneOf(p+".tls", e.TLS, TLSOff, TLSOptional, TLSRequired)
		k.oneOf(p+".multi_statements", e.MultiStatements, MultiStatementsState, MultiStatementsStrict)
		k.duration(p+".max_replica_lag", e.MaxReplicaLag, false)
		k.oneOf(p+".consistency", e.Consistency, ConsistencyEventual, ConsistencySession, ConsistencyGlobal, ConsistencyLatest)
		k.duration(p+".consistency_timeout", e.ConsistencyTimeout, false)
		if e.ConsistencyTimeout.Duration > MaxConsistencyTimeout {
			k.errorf(p+".consistency_timeout", "invalid value %s (at most %s)", e.ConsistencyTimeout.Duration, MaxConsistencyTimeout)
		}
		if e.TransactionSplit && e.Mode == ModeReadOnly {
			k.errorf(p+".transaction_split", "applies to read-write endpoints only")
		}
		if e.TLS != TLSOff && e.TLS != "" && c.TLS.Cert == "" {
			k.errorf(p+".tls", "%s needs a certificate: set tls.cert and tls.key", e.TLS)
		}
	}
	k.oneOf("backend_tls.mode", c.BackendTLS.Mode, BackendTLSMirror, BackendTLSOff, BackendTLSPreferred, BackendTLSRequired)
	if c.BackendTLS.CA != "" {
		data, err := os.ReadFile(c.BackendTLS.CA)
		if err != nil {
			k.errorf("backend_tls.ca", "cannot read: %v", err)
		} else if !x509.NewCertPool().AppendCertsFromPEM(data) {
			k.errorf("backend_tls.ca", "no PEM certificate in %s", c.BackendTLS.CA)
		}
	}
	if f := c.BackendTLS.ServerPublicKey; f != "" {
		if _, err := ReadPublicKey(f); err != nil {
			k.errorf("backend_tls.server_public_key", "%v", err)
		}
	}
}

// ReadPublicKey reads backend_tls.server_public_key: a PEM file holding one RSA public key
// (PKIX "PUBLIC KEY", as MySQL writes it, or PKCS #1 "RSA PUBLIC KEY"). It returns the file's
// bytes.
func ReadPublicKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("no PEM block in %s", path)
	}
	var key any
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%s holds a %q PEM block, want a PUBLIC KEY", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if _, ok := key.(*rsa.PublicKey); !ok {
		return nil, fmt.Errorf("%s: not an RSA public key", path)
	}
	return data, nil
}
