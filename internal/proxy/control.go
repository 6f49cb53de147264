package proxy

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/route"
)

// What the control plane reads of the proxy and changes in it, while it serves.

// sessionStats counts statements: in total, and by the node each went to. A session's are
// written by its own goroutine only (uncontended atomics, no allocation); an endpoint's add up
// its ended sessions.
type sessionStats struct {
	stmts  atomic.Uint64
	byNode []atomic.Uint64
}

func (st *sessionStats) count(node int) {
	st.stmts.Add(1)
	if node >= 0 && node < len(st.byNode) {
		st.byNode[node].Add(1)
	}
}

func (st *sessionStats) add(o *sessionStats) {
	st.stmts.Add(o.stmts.Load())
	for i := range o.byNode {
		if i < len(st.byNode) {
			st.byNode[i].Add(o.byNode[i].Load())
		}
	}
}

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
	Pins     []string // what holds it on the primary
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
		info := s.info.Load()
		if info == nil {
			continue // still logging in
		}
		si := SessionInfo{ID: s.id, User: info.user, Client: s.raw.RemoteAddr().String(), Endpoint: s.ep.cfg.Name,
			InTx: s.inTx.Load(), Pins: pinNames(route.Pin(s.pins.Load())), Started: info.started}
		if t := s.cmdStart.Load(); t != 0 {
			si.Statement = time.Unix(0, t)
		}
		if ts := s.killTarget.Load(); ts != nil {
			for _, t := range *ts {
				si.Nodes = append(si.Nodes, t.node.Name)
			}
		}
		out = append(out, si)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return int(a.ID) - int(b.ID) })
	return out
}

func pinNames(p route.Pin) []string {
	var names []string
	for _, n := range []struct {
		pin  route.Pin
		name string
	}{{route.PinTempTable, "temporary table"}, {route.PinLockTables, "LOCK TABLES"}, {route.PinGetLock, "GET_LOCK"},
		{route.PinSet, "session variable"}, {route.PinMulti, "multi-statement"}} {
		if p&n.pin != 0 {
			names = append(names, n.name)
		}
	}
	return names
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
}

// EndpointStats returns endpoint name's figures: its ended sessions' and its live ones'.
func (p *Proxy) EndpointStats(name string) EndpointStats {
	ep := p.endpoints[name]
	if ep == nil {
		return EndpointStats{}
	}
	st := EndpointStats{Sessions: ep.active.Load(), ByNode: make([]uint64, len(ep.done.byNode))}
	p.mu.Lock()
	st.Statements = ep.done.stmts.Load()
	for i := range ep.done.byNode {
		st.ByNode[i] = ep.done.byNode[i].Load()
	}
	for s := range p.sessions {
		if s.ep != ep {
			continue
		}
		st.Statements += s.stats.stmts.Load()
		for i := range s.stats.byNode {
			if i < len(st.ByNode) {
				st.ByNode[i] += s.stats.byNode[i].Load()
			}
		}
	}
	p.mu.Unlock()
	return st
}

// SetMaxConnections changes endpoint name's max_connections (0: no limit) for the connections
// it accepts from now on; it reports whether there is such an endpoint.
func (p *Proxy) SetMaxConnections(name string, n int) bool {
	ep := p.endpoints[name]
	if ep == nil {
		return false
	}
	ep.maxConns.Store(int64(n))
	return true
}
