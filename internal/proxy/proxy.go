package proxy

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// User is an account clients log in with. sluice logs in to the nodes as the same user.
type User struct {
	Name        string
	Password    string
	HasPassword bool     // Password is set (it may be empty)
	Hash        [20]byte // mysql_native_password hash, when configured by hash
	HasHash     bool
	Plugin      string // "" (whichever of the two the client uses), mysql_native_password or caching_sha2_password
	RequireTLS  bool
	// Locked: an account from the primary that is locked (error 4151 after its password).
	Locked bool
	// Unsupported says why an account from the primary cannot log in through sluice (its
	// plugin); empty: it can.
	Unsupported string
	// MaxConnections is the most sessions logged in as this user at once, over every endpoint
	// (past it: error 1226 after the password); 0: no limit. Read from Options.Users at New.
	MaxConnections int
	// hostDenied: no account of the user lets the client's host in (1045 whatever the
	// password, as from the server).
	hostDenied bool
}

// withHostDenied is a copy of u whose login ends with 1045.
func (u *User) withHostDenied() *User {
	c := *u
	c.hostDenied = true
	return &c
}

// Endpoint is one listening address: where it listens and how clients get in. How it routes is
// its route.Endpoint, built from Routing (the initial settings). MaxConnections, Allow and
// Routing can change while sessions run (Proxy.UpdateEndpoint); Name, Listen and TLS cannot.
type Endpoint struct {
	Name           string
	Listen         string
	MaxConnections int // 0: no limit
	// Allow lists the client networks the endpoint accepts (empty: any): a client from
	// elsewhere gets error 1130 in place of the greeting.
	Allow   []netip.Prefix
	TLS     TLSMode
	Routing route.Settings
	// Pool is what happens to the sessions' node connections when their clients leave.
	Pool PoolSettings
}

// Settings are the endpoint's settings that can change while it serves.
func (e Endpoint) Settings() EndpointSettings {
	return EndpointSettings{MaxConnections: e.MaxConnections, Allow: e.Allow, Routing: e.Routing, Pool: e.Pool}
}

// EndpointSettings are what can change about an endpoint while it serves, as one value:
// Proxy.UpdateEndpoint puts them in force together, Proxy.EndpointSettings returns a copy.
type EndpointSettings struct {
	MaxConnections int            // 0: no limit
	Allow          []netip.Prefix // empty: any client
	Routing        route.Settings
	Pool           PoolSettings // the pool mode and limits (sessions read them at each open and release)
}

// TLSMode is whether an endpoint offers TLS to its clients.
type TLSMode uint8

const (
	TLSOff      TLSMode = iota // not offered
	TLSOptional                // offered; clients choose
	TLSRequired                // clients without TLS are refused
)

// ParseTLSMode reads an endpoint's tls setting as the configuration spells it.
func ParseTLSMode(s string) (TLSMode, error) {
	switch s {
	case "", "off":
		return TLSOff, nil
	case "optional":
		return TLSOptional, nil
	case "required":
		return TLSRequired, nil
	}
	return TLSOff, fmt.Errorf("unknown tls mode %q (want off, optional or required)", s)
}

// Topology is what sessions need of the nodes' state: the current snapshot to route on, and
// where to report a node they failed to reach (the topology decides what that means). Both
// are called from every session concurrently and must not block.
type Topology interface {
	Snapshot() *topology.Snapshot
	NodeFailed(i int, cause error)
	// PrimaryReadOnly reports that the primary refused a write as read-only (a switchover
	// began before the monitor saw it).
	PrimaryReadOnly(i int)
}

// ClusterView is what SLUICE SHOW CLUSTER shows: the live sluice nodes that share this one's
// store, as the store last listed them, and this sluice's link to the store.
type ClusterView struct {
	Members []ClusterMember
	// Connected is whether the store answered last; Since when that last changed; LastError
	// the last failure's reason.
	Connected bool
	Since     time.Time
	LastError string
	// Revision is the stored configuration's newest revision this sluice has seen. Refused
	// says why RefusedRevision is not in force here; PendingRestart lists the settings the
	// stored configuration changed that take effect here only at a restart.
	Revision        int64
	Refused         string
	RefusedRevision int64
	PendingRestart  []string
}

