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

	ConnectionsFromProxy   = "proxy"
	ConnectionsFromNodes   = "nodes"
	ConnectionsFromCluster = "cluster"

	ConsistencyEventual = "eventual"
	ConsistencySession  = "session"
	ConsistencyGlobal   = "global"
	ConsistencyLatest   = "latest"

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

	// PoolModeOff, PoolModeSession: an endpoint's pool_mode. PoolModeTransaction is the
	// spelling of transaction-level pooling, which is not built yet: Validate refuses it.
	PoolModeOff         = "off"
	PoolModeSession     = "session"
	PoolModeTransaction = "transaction"

	// ProxyProtocolOff, V1, V2: a backend's proxy_protocol.
	ProxyProtocolOff = "off"
	ProxyProtocolV1  = "v1"
	ProxyProtocolV2  = "v2"

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

	// DefaultPoolIdleTimeout is how long a pooled node connection waits idle before it is
	// closed; DefaultPoolAcquireTimeout how long a client waits for a node connection at
	// pool.max_per_node.
	DefaultPoolIdleTimeout    = 60 * time.Second
	DefaultPoolAcquireTimeout = 5 * time.Second
)

// Config is a whole configuration file.
//
// The doc comment of every field with a yaml tag is its text in REFERENCE.md, which
// TestReferenceUpToDate generates from these structs: write it for an operator, without the
// Go name (it is taken off), defaults and accepted values (the table shows those from the code).
type Config struct {
	Path string `yaml:"-"` // file it was loaded from
	// Shared names the store's configuration the settings other than LocalKeys came from
	// (ParseShared); empty: all came from the file.
	Shared string `yaml:"-"`
	// Name is this sluice's name among the sluice nodes that share a store (store.etcd): unique
	// among them; empty: the host's name. Local to each sluice.
	Name string `yaml:"name"`
	// Listen gives this sluice's own listen address for some endpoints (endpoint name:
	// host:port), in place of the endpoint's listen: with a store, for nodes that cannot all
	// listen on the same address (several on one host). Local to each sluice.
	Listen map[string]string `yaml:"listen"`
	// Store is where the configuration is shared with other sluice nodes (README: Running
	// several sluice nodes). Local to each sluice.
	Store Store `yaml:"store"`
	// Zone is where this sluice runs (an availability zone's name), for endpoints with
	// `nearest_zone`. The environment variable SLUICE_ZONE overrides it, and `sluice serve
	// --zone` overrides both.
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
	// BackendCompress uses the compressed protocol (zlib) on sluice's own node connections.
	// Clients that ask for compression get it either way; on a local network it only costs CPU.
	BackendCompress bool   `yaml:"backend_compress"`
	Limits          Limits `yaml:"limits"`
	// Pool is the node connection pool's limits for every endpoint with pool_mode session; an
	// endpoint's own pool section overrides them key by key, and a user's overrides both.
	Pool Pool `yaml:"pool"`
	// Threads is how many OS threads run sluice's Go code at once (GOMAXPROCS): 0 = every CPU
	// the process may use; the GOMAXPROCS environment variable, when set, wins. On a small host
	// shared with the servers and the clients, fewer threads cost less CPU per query (fewer
	// wake-ups and cross-CPU hand-offs); see bench/. At most 1024.
	Threads int `yaml:"threads"`

	// pos remembers where each key was written so that Validate can point
	// at the offending line; nil for a Config built in Go code.
	pos *positions
}

