// Package app is the composition root: it builds every part of sluice from the configuration
// and runs it until its context ends.
package app

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/binlog"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/monitor"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/pool"
	"github.com/sluicedb/sluice/internal/proxy"
	"github.com/sluicedb/sluice/internal/proxyproto"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// App is a configured sluice.
type App struct {
	// boot is the configuration sluice started with, never changed: what only a restart
	// changes (backends, monitor, timeouts, listeners at start) is read there. cfg is the
	// configuration in force, replaced by the admin API's changes (under changeMu).
	boot *config.Config
	cfg  *config.Config
	// live is cfg for config's readers (setConfig).
	live atomic.Pointer[config.Config]
	log  *slog.Logger
	// level is the process logger's level when NewLogger built the logger (nil otherwise): a
	// reload sets it (setLogLevel).
	level *slog.LevelVar
	// stopping is set when a shutdown begins: the endpoints refuse new clients, and /readyz
	// says so while the sessions still running finish.
	stopping atomic.Bool
	topo     *topology.Topology
	mon      *monitor.Monitor // nil without a monitor account
	proxy    *proxy.Proxy
	// positions is each node's applied position, kept by the monitor and the binlog streams
	// (nil without a monitor account); btls, btlsMode say how the streams use TLS.
	positions *topology.Positions
	btls      *tls.Config
	// pubKey is backend_tls.server_public_key's PEM (nil: none): where caching_sha2_password's
	// full authentication may send a password without verified TLS.
	pubKey   []byte
	btlsMode backend.TLSMode

	mu    sync.Mutex
	addrs map[string]string // endpoint name -> bound address, once listening
	ready chan struct{}
	errc  chan error // a listener that failed: Run ends

	version string    // sluice's, for the admin API
	started time.Time // when New ran
	// changeMu serializes the changes of the admin API and reloads, and guards cfg and raw:
	// raw is the configuration file's text that cfg was parsed from (edited by changes,
	// written back when the file still holds it).
	changeMu sync.Mutex
	raw      []byte
	// disk is the file's text as sluice last read or wrote it (under changeMu): raw moves
	// past it when a change could not be written.
	disk      []byte
	admin     *admin.Server
	adminAddr string
	changes   map[[2]string]uint64 // admin changes by kind and outcome (under changeMu)
	// acctMu serializes the loads of the primary's accounts; acctLoaded is the last one's
	// time, acctCount its size.
	acctMu     sync.Mutex
	acctLoaded time.Time
	acctCount  int
	// drainTimers close what is left on a drained node at the drain's timeout (under changeMu).
	drainTimers map[int]*time.Timer
	// cluster is the store the configuration is shared through (nil: none; Open).
	cluster *cluster
	// instance tells this App from any other (another process's, or another in this process:
	// sluice sandbox --proxies): random.
	instance string
}

// Threads is the configuration's threads (GOMAXPROCS; 0: every CPU).
func (a *App) Threads() int { return a.boot.Threads }

// SetVersion sets the version the admin API reports.
func (a *App) SetVersion(v string) { a.version = v }

