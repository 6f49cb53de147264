package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/proxy"
	"github.com/sluicedb/sluice/internal/store"
	"github.com/sluicedb/sluice/internal/topology"
)

// Several sluice nodes as one proxy: with store.etcd in a sluice's file, the configuration
// other than that file's local keys lives in etcd. Every change through any node's API is a
// compare-and-swap there first, on the revision the node applied: only a change etcd took is
// applied, so a node cut from etcd (a minority) applies nothing the others did not, and a
// change made on an older revision gets 409. Every node watches the key and applies what
// another stored as a reload applies the file. Losing etcd stops no traffic: the configuration
// last applied stays in force, and the node says so (GET /v1/proxy, /v1/cluster).

// cluster is what a sluice with a store keeps of it.
type cluster struct {
	st       *store.Store
	opts     config.Etcd
	bootPath string
	shared   string // "etcd:" + the configuration's key, as errors name it
	name     string
	instance string
	// boot is this sluice's own file as last read (under changeMu): ParseShared's local part.
	boot []byte
	// applied is the stored configuration's revision in force.
	applied atomic.Int64
	// refused says why a newer stored revision is not in force; pending the restart-only
	// settings the stored configuration changed since start. Written under changeMu and
	// stateMu; read under either: the API's and SHOW CLUSTER's readers take stateMu only, so
	// that they wait for no change in flight (one waits up to the store's dial timeout).
	stateMu    sync.Mutex
	refused    string
	refusedRev int64
	pending    []string
	// members is the live nodes as last read from the store (setMembers).
	members atomic.Pointer[membersView]
	// membersChanged has a token when members changed since followOthers last summed them.
	membersChanged chan struct{}
	// cacheFile is store.cache_file: the copy of the configuration applied (cacheLoop).
	cacheFile string
	// peers streams this node's acknowledged commits to the others (peers.go).
	peers peers
	// drains are the drains the store recorded, as last applied (under changeMu).
	drains map[string]store.Drain
	wg     sync.WaitGroup
}

type membersView struct {
	list []store.Member
	at   time.Time
}

// loadRetry is how long a sluice starting with a store waits for etcd before giving up.
const loadRetry = 30 * time.Second

// Open builds sluice from its file at path. Without store.etcd the file is the whole
// configuration (as config.Load). With it, the shared configuration comes from etcd; when etcd
// holds none yet, the file's own shared settings are stored first (the first node seeds the
// cluster). zone, when not empty, overrides the file's (serve --zone, SLUICE_ZONE).
func Open(ctx context.Context, path, zone, version string, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	local, err := config.ParseLocal(path, data)
	if err != nil {
		return nil, err
	}
	if !local.Store.Enabled() {
		cfg, err := config.Parse(path, data)
		if err != nil {
			return nil, err
		}
		if zone != "" {
			cfg.Zone = zone
		}
		a, err := New(cfg, log)
		if a != nil {
			a.SetVersion(version)
		}
		return a, err
	}
	c, err := openCluster(local, path, data, log)
	if err != nil {
		return nil, err
	}
	doc, err := c.loadOrSeed(ctx, local, data, version, log)
	if err != nil && errors.Is(err, store.ErrUnavailable) && c.cacheFile != "" {
		cached, cerr := readCache(c.cacheFile)
		if cerr != nil {
			c.st.Close()
			return nil, fmt.Errorf("%w; and store.cache_file: %v", err, cerr)
		}
		log.Warn("etcd not reachable: starting from the copy of the stored configuration last applied; changes are refused until etcd is back",
			"cache_file", c.cacheFile, "revision", cached.Rev, "err", err)
		doc, err = cached, nil
	}
	if err != nil {
		c.st.Close()
		return nil, err
	}
	cfg, err := config.ParseShared(path, data, c.shared, doc.Text)
	if err != nil {
		c.st.Close()
		return nil, fmt.Errorf("the stored configuration (revision %d) cannot be applied:\n%w", doc.Rev, err)
	}
	if zone != "" {
		cfg.Zone = zone
	}
	a, err := New(cfg, log)
	if err != nil {
		c.st.Close()
		return nil, err
	}
	a.SetVersion(version)
	a.cluster = c
	c.instance = a.instance
	a.raw, a.disk = doc.Text, nil
	c.applied.Store(doc.Rev)
	log.Info("configuration read from the store", "key", c.shared, "revision", doc.Rev, "written_by", doc.Writer, "name", c.name)
	return a, nil
}