// ClusterMember is one live sluice node.
type ClusterMember struct {
	Name, Zone, Version, Admin string
	Endpoints                  map[string]string // endpoint name -> listen address
	Started                    time.Time
	Applied                    int64 // the stored configuration's revision in force there
	Self                       bool  // this sluice
}

// Options configure the proxy.
type Options struct {
	Users []User
	// RefreshAccounts, when accounts come from the primary, reloads them now (rate-limited by
	// the caller). Every login waits for it until the accounts were loaded once; after that a
	// login by a user sluice does not know starts it in the background and fails at once (as
	// every unknown user's login does), so that an account just created on the primary logs in
	// at the next try.
	RefreshAccounts func()
	// TopologyUsers are the users who may run SLUICE SHOW NODES (nil: every user); others get
	// error 1227. Topology details (addresses, roles, lag) are for operators.
	TopologyUsers []string
	// Topology gives the nodes and their state (required).
	Topology Topology
	// Cluster gives SLUICE SHOW CLUSTER its answer; ok false (or Cluster nil): this sluice
	// shares no store. Called from sessions: it answers from what it keeps, never asking the store.
	Cluster func() (v ClusterView, ok bool)
	// Endpoints are the addresses sluice serves (names unique).
	Endpoints      []Endpoint
	ConnectTimeout time.Duration // dial + handshake to a node
	ReadTimeout    time.Duration // wait for a node's response; 0 = none
	// Positions is each node's applied GTID position (nil without a monitor): what reads under
	// a consistency level route on.
	Positions *topology.Positions
	// SwitchoverTimeout is how long a statement for the primary waits for a new one while
	// no node takes writes (topology.Snapshot.Switching); 0: it fails at once.
	SwitchoverTimeout time.Duration
	WriteTimeout      time.Duration // one flush to either side
	IdleTimeout       time.Duration // close idle clients; 0 = never
	// LoginTimeout bounds a client's login, from its connection to its password proven, TLS
	// handshake included (0: 10 s). Past it the client gets error 1159 and is closed.
	LoginTimeout time.Duration
	// MaxPendingLogins bounds the connections of all endpoints that are in their login (0:
	// 1000); past it a new connection gets error 1040 at once. MaxPendingLoginBytes bounds the
	// packet bytes they hold together (0: 16 MiB); a login whose packet would pass it gets
	// 1040. Each one alone is bounded by preAuthMaxPacket.
	MaxPendingLogins     int
	MaxPendingLoginBytes int
	// MaxAuthFailures is how many authentication failures (every 1045 of a login or
	// COM_CHANGE_USER) a client address may have, each within AuthBlock of the previous, before
	// it is blocked for AuthBlock (0: never blocked; AuthBlock 0: 60 s). A blocked address's
	// connections get error 1129 in place of the greeting (authblock.go).
	MaxAuthFailures int
	AuthBlock       time.Duration
	// MaxPreparedStatements bounds one session's binary prepared statements (0: 16382).
	MaxPreparedStatements int
	// MaxLongData bounds the COM_STMT_SEND_LONG_DATA bytes one session may have waiting for an
	// EXECUTE (0: 64 MiB).
	MaxLongData int
	// TLS is the server configuration for clients (nil: no TLS offered).
	TLS *tls.Config
	// BackendTLS is how node connections use TLS; BackendTLSConfig is the client
	// configuration for it.
	BackendTLS       backend.TLSMode
	BackendTLSConfig *tls.Config
	// BackendPublicKey is the nodes' RSA public key (PEM; nil: none), for
	// caching_sha2_password's full authentication on connections without verified TLS.
	BackendPublicKey []byte
	// BackendCompress uses the compressed protocol on node connections (for nodes across a
	// slow network; it costs CPU on both sides).
	BackendCompress bool
	Logger          *slog.Logger
}