// New builds the parts of sluice from cfg.
func New(cfg *config.Config, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for name, addr := range cfg.Listen {
		if cfg.Endpoint(name) == nil {
			// Not an error: the endpoint may be created later (through any node's API), and
			// then listens there.
			log.Warn("listen names no endpoint (yet); it applies once an endpoint of that name is created", "endpoint", name, "address", addr)
		}
	}
	btlsMode, err := backend.ParseTLSMode(cfg.BackendTLS.Mode)
	if err != nil {
		return nil, err
	}
	opts := proxy.Options{
		TopologyUsers:     cfg.Accounts.TopologyUsers,
		ConnectTimeout:    cfg.Timeouts.Connect.Duration,
		ReadTimeout:       cfg.Timeouts.Read.Duration,
		SwitchoverTimeout: cfg.Monitor.SwitchoverTimeout.Duration,
		WriteTimeout:      cfg.Timeouts.Write.Duration,
		IdleTimeout:       cfg.Timeouts.Idle.Duration,
		LoginTimeout:      cfg.Timeouts.Login.Duration,
		Logger:            log,

		MaxPendingLogins:     cfg.Limits.MaxPendingLogins,
		MaxPendingLoginBytes: cfg.Limits.MaxPendingLoginBytes,
		MaxAuthFailures:      cfg.Limits.MaxAuthFailures,
		AuthBlock:            cfg.Limits.AuthBlock.Duration,

		MaxPreparedStatements: cfg.Limits.MaxPreparedStatements,
		MaxLongData:           cfg.Limits.MaxLongData,
		BackendTLS:            btlsMode,
		BackendCompress:       cfg.BackendCompress,
	}
	if cfg.TLS.Cert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	btls, pubKey, err := backendTLS(cfg)
	if err != nil {
		return nil, err
	}
	opts.BackendTLSConfig = btls
	opts.BackendPublicKey = pubKey
	for _, u := range cfg.Users {
		pu := proxy.User{Name: u.Name, Plugin: u.AuthPlugin, RequireTLS: u.RequireTLS, MaxConnections: u.MaxUserConnections}
		if u.PasswordHash != "" {
			h, err := mysql.ParseNativeHash(u.PasswordHash)
			if err != nil {
				return nil, fmt.Errorf("user %s: %w", u.Name, err)
			}
			pu.Hash, pu.HasHash = h, true
		} else {
			pu.Password, pu.HasPassword = u.Password, true
		}
		opts.Users = append(opts.Users, pu)
	}
	topo, err := newTopology(cfg, log)
	if err != nil {
		return nil, err
	}
	opts.Topology = topo
	var positions *topology.Positions
	if cfg.Monitor.User != "" {
		// Each node's applied GTID position, for the consistency levels: the monitor's checks
		// keep it (and binlog streams, where they run).
		positions = topology.NewPositions(topology.MaxNodes)
		for i, n := range topo.Snapshot().Nodes {
			positions.Own(i, n)
		}
		opts.Positions = positions
	}
	for _, e := range cfg.Endpoints {
		ep, err := endpoint(cfg, e, backendNames(cfg))
		if err != nil {
			topo.Close()
			return nil, fmt.Errorf("endpoint %s: %w", e.Name, err)
		}
		opts.Endpoints = append(opts.Endpoints, ep)
	}
	var self *App // the accounts' refresh, once a exists
	if cfg.Accounts.FromPrimary {
		opts.RefreshAccounts = func() { self.refreshAccounts(context.Background(), true) }
	}
	opts.Cluster = func() (proxy.ClusterView, bool) { return self.clusterView() }
	p, err := proxy.New(opts)
	if err != nil {
		topo.Close()
		return nil, err
	}
	a := &App{boot: cfg, cfg: cfg, log: log, level: logLevel(log), topo: topo, mon: newMonitor(cfg, topo, positions, log, btls, btlsMode, pubKey), proxy: p,
		positions: positions, btls: btls, btlsMode: btlsMode, pubKey: pubKey,
		addrs: map[string]string{}, ready: make(chan struct{}), version: "dev", started: time.Now(), errc: make(chan error, 1)}
	a.live.Store(cfg)
	self = a
	var id [8]byte
	_, _ = rand.Read(id[:])
	a.instance = hex.EncodeToString(id[:])
	if cfg.Path != "" {
		// What the admin API's changes edit and write back.
		if a.raw, err = os.ReadFile(cfg.Path); err != nil {
			topo.Close()
			return nil, err
		}
		a.disk = a.raw
	}
	if cfg.Admin.Listen != "" {
		o := admin.Options{Control: a, Token: cfg.Admin.Token, Logger: log, Metrics: admin.MetricsHandler(a.Stats), Pools: a, Cluster: a, Peers: a}
		if cfg.Admin.TLS {
			o.TLS = opts.TLS.Clone()
		}
		a.admin = admin.New(o)
	}
	return a, nil
}

