package config

import (
	"os"
	"time"
)

// Accepted values of the enumerated string settings. They are exported so
// that other packages compare against the same spelling Validate accepts.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"

	ModeReadWrite = "read-write"
	ModeReadOnly  = "read-only"

	BalanceLeastActive      = "least-active"
	BalanceWeighted         = "weighted"
	BalanceLeastConnections = "least-connections"

	ConnectionsFromProxy = "proxy"
	ConnectionsFromNodes = "nodes"

	ConsistencyEventual = "eventual"
	ConsistencySession  = "session"
	ConsistencyGlobal   = "global"

	AuthNativePassword = "mysql_native_password"
	AuthCachingSHA2    = "caching_sha2_password"

	LogFormatText = "text"
	LogFormatJSON = "json"

	MultiStatementsState  = "state"
	MultiStatementsStrict = "strict"

	TLSOff      = "off"
	TLSOptional = "optional"
	TLSRequired = "required"

	BackendTLSMirror    = "mirror"
	BackendTLSOff       = "off"
	BackendTLSPreferred = "preferred"
	BackendTLSRequired  = "required"

	LogLevelDebug = "debug"
	LogLevelInfo  = "info"
	LogLevelWarn  = "warn"
	LogLevelError = "error"
)

// Limits and defaults that are not plain zero values.
const (
	// MaxReadWeight is the largest accepted read_weights value.
	MaxReadWeight = 10000
	// DefaultReplicaWeight is the read weight every replica gets when an
	// endpoint has no read_weights; the primary then gets 0, so reads go
	// to replicas only.
	DefaultReplicaWeight = 100

	DefaultMonitorInterval  = time.Second
	MinMonitorInterval      = 100 * time.Millisecond
	DefaultMonitorDownAfter = 3
	// DefaultSwitchoverTimeout is how long a statement for the primary waits for a new one
	// while none takes writes; MaxSwitchoverTimeout bounds the setting.
	DefaultSwitchoverTimeout = 10 * time.Second
	MaxSwitchoverTimeout     = 5 * time.Minute
	DefaultConnectTimeout    = 5 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultMaxReplicaLag     = 30 * time.Second
	// DefaultConsistencyTimeout is how long a read waits for a replica to reach the position
	// its consistency level needs before it goes to the primary; MaxConsistencyTimeout bounds
	// the setting.
	DefaultConsistencyTimeout = 10 * time.Millisecond
	MaxConsistencyTimeout     = 60 * time.Second

	DefaultMaxPreparedStatements = 16382    // MySQL's default max_prepared_stmt_count
	DefaultMaxLongData           = 64 << 20 // bytes

	// DefaultMaxConnections is an endpoint's max_connections: room for a 10 000-client
	// benchmark twice over, and a bound on what a flood of clients can make sluice hold.
	DefaultMaxConnections = 20000
	// DefaultLoginTimeout bounds a client's login, from its connection to its password
	// proven (MySQL's connect_timeout is 10 s too).
	DefaultLoginTimeout = 10 * time.Second
	// DefaultMaxPendingLogins is how many connections may be in their login at once (all
	// endpoints together); DefaultMaxPendingLoginBytes the packet bytes they may hold together.
	DefaultMaxPendingLogins = 1000
	// DefaultMaxAuthFailures and DefaultAuthBlock block a client address that failed 10
	// logins, each within 60 s of the previous, for 60 s (MaxScale's defaults).
	DefaultMaxAuthFailures      = 10
	DefaultAuthBlock            = 60 * time.Second
	DefaultMaxPendingLoginBytes = 16 << 20
	// MinPendingLoginBytes lets at least one login's largest packet in (64 KiB of connection
	// attributes and the handshake around them).
	MinPendingLoginBytes = 65 << 10
)