// User is an account clients log in to sluice with.
type User struct {
	// Name is the user name clients log in with; sluice logs in to the nodes under the same
	// name. Unique, case-sensitive.
	Name string `yaml:"name"`
	// Password is the plaintext password, usually `${APP_PASSWORD}`. Exactly one of password
	// and password_hash must be given; `password: ""` is an account without a password.
	Password string `yaml:"password"`
	// PasswordHash is the mysql_native_password hash of the password instead of the password:
	// "*" and 40 hex digits (either case), SHA1(SHA1(password)), as in SELECT
	// authentication_string FROM mysql.user. Such a user can log in with
	// mysql_native_password only.
	PasswordHash string `yaml:"password_hash"`
	// AuthPlugin restricts the user's login to one plugin; empty: mysql_native_password or
	// caching_sha2_password, whichever the client uses. caching_sha2_password needs password,
	// not password_hash.
	AuthPlugin string `yaml:"auth_plugin"`
	// RequireTLS refuses this user (error 1045) on a connection without TLS.
	RequireTLS bool `yaml:"require_tls"`
	// MaxUserConnections is the most client sessions this user holds through sluice at once,
	// counted over every endpoint; past it a login (or a COM_CHANGE_USER to the user) gets the
	// server's error 1226 (42000) after its password is proven, as from a server's
	// max_user_connections. 0: unlimited. Accounts taken from the primary
	// (accounts.from_primary) that are not in this list have no limit in sluice (the
	// primary's own limits still apply to the connections sluice opens).
	MaxUserConnections int `yaml:"max_user_connections"`
	// Pool overrides the pool limits (the top-level pool, then the endpoint's) for this user's
	// node connections, key by key: only the keys given here.
	Pool Pool `yaml:"pool"`

	// poolSet says which of Pool's keys were given (poolKeyMaxPerNode...).
	poolSet uint8
}

// Pool is the limits of the session-level pool of node connections (endpoints with pool_mode
// session): when a client session ends, its node connections are reset (COM_RESET_CONNECTION)
// and kept for the next session of the same user.
type Pool struct {
	// MaxPerNode is the most connections sluice keeps open to one node for one user (idle and
	// in use, all endpoints together); a session that needs one more waits up to
	// acquire_timeout, then gets error 1040. 0: unlimited.
	MaxPerNode int `yaml:"max_per_node"`
	// IdleTimeout: a pooled connection idle this long is closed (COM_QUIT). 0: kept until
	// max_lifetime or until its node leaves.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// MaxLifetime: a node connection older than this is closed when its session releases it,
	// instead of being pooled. 0: no limit.
	MaxLifetime Duration `yaml:"max_lifetime"`
	// AcquireTimeout is how long a client waits for a node connection when the node is at
	// max_per_node for its user; then it gets error 1040 saying so. 0: it does not wait.
	AcquireTimeout Duration `yaml:"acquire_timeout"`
	// MinIdle is how many idle connections sluice keeps open to each node for each user of the
	// users list (never more than max_per_node open in all), opening them in the background
	// (checked every second) once a session of that user has used the node through an endpoint
	// with pool_mode session: they are opened as that user's last session there opened its own
	// (its capabilities, character set, TLS and connection attributes), since only such a
	// session can take them, and without a database. idle_timeout closes only the idle
	// connections beyond these; max_lifetime closes any (they are opened again), and a node
	// down, draining or removed gets none. Keep max_lifetime below the nodes' wait_timeout:
	// a kept connection the node closed is found by a ping before reuse and replaced, but
	// costs that session a dial. 0: none kept.
	MinIdle int `yaml:"min_idle"`
}

// The keys of a pool section, as bits of User.poolSet.
const (
	poolKeyMaxPerNode uint8 = 1 << iota
	poolKeyIdleTimeout
	poolKeyMaxLifetime
	poolKeyAcquireTimeout
	poolKeyMinIdle
)

// PoolOf is the pool limits of user's node connections through endpoint e (after defaults):
// e's pool, with the keys user's own pool section gives. A user not in the users list gets e's.
func (c *Config) PoolOf(e *Endpoint, user string) Pool {
	p := e.Pool
	for i := range c.Users {
		u := &c.Users[i]
		if u.Name != user {
			continue
		}
		if u.poolSet&poolKeyMaxPerNode != 0 {
			p.MaxPerNode = u.Pool.MaxPerNode
		}
		if u.poolSet&poolKeyIdleTimeout != 0 {
			p.IdleTimeout = u.Pool.IdleTimeout
		}
		if u.poolSet&poolKeyMaxLifetime != 0 {
			p.MaxLifetime = u.Pool.MaxLifetime
		}
		if u.poolSet&poolKeyAcquireTimeout != 0 {
			p.AcquireTimeout = u.Pool.AcquireTimeout
		}
		if u.poolSet&poolKeyMinIdle != 0 {
			p.MinIdle = u.Pool.MinIdle
		}
		break
	}
	return p
}