// backendTLS is how sluice's connections to the nodes use TLS (backend_tls): the TLS
// configuration, and the server public key's PEM for caching_sha2_password (nil: none).
func backendTLS(cfg *config.Config) (*tls.Config, []byte, error) {
	btls := &tls.Config{InsecureSkipVerify: !cfg.BackendTLS.Verify, ServerName: cfg.BackendTLS.ServerName, MinVersion: tls.VersionTLS12}
	if cfg.BackendTLS.CA != "" {
		pem, err := os.ReadFile(cfg.BackendTLS.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("backend_tls.ca: %w", err)
		}
		btls.RootCAs = x509.NewCertPool()
		btls.RootCAs.AppendCertsFromPEM(pem)
	}
	var pubKey []byte
	if f := cfg.BackendTLS.ServerPublicKey; f != "" {
		var err error
		if pubKey, err = config.ReadPublicKey(f); err != nil {
			return nil, nil, fmt.Errorf("backend_tls.server_public_key: %w", err)
		}
	}
	return btls, pubKey, nil
}

// MonitorLogin is how logging in to one node as the monitor account went: Err nil (it
// worked), Denied (the node answered with an error: 1045 a wrong user or password, 1130 a host
// it does not let in...; its words in Err), or the node could not be reached (Err).
type MonitorLogin struct {
	Node, Address string
	Err           error
	Denied        bool
}

// CheckMonitor logs in to every backend of cfg as the monitor account, as the monitor does
// (its TLS, its key), all at once, each bounded by timeouts.connect: what `sluice serve --check`
// reports. None without a monitor account.
func CheckMonitor(ctx context.Context, cfg *config.Config) ([]MonitorLogin, error) {
	if cfg.Monitor.User == "" {
		return nil, nil
	}
	mode, err := backend.ParseTLSMode(cfg.BackendTLS.Mode)
	if err != nil {
		return nil, err
	}
	btls, pubKey, err := backendTLS(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]MonitorLogin, len(cfg.Backends))
	var wg sync.WaitGroup
	for i, b := range cfg.Backends {
		out[i] = MonitorLogin{Node: b.Name, Address: b.Address}
		wg.Go(func() {
			pp, _ := proxyproto.ParseVersion(b.ProxyProtocol) // validated with the file
			c, err := dialMonitor(ctx, cfg, btls, mode, pubKey, &topology.Node{Name: b.Name, Address: b.Address, ProxyProtocol: pp})
			if err != nil {
				var se *mysql.SQLError
				out[i].Err, out[i].Denied = err, errors.As(err, &se)
				return
			}
			c.Quit()
		})
	}
	wg.Wait()
	return out, nil
}

// nodeOf is backend b's node in the topology, in role.
func nodeOf(b config.Backend, role topology.Role) (topology.Node, error) {
	pp, err := proxyproto.ParseVersion(b.ProxyProtocol)
	if err != nil {
		return topology.Node{}, fmt.Errorf("backend %s: %w", b.Name, err)
	}
	return topology.Node{Name: b.Name, Address: b.Address, Zone: b.Zone, Role: role, ProxyProtocol: pp}, nil
}

// newTopology builds the nodes' topology from the backends. With a monitor account the monitor
// watches every node (newMonitor); without one, a node a session failed to reach is probed every
// monitor.interval until it sends its greeting again.
func newTopology(cfg *config.Config, log *slog.Logger) (*topology.Topology, error) {
	var nodes []topology.Node
	for _, b := range cfg.Backends {
		role, err := topology.ParseRole(b.Role)
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", b.Name, err)
		}
		n, err := nodeOf(b, role)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	o := topology.Options{
		Nodes:         nodes,
		ProbeInterval: cfg.Monitor.Interval.Duration,
		ProbeTimeout:  cfg.Timeouts.Connect.Duration,
		Logger:        log,
	}
	if cfg.Monitor.User == "" {
		timeout := cfg.Timeouts.Connect.Duration
		o.Probe = func(ctx context.Context, n *topology.Node) error {
			_, err := backend.ReadHandshake(ctx, n.Address, timeout)
			return err
		}
	}
	return topology.New(o)
}