// Config is a whole configuration file.
type Config struct {
	Path string `yaml:"-"` // file it was loaded from
	// Zone is where this sluice runs (an availability zone's name), for endpoints with
	// nearest_zone; overridden by serve's --zone and by SLUICE_ZONE.
	Zone       string     `yaml:"zone"`
	Users      []User     `yaml:"users"`
	Backends   []Backend  `yaml:"backends"`
	Monitor    Monitor    `yaml:"monitor"`
	Endpoints  []Endpoint `yaml:"endpoints"`
	Admin      Admin      `yaml:"admin"`
	Accounts   Accounts   `yaml:"accounts"`
	Log        Log        `yaml:"log"`
	Timeouts   Timeouts   `yaml:"timeouts"`
	TLS        TLS        `yaml:"tls"`
	BackendTLS BackendTLS `yaml:"backend_tls"`
	// BackendCompress uses the compressed protocol towards the nodes (default false).
	BackendCompress bool   `yaml:"backend_compress"`
	Limits          Limits `yaml:"limits"`
	// Threads is how many OS threads run Go code at once (GOMAXPROCS): 0 (default) = every CPU
	// the process may use. On a small host shared with the servers and the clients, fewer
	// threads cost less CPU per query (fewer wake-ups and cross-CPU hand-offs); see bench/.
	Threads int `yaml:"threads"`

	// pos remembers where each key was written so that Validate can point
	// at the offending line; nil for a Config built in Go code.
	pos *positions
}

// User is an account clients log in to sluice with.
type User struct {
	Name         string `yaml:"name"`
	Password     string `yaml:"password"`      // plaintext (usually "${APP_PASSWORD}")
	PasswordHash string `yaml:"password_hash"` // "*" + 40 hex = mysql_native_password hash (SHA1(SHA1(pw))), upper or lower hex
	AuthPlugin   string `yaml:"auth_plugin"`   // "" (accept whichever of mysql_native_password or caching_sha2_password the client uses) | mysql_native_password | caching_sha2_password
	RequireTLS   bool   `yaml:"require_tls"`   // refuse this user on connections without TLS
}

// Backend is one MySQL/MariaDB server behind the proxy.
type Backend struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address"` // host:port, required
	Role    string `yaml:"role"`    // primary | replica
	Zone    string `yaml:"zone"`    // optional
}

// Monitor is the account and cadence used to health-check backends.
type Monitor struct {
	User     string   `yaml:"user"` // empty = no monitor account configured
	Password string   `yaml:"password"`
	Interval Duration `yaml:"interval"` // default 1s, at least 100ms
	// DownAfter is how many checks in a row must fail (time out, break) before a node is down;
	// a node that refuses connections is down at once. Default 3.
	DownAfter int `yaml:"down_after"`
	// SwitchoverTimeout is how long a statement for the primary waits for a new one while no
	// node takes writes (a switchover under way). Default 10s; 0: it fails at once.
	SwitchoverTimeout Duration `yaml:"switchover_timeout"`
}

// Endpoint is one listening socket clients connect to.
type Endpoint struct {
	Name           string         `yaml:"name"`
	Listen         string         `yaml:"listen"`          // host:port
	Mode           string         `yaml:"mode"`            // read-write (default) | read-only
	ReadWeights    map[string]int `yaml:"read_weights"`    // backend name -> 0..10000; after defaults every backend has an entry
	Balance        string         `yaml:"balance"`         // least-active (default) | weighted
	MaxConnections int            `yaml:"max_connections"` // default 20000; 0 = unlimited
	TLS            string         `yaml:"tls"`             // off | optional | required; default optional when tls.cert is set, else off
	// TransactionSplit: in a transaction, reads before the first write go to a replica and the
	// transaction opens on the primary at its first write (read-write endpoints only).
	TransactionSplit bool `yaml:"transaction_split"`
	// NearestZone: reads go to the usable nodes of this sluice's zone (the top-level zone), and
	// to all usable nodes when that zone has none.
	NearestZone bool `yaml:"nearest_zone"`
	// ConnectionsFrom: where balance least-connections counts connections: proxy (default: this
	// sluice's own) or nodes (Threads_connected, polled by the monitor).
	ConnectionsFrom string `yaml:"connections_from"`
	// MaxReplicaLag: a replica whose lag (measured by the monitor) is past it takes no new
	// reads, and comes back once under three quarters of it; 0 = no limit. Default 30s.
	MaxReplicaLag Duration `yaml:"max_replica_lag"`
	// MultiStatements: "state" (default: a batch pins the session to the primary when it may
	// leave session state behind) or "strict" (any batch pins it).
	MultiStatements string `yaml:"multi_statements"`
	// Consistency: what a read on a replica must see. eventual (default): any replica within
	// max_replica_lag; session: everything this session committed; global: everything
	// committed on the primary before the read arrived.
	Consistency string `yaml:"consistency"`
	// ConsistencyTimeout: how long a read waits for a replica to reach the position its level
	// needs, then it goes to the primary. Default 10ms, at most 60s.
	ConsistencyTimeout Duration `yaml:"consistency_timeout"`
	// Allow lists the client networks (CIDR, or one address) the endpoint accepts; empty: any.
	// A client from elsewhere gets error 1130 before anything else.
	Allow []string `yaml:"allow"`
}