// PoolUsers are the names of the users with a pool section of their own.
func (c *Config) PoolUsers() []string {
	var out []string
	for _, u := range c.Users {
		if u.poolSet != 0 {
			out = append(out, u.Name)
		}
	}
	return out
}

// Backend is one MySQL/MariaDB server behind the proxy.
type Backend struct {
	// Name is the node's unique name, used in read_weights, in logs, metrics and the API.
	Name string `yaml:"name"`
	// Address is the host:port sluice connects to; the port is a number (not a service name),
	// IPv6 as [::1]:3306.
	Address string `yaml:"address"`
	// Role is the node's role when sluice starts: exactly one primary. Once the monitor has
	// seen the nodes, roles follow them (the writable node that replicates from no one is the
	// primary).
	Role string `yaml:"role"`
	// Zone is the node's location (an availability zone's name): endpoints with nearest_zone
	// read from the nodes of sluice's own zone first.
	Zone string `yaml:"zone"`
	// ProxyProtocol: off, v1 (text) or v2 (binary). When on, every connection sluice opens
	// to the node for a client starts with a PROXY protocol header naming that client's
	// address (and the endpoint's), so the node's USER(), processlist, logs and host-based
	// grants see the client, not sluice. The node must trust sluice's address for it
	// (MariaDB: proxy_protocol_networks listing sluice's address only). The monitor's and
	// accounts.from_primary's connections send a header naming no client (v1 UNKNOWN, v2
	// LOCAL: the node keeps sluice's address; a node refusing headers from sluice is seen
	// down); the binlog streams send none. Pooled connections are shared only by sessions
	// from the same client address.
	ProxyProtocol string `yaml:"proxy_protocol"`
}

// Monitor is the account and cadence used to health-check backends.
type Monitor struct {
	// User is the account sluice checks the nodes with, streams their binlogs with, and reads
	// the primary's accounts with (accounts.from_primary); empty: no monitor, and a node a
	// session failed to reach is only probed until it answers again. See DEPLOYING.md for its
	// grants.
	User string `yaml:"user"`
	// Password is the monitor account's password, usually `${MONITOR_PASSWORD}`; needs user.
	Password string `yaml:"password"`
	// Interval is the time between two checks of a node; at least 100ms.
	Interval Duration `yaml:"interval"`
	// DownAfter is how many checks in a row must fail (time out, break) before a node is
	// down; a node that refuses connections is down at once. At least 1.
	DownAfter int `yaml:"down_after"`
	// SwitchoverTimeout is how long a statement for the primary waits for a new one while no
	// node takes writes (a switchover under way); 0: it fails at once. At most 5m.
	SwitchoverTimeout Duration `yaml:"switchover_timeout"`
}

