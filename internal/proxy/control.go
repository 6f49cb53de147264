package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/route"
)

// What the control plane reads of the proxy and changes in it, while it serves.

// sessionStats counts statements by the node each went to and why (route.Reason), and their
// latency by node in LatencyBuckets. A session's are written by its own goroutine only
// (uncontended atomics, no allocation); an endpoint's add up its ended sessions.
type sessionStats struct {
	nodes   int
	byRoute []atomic.Uint64 // [reason*nodes + node]
	lat     []atomic.Uint64 // [node*(len(LatencyBuckets)+1) + bucket]: statements per bucket, the last +Inf
	latSum  []atomic.Uint64 // [node]: nanoseconds
	// bytesIn and bytesOut are the client connection's traffic: a session's as of its last
	// command (sessionView.traffic), an endpoint's the sum of its ended sessions'.
	bytesIn, bytesOut atomic.Uint64
}

// LatencyBuckets are the upper bounds, in seconds, of the statement latency histograms.
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newSessionStats(nodes int) *sessionStats {
	return &sessionStats{nodes: nodes, byRoute: make([]atomic.Uint64, route.NumReasons*nodes),
		lat: make([]atomic.Uint64, nodes*(len(LatencyBuckets)+1)), latSum: make([]atomic.Uint64, nodes)}
}

// count records a statement sent to node for reason, which took took (from its command's
// arrival to the end of its answer).
func (st *sessionStats) count(node int, reason route.Reason, took time.Duration) {
	if node < 0 || node >= st.nodes || int(reason) >= route.NumReasons {
		return
	}
	// Its session's goroutine is the only writer of a session's counts (an endpoint's are
	// added to, never counted into): a load and a store keep each value whole for readers,
	// without a locked read-modify-write per statement.
	bump(&st.byRoute[int(reason)*st.nodes+node], 1)
	secs := took.Seconds()
	b := 0
	for b < len(LatencyBuckets) && secs > LatencyBuckets[b] {
		b++
	}
	bump(&st.lat[node*(len(LatencyBuckets)+1)+b], 1)
	bump(&st.latSum[node], uint64(took))
}

// bump adds n to a counter that only the calling goroutine writes.
func bump(c *atomic.Uint64, n uint64) { c.Store(c.Load() + n) }

// add adds o's counts to st, which has room for o's nodes (st.nodes >= o.nodes).
func (st *sessionStats) add(o *sessionStats) {
	for r := range route.NumReasons {
		for i := range o.nodes {
			st.byRoute[r*st.nodes+i].Add(o.byRoute[r*o.nodes+i].Load())
		}
	}
	for i := range o.lat { // node-major: node i's buckets sit at the same place in both
		st.lat[i].Add(o.lat[i].Load())
	}
	for i := range o.latSum {
		st.latSum[i].Add(o.latSum[i].Load())
	}
	st.bytesIn.Add(o.bytesIn.Load())
	st.bytesOut.Add(o.bytesOut.Load())
}

// grown returns st's counts with room for nodes nodes (st itself when it has that room).
func (st *sessionStats) grown(nodes int) *sessionStats {
	if nodes <= st.nodes {
		return st
	}
	g := newSessionStats(nodes)
	g.add(st)
	return g
}

// sessionView is what a session publishes of itself: its statement counts (EndpointStats),
// what the control plane lists (SessionList) and what a drain asks of an idle session
// (ReleaseIdle), and its last route (SHOW LAST ROUTE). The session's goroutine is its only
// writer. Every method but routed and lastRoute may be called from any goroutine: they read
// atomics, each value on its own (a reader may see inTx of one command with pins of the next).
// routed and lastRoute belong to the session's goroutine.
type sessionView struct {
	stats    atomic.Pointer[sessionStats]
	info     atomic.Pointer[sessionInfo] // nil until logged in
	cmdStart atomic.Int64                // when the current command began (unix ns); 0: idle
	// idleSince is when the last command ended (unix ns): past idleProbe, the idle watch
	// reads the session's node connections (ReleaseIdle relies on it).
	idleSince atomic.Int64
	inTx      atomic.Bool
	pins      atomic.Uint32
	last      routeInfo // the previous statement's route (SHOW LAST ROUTE)
}

// init readies the view of a session begun when the topology had nodes nodes (before the
// session is published).
func (v *sessionView) init(nodes int) { v.stats.Store(newSessionStats(nodes)) }

// loggedIn publishes the session, logged in as user at now.
func (v *sessionView) loggedIn(user string, now time.Time) {
	v.info.Store(&sessionInfo{user: user, started: now})
	v.idleSince.Store(now.UnixNano())
}

// changedUser publishes the session's new user (COM_CHANGE_USER); it keeps its start.
func (v *sessionView) changedUser(user string) {
	v.info.Store(&sessionInfo{user: user, started: v.info.Load().started})
}

// commandStarted and commandEnded bracket a command: the session is busy in between, and
// after it holds a transaction (inTx) and pins as the command left them.
func (v *sessionView) commandStarted(now time.Time) { v.cmdStart.Store(now.UnixNano()) }