// Accounts says where client accounts come from besides the users list.
type Accounts struct {
	// FromPrimary loads the primary's own accounts (mysql.global_priv on MariaDB, mysql.user
	// on MySQL) with the monitor account, and refreshes them every Refresh and, rate-limited,
	// when an unknown user tries to log in. The users list wins on a clash of names.
	FromPrimary bool     `yaml:"from_primary"`
	Refresh     Duration `yaml:"refresh"` // default 60s, at least 1s
	// TopologyUsers are the users who may see the nodes through SLUICE SHOW NODES (names,
	// addresses, roles, lag, positions); empty (default): every user.
	TopologyUsers []string `yaml:"topology_users"`
}

// Admin is the control plane's HTTP listener: the REST API that sluice ctl speaks, /metrics,
// /healthz and /readyz, and Go's /debug/pprof/.
type Admin struct {
	// Listen is host:port; empty (default): no admin listener.
	Listen string `yaml:"listen"`
	// Token: every request but /healthz, /readyz and /metrics must carry it
	// (Authorization: Bearer TOKEN). Required when Listen is not a loopback address.
	Token string `yaml:"token"`
	// TLS serves HTTPS with the tls.cert certificate.
	TLS bool `yaml:"tls"`
}

// TLS is the certificate sluice presents to clients.
type TLS struct {
	Cert string `yaml:"cert"` // PEM certificate (chain) file
	Key  string `yaml:"key"`  // PEM private key file
}

// BackendTLS is how sluice connects to the nodes.
type BackendTLS struct {
	// Mode: mirror (default: TLS to the node exactly when the client's own connection uses TLS,
	// so what a client sees of TLS is consistent), off, preferred (whenever the node offers it),
	// required (fail when the node does not offer it).
	Mode       string `yaml:"mode"`
	Verify     bool   `yaml:"verify"`      // verify the node's certificate (against ca, or the system roots)
	CA         string `yaml:"ca"`          // PEM CA file
	ServerName string `yaml:"server_name"` // name to verify; default the host of the backend address
	// ServerPublicKey is a PEM file with the nodes' RSA public key (MySQL's
	// caching_sha2_password_public_key_path): caching_sha2_password's full authentication
	// encrypts the password to it on connections without verified TLS. Without it (or verify),
	// such a login is refused: sluice never takes the key a node offers.
	ServerPublicKey string `yaml:"server_public_key"`
}