// Proxy owns what all endpoints share: users, connection ids, the RSA key and the
// caching_sha2_password cache, the endpoints' routing, and the set of live sessions.
//
// Fields set by New and never changed need no lock: opts, log, users, topo, endpoints. The
// others say what guards them.
type Proxy struct {
	opts  Options
	log   *slog.Logger
	users map[string]*User
	// userLimits are the users with a max_user_connections, by name (built at New, read only
	// after: no lock); each counts the sessions logged in as its user (userlimit.go).
	userLimits map[string]*userLimit
	topo       Topology
	endpoints  map[string]*endpoint
	stop       chan struct{} // closed by Shutdown (under mu): accept back-off waits end

	nextID atomic.Uint32
	// tracking is what the nodes' global session_track_system_variables were seen to list.
	tracking globalTracking
	server   atomic.Pointer[serverInfo] // what clients are greeted with, learnt from the primary
	// greeted: how each node reads text, as its greeting to any session said (reading.go).
	greeted sync.Map // *topology.Node -> classify.Dialect

	// consistencyWaits counts the replica reads that waited for a consistency level's
	// position; consistencyTimeouts those of them that went to the primary instead.
	consistencyWaits, consistencyTimeouts atomic.Int64
	// accounts are the primary's accounts (SetAccounts); nil: accounts.from_primary is off.
	accounts atomic.Pointer[accountTable]
	// refreshing is set while a background reload of the accounts runs (refreshSoon).
	refreshing atomic.Bool
	// authBlock counts authentication failures per client address (nil: no blocking).
	authBlock *authBlocker
	// decoy picks the plugin an unknown user is switched to (decoyPlugin); set by New.
	decoy decoyPlugins
	// pending counts the connections in their login (Options.MaxPendingLogins); loginBytes
	// is what their packet buffers hold (Options.MaxPendingLoginBytes).
	pending    atomic.Int64
	loginBytes *mysql.Budget
	// primaryPos is the primary's position, read for the global level's reads and shared
	// among those that arrive together.
	primaryPos primaryPos
	// known is the latest position sluice knows was committed (the latest level's target):
	// the GTIDs acknowledged to any session, and the primary's stream.
	known knownCommits
	// peerGate, when set (SetPeerGate), holds a latest-level write's OK until the other sluice
	// nodes have its position.
	peerGate atomic.Pointer[func(version uint64, timeout time.Duration)]

	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
	rsaPEM  []byte
	rsaErr  error

	sha2Mu    sync.Mutex
	sha2Cache map[string][32]byte // guarded by sha2Mu: user -> SHA256(SHA256(password)) after a full authentication

	epMu      sync.RWMutex // guards endpoints (added and removed while serving)
	mu        sync.Mutex   // guards sessions, byID, listeners, and the folds into endpoint.done
	sessions  map[*session]struct{}
	byID      map[uint32]*session
	listeners map[net.Listener]struct{}
	// closing is set once, by Shutdown, while it holds mu: a listener or session registered
	// under mu after checking it is one Shutdown will close. Read without mu where only the
	// flag matters (an accept error in Serve).
	closing atomic.Bool
	wg      sync.WaitGroup // one per tracked session
	// pool keeps node connections between sessions (pool_mode session; pool.go).
	pool *nodePool
	// fillFrom are the logins the pool's top-up (pool.min_idle) dials as (minidle.go).
	fillFrom fillTemplates
}

// endpoint is one endpoint as the proxy runs it.
type endpoint struct {
	cfg    Endpoint
	route  *route.Endpoint // shared by the endpoint's sessions; its settings change live
	active atomic.Int64    // client sessions
	// admit is who gets in (cfg's MaxConnections and Allow at first), replaced whole by
	// UpdateEndpoint; never nil once the endpoint is added.
	admit atomic.Pointer[admission]
	// pool is the pool mode and limits (cfg's Pool at first), replaced whole by UpdateEndpoint;
	// never nil once the endpoint is added.
	pool atomic.Pointer[PoolSettings]
	// ln is the listener Serve accepts on (under Proxy.mu), closed when the endpoint is removed.
	ln net.Listener
	// front counts the endpoint's logins, refusals, authentication failures and client errors.
	front frontStats
	// done holds the statement counts of the endpoint's sessions that ended (sessionStats);
	// guarded by Proxy.mu, and replaced (not changed in place) when it needs room for more nodes.
	done *sessionStats
}

