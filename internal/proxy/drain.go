package proxy

import (
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Draining a node (topology.SetDraining): it takes no new reads or bindings at once (routing
// skips it); a session gives up its connection there at its next statement boundary where it
// holds nothing on it (no transaction, no open cursor), and a read-only endpoint's session bound
// to it moves to another replica, its state replayed there at first use. What is left when the
// drain's timeout ends is closed (Proxy.CloseNodeConns).

// leave lets go of what the session holds on nodes it should no longer use, where it can: its
// connections to the nodes snap drains (not the home's), and a read-only endpoint's home that
// is drained or left the topology (drained, then removed; its slot perhaps another node's
// since): the session moves to another replica (rebind). Nothing is let go that holds a
// transaction, pinned state or an open cursor. A home connection closed while the session was
// idle (ReleaseIdle) held nothing the session needs.
func (ns *nodeSet) leave(rs *route.Session, set *route.Settings, snap *topology.Snapshot) {
	if snap.Draining != 0 {
		for i, c := range ns.conns {
			if c == nil || i == ns.homeIdx || !snap.IsDraining(i) || ns.inTxOn(i, rs) || ns.cursorOn(c) {
				continue
			}
			ns.drop(i)
		}
		// A read-only endpoint's session bound to the node (its connection there perhaps
		// closed already, while it was idle) moves to another replica.
		if set.Mode == route.ReadOnly && snap.IsDraining(ns.homeIdx) && ns.mayRebind(rs) {
			ns.rebind(rs, set, snap)
		}
	}
	if (snap.Nodes[ns.homeIdx] != ns.homeNode || snap.IsRemoved(ns.homeIdx)) && set.Mode == route.ReadOnly && ns.mayRebind(rs) {
		ns.rebind(rs, set, snap)
	}
}

// cursorOn reports whether the session has a cursor open on c.
func (ns *nodeSet) cursorOn(c *nodeConn) bool {
	return ns.hooks.cursorOn != nil && ns.hooks.cursorOn(c.Conn)
}

// ReleaseIdle closes, at a drain's start, the connections idle sessions hold to node i that
// carry only state replayed on the next node used: any but a read-write session's home (the
// primary), in a session without a transaction, pins or a cursor. An idle pool would otherwise
// keep the drain waiting until its timeout. A read-only session whose home it closes moves to
// another replica at its next statement. Only sessions idle long enough for the idle watch to
// notice the closed connection (and release it) are touched: the drain calls it again while
// it waits. It returns how many it closed.
func (p *Proxy) ReleaseIdle(i int) int { return p.closeConnsTo(i, true) }

// CloseNodeConns closes every connection sluice's sessions hold to node i (a drain's timeout):
// what ran there fails, as when the node goes away; the sessions go on elsewhere where they can.
// It returns how many it closed.
func (p *Proxy) CloseNodeConns(i int) int { return p.closeConnsTo(i, false) }

// closeConnsTo closes the connections the sessions hold to node i and returns how many: with
// idleOnly, only those ReleaseIdle may close (idle sessions, watched while idle, never a
// read-write or pinned session's home); without, all of them. An idle session's connection
// (nothing under way on it) gets a goodbye first (COM_QUIT, written straight to its socket:
// the session's goroutine owns its buffers), so the node does not count it aborted; a busy
// one's is cut.
func (p *Proxy) closeConnsTo(i int, idleOnly bool) int {
	n := p.topo.Snapshot().Nodes[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	closed := 0
	for s := range p.sessions {
		movableHome := true
		if idleOnly {
			inTx, pinned, idleSince := s.view.held()
			if !s.life.idle() || inTx || s.nodes.mayHoldCursor() {
				continue // busy, or holding a transaction or perhaps a cursor on its connections
			}
			if idleSince.IsZero() || time.Since(idleSince) < idleProbe+200*time.Millisecond {
				// Not yet watched while idle: the connection's loss would be found only when the
				// session next uses it. Sessions that stay idle are released at the next call.
				continue
			}
			movableHome = s.settings.mode == route.ReadOnly && !pinned
		}
		idle := s.life.idle()
		s.nodes.withTargets(func(ts []killTarget) {
			for _, t := range ts {
				if t.node == n && (!t.home || movableHome) {
					if idle {
						_ = backend.WriteQuit(t.conn, t.compressed)
					}
					t.conn.Close() // an idle session's watch sees it lost, and releases it
					closed++
				}
			}
		})
	}
	return closed
}