// Limits protect the proxy's memory from one session.
type Limits struct {
	MaxPreparedStatements int `yaml:"max_prepared_statements"` // binary prepared statements per session (default 16382)
	MaxLongData           int `yaml:"max_long_data"`           // bytes a session may keep for its prepared statements: their texts and long data waiting for EXECUTE (default 64 MiB)
	// MaxPendingLogins bounds the connections, of all endpoints together, that have not
	// proven a password yet (default 1000); past it a new connection gets error 1040 at once.
	MaxPendingLogins int `yaml:"max_pending_logins"`
	// MaxPendingLoginBytes bounds the packet bytes those connections hold together (default
	// 16 MiB, at least 65 KiB); a login whose packet would pass it gets error 1040.
	MaxPendingLoginBytes int `yaml:"max_pending_login_bytes"`
	// MaxAuthFailures is how many authentication failures (every error 1045 of a login or
	// COM_CHANGE_USER: wrong password, unknown user, host not allowed) one client address may
	// have, each within auth_block of the previous, before it is blocked for auth_block
	// (default 10; 0: never blocked). A blocked address's new connections get error 1129.
	// A successful login does not reset the count (as MaxScale's max_auth_errors_until_block).
	MaxAuthFailures int      `yaml:"max_auth_failures"`
	AuthBlock       Duration `yaml:"auth_block"` // default 60s
}

// Log configures sluice's own log output.
type Log struct {
	Format string `yaml:"format"` // text (default) | json
	Level  string `yaml:"level"`  // debug | info (default) | warn | error
}

// Timeouts bounds the time spent on network operations.
type Timeouts struct {
	Connect  Duration `yaml:"connect"`  // dial + handshake to a node, default 5s
	Read     Duration `yaml:"read"`     // max wait for a node's response bytes once a statement was sent; 0 = none (default: long queries are legitimate)
	Write    Duration `yaml:"write"`    // max time for one write to a socket, default 30s
	Shutdown Duration `yaml:"shutdown"` // graceful drain on SIGTERM, default 30s
	Idle     Duration `yaml:"idle"`     // idle client connection timeout; 0 = none (default)
	Login    Duration `yaml:"login"`    // a client's whole login, from connect to its password proven; default 10s
}

// DefaultAccountsRefresh is how often accounts.from_primary reloads the primary's accounts.
const DefaultAccountsRefresh = 60 * time.Second

// Load reads the file at path and parses it with Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes data, expands ${NAME} references from the environment,
// fills in defaults for keys that are absent and validates the result. path
// is only used in error messages and stored in Config.Path. On error the
// returned Config is nil and the error reports every problem found, one per
// line: a single *Error, or several *Errors joined with errors.Join.
func Parse(path string, data []byte) (*Config, error) {
	return parse(path, data, os.LookupEnv)
}

// Primary returns the backend whose role is primary, or nil if there is none.
func (c *Config) Primary() *Backend {
	for i := range c.Backends {
		if c.Backends[i].Role == RolePrimary {
			return &c.Backends[i]
		}
	}
	return nil
}

// Backend returns the backend called name, or nil.
func (c *Config) Backend(name string) *Backend {
	for i := range c.Backends {
		if c.Backends[i].Name == name {
			return &c.Backends[i]
		}
	}
	return nil
}

// Endpoint returns the endpoint called name, or nil.
func (c *Config) Endpoint(name string) *Endpoint {
	for i := range c.Endpoints {
		if c.Endpoints[i].Name == name {
			return &c.Endpoints[i]
		}
	}
	return nil
}

// User returns the user called name, or nil. Names are compared exactly,
// because MySQL account names are case-sensitive.
func (c *Config) User(name string) *User {
	for i := range c.Users {
		if c.Users[i].Name == name {
			return &c.Users[i]
		}
	}
	return nil
}

// ApplyDefaults fills in the default of every setting that holds its zero
// value. It is meant for a Config built in Go code (Parse already applies
// defaults, but only to keys absent from the file, so that an explicit
// "interval: 0s" is reported instead of silently replaced). It also gives
// every endpoint a read weight for every backend: the defaults when
// read_weights is nil, 0 for backends not listed otherwise.
func (c *Config) ApplyDefaults() {
	c.applyDefaults(func(_ string, zero bool) bool { return zero })
}