// Endpoint is one listening socket clients connect to.
type Endpoint struct {
	// Name is the endpoint's unique name, used in logs, metrics and the API.
	Name string `yaml:"name"`
	// Listen is the host:port to listen on: an empty host (":6033") listens on every
	// interface; port 0 picks a free port (for tests).
	Listen string `yaml:"listen"`
	// Mode: read-write sends writes to the primary and spreads reads by read_weights;
	// read-only binds each client connection to one replica, refuses writes (error 1290) and
	// never uses the primary.
	Mode string `yaml:"mode"`
	// ReadWeights is each backend's share of the reads, 0 to 10000 (0: none); backends the map
	// leaves out get 0. A PATCH merges into it (null removes an entry).
	ReadWeights map[string]int `yaml:"read_weights"`
	// Balance is how a read (on a read-only endpoint: a new connection) picks among the nodes
	// with a weight above 0: least-active, fewest statements in flight per unit of weight (a
	// read-only endpoint's new connection: fewest of this sluice's connections per unit of
	// weight, since none is running a statement yet); weighted, smooth weighted round robin;
	// least-connections, fewest connections per unit of weight (see connections_from).
	Balance string `yaml:"balance"`
	// MaxConnections is the most client connections the endpoint holds at once; past it a
	// client gets error 1040 (08004) in place of the greeting. 0: unlimited (then only
	// limits.max_pending_logins bounds a flood).
	MaxConnections int `yaml:"max_connections"`
	// TLS is whether the endpoint offers TLS: required refuses plain clients with error 3159;
	// optional and required need tls.cert.
	TLS string `yaml:"tls"`
	// TransactionSplit: the reads of a transaction before its first write go to a replica, and
	// the transaction opens on the primary at that write (with the client's own BEGIN). For
	// READ COMMITTED: under REPEATABLE READ the early reads do not share the transaction's
	// snapshot. Read-write endpoints only.
	TransactionSplit bool `yaml:"transaction_split"`
	// NearestZone: reads go to the usable nodes of this sluice's zone (the top-level zone),
	// under the endpoint's balance, and to all usable nodes when that zone has none.
	NearestZone bool `yaml:"nearest_zone"`
	// ConnectionsFrom is where balance least-connections counts connections. proxy: this
	// sluice's own, counted live; the cheapest, and right for a single sluice, but blind to the
	// other proxies' connections and to clients that bypass sluice. nodes: each node's
	// Threads_connected, polled by the monitor each monitor interval (needs monitor.user; costs
	// a monitor query): it sees every client of the node, the other proxies' and those that
	// bypass sluice. cluster: the connections of every sluice node sharing the store (needs
	// store.etcd): this one's own, live, plus those the others publish in their membership
	// records (a few seconds fresh); no node query, but blind to clients that bypass sluice.
	ConnectionsFrom string `yaml:"connections_from"`
	// MaxReplicaLag: a replica whose lag (measured by the monitor from GTID positions) is past
	// it takes no new reads (nor new sessions of a read-only endpoint; those bound to it move
	// to a replica within it at their next statement); it comes back once under three
	// quarters of it. With no replica within it, reads go to the primary (read-write) and new
	// read-only sessions are refused. 0: no limit.
	MaxReplicaLag Duration `yaml:"max_replica_lag"`
	// MultiStatements: state, a multi-statement batch pins the session to the primary when it
	// may leave session state behind; strict, any batch pins it.
	MultiStatements string `yaml:"multi_statements"`
	// Consistency is what a read on a replica must see: eventual, anything the replica applied
	// (within max_replica_lag); session, everything this session committed; global, everything
	// committed on the primary before the read arrived (its position is read from the primary,
	// one reading shared by the reads that arrive together); latest, everything sluice knew to
	// be committed when the read arrived, with no statement to the primary: every commit
	// acknowledged to any of its sessions (with store.etcd, to any sluice node's: a write's OK
	// waits up to consistency_timeout until the other nodes have it), and the primary's binlog
	// as its stream delivered it
	// (a write that bypassed sluice, or went through a connection that does not report its
	// GTID, is seen once the stream delivered it). session, global and latest need
	// monitor.user and a read-write endpoint.
	Consistency string `yaml:"consistency"`
	// ConsistencyTimeout is how long a read waits for a replica to reach the position its
	// consistency level needs before it goes to the primary; at most 60s.
	ConsistencyTimeout Duration `yaml:"consistency_timeout"`
	// Allow lists the client networks the endpoint accepts, each a CIDR network (10.0.0.0/8)
	// or one address; empty: any. IPv4 clients match IPv4-mapped IPv6 entries too (::/0 is
	// every client). A client from elsewhere gets error 1130 in place of the greeting.
	Allow []string `yaml:"allow"`
	// PoolMode is what happens to the session's node connections: session resets them
	// (COM_RESET_CONNECTION) when the client leaves and keeps them for the next client of the
	// same user (limits: pool); transaction gives them back to the pool between transactions
	// (and between statements outside one), for any session of the same user, unless the
	// session holds state that cannot move (README: what pins a session); off closes them
	// when the client leaves.
	PoolMode string `yaml:"pool_mode"`
	// Pool overrides the top-level pool limits for this endpoint, key by key.
	Pool Pool `yaml:"pool"`
}