// newMonitor returns the monitor of topo's nodes, logging in as the monitor account with TLS as
// backend_tls says for a client without TLS (preferred and required: TLS); nil without a
// monitor account.
func newMonitor(cfg *config.Config, topo *topology.Topology, positions *topology.Positions, log *slog.Logger, btls *tls.Config, mode backend.TLSMode, pubKey []byte) *monitor.Monitor {
	m := cfg.Monitor
	if m.User == "" {
		return nil
	}
	dial := func(ctx context.Context, n *topology.Node) (monitor.Conn, error) {
		c, err := dialMonitor(ctx, cfg, btls, mode, pubKey, n)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return monitor.New(topo, monitor.Options{
		Interval:  m.Interval.Duration,
		DownAfter: m.DownAfter,
		Dial:      dial,
		Logger:    log,
		Positions: positions,
	})
}

// dialMonitor connects to node n as the monitor account, with TLS as backend_tls says for a
// client without TLS (preferred and required: TLS).
func dialMonitor(ctx context.Context, cfg *config.Config, btls *tls.Config, mode backend.TLSMode, pubKey []byte, n *topology.Node) (*backend.Conn, error) {
	creds := backend.Credentials{User: cfg.Monitor.User, Password: cfg.Monitor.Password, HasPassword: true}
	o := backend.Options{Address: n.Address, Credentials: creds, ConnectTimeout: cfg.Timeouts.Connect.Duration, ServerPublicKey: pubKey}
	if n.ProxyProtocol != proxyproto.Off {
		// A header naming no client (v1 UNKNOWN, v2 LOCAL): the node keeps sluice's own address
		// for the monitor, and a node that does not take headers from sluice refuses the
		// monitor as it refuses every session (1130), so it is seen down, not only by clients.
		o.ProxyHeader = proxyproto.Append(nil, n.ProxyProtocol, netip.AddrPort{}, netip.AddrPort{})
	}
	if mode == backend.TLSPreferred || mode == backend.TLSRequired {
		o.TLS, o.TLSRequired = btls.Clone(), mode == backend.TLSRequired
		if o.TLS.ServerName == "" {
			o.TLS.ServerName, _, _ = net.SplitHostPort(n.Address)
		}
	}
	return backend.Dial(ctx, o)
}

// dialMonitor connects to node n as the monitor account.
func (a *App) dialMonitor(ctx context.Context, n *topology.Node) (*backend.Conn, error) {
	return dialMonitor(ctx, a.boot, a.btls, a.btlsMode, a.pubKey, n)
}

// backendNames are cfg's backends' names, in order: the topology's slots at start.
func backendNames(cfg *config.Config) []string {
	names := make([]string, len(cfg.Backends))
	for i, b := range cfg.Backends {
		names[i] = b.Name
	}
	return names
}

// endpoint turns an endpoint's configuration into the proxy's: typed values, weights by node
// slot (slots names the node of each, "" for a free one).
func endpoint(cfg *config.Config, e config.Endpoint, slots []string) (proxy.Endpoint, error) {
	mode, err := route.ParseMode(e.Mode)
	if err != nil {
		return proxy.Endpoint{}, err
	}
	policy, err := route.ParsePolicy(e.Balance, e.ConnectionsFrom)
	if err != nil {
		return proxy.Endpoint{}, err
	}
	consistency, err := route.ParseConsistency(e.Consistency)
	if err != nil {
		return proxy.Endpoint{}, err
	}
	tlsMode, err := proxy.ParseTLSMode(e.TLS)
	if err != nil {
		return proxy.Endpoint{}, err
	}
	poolMode, err := proxy.ParsePoolMode(e.PoolMode)
	if err != nil {
		return proxy.Endpoint{}, err
	}
	ep := proxy.Endpoint{
		Name: e.Name, Listen: e.Listen, MaxConnections: e.MaxConnections, TLS: tlsMode, Allow: allowList(e),
		Routing: route.Settings{
			Mode: mode, Policy: policy, SplitTx: e.TransactionSplit,
			StrictMulti: e.MultiStatements == config.MultiStatementsStrict,
			MaxLag:      e.MaxReplicaLag.Duration,
			NearestZone: e.NearestZone, Zone: cfg.Zone,
			Consistency: consistency, ConsistencyTimeout: e.ConsistencyTimeout.Duration,
		},
	}
	ep.Pool = proxy.PoolSettings{Mode: poolMode, Limits: poolLimits(e.Pool)}
	for _, u := range cfg.PoolUsers() {
		if ep.Pool.Users == nil {
			ep.Pool.Users = map[string]pool.Limits{}
		}
		ep.Pool.Users[u] = poolLimits(cfg.PoolOf(&e, u))
	}
	for _, name := range slots {
		ep.Routing.Weights = append(ep.Routing.Weights, e.ReadWeights[name]) // "": 0
	}
	return ep, nil
}

// poolLimits are the pool's limits of a pool section.
func poolLimits(p config.Pool) pool.Limits {
	return pool.Limits{MaxPerNode: p.MaxPerNode, IdleTimeout: p.IdleTimeout.Duration, MaxLifetime: p.MaxLifetime.Duration,
		AcquireTimeout: p.AcquireTimeout.Duration, MinIdle: p.MinIdle}
}

// Pools implements admin.Pools.
func (a *App) Pools() []admin.Pool {
	st := a.proxy.PoolStats()
	out := make([]admin.Pool, len(st))
	for i, s := range st {
		out[i] = admin.Pool{Node: s.Node, User: s.User, Open: s.Open, Idle: s.Idle, InUse: s.InUse, Waiting: s.Waiting,
			Created: s.Created, Reused: s.Reused, Resets: s.Resets, ResetFailures: s.ResetFailures, Waits: s.Waits,
			WaitSeconds: s.Waited.Seconds()}
	}
	return out
}

// Run listens on every endpoint and serves until ctx ends, then shuts down gracefully: it stops
// accepting, lets running statements finish for up to timeouts.shutdown, and closes the rest.
func (a *App) Run(ctx context.Context) error {
	probeCtx, cancel := context.WithTimeout(ctx, a.boot.Timeouts.Connect.Duration+time.Second)
	var login func(context.Context, *topology.Node) (*backend.Conn, error)
	if a.mon != nil {
		login = a.dialMonitor
	}
	if err := a.proxy.LearnPrimary(probeCtx, login); err != nil {
		a.log.Warn("primary not reachable yet; clients will get an error until it is", "err", err)
	}
	cancel()
	defer a.topo.Close()
	// Reads waiting on a node the topology marks down go elsewhere (proxy.WatchDown).
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watch sync.WaitGroup
	watch.Go(func() { a.proxy.WatchDown(watchCtx) })
	// The pool's janitor; it closes the pool when sluice stops.
	watch.Go(func() { a.proxy.RunPool(watchCtx) })
	defer func() { stopWatch(); watch.Wait() }()
	if a.mon != nil {
		monCtx, stopMon := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { a.mon.Run(monCtx) })
		wg.Go(func() { topology.Follow(monCtx, a.topo.Snapshot, a.stream) })
		if a.boot.Accounts.FromPrimary {
			wg.Go(func() { a.watchAccounts(monCtx) })
		}
		defer func() { stopMon(); wg.Wait() }()
	}
	var lns []net.Listener
	for _, ep := range a.boot.Endpoints {
		ln, err := a.listen(ep.Name)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return err
		}
		lns = append(lns, ln)
	}
	if a.admin != nil {
		ln, err := net.Listen("tcp", a.boot.Admin.Listen)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("admin.listen: %w", err)
		}
		a.mu.Lock()
		a.adminAddr = ln.Addr().String()
		a.mu.Unlock()
		a.log.Info("admin API listening", "address", ln.Addr().String(), "token", a.boot.Admin.Token != "", "tls", a.boot.Admin.TLS)
		go func() {
			if err := a.admin.Serve(ln); err != nil {
				a.log.Error("admin API stopped", "err", err)
			}
		}()
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = a.admin.Shutdown(ctx)
		}()
	}
	if a.cluster != nil {
		clusterCtx, stopCluster := context.WithCancel(context.Background())
		a.runCluster(clusterCtx)
		defer func() { stopCluster(); a.stopCluster() }()
	}
	close(a.ready)
	for i, ep := range a.boot.Endpoints {
		a.serve(ep.Name, lns[i])
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-a.errc:
	}
	a.stopping.Store(true) // /readyz: 503 from now on, so that a load balancer stops sending
	a.log.Info("shutting down (a second signal ends sluice at once)", "sessions", a.proxy.Sessions(), "grace", a.boot.Timeouts.Shutdown.Duration)
	sctx, scancel := context.WithTimeout(context.Background(), a.boot.Timeouts.Shutdown.Duration)
	defer scancel()
	if err := a.proxy.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	} else if err != nil {
		a.log.Warn("shutdown grace period over; closed the remaining sessions")
	}
	return serveErr
}