// applyDefaults sets each default whose key unset reports as not set. The
// callback receives the key path and whether the field holds its zero value,
// so Parse can decide by presence in the file and ApplyDefaults by value.
func (c *Config) applyDefaults(unset func(key string, zero bool) bool) {
	dur := func(d *Duration, key string, def time.Duration) {
		if unset(key, d.Duration == 0) {
			d.Duration = def
		}
	}
	str := func(s *string, key, def string) {
		if unset(key, *s == "") {
			*s = def
		}
	}
	dur(&c.Monitor.Interval, "monitor.interval", DefaultMonitorInterval)
	if unset("monitor.down_after", c.Monitor.DownAfter == 0) {
		c.Monitor.DownAfter = DefaultMonitorDownAfter
	}
	dur(&c.Monitor.SwitchoverTimeout, "monitor.switchover_timeout", DefaultSwitchoverTimeout)
	dur(&c.Accounts.Refresh, "accounts.refresh", DefaultAccountsRefresh)
	dur(&c.Timeouts.Connect, "timeouts.connect", DefaultConnectTimeout)
	dur(&c.Timeouts.Write, "timeouts.write", DefaultWriteTimeout)
	dur(&c.Timeouts.Shutdown, "timeouts.shutdown", DefaultShutdownTimeout)
	str(&c.Log.Format, "log.format", LogFormatText)
	str(&c.BackendTLS.Mode, "backend_tls.mode", BackendTLSMirror)
	if unset("limits.max_prepared_statements", c.Limits.MaxPreparedStatements == 0) {
		c.Limits.MaxPreparedStatements = DefaultMaxPreparedStatements
	}
	if unset("limits.max_long_data", c.Limits.MaxLongData == 0) {
		c.Limits.MaxLongData = DefaultMaxLongData
	}
	if unset("limits.max_pending_logins", c.Limits.MaxPendingLogins == 0) {
		c.Limits.MaxPendingLogins = DefaultMaxPendingLogins
	}
	if unset("limits.max_pending_login_bytes", c.Limits.MaxPendingLoginBytes == 0) {
		c.Limits.MaxPendingLoginBytes = DefaultMaxPendingLoginBytes
	}
	if unset("limits.max_auth_failures", c.Limits.MaxAuthFailures == 0) {
		c.Limits.MaxAuthFailures = DefaultMaxAuthFailures
	}
	dur(&c.Limits.AuthBlock, "limits.auth_block", DefaultAuthBlock)
	dur(&c.Timeouts.Login, "timeouts.login", DefaultLoginTimeout)
	str(&c.Log.Level, "log.level", LogLevelInfo)
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		p := indexKey("endpoints", i)
		str(&e.Mode, p+".mode", ModeReadWrite)
		str(&e.Balance, p+".balance", BalanceLeastActive)
		str(&e.ConnectionsFrom, p+".connections_from", ConnectionsFromProxy)
		dur(&e.MaxReplicaLag, p+".max_replica_lag", DefaultMaxReplicaLag)
		str(&e.Consistency, p+".consistency", ConsistencyEventual)
		dur(&e.ConsistencyTimeout, p+".consistency_timeout", DefaultConsistencyTimeout)
		defTLS := TLSOff
		if c.TLS.Cert != "" {
			defTLS = TLSOptional
		}
		str(&e.TLS, p+".tls", defTLS)
		str(&e.MultiStatements, p+".multi_statements", MultiStatementsState)
		if unset(p+".max_connections", e.MaxConnections == 0) {
			e.MaxConnections = DefaultMaxConnections
		}
		if e.ReadWeights == nil {
			e.ReadWeights = make(map[string]int, len(c.Backends))
			for _, b := range c.Backends {
				if b.Role == RoleReplica && b.Name != "" {
					e.ReadWeights[b.Name] = DefaultReplicaWeight
				}
			}
		}
		// A complete map saves every reader of ReadWeights from treating
		// "missing" and "0" as two cases.
		for _, b := range c.Backends {
			if _, ok := e.ReadWeights[b.Name]; !ok && b.Name != "" {
				e.ReadWeights[b.Name] = 0
			}
		}
	}
}