// Accounts says where client accounts come from besides the users list.
type Accounts struct {
	// FromPrimary loads the primary's own accounts (user, host, plugin, hash, lock; from
	// mysql.global_priv on MariaDB, mysql.user on MySQL) with the monitor account, and
	// refreshes them every refresh and, at most once a second, when an unknown user tries to
	// log in (that login fails at once). users may then be empty; a name in users wins. Needs
	// monitor.user.
	FromPrimary bool `yaml:"from_primary"`
	// Refresh is how often from_primary reads the accounts again; at least 1s.
	Refresh Duration `yaml:"refresh"`
	// TopologyUsers are the users who may run SLUICE SHOW NODES (node names, addresses, roles,
	// lag, positions); others get error 1227. Empty: every user.
	TopologyUsers []string `yaml:"topology_users"`
}

// Admin is the control plane's HTTP listener: the REST API that sluice ctl speaks, /metrics,
// /healthz and /readyz, and Go's /debug/pprof/.
type Admin struct {
	// Listen is the host:port of the admin HTTP listener (the REST API of sluice ctl,
	// /metrics, /healthz, /readyz, /debug/pprof/); empty: none.
	Listen string `yaml:"listen"`
	// Token: every request but /healthz, /readyz and /metrics must carry it (Authorization:
	// Bearer TOKEN), usually `${SLUICE_ADMIN_TOKEN}`. Required when listen is not a loopback
	// address.
	Token string `yaml:"token"`
	// TLS serves HTTPS with the tls.cert certificate.
	TLS bool `yaml:"tls"`
}

// TLS is the certificate sluice presents to clients.
type TLS struct {
	// Cert is the PEM certificate (chain) file sluice presents to clients (and admin.tls's);
	// checked at load, with key.
	Cert string `yaml:"cert"`
	// Key is the PEM private key file of cert; both or neither.
	Key string `yaml:"key"`
}

// BackendTLS is how sluice connects to the nodes.
type BackendTLS struct {
	// Mode: mirror, TLS to a node exactly when the client's own connection uses TLS (so what a
	// client sees of TLS matches its connection; the monitor and binlog streams use none); off;
	// preferred, whenever the node offers it; required, fail when the node does not.
	Mode string `yaml:"mode"`
	// Verify checks the node's certificate (against ca, or the system roots) and its name.
	// Only over verified TLS does sluice send a node a password itself (caching_sha2_password's
	// full authentication, mysql_clear_password).
	Verify bool `yaml:"verify"`
	// CA is the PEM CA file verify checks against; empty: the system roots.
	CA string `yaml:"ca"`
	// ServerName is the name verify expects in the node's certificate; empty: the host of the
	// backend's address.
	ServerName string `yaml:"server_name"`
	// ServerPublicKey is a PEM file with the nodes' RSA public key (their
	// caching_sha2_password_public_key_path): caching_sha2_password's full authentication
	// encrypts the password to it where TLS is not verified. Without it (or verify), such a
	// login is refused: sluice never takes the key a node offers. Applies to the binlog
	// streams too.
	ServerPublicKey string `yaml:"server_public_key"`
}

// Limits protect the proxy's memory from one session.
type Limits struct {
	// MaxPreparedStatements bounds a session's binary prepared statements; past it error 1461.
	MaxPreparedStatements int `yaml:"max_prepared_statements"`
	// MaxLongData bounds the bytes a session keeps for its prepared statements: their texts
	// and the long data waiting for EXECUTE. Past it an EXECUTE fails with error 1153, a
	// PREPARE with 1041.
	MaxLongData int `yaml:"max_long_data"`
	// MaxPendingLogins bounds the connections, of all endpoints together, that have not
	// proven a password yet; past it a new connection gets error 1040 at once. Each holds
	// about 40 KiB until timeouts.login.
	MaxPendingLogins int `yaml:"max_pending_logins"`
	// MaxPendingLoginBytes bounds the packet bytes those connections hold together (at least
	// 65 KiB, one login's largest packet); a login whose packet would pass it gets error 1040.
	MaxPendingLoginBytes int `yaml:"max_pending_login_bytes"`
	// MaxAuthFailures is how many authentication failures (every error 1045 of a login or
	// COM_CHANGE_USER: wrong password, unknown user, host not allowed, require_tls) one client
	// address may have, each within auth_block of the previous, before it is blocked for
	// auth_block; 0: never. A blocked address's new connections get error 1129. A successful
	// login does not reset the count (as MaxScale's max_auth_errors_until_block). sluice checks
	// passwords itself, so the servers' own limits never see these failures.
	MaxAuthFailures int `yaml:"max_auth_failures"`
	// AuthBlock is how long a blocked address stays blocked after its last failure, and how
	// long a failure counts towards max_auth_failures.
	AuthBlock Duration `yaml:"auth_block"`
}