// Ready is closed once every endpoint listens.
func (a *App) Ready() <-chan struct{} { return a.ready }

// Addr returns the address endpoint name listens on (after Ready).
func (a *App) Addr(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addrs[name]
}

// listen opens endpoint name's listener and records its address.
func (a *App) listen(name string) (net.Listener, error) {
	ln, err := a.proxy.Listen(name)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.addrs[name] = ln.Addr().String()
	a.mu.Unlock()
	a.log.Info("endpoint listening", "endpoint", name, "address", ln.Addr().String())
	return ln, nil
}

// serve accepts endpoint name's connections on ln until it is closed (the endpoint removed, or
// shutdown); a failure of the listener itself ends Run.
func (a *App) serve(name string, ln net.Listener) {
	go func() {
		if err := a.proxy.Serve(name, ln); err != nil {
			select {
			case a.errc <- err:
			default:
			}
		}
	}()
}

// AdminAddr returns the address the admin API listens on (after Ready), or "" without one.
func (a *App) AdminAddr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.adminAddr
}

// EndpointSettings returns a copy of endpoint name's settings as the proxy runs them, and
// whether there is such an endpoint; UpdateEndpoint puts changed ones in force at once
// (proxy.UpdateEndpoint), without the file: for tests that change routing under running
// sessions.
func (a *App) EndpointSettings(name string) (proxy.EndpointSettings, bool) {
	return a.proxy.EndpointSettings(name)
}

