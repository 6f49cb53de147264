package proxy

import (
	"time"

	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Draining a node (topology.SetDraining): it takes no new reads or bindings at once (routing
// skips it); a session gives up its connection there at its next statement boundary where it
// holds nothing on it (no transaction, no open cursor), and a read-only endpoint's session bound
// to it moves to another replica, its state replayed there at first use. What is left when the
// drain's timeout ends is closed (Proxy.CloseNodeConns).

// leaveDraining lets go of the session's connections to the nodes snap drains, where it can.
func (s *session) leaveDraining(set *route.Settings, snap *topology.Snapshot) {
	for i, c := range s.conns {
		if c == nil || i == s.home || !snap.IsDraining(i) || s.inTxOn(i) || s.cursorOn(c) {
			continue
		}
		s.drop(i)
	}
	// A read-only endpoint's session bound to the node (its connection there perhaps closed
	// already, while it was idle) moves to another replica.
	if set.Mode == route.ReadOnly && snap.IsDraining(s.home) && s.movable() {
		if c := s.conns[s.home]; c == nil || !s.cursorOn(c) {
			s.rebind(set, snap)
		}
	}
}

// leaveRemovedHome moves a read-only endpoint's session whose replica left the topology
// (drained, then removed; its slot perhaps another node's since) to another replica, as from a
// drained one, when it holds nothing there. The node's connection, closed while the session
// was idle (ReleaseIdle), holds nothing the session needs.
func (s *session) leaveRemovedHome(set *route.Settings, snap *topology.Snapshot) {
	if set.Mode != route.ReadOnly || !s.movable() {
		return
	}
	if c := s.conns[s.home]; c != nil && s.cursorOn(c) {
		return
	}
	s.rebind(set, snap)
}

// cursorOn reports whether a prepared statement has a cursor open on c.
func (s *session) cursorOn(c *nodeConn) bool {
	return s.stmts.cursorOn(c.Conn)
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
// read-write or pinned session's home); without, all of them.
func (p *Proxy) closeConnsTo(i int, idleOnly bool) int {
	n := p.topo.Snapshot().Nodes[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	closed := 0
	for s := range p.sessions {
		movableHome := true
		if idleOnly {
			inTx, pinned, idleSince := s.view.held()
			if !s.life.idle() || inTx || s.usedCursor.Load() {
				continue // busy, or holding a transaction or perhaps a cursor on its connections
			}
			if idleSince.IsZero() || time.Since(idleSince) < idleProbe+200*time.Millisecond {
				// Not yet watched while idle: the connection's loss would be found only when the
				// session next uses it. Sessions that stay idle are released at the next call.
				continue
			}
			movableHome = s.settings.mode == route.ReadOnly && !pinned
		}
		if ts := s.killTarget.Load(); ts != nil {
			for _, t := range *ts {
				if t.node == n && (!t.home || movableHome) {
					t.conn.Close() // an idle session's watch sees it lost, and releases it
					closed++
				}
			}
		}
	}
	return closed
}