// Log configures sluice's own log output.
type Log struct {
	Format string `yaml:"format"` // the log's format: text (key=value) or json, one object a line
	Level  string `yaml:"level"`  // the least severe level logged
}

// Timeouts bounds the time spent on network operations.
type Timeouts struct {
	// Connect bounds dialing a node and its handshake (the monitor's checks too).
	Connect Duration `yaml:"connect"`
	// Read is the longest wait for a node's response bytes once a statement was sent; 0: no
	// limit (long queries are legitimate). A plain read on a replica past it runs on another
	// node, and the replica is marked down (the other reads waiting there move too); any other
	// statement past it fails as when its node is lost.
	Read Duration `yaml:"read"`
	// Write bounds one write to a socket, and how long a client may stall in the middle of a
	// command (the rest of a packet, the next packet of a LOAD DATA LOCAL file).
	Write Duration `yaml:"write"`
	// Shutdown is how long a graceful shutdown (SIGTERM, SIGINT) waits for sessions to finish
	// their statements; then the rest are closed. 0: no wait. A second signal ends sluice at
	// once.
	Shutdown Duration `yaml:"shutdown"`
	// Idle closes client connections idle this long; 0: never.
	Idle Duration `yaml:"idle"`
	// Login bounds a client's whole login, from its connection (TLS included) to its password
	// proven; past it error 1159 (08S01).
	Login Duration `yaml:"login"`
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
	str(&c.Store.Etcd.Prefix, "store.etcd.prefix", DefaultStorePrefix)
	dur(&c.Store.Etcd.DialTimeout, "store.etcd.dial_timeout", DefaultStoreDialTimeout)
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
	dur(&c.Pool.IdleTimeout, "pool.idle_timeout", DefaultPoolIdleTimeout)
	dur(&c.Pool.AcquireTimeout, "pool.acquire_timeout", DefaultPoolAcquireTimeout)
	for i := range c.Users {
		u := &c.Users[i]
		p := indexKey("users", i) + ".pool."
		u.poolSet = 0
		for _, k := range []struct {
			key  string
			bit  uint8
			zero bool
		}{{"max_per_node", poolKeyMaxPerNode, u.Pool.MaxPerNode == 0}, {"idle_timeout", poolKeyIdleTimeout, u.Pool.IdleTimeout.Duration == 0},
			{"max_lifetime", poolKeyMaxLifetime, u.Pool.MaxLifetime.Duration == 0}, {"acquire_timeout", poolKeyAcquireTimeout, u.Pool.AcquireTimeout.Duration == 0},
			{"min_idle", poolKeyMinIdle, u.Pool.MinIdle == 0}} {
			if !unset(p+k.key, k.zero) {
				u.poolSet |= k.bit
			}
		}
	}
	for i := range c.Backends {
		str(&c.Backends[i].ProxyProtocol, indexKey("backends", i)+".proxy_protocol", ProxyProtocolOff)
	}
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
		str(&e.PoolMode, p+".pool_mode", PoolModeSession)
		if unset(p+".pool.max_per_node", e.Pool.MaxPerNode == 0) {
			e.Pool.MaxPerNode = c.Pool.MaxPerNode
		}
		if unset(p+".pool.min_idle", e.Pool.MinIdle == 0) {
			e.Pool.MinIdle = c.Pool.MinIdle
		}
		dur(&e.Pool.IdleTimeout, p+".pool.idle_timeout", c.Pool.IdleTimeout.Duration)
		dur(&e.Pool.MaxLifetime, p+".pool.max_lifetime", c.Pool.MaxLifetime.Duration)
		dur(&e.Pool.AcquireTimeout, p+".pool.acquire_timeout", c.Pool.AcquireTimeout.Duration)
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