// openCluster connects to the store local's file names.
func openCluster(local *config.Config, path string, data []byte, log *slog.Logger) (*cluster, error) {
	e := local.Store.Etcd
	var tc *tls.Config
	if e.UsesTLS() {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
		if e.TLS.CA != "" {
			pem, err := os.ReadFile(e.TLS.CA)
			if err != nil {
				return nil, fmt.Errorf("store.etcd.tls.ca: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("store.etcd.tls.ca: no certificate in %s", e.TLS.CA)
			}
		}
		if e.TLS.Cert != "" {
			cert, err := tls.LoadX509KeyPair(e.TLS.Cert, e.TLS.Key)
			if err != nil {
				return nil, fmt.Errorf("store.etcd.tls: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
	}
	st, err := store.Open(store.Options{Endpoints: e.Endpoints, Prefix: e.Prefix, DialTimeout: e.DialTimeout.Duration,
		Username: e.Username, Password: e.Password, TLS: tc, Logger: log})
	if err != nil {
		return nil, err
	}
	name := local.Name
	if name == "" {
		name, _ = os.Hostname()
	}
	c := &cluster{st: st, opts: e, bootPath: path, boot: data, shared: "etcd:" + st.ConfigKey(), name: name,
		membersChanged: make(chan struct{}, 1), cacheFile: local.Store.CacheFile}
	c.peers.nudge = make(chan struct{}, 1)
	c.peers.ackMoved()
	return c, nil
}

// loadOrSeed reads the stored configuration, waiting up to loadRetry for etcd; when there is
// none, it stores the file's shared settings (data), or says how to import one.
func (c *cluster) loadOrSeed(ctx context.Context, local *config.Config, data []byte, version string, log *slog.Logger) (store.Doc, error) {
	deadline := time.Now().Add(loadRetry)
	if c.cacheFile != "" {
		// A copy to start from: a few tries, not 30 s.
		deadline = time.Now().Add(3 * c.opts.DialTimeout.Duration)
	}
	for {
		doc, found, err := c.st.Load(ctx)
		switch {
		case err == nil && found:
			if doc.Format > store.Format {
				return store.Doc{}, fmt.Errorf("the stored configuration (revision %d) was written by sluice %s in format %d; this sluice reads format %d: upgrade it",
					doc.Rev, doc.Version, doc.Format, store.Format)
			}
			return doc, nil
		case found: // there, but not what sluice writes: etcd answered, waiting changes nothing
			return store.Doc{}, fmt.Errorf("%s: %w; replace it (through a running sluice: sluice ctl import FILE --revision %d; else with etcdctl)",
				c.st.ConfigKey(), err, doc.Rev)
		case err == nil:
			seed, ok, err := config.SharedPart(c.bootPath, data)
			if err != nil {
				return store.Doc{}, err
			}
			if !ok {
				return store.Doc{}, fmt.Errorf("the store holds no configuration at %s yet, and %s gives none to store: add the shared settings (users, backends, endpoints...) to this file, or import them (sluice ctl import FILE --config %s)",
					c.st.ConfigKey(), c.bootPath, c.bootPath)
			}
			if _, err := config.ParseShared(c.bootPath, data, c.shared, seed); err != nil {
				return store.Doc{}, err
			}
			if err := secretsAllowed(local, c.bootPath, seed); err != nil {
				return store.Doc{}, err
			}
			rev, err := c.st.Put(ctx, seed, 0, c.name, version)
			if errors.Is(err, store.ErrConflict) {
				continue // another node seeded it first: read theirs
			}
			if err != nil {
				return store.Doc{}, err
			}
			log.Info("the store held no configuration: stored this file's", "key", c.st.ConfigKey(), "revision", rev)
			return store.Doc{Text: seed, Rev: rev, Format: store.Format, Writer: c.name, Version: version}, nil
		case time.Now().After(deadline) || ctx.Err() != nil:
			return store.Doc{}, fmt.Errorf("reading the configuration from etcd (%s): %w", strings.Join(c.opts.Endpoints, ", "), err)
		default:
			log.Warn("etcd not reachable yet; retrying", "err", err)
			time.Sleep(time.Second)
		}
	}
}

// secretsAllowed refuses a shared configuration with passwords in clear, unless
// store.clear_secrets says so.
func secretsAllowed(local *config.Config, name string, text []byte) error {
	if local.Store.ClearSecrets {
		return nil
	}
	keys, err := config.ClearSecrets(name, text)
	if err != nil || len(keys) == 0 {
		return err
	}
	return fmt.Errorf("the configuration holds passwords in clear (%s): a store keeps them only with store.clear_secrets: true; write password_hash, or a ${NAME} reference that each sluice resolves from its own environment",
		strings.Join(keys, ", "))
}

// runCluster keeps this sluice in the cluster until ctx ends: it applies what others store,
// keeps its registration, and follows the list of live nodes.
func (a *App) runCluster(ctx context.Context) {
	c := a.cluster
	c.wg.Go(func() { c.st.Watch(ctx, c.applied.Load(), a.applyStored) })
	c.wg.Go(func() { a.probeStore(ctx) })
	c.wg.Go(func() {
		c.st.WatchMembers(ctx, func(ms []store.Member) {
			c.setMembers(ms)
			a.linkPeers(ctx, ms)
		})
	})
	c.wg.Go(func() { a.followOthers(ctx) })
	c.wg.Go(func() { c.st.WatchDrains(ctx, a.applyDrains) })
	c.wg.Go(func() { a.sharePositions(ctx) })
	if c.cacheFile != "" {
		c.wg.Go(func() { a.cacheLoop(ctx) })
	}
	host, _ := os.Hostname()
	m := store.Member{Name: c.name, Version: a.version, Started: a.started.UTC(), Host: host, PID: os.Getpid(),
		Instance: c.instance, Admin: advertised(a.AdminAddr(), host), AdminTLS: a.boot.Admin.TLS, Endpoints: map[string]string{}}
	c.wg.Go(func() {
		c.st.Register(ctx, m, func(m *store.Member) {
			m.Zone = a.config().Zone
			m.Applied = c.applied.Load()
			a.mu.Lock()
			clear(m.Endpoints)
			for n, addr := range a.addrs {
				m.Endpoints[n] = advertised(addr, host)
			}
			a.mu.Unlock()
			m.Connections = a.ownConnections(m.Connections)
			// A refused stored configuration is published, so that every node's view (ctl
			// cluster) shows which nodes run an older one and why.
			c.stateMu.Lock()
			m.Refused, m.RefusedRevision = c.refused, c.refusedRev
			c.stateMu.Unlock()
		})
	})
}

// advertised is a listener's address as the other nodes reach it: one bound to every interface
// ([::]:9090, from admin.listen ":9090") names this host instead, or the peers would dial
// their own host (and stream their commits to themselves).
func advertised(addr, host string) string {
	h, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return addr
	}
	if ip, err := netip.ParseAddr(h); h != "" && (err != nil || !ip.IsUnspecified()) {
		return addr
	}
	return net.JoinHostPort(host, port)
}

// ownConnections is this sluice's client-session connections per node (into m, reused).
func (a *App) ownConnections(m map[string]int64) map[string]int64 {
	snap := a.topo.Snapshot()
	if m == nil {
		m = map[string]int64{}
	}
	clear(m)
	for i, n := range snap.Nodes {
		if !snap.IsRemoved(i) {
			m[n.Name] = snap.Load[i].Conns.Load()
		}
	}
	return m
}

// setMembers keeps ms as the live nodes, and has followOthers sum their connections again.
func (c *cluster) setMembers(ms []store.Member) {
	c.members.Store(&membersView{list: ms, at: time.Now()})
	select {
	case c.membersChanged <- struct{}{}:
	default: // a sum is due already; it reads the newest list
	}
}

// followOthers keeps each node's Load.Others, for least-connections counted over the cluster
// (connections_from: cluster): the connections the other live members published, summed
// again each time the list of members changes (a member's record is rewritten at most once a
// second, when its counts changed; one whose lease ended is no longer listed) and each time
// the topology does (a node added takes a slot), until ctx ends. Statements only read the sums.
func (a *App) followOthers(ctx context.Context) {
	c := a.cluster
	for {
		snap := a.topo.Snapshot()
		var ms []store.Member
		if mv := c.members.Load(); mv != nil {
			ms = mv.list
		}
		storeOthers(snap, ms, c.instance)
		select {
		case <-ctx.Done():
			return
		case <-c.membersChanged:
		case <-snap.Changed():
		}
	}
}

// storeOthers sets each node's Load.Others in snap to the sum of the connections members other
// than this sluice (instance self) published for it, by the node's name; a free slot's is 0.
func storeOthers(snap *topology.Snapshot, ms []store.Member, self string) {
	for i, n := range snap.Nodes {
		var sum int64
		if !snap.IsRemoved(i) {
			for _, m := range ms {
				if m.Instance != self {
					sum += m.Connections[n.Name]
				}
			}
		}
		snap.Load[i].Others.Store(sum)
	}
}

// probeStore reads the stored revision every second: it keeps the link's state current while
// nothing changes, and catches a revision the watch has not delivered within a second.
func (a *App) probeStore(ctx context.Context) {
	c := a.cluster
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var behind int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rev, err := c.st.Probe(ctx)
		if err != nil || rev <= c.applied.Load() {
			behind = 0
			continue
		}
		if rev != behind {
			behind = rev // give the watch a second to deliver it
			continue
		}
		if d, found, err := c.st.Load(ctx); err == nil && found {
			a.applyStored(d, nil)
		}
	}
}

// applyStored puts a configuration another node stored in force, as a reload of the file
// would; one this sluice cannot read (a newer format, a key it does not know, an invalid
// value) is refused whole, and the one in force stays.
func (a *App) applyStored(d store.Doc, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	c := a.cluster
	if d.Rev <= c.applied.Load() || d.Rev == c.refusedRev {
		return
	}
	if err == nil && d.Format > store.Format {
		err = fmt.Errorf("written by sluice %s in format %d; this sluice reads format %d: upgrade it", d.Version, d.Format, store.Format)
	}
	var ch admin.Change
	if err == nil {
		ch, err = a.reloadText(d.Text, true)
	}
	if err != nil {
		c.stateMu.Lock()
		c.refused, c.refusedRev = err.Error(), d.Rev
		c.stateMu.Unlock()
		a.log.Error("store: a stored configuration was refused; the one in force stays", "revision", d.Rev,
			"applied_revision", c.applied.Load(), "written_by", d.Writer, "err", err)
		return
	}
	c.applied.Store(d.Rev)
	c.stateMu.Lock()
	c.refused, c.refusedRev = "", 0
	c.pending = ch.Restart
	c.stateMu.Unlock()
	a.log.Info("store: configuration applied", "revision", d.Rev, "written_by", d.Writer,
		"changed", strings.Join(ch.Changed, ","), "restart_needed", strings.Join(ch.Restart, ","))
}

// share stores a change's text before it is applied (no-op without a store): a
// compare-and-swap on the revision in force. Called under changeMu.
func (a *App) share(data []byte) error {
	if a.cluster == nil {
		return nil
	}
	return a.shareOn(data, a.cluster.applied.Load())
}

// shareOn is share on revision on: the one in force, or (an import) the one this sluice refused.
func (a *App) shareOn(data []byte, on int64) error {
	c := a.cluster
	rev, err := c.st.Put(context.Background(), data, on, c.name, a.version)
	switch {
	case errors.Is(err, store.ErrConflict) && c.refusedRev != 0 && rev == c.refusedRev:
		// Retrying cannot help: every change here is made on the revision in force, and the
		// stored one is newer. An import naming the refused revision replaces it.
		return admin.Errorf(admin.Conflict, "", "this sluice refused the stored configuration (revision %d: %s) and keeps revision %d in force: nothing was changed; replace the stored one with one it can apply (sluice ctl import FILE --revision %d, PUT /v1/config with that revision)",
			c.refusedRev, c.refused, on, c.refusedRev)
	case errors.Is(err, store.ErrConflict):
		return admin.Errorf(admin.Conflict, "", "the shared configuration changed (revision %d) since this sluice applied revision %d: nothing was changed; read it again and retry", rev, on)
	case errors.Is(err, store.ErrTooLarge):
		return admin.Errorf(admin.TooLarge, "", "%v: nothing was changed", err)
	case err != nil:
		return admin.Errorf(admin.Unavailable, "", "%v: nothing was changed; the configuration last applied stays in force", err)
	}
	c.applied.Store(rev)
	return nil
}

// storeState is the link's state for the API (nil without a store).
func (a *App) storeState() *admin.StoreState {
	c := a.cluster
	if c == nil {
		return nil
	}
	st := c.st.State()
	c.stateMu.Lock()
	refused, refusedRev, pending := c.refused, c.refusedRev, c.pending
	c.stateMu.Unlock()
	streaming := 0
	if ls := c.peers.live.Load(); ls != nil {
		for _, l := range *ls {
			if l.up.Load() {
				streaming++
			}
		}
	}
	return &admin.StoreState{Kind: "etcd", Endpoints: c.opts.Endpoints, Prefix: c.opts.Prefix, Name: c.name,
		Connected: st.Connected, Since: st.Since, LastError: st.LastError, NameTakenBy: st.NameTakenBy, Revision: max(st.Rev, c.applied.Load()),
		Applied: c.applied.Load(), Refused: refused, RefusedRevision: refusedRev, PendingRestart: pending,
		PeersStreaming: streaming, CommitWaits: c.peers.waits.Load(), CommitWaitTimeouts: c.peers.timeouts.Load()}
}

// ClusterInfo implements admin.Cluster.
func (a *App) ClusterInfo() (admin.ClusterInfo, error) {
	c := a.cluster
	if c == nil {
		return admin.ClusterInfo{}, admin.Errorf(admin.NotFound, "", "this sluice shares no store (store.etcd): it is a cluster of one")
	}
	info := admin.ClusterInfo{Store: *a.storeState(), Members: []admin.Member{}}
	mv := c.members.Load()
	if ms, err := c.st.Members(context.Background()); err == nil {
		c.setMembers(ms)
		mv = c.members.Load()
	}
	if mv != nil {
		info.MembersAsOf = mv.at
		for _, m := range mv.list {
			am := admin.Member{Name: m.Name, Zone: m.Zone, Admin: m.Admin, Endpoints: m.Endpoints,
				Version: m.Version, Started: m.Started, Host: m.Host, PID: m.PID, Applied: m.Applied,
				Connections: m.Connections, Self: m.Instance == c.instance, Refused: m.Refused, RefusedRevision: m.RefusedRevision}
			if am.Self {
				am.Applied = c.applied.Load() // as it is now, not as last published (up to a second older)
			}
			info.Members = append(info.Members, am)
		}
	}
	return info, nil
}

// clusterView is SLUICE SHOW CLUSTER's answer (ok false without a store): the live nodes as
// the store last listed them (never asking it: a session waits for no etcd), and this sluice
// among them even when the store has not listed it (not registered yet, or unreachable), with
// the revision it applied as it is now (the list has it as last published, up to a second
// older).
func (a *App) clusterView() (v proxy.ClusterView, ok bool) {
	c := a.cluster
	if c == nil {
		return v, false
	}
	st := a.storeState()
	v = proxy.ClusterView{Connected: st.Connected, Since: st.Since, LastError: st.LastError, Revision: st.Revision,
		Refused: st.Refused, RefusedRevision: st.RefusedRevision, PendingRestart: st.PendingRestart}
	self := false
	if mv := c.members.Load(); mv != nil {
		for _, m := range mv.list {
			pm := proxy.ClusterMember{Name: m.Name, Zone: m.Zone, Version: m.Version, Admin: m.Admin, Endpoints: m.Endpoints,
				Started: m.Started, Applied: m.Applied, Self: m.Instance == c.instance}
			if pm.Self { // its own figures now, not as last published
				pm.Applied, self = c.applied.Load(), true
			}
			v.Members = append(v.Members, pm)
		}
	}
	if !self {
		me := proxy.ClusterMember{Name: c.name, Zone: a.config().Zone, Version: a.version, Admin: a.AdminAddr(),
			Endpoints: map[string]string{}, Started: a.started.UTC(), Applied: c.applied.Load(), Self: true}
		a.mu.Lock()
		maps.Copy(me.Endpoints, a.addrs)
		a.mu.Unlock()
		v.Members = append(v.Members, me)
		slices.SortFunc(v.Members, func(x, y proxy.ClusterMember) int { return strings.Compare(x.Name, y.Name) })
	}
	return v, true
}

// SharedConfig implements admin.Cluster.
func (a *App) SharedConfig() (admin.SharedConfig, error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	if c := a.cluster; c != nil {
		return admin.SharedConfig{Source: c.shared, Revision: c.applied.Load(), Config: string(a.raw)}, nil
	}
	return admin.SharedConfig{Source: a.cfg.Path, Config: string(a.raw)}, nil
}

// ImportConfig implements admin.Cluster: text replaces the stored configuration, validated
// with this sluice's own file, if the store is still at revision rev (0: the one in force
// here; or the stored one this sluice refused, which it replaces); then it is applied here as a
// reload, and by the others as they see it.
func (a *App) ImportConfig(text []byte, rev int64) (ch admin.Change, err error) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	defer func() { a.counted("import_config", err) }()
	c := a.cluster
	if c == nil {
		return admin.Change{}, admin.Errorf(admin.Conflict, "", "this sluice shares no store: edit %s and reload it (POST /v1/reload)", a.cfg.Path)
	}
	if _, err := a.parse(text); err != nil {
		return admin.Change{}, invalid(err)
	}
	local, err := config.ParseLocal(c.bootPath, c.boot)
	if err != nil {
		return admin.Change{}, invalid(err)
	}
	if err := secretsAllowed(local, c.shared, text); err != nil {
		return admin.Change{}, admin.Errorf(admin.Invalid, "", "%v", err)
	}
	on := c.applied.Load()
	switch {
	case rev != 0 && rev == c.refusedRev:
		// The operator replaces a stored configuration no node could apply (every change
		// made on the revision in force conflicts with it): the way back through the API.
		on = rev
	case rev != 0 && rev != on:
		return admin.Change{}, admin.Errorf(admin.Conflict, "revision", "this sluice has revision %d in force, not %d: read it again (GET /v1/config) and retry", on, rev)
	}
	if err := a.shareOn(text, on); err != nil {
		return admin.Change{}, err
	}
	ch, err = a.reloadText(text, false)
	if err != nil { // validated above: not expected
		return admin.Change{}, err
	}
	c.stateMu.Lock()
	c.pending = ch.Restart
	c.refused, c.refusedRev = "", 0
	c.stateMu.Unlock()
	ch.Persisted = true
	return ch, nil
}

// stopCluster ends the cluster's goroutines (the registration is removed) once ctx ended.
func (a *App) stopCluster() {
	if c := a.cluster; c != nil {
		c.wg.Wait()
		_ = c.st.Close()
	}
}

// shareDrain records a drain (drained) or its end in the store, before this node applies it
// (no-op without a store): every sluice node drains the node, and one that starts later finds
// it drained. Under changeMu.
func (a *App) shareDrain(node string, timeout time.Duration, drained bool) error {
	c := a.cluster
	if c == nil {
		return nil
	}
	var err error
	if drained {
		err = c.st.PutDrain(context.Background(), store.Drain{Node: node, Timeout: timeout, By: c.name, At: time.Now().UTC()})
	} else {
		err = c.st.DeleteDrain(context.Background(), node)
	}
	if err != nil {
		return admin.Errorf(admin.Unavailable, "", "%v: nothing was changed (the other sluice nodes must drain it too)", err)
	}
	return nil
}

// applyDrains follows the drains the store records: a node drained through any sluice node
// is drained here, one undrained is back in service.
func (a *App) applyDrains(ds map[string]store.Drain) {
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	c := a.cluster
	snap := a.topo.Snapshot()
	for i, n := range snap.Nodes {
		if snap.IsRemoved(i) || snap.IsPrimary(i) {
			continue
		}
		d, drained := ds[n.Name]
		_, was := c.drains[n.Name]
		switch {
		case drained && !snap.IsDraining(i):
			if err := a.drain(i, n.Name, d.Timeout, "sluice "+d.By+" (through the store)"); err != nil {
				a.log.Error("store: a drain was not applied", "node", n.Name, "err", err)
			}
		case !drained && was && snap.IsDraining(i):
			if err := a.undrain(i, n.Name, "the store"); err != nil {
				a.log.Error("store: an undrain was not applied", "node", n.Name, "err", err)
			}
		}
	}
	c.drains = ds
}

// othersHold names the other live sluice nodes that last reported connections to node (nil:
// none): a node leaves the configuration only once no sluice holds one.
func (a *App) othersHold(node string) []string {
	c := a.cluster
	mv := c.members.Load()
	if ms, err := c.st.Members(context.Background()); err == nil {
		mv = &membersView{list: ms, at: time.Now()}
	}
	if mv == nil {
		return nil
	}
	var out []string
	for _, m := range mv.list {
		if m.Instance != c.instance && m.Connections[node] > 0 {
			out = append(out, fmt.Sprintf("%s (%d)", m.Name, m.Connections[node]))
		}
	}
	return out
}

// cached is store.cache_file's content.
type cached struct {
	Revision int64  `json:"revision"`
	Key      string `json:"key"`
	Config   string `json:"config"`
}

// cacheLoop keeps store.cache_file a copy of the stored configuration in force: checked each
// second, written (to a temporary file renamed over it) when the revision in force moved.
func (a *App) cacheLoop(ctx context.Context) {
	c := a.cluster
	var written int64 = -1
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if rev := c.applied.Load(); rev != written {
			a.changeMu.Lock()
			rev, text := c.applied.Load(), string(a.raw)
			a.changeMu.Unlock()
			data, _ := json.Marshal(cached{Revision: rev, Key: c.shared, Config: text})
			if f, err := os.OpenFile(c.cacheFile, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				f.Close() // made 0600 first: WriteFile keeps an existing file's mode
			}
			if err := config.WriteFile(c.cacheFile, data); err != nil {
				a.log.Warn("store.cache_file not written", "file", c.cacheFile, "err", err)
			} else {
				written = rev
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// readCache reads store.cache_file.
func readCache(path string) (store.Doc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return store.Doc{}, err
	}
	var c cached
	if err := json.Unmarshal(data, &c); err != nil || c.Config == "" {
		return store.Doc{}, fmt.Errorf("%s is not a copy sluice wrote (%v)", path, err)
	}
	return store.Doc{Text: []byte(c.Config), Rev: c.Revision, Format: store.Format, Writer: "store.cache_file"}, nil
}