func (v *sessionView) commandEnded(now time.Time, inTx bool, pins route.Pin) {
	v.cmdStart.Store(0)
	v.idleSince.Store(now.UnixNano())
	v.inTx.Store(inTx)
	v.pins.Store(uint32(pins))
}

// commandTook is how long the current command has run at now() (0 outside a command, where
// the clock is not read).
func (v *sessionView) commandTook(now func() time.Time) time.Duration {
	if t := v.cmdStart.Load(); t != 0 {
		return time.Duration(now().UnixNano() - t)
	}
	return 0
}

// count records a statement sent to node for reason, which took took, making room for a node
// added to the topology since the session began (topo is asked how many it has now, only
// then). The session's goroutine is the stats' only writer: a fold reading the old ones
// meanwhile misses no count it could have seen. It does not allocate but to grow.
func (v *sessionView) count(node int, reason route.Reason, took time.Duration, topo snapshots) {
	st := v.stats.Load()
	if node >= st.nodes {
		st = st.grown(max(node+1, len(topo.Snapshot().Nodes)))
		v.stats.Store(st)
	}
	st.count(node, reason, took)
}

// traffic records the client connection's bytes so far, read (in) and written (out): plain
// stores of the connection's own counters, at each command's end and the session's.
func (v *sessionView) traffic(in, out uint64) {
	st := v.stats.Load()
	st.bytesIn.Store(in)
	st.bytesOut.Store(out)
}

// counts returns the session's statement counts (add them up, never change them).
func (v *sessionView) counts() *sessionStats { return v.stats.Load() }

// held reports whether the idle session holds its node connections for a reason of its
// own (a transaction, pins), and since when it is idle (zero: busy, or not yet logged in).
func (v *sessionView) held() (inTx, pinned bool, idleSince time.Time) {
	if t := v.idleSince.Load(); t != 0 {
		idleSince = time.Unix(0, t)
	}
	return v.inTx.Load(), v.pins.Load() != 0, idleSince
}

// describe fills in what the view knows of a session for SessionList; false while the session
// still logs in.
func (v *sessionView) describe(si *SessionInfo) bool {
	info := v.info.Load()
	if info == nil {
		return false
	}
	si.User, si.Started = info.user, info.started
	si.InTx, si.Pins = v.inTx.Load(), route.Pin(v.pins.Load()).Names(nil)
	if t := v.cmdStart.Load(); t != 0 {
		si.Statement = time.Unix(0, t)
	}
	return true
}

// routed records the route of the statement that just ran (node -1: sluice answered it).
func (v *sessionView) routed(node int, reason route.Reason) {
	v.last = routeInfo{valid: true, node: node, reason: reason}
}

// lastRoute is the previous statement's route.
func (v *sessionView) lastRoute() routeInfo { return v.last }

// sessionInfo is what a session publishes once logged in.
type sessionInfo struct {
	user    string
	started time.Time
}

// SessionInfo describes one client session.
type SessionInfo struct {
	ID       uint32
	User     string
	Client   string
	Endpoint string
	Nodes    []string // the nodes it holds a connection to
	InTx     bool
	Pins     []string // what holds it on the primary: route.PinNames
	Started  time.Time
	// Statement is when its current command began; zero when idle.
	Statement time.Time
}

// SessionList describes the sessions that have logged in, by id.
func (p *Proxy) SessionList() []SessionInfo {
	p.mu.Lock()
	ss := make([]*session, 0, len(p.sessions))
	for s := range p.sessions {
		ss = append(ss, s)
	}
	p.mu.Unlock()
	var out []SessionInfo
	for _, s := range ss {
		si := SessionInfo{ID: s.id, Client: s.raw.RemoteAddr().String(), Endpoint: s.ep.cfg.Name}
		if !s.view.describe(&si) {
			continue // still logging in
		}
		if ts := s.nodes.killTargets(); ts != nil {
			for _, t := range ts {
				si.Nodes = append(si.Nodes, t.node.Name)
			}
		}
		out = append(out, si)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return int(a.ID) - int(b.ID) })
	return out
}

// KillSession closes client session id as KILL CONNECTION does: its client connection and its
// node connections. It reports whether there was such a session.
func (p *Proxy) KillSession(id uint32) bool {
	s := p.session(id)
	if s == nil {
		return false
	}
	s.log.Info("session killed from the admin API")
	s.kill()
	return true
}

// EndpointStats are an endpoint's live figures.
type EndpointStats struct {
	Sessions   int64
	Statements uint64
	ByNode     []uint64 // statements sent to each node, by node index
	// ByRoute counts statements by reason and node: [reason][node].
	ByRoute [][]uint64
	// Latency: per node, statements per LatencyBuckets bucket (the last +Inf) and their sum.
	Latency    [][]uint64
	LatencySum []time.Duration
	// Pinned counts the live sessions held on the primary by each pin reason (a session
	// with two counts under both), by bit: route.PinNames labels them.
	Pinned [route.NumPins]int64
}