// UpdateEndpoint: see EndpointSettings.
func (a *App) UpdateEndpoint(name string, s proxy.EndpointSettings) error {
	return a.proxy.UpdateEndpoint(name, s)
}

// stream follows node i's binlog as the monitor account (binlog.Run), moving its known position
// (a.positions) in real time, until ctx ends (sluice stops, or the node is removed). It starts
// once the monitor has seen the node (its flavour). A node that cannot be streamed (no REPLICATION SLAVE, no binlog) keeps the monitor's
// polled position; SHOW NODES says which source each node uses.
func (a *App) stream(ctx context.Context, i int, n *topology.Node) {
	snap := a.topo.Snapshot()
	for i >= len(snap.State) || snap.State[i] == nil || snap.State[i].Version == "" || snap.Nodes[i] != n {
		select {
		case <-ctx.Done():
			return
		case <-snap.Changed():
		}
		snap = a.topo.Snapshot()
	}
	fl := gtid.FlavorOf(snap.State[i].Version)
	o := binlog.Options{Address: n.Address, User: a.boot.Monitor.User, Password: a.boot.Monitor.Password, Flavor: fl,
		PublicKey: a.pubKey, Logger: a.log.With("node", n.Name), Instance: a.instance}
	if a.btlsMode == backend.TLSPreferred || a.btlsMode == backend.TLSRequired {
		o.TLS = a.btls.Clone()
		if o.TLS.ServerName == "" {
			o.TLS.ServerName, _, _ = net.SplitHostPort(n.Address)
		}
	}
	binlog.Run(ctx, o, func(pos string) {
		if p, err := gtid.Parse(fl, pos); err == nil {
			a.positions.AdvanceNode(n, p)
		}
	}, func(streaming bool, err error) {
		a.positions.SetStreamingNode(n, streaming)
	})
	a.positions.SetStreamingNode(n, false)
}