// serverInfo is what sluice presents to clients in its handshake, taken from the primary's.
type serverInfo struct {
	version string
	caps    uint32
	// mcaps are MariaDB's extended capabilities offered (caps then lacks CLIENT_MYSQL).
	mcaps   uint32
	charset uint8
}

// frontMariaDBCaps are the MariaDB extended capabilities sluice passes between clients and nodes.
// Extended metadata only adds a block to each column definition, which sluice relays as it
// comes; bulk operations add COM_STMT_BULK_EXECUTE, routed and relayed like an EXECUTE. The
// others change the shape of responses (progress packets, metadata skipped on EXECUTE, result
// sets from a bulk command) and are not offered.
const frontMariaDBCaps = mysql.MariaDBClientExtendedMetadata | mysql.MariaDBClientStmtBulkOperations

// frontCaps are the capabilities sluice offers clients (before intersecting with the primary's).
const frontCaps = mysql.ClientLongPassword | mysql.ClientFoundRows | mysql.ClientLongFlag |
	mysql.ClientConnectWithDB | mysql.ClientLocalFiles | mysql.ClientIgnoreSpace |
	mysql.ClientProtocol41 | mysql.ClientInteractive | mysql.ClientIgnoreSIGPIPE |
	mysql.ClientTransactions | mysql.ClientSecureConnection | mysql.ClientMultiStatements |
	mysql.ClientMultiResults | mysql.ClientPSMultiResults | mysql.ClientPluginAuth |
	mysql.ClientConnectAttrs | mysql.ClientPluginAuthLenencClientData | mysql.ClientSessionTrack |
	mysql.ClientDeprecateEOF | mysql.ClientCompress

// protocolCaps are always offered: they concern sluice's own side of the conversation.
const protocolCaps = mysql.ClientLongPassword | mysql.ClientProtocol41 | mysql.ClientSecureConnection |
	mysql.ClientPluginAuth | mysql.ClientPluginAuthLenencClientData | mysql.ClientConnectAttrs |
	mysql.ClientTransactions | mysql.ClientConnectWithDB

// New builds a proxy.
func New(opts Options) (*Proxy, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Topology == nil {
		return nil, errors.New("proxy: no topology")
	}
	p := &Proxy{
		opts:      opts,
		log:       opts.Logger,
		users:     make(map[string]*User, len(opts.Users)),
		topo:      opts.Topology,
		endpoints: make(map[string]*endpoint, len(opts.Endpoints)),
		sha2Cache: make(map[string][32]byte),
		sessions:  make(map[*session]struct{}),
		byID:      make(map[uint32]*session),
		stop:      make(chan struct{}),
		listeners: make(map[net.Listener]struct{}),
		pool:      newNodePool(),
	}
	p.known.moved = make(chan struct{}, 1)
	for i := range opts.Users {
		u := &opts.Users[i]
		p.users[u.Name] = u
		if u.MaxConnections > 0 {
			if p.userLimits == nil {
				p.userLimits = make(map[string]*userLimit)
			}
			p.userLimits[u.Name] = &userLimit{max: int64(u.MaxConnections)}
		}
	}
	p.decoy = newDecoyPlugins(opts.Users)
	if p.opts.MaxPendingLogins <= 0 {
		p.opts.MaxPendingLogins = 1000
	}
	if p.opts.MaxPendingLoginBytes <= 0 {
		p.opts.MaxPendingLoginBytes = 16 << 20
	}
	if p.opts.LoginTimeout <= 0 {
		p.opts.LoginTimeout = 10 * time.Second
	}
	p.loginBytes = mysql.NewBudget(int64(p.opts.MaxPendingLoginBytes))
	p.authBlock = newAuthBlocker(p.opts.MaxAuthFailures, p.opts.AuthBlock)
	for _, ep := range opts.Endpoints {
		if err := p.AddEndpoint(ep); err != nil {
			return nil, err
		}
	}
	// Until the primary answers, present a MariaDB-like identity; it is replaced as soon as a
	// handshake from the primary is seen.
	p.server.Store(&serverInfo{version: "5.5.5-10.11.0-MariaDB-sluice", caps: frontCaps, charset: 45})
	return p, nil
}