// EndpointStats returns endpoint name's figures: its ended sessions' and its live ones'.
func (p *Proxy) EndpointStats(name string) EndpointStats {
	ep := p.endpoint(name)
	if ep == nil {
		return EndpointStats{}
	}
	// Under the lock, the ended sessions' total and the live sessions (a session's counters
	// are folded into done under the same lock as it leaves the live ones: each is counted
	// once); the adding up is done outside it, so that a scrape does not hold up logins.
	var pinned [route.NumPins]int64
	p.mu.Lock()
	done := ep.done
	live := make([]*sessionStats, 0, len(p.sessions))
	for s := range p.sessions {
		if s.ep == ep {
			live = append(live, s.view.counts())
			// As the session published them after its last command (sessionView): read
			// here, at the scrape, never counted per statement.
			if pins := s.view.pins.Load(); pins != 0 {
				for i := range pinned {
					if pins&(1<<i) != 0 {
						pinned[i]++
					}
				}
			}
		}
	}
	// done is replaced, not changed, when it grows; it is added to under mu: copied here.
	n := done.nodes
	for _, st := range live {
		n = max(n, st.nodes)
	}
	sum := newSessionStats(n)
	sum.add(done)
	p.mu.Unlock()
	for _, st := range live {
		sum.add(st)
	}
	st := EndpointStats{Sessions: ep.active.Load(), ByNode: make([]uint64, n), ByRoute: make([][]uint64, route.NumReasons),
		Latency: make([][]uint64, n), LatencySum: make([]time.Duration, n), Pinned: pinned}
	for r := range route.NumReasons {
		st.ByRoute[r] = make([]uint64, n)
		for i := range n {
			v := sum.byRoute[r*n+i].Load()
			st.ByRoute[r][i] = v
			st.ByNode[i] += v
			st.Statements += v
		}
	}
	for i := range n {
		st.Latency[i] = make([]uint64, len(LatencyBuckets)+1)
		for b := range st.Latency[i] {
			st.Latency[i][b] = sum.lat[i*(len(LatencyBuckets)+1)+b].Load()
		}
		st.LatencySum[i] = time.Duration(sum.latSum[i].Load())
	}
	return st
}

// ConsistencyCounts returns the consistency levels' counters: replica reads that waited for a
// position, those that timed out, and readings of the primary's position (global level).
func (p *Proxy) ConsistencyCounts() (waits, timeouts, positionReads uint64) {
	return uint64(p.consistencyWaits.Load()), uint64(p.consistencyTimeouts.Load()), p.primaryPos.readings()
}

// admission is who an endpoint lets in: at most maxConns sessions (0: no limit), from the
// networks in allow (empty: any). Immutable; replaced whole.
type admission struct {
	maxConns int64
	allow    []netip.Prefix
}

// UpdateEndpoint puts s in force for endpoint name, as one change: the routing settings are
// checked first, and settings that do not fit (weights for more nodes than the topology has, no
// policy, ...) change nothing. Sessions route with the new settings from their next statement;
// the limit and the allow list apply to the connections accepted from then on. The caller keeps
// s (it is copied). Safe from any goroutine; changes of one endpoint must not race each other
// (the app makes them under its change lock).
func (p *Proxy) UpdateEndpoint(name string, s EndpointSettings) error {
	ep := p.endpoint(name)
	if ep == nil {
		return fmt.Errorf("proxy: no endpoint %q", name)
	}
	if err := ep.route.Update(s.Routing); err != nil {
		return err
	}
	p.known.use(s.Routing.Consistency)
	ep.admit.Store(&admission{maxConns: int64(s.MaxConnections), allow: slices.Clone(s.Allow)})
	ep.pool.Store(clonePool(s.Pool).of(name))
	return nil
}

// EndpointSettings returns a copy of endpoint name's settings in force (changing it changes
// nothing; UpdateEndpoint does), and false when there is no such endpoint.
func (p *Proxy) EndpointSettings(name string) (EndpointSettings, bool) {
	ep := p.endpoint(name)
	if ep == nil {
		return EndpointSettings{}, false
	}
	a := ep.admit.Load()
	r := *ep.route.Settings()
	r.Weights = slices.Clone(r.Weights)
	return EndpointSettings{MaxConnections: int(a.maxConns), Allow: slices.Clone(a.allow), Routing: r, Pool: *clonePool(*ep.pool.Load())}, true
}

// allowed reports whether the endpoint's allow list lets a client from ip in.
func (ep *endpoint) allowed(ip netip.Addr) bool {
	a := ep.admit.Load().allow
	if len(a) == 0 {
		return true
	}
	// An IPv4 client is compared in both of its forms: as itself against IPv4 networks, and
	// as its IPv4-mapped IPv6 address against IPv6 networks (::/0 covers it).
	ip = ip.Unmap()
	mapped := ip
	if ip.Is4() {
		mapped = netip.AddrFrom16(ip.As16())
	}
	for _, p := range a {
		if p.Contains(ip) || p.Contains(mapped) {
			return true
		}
	}
	return false
}