// AddEndpoint adds an endpoint; Listen and Serve start it.
func (p *Proxy) AddEndpoint(ep Endpoint) error {
	re, err := route.NewEndpoint(ep.Name, ep.Routing)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	e := &endpoint{cfg: ep, route: re}
	p.known.use(ep.Routing.Consistency)
	e.admit.Store(&admission{maxConns: int64(ep.MaxConnections), allow: slices.Clone(ep.Allow)})
	e.pool.Store(clonePool(ep.Pool).of(ep.Name))
	e.done = newSessionStats(len(p.topo.Snapshot().Nodes))
	p.epMu.Lock()
	defer p.epMu.Unlock()
	if p.endpoints[ep.Name] != nil {
		return fmt.Errorf("proxy: endpoint %q defined twice", ep.Name)
	}
	p.endpoints[ep.Name] = e
	return nil
}

// RemoveEndpoint stops endpoint name accepting connections at once; its sessions may finish
// their work until grace has passed, then what is left is closed. It reports whether there was
// such an endpoint.
func (p *Proxy) RemoveEndpoint(name string, grace time.Duration) bool {
	p.epMu.Lock()
	ep := p.endpoints[name]
	delete(p.endpoints, name)
	p.epMu.Unlock()
	if ep == nil {
		return false
	}
	p.mu.Lock()
	if ep.ln != nil {
		ep.ln.Close()
	}
	p.mu.Unlock()
	go func() {
		deadline := time.Now().Add(grace)
		for ep.active.Load() > 0 && time.Now().Before(deadline) {
			select {
			case <-p.stop:
				return // Shutdown takes over
			case <-time.After(50 * time.Millisecond):
			}
		}
		var left []*session
		p.mu.Lock()
		for s := range p.sessions {
			if s.ep == ep {
				left = append(left, s)
			}
		}
		p.mu.Unlock()
		for _, s := range left {
			s.log.Info("endpoint removed: closing the session after the grace period")
			s.kill()
		}
	}()
	return true
}

// endpoint returns endpoint name, or nil.
func (p *Proxy) endpoint(name string) *endpoint {
	p.epMu.RLock()
	defer p.epMu.RUnlock()
	return p.endpoints[name]
}

// HasEndpoint reports whether there is an endpoint name.
func (p *Proxy) HasEndpoint(name string) bool { return p.endpoint(name) != nil }

// LearnPrimary reads the primary's handshake so clients see its version string and capabilities
// from their first connection on. With login (the monitor account's), it logs in and says
// goodbye (COM_QUIT); without, or when that login fails, it reads the greeting alone and
// closes, which the node counts in Aborted_connects and logs ("closed normally without
// authentication").
func (p *Proxy) LearnPrimary(ctx context.Context, login func(context.Context, *topology.Node) (*backend.Conn, error)) error {
	snap := p.topo.Snapshot()
	n := snap.Nodes[snap.Primary]
	if login != nil {
		if c, err := login(ctx, n); err == nil {
			c.Quit()
			p.learnServer(c.Handshake)
			return nil
		}
	}
	hs, err := backend.ReadHandshake(ctx, n.Address, p.connectTimeout())
	if err != nil {
		return err
	}
	p.learnServer(hs)
	return nil
}

func (p *Proxy) learnServer(hs *mysql.Handshake) {
	cur := p.server.Load()
	// Compression is sluice's own business with the client (node links are not compressed), so
	// it is offered whatever the primary says.
	caps := frontCaps&hs.Capabilities | protocolCaps | mysql.ClientCompress
	// A MariaDB primary with extended capabilities: present them as it does, so clients see
	// its own column metadata (a JSON column is a LONGTEXT marked json).
	var mcaps uint32
	if hs.Capabilities&mysql.ClientLongPassword == 0 {
		if mcaps = hs.MariaDBCapabilities & frontMariaDBCaps; mcaps != 0 {
			caps &^= mysql.ClientLongPassword
		}
	}
	if cur.version == hs.ServerVersion && cur.caps == caps && cur.mcaps == mcaps && cur.charset == hs.Charset {
		return
	}
	p.server.Store(&serverInfo{version: hs.ServerVersion, caps: caps, mcaps: mcaps, charset: hs.Charset})
}

func (p *Proxy) connectTimeout() time.Duration {
	if p.opts.ConnectTimeout > 0 {
		return p.opts.ConnectTimeout
	}
	return 5 * time.Second
}

// rsa returns the key for caching_sha2_password's public-key exchange, made on first use.
func (p *Proxy) rsa() (*rsa.PrivateKey, []byte, error) {
	p.rsaOnce.Do(func() {
		p.rsaKey, p.rsaErr = mysql.GenerateRSAKey()
		if p.rsaErr == nil {
			p.rsaPEM = mysql.PublicKeyPEM(p.rsaKey)
		}
	})
	return p.rsaKey, p.rsaPEM, p.rsaErr
}

func sha2Digest(password string) [32]byte {
	a := sha256.Sum256([]byte(password))
	return sha256.Sum256(a[:])
}

// sha2Cached reports whether user completed a full caching_sha2_password authentication with
// this password since sluice started (the server's fast-path cache).
func (p *Proxy) sha2Cached(user, password string) bool {
	p.sha2Mu.Lock()
	defer p.sha2Mu.Unlock()
	d, ok := p.sha2Cache[user]
	return ok && d == sha2Digest(password)
}

func (p *Proxy) sha2Remember(user, password string) {
	p.sha2Mu.Lock()
	p.sha2Cache[user] = sha2Digest(password)
	p.sha2Mu.Unlock()
}

// Listen opens endpoint name's listener.
func (p *Proxy) Listen(name string) (net.Listener, error) {
	ep := p.endpoint(name)
	if ep == nil {
		return nil, fmt.Errorf("proxy: no endpoint %q", name)
	}
	ln, err := clientListen.Listen(context.Background(), "tcp", ep.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: %w", name, err)
	}
	return ln, nil
}

// clientListen is how endpoints listen: every accepted client connection has TCP_NODELAY (Go
// sets it on every TCP connection) and keep-alive probes after 15 s idle, every 15 s, the
// system's count of them (9 on Linux): Go's default for a listener, set in three system calls
// rather than four. Nothing is set again after the accept (a short connection pays each one).
var clientListen = net.ListenConfig{KeepAliveConfig: net.KeepAliveConfig{
	Enable: true, Idle: 15 * time.Second, Interval: 15 * time.Second, Count: -1}}

// Serve accepts clients on ln for endpoint name until the listener is closed.
func (p *Proxy) Serve(name string, ln net.Listener) error {
	ep := p.endpoint(name)
	if ep == nil {
		ln.Close()
		return fmt.Errorf("proxy: no endpoint %q", name)
	}
	p.mu.Lock()
	if p.closing.Load() {
		p.mu.Unlock()
		ln.Close()
		return nil
	}
	p.listeners[ln] = struct{}{}
	ep.ln = ln
	removed := p.endpoint(name) != ep // removed before it served
	p.mu.Unlock()
	if removed {
		ln.Close()
	}
	backoff := 5 * time.Millisecond
	for {
		nc, err := ln.Accept()
		if err != nil {
			if p.closing.Load() || errors.Is(err, net.ErrClosed) {
				p.mu.Lock()
				delete(p.listeners, ln)
				p.mu.Unlock()
				return nil
			}
			// Out of file descriptors (EMFILE, ENFILE), a connection aborted before it was
			// taken, ...: the endpoint keeps listening; only closing the listener stops it.
			p.log.Warn("accept failed; retrying", "endpoint", name, "err", err, "after", backoff)
			select {
			case <-p.stop:
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		// Until its password is proven the connection counts as pending, and its packet
		// buffer is charged to the logins' shared budget (loggedIn ends both).
		if pending := p.pending.Add(1); pending > int64(p.opts.MaxPendingLogins) {
			// A flood of connections that do not log in: refused at once, before a session
			// and its buffers exist, with the error a server gives past max_connections.
			p.pending.Add(-1)
			ep.front.refused[refusedTooManyLogins].Add(1)
			ep.front.errors.count(mysql.ErrConCount)
			go refuseEarly(nc)
			continue
		}
		s := p.newSession(ep, nc)
		s.client.SetBudget(p.loginBytes)
		if !p.track(s) {
			p.loggedIn(s)
			ep.front.refused[refusedShuttingDown].Add(1)
			nc.Close()
			continue
		}
		n := ep.active.Add(1)
		go func() {
			defer p.wg.Done()
			// After untrack: a session listed (SessionList) always holds its place under
			// its user's max_user_connections, however it ended (run recovers a panic).
			defer s.login.release()
			defer p.untrack(s)
			defer ep.active.Add(-1)
			defer p.loggedIn(s)
			limit := ep.admit.Load().maxConns
			s.run(limit > 0 && n > limit)
		}()
	}
}

// tooManyLogins is the packet a connection past Options.MaxPendingLogins gets in place of the
// greeting (sequence id 0).
var tooManyLogins = func() []byte {
	e := mysql.AppendERR(nil, mysql.NewError(mysql.ErrConCount, "08004", "Too many connections (too many connections in their login)"))
	return append([]byte{byte(len(e)), byte(len(e) >> 8), byte(len(e) >> 16), 0}, e...)
}()

// refuseEarly sends nc tooManyLogins and closes it, waiting at most a second for the write.
func refuseEarly(nc net.Conn) {
	_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write(tooManyLogins)
	nc.Close()
}

// loggedIn ends s's login for the pending-login limits (once its password is proven, or when
// it ends without): it no longer counts against MaxPendingLogins, and its packet buffer leaves
// the logins' budget. Called by the session's own goroutine; a second call does nothing.
func (p *Proxy) loggedIn(s *session) {
	if b := s.client.SetBudget(nil); b != nil {
		b.Give(s.login.tlsHeld)
		s.login.tlsHeld = 0
		p.pending.Add(-1)
	}
}

// PendingLogins returns the connections in their login now, and the packet bytes they hold.
func (p *Proxy) PendingLogins() (conns, bytes int64) {
	return p.pending.Load(), p.loginBytes.Used()
}

func (p *Proxy) track(s *session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing.Load() {
		return false
	}
	p.sessions[s] = struct{}{}
	p.byID[s.id] = s
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(s *session) {
	p.mu.Lock()
	delete(p.sessions, s)
	delete(p.byID, s.id)
	// Under mu: EndpointStats counts the session once.
	st := s.view.counts()
	if st.nodes > s.ep.done.nodes {
		s.ep.done = s.ep.done.grown(st.nodes)
	}
	s.ep.done.add(st)
	p.mu.Unlock()
}

// Sessions returns the number of live client sessions.
func (p *Proxy) Sessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// Shutdown stops accepting, closes idle sessions at once, lets running statements finish until
// ctx ends, then closes whatever is left.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if !p.closing.Swap(true) {
		close(p.stop)
	}
	for ln := range p.listeners {
		ln.Close()
	}
	for s := range p.sessions {
		s.drain()
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		for s := range p.sessions {
			s.kill()
		}
		p.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

// backendTLS returns the TLS configuration for a connection to n, for a client whose own
// connection is (or is not) TLS, and whether TLS is required.
func (p *Proxy) backendTLS(n *topology.Node, clientTLS bool) (*tls.Config, bool) {
	base := p.opts.BackendTLSConfig
	if base == nil {
		base = &tls.Config{InsecureSkipVerify: true}
	}
	switch p.opts.BackendTLS {
	case backend.TLSOff:
		return nil, false
	case backend.TLSPreferred, backend.TLSRequired:
	default: // mirror
		if !clientTLS {
			return nil, false
		}
	}
	cfg := base.Clone()
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(n.Address); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg, p.opts.BackendTLS == backend.TLSRequired
}
