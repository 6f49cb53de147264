package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// nodeSet owns one session's node connections: at most one per node index, opened the first
// time a statement goes there (use) through the dial hook it was given; the session's home
// (the primary on a read-write endpoint, the bound replica on a read-only one) and the node the
// last statement ran on (current); the session state every connection must carry before its
// next use (state, brought in line by backend.Conn.Sync, only where a connection's fingerprint
// differs); and what other goroutines may read of it: the kill targets (one per open
// connection, published whole on every change) and whether a cursor was ever opened.
//
// It is the seam where pooling plugs in: connections come from hooks.dial and leave through
// drop, closeAll and reset, and nothing else in the package opens or closes them. Each one
// closed leaves with a goodbye (COM_QUIT) unless a command failed on it (ending).
//
// Only the session's goroutine calls its methods, except killTargets and mayHoldCursor, which
// any goroutine may call; while the session is idle, its idle watchers may read home and the
// connections too (nothing changes them then). A nodeSet is not copied once initialised.
type nodeSet struct {
	topo  Topology
	log   *slog.Logger
	hooks nodeHooks

	conns []*nodeConn // by node index; nil until first used, and after drop
	// homeIdx is the session's home; homeNode the node that was in that slot when the session
	// made it its home: a slot whose node was removed (and perhaps replaced) no longer holds it.
	homeIdx  int
	homeNode *topology.Node
	// curIdx is the node of the current (or last) statement, curNode that node and curConn
	// the connection to it (nil when it was closed): what the hot path forwards to.
	curIdx  int
	curNode *topology.Node
	curConn *backend.Conn
	// st is what every connection must carry before its next use: the schema, the
	// COM_SET_OPTION value, the session statements (SET ..., SET NAMES) to replay.
	st backend.State

	// targets is published for KILL, a drain and shutdown from other goroutines. killMu is
	// held (read) by whoever acts on the targets it loaded (sends a KILL to their threads,
	// closes their connections), and (write) by releaseAll while it unpublishes them: once
	// releaseAll has them, no KILL meant for this session can reach a node thread the pool
	// hands to another session.
	targets atomic.Pointer[targetSet]
	killMu  sync.RWMutex
	// cursor: a cursor was opened on one of the connections (a drain leaves the session's idle
	// connections alone: a FETCH may follow).
	cursor atomic.Bool
	// settled: the session ended between two commands (no response pending on any connection),
	// so its connections may be reset and pooled; tainted: it ran something a reset may not
	// undo (XA), so none may. Session goroutine only.
	settled, tainted bool
	// share is what the connections hold beyond st under pool_mode transaction.
	share sharing
	// spare is the wrapper of the connection lent last (lendAll), reused when open gets that
	// same connection back; its flight is disarmed (lent between commands).
	spare *nodeConn
}

// nodeHooks is what a node set needs from its owner. Every hook runs on the session's
// goroutine.
type nodeHooks struct {
	// dial connects to node n as the session's client, starting at state st (schema, epoch);
	// a connection to a node that is not the primary is read-only. A pool replaces it.
	dial func(n *topology.Node, readOnly bool, st *backend.State) (*backend.Conn, error)
	// opened learns from a new connection (its greeting) before it is used.
	opened func(c *nodeConn, n *topology.Node)
	// closing is told of a connection about to be closed: what the session bound to it
	// (prepared statements, cursors) is gone with it.
	closing func(bc *backend.Conn)
	// cursorOn reports whether the session has a cursor open on bc.
	cursorOn func(bc *backend.Conn) bool
	// spare connects to node n for one command (a KILL), outside any pool: the caller closes
	// the connection. nil: dial.
	spare func(n *topology.Node, st *backend.State) (*backend.Conn, error)
	// discard closes a connection dial gave, as how says (a pool forgets it). nil: how.end.
	discard func(bc *backend.Conn, how ending)
}

// ending is how a node connection the set closes ends: with a goodbye the node counts as a
// client quitting (COM_QUIT), not in Aborted_clients with an "Aborted connection" warning
// (backend's quit.go).
type ending uint8

const (
	endIdle    ending = iota // between two commands: COM_QUIT, then close
	endPending               // an answer may still be coming: COM_QUIT, what comes read (bounded), close
	endBroken                // a command failed on it: closed
)

// pendingBound bounds how long a session's end reads what a node still sends of an answer the
// client left in the middle of (endPending) before it closes the connection: the session's
// goroutine only (its client is gone); measured, a node sends a generated result at 40 MB/s
// and more on a busy 2-core machine.
const pendingBound = time.Second

// end closes bc as how says.
func (how ending) end(bc *backend.Conn) {
	switch how {
	case endIdle:
		bc.Quit()
	case endPending:
		bc.QuitPending(pendingBound)
	default:
		bc.Close()
	}
}

// init readies an empty set for topo's nodes; the home is node 0 until openHome.
func (ns *nodeSet) init(topo Topology, log *slog.Logger, h nodeHooks) {
	ns.topo, ns.log, ns.hooks = topo, log, h
	ns.conns = make([]*nodeConn, len(topo.Snapshot().Nodes))
}

// state is the session state the set's connections carry: the session records what it
// changes there (the set replays it before each connection's next use).
func (ns *nodeSet) state() *backend.State { return &ns.st }

// cur is the index of the current (or last) statement's node.
func (ns *nodeSet) cur() int { return ns.curIdx }

// node is the current (or last) statement's node.
func (ns *nodeSet) node() *topology.Node { return ns.curNode }

// conn is the connection to the current node (nil when it was closed).
func (ns *nodeSet) conn() *backend.Conn { return ns.curConn }

// home is the index of the session's home node.
func (ns *nodeSet) home() int { return ns.homeIdx }

// at returns the connection to node i, or nil.
func (ns *nodeSet) at(i int) *nodeConn {
	if i < 0 || i >= len(ns.conns) {
		return nil
	}
	return ns.conns[i]
}

// all is the connections by node index (nil where none): for reading only.
func (ns *nodeSet) all() []*nodeConn { return ns.conns }

// open dials node i and adds the connection to the set (replacing one it had there).
func (ns *nodeSet) open(i int) (*nodeConn, error) {
	snap := ns.topo.Snapshot()
	n := snap.Nodes[i]
	bc, err := ns.hooks.dial(n, !snap.IsPrimary(i), &ns.st)
	if err != nil {
		return nil, err
	}
	// Counted first, then checked: a node added into a removed node's slot (Topology.AddNode)
	// either sees this connection counted, and takes another slot, or is seen here.
	snap.Load[i].Conns.Add(1)
	if cur := ns.topo.Snapshot(); cur.Nodes[i] != n || cur.IsRemoved(i) {
		snap.Load[i].Conns.Add(-1)
		ns.discard(bc, endIdle)
		return nil, &backend.ConnectError{Addr: n.Address, Err: fmt.Errorf("%w: %s", errNodeGone, n.Name)}
	}
	var c *nodeConn
	if sp := ns.spare; sp != nil && sp.Conn == bc && sp.idx == i && sp.name == n.Name {
		// The connection lent last came back (the pool hands out the most recently given
		// back first): its wrapper, and the kill targets published for it, serve again.
		c, ns.spare = sp, nil
		c.released.Store(false)
		c.used = false
	} else {
		c = &nodeConn{Conn: bc, idx: i, name: n.Name}
	}
	if ns.hooks.opened != nil {
		ns.hooks.opened(c, n)
	}
	ns.room(i)
	if ns.conns[i] != nil {
		ns.closeConn(i, endIdle)
	}
	ns.conns[i] = c
	ns.publish()
	return c, nil
}

// dialSpare opens a connection to node n as the set's client that the set does not keep (nor
// count, nor publish): the caller uses it for one thing (a KILL) and closes it.
func (ns *nodeSet) dialSpare(n *topology.Node) (*backend.Conn, error) {
	if ns.hooks.spare != nil {
		return ns.hooks.spare(n, &ns.st)
	}
	return ns.hooks.dial(n, false, &ns.st)
}

// openHome opens node i as the session's home and makes it current.
func (ns *nodeSet) openHome(i int) (*nodeConn, error) {
	c, err := ns.open(i)
	if err != nil {
		return nil, err
	}
	ns.homeIdx, ns.curIdx, ns.curNode, ns.curConn = i, i, ns.topo.Snapshot().Nodes[i], c.Conn
	ns.homeNode = ns.curNode
	ns.publish() // open published it before its home was known
	return c, nil
}

// use makes node i's connection current, opening it and bringing it in line with the session
// state. On the hot path: nothing allocates when the connection is open and in line.
func (ns *nodeSet) use(i int) (*nodeConn, error) {
	ns.room(i)
	c := ns.conns[i]
	if c == nil {
		var err error
		if c, err = ns.open(i); err != nil {
			return nil, err
		}
	}
	c.used = true // before sync: a replay goes out on it
	c, err := ns.sync(c)
	if err != nil {
		return nil, err
	}
	c.used = true // sync may have replaced it
	ns.curIdx, ns.curNode, ns.curConn = i, ns.topo.Snapshot().Nodes[i], c.Conn
	return c, nil
}

// room makes room for node i (added to the topology since the session began).
func (ns *nodeSet) room(i int) {
	if i >= len(ns.conns) {
		ns.conns = append(ns.conns, make([]*nodeConn, i+1-len(ns.conns))...)
	}
}

// sync brings c in line with the session state (only what differs is sent). A connection that
// carries state the session has since reset is replaced by a fresh one.
func (ns *nodeSet) sync(c *nodeConn) (*nodeConn, error) {
	err := c.Sync(&ns.st)
	if err == nil {
		return c, nil // before errors.As, whose target would be allocated on every statement
	}
	if errors.Is(err, backend.ErrDiverged) {
		ns.drop(c.idx)
		if c, err = ns.open(c.idx); err != nil {
			return nil, err
		}
		err = c.Sync(&ns.st)
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return nil, errStateSync
	}
	return c, err
}

// drop closes node i's connection, if any, between two commands (to let go of it, or after
// a failure the node reported or that sluice saw first: a COM_QUIT to a socket that broke
// fails at once).
func (ns *nodeSet) drop(i int) { ns.dropAs(i, endIdle) }

// dropAs is drop, the connection ended as how says.
func (ns *nodeSet) dropAs(i int, how ending) {
	if i < len(ns.conns) && ns.conns[i] != nil {
		ns.closeConn(i, how)
		ns.publish()
	}
}

// dropFailed drops node i's connection after a command failed there, the failure's node made
// current first: what reports the failure afterwards names node() — node i, or the home node
// when the current connection was i's (closeConn moves current there).
func (ns *nodeSet) dropFailed(i int) {
	ns.curNode = ns.topo.Snapshot().Nodes[i]
	ns.dropAs(i, endBroken)
}

// closeConn closes node i's connection as how says and forgets it, and everything that
// pointed at it: the current connection falls back to the home node's; the session unbinds
// what it had there.
func (ns *nodeSet) closeConn(i int, how ending) {
	c := ns.conns[i]
	ns.discard(c.Conn, how)
	ns.conns[i] = nil
	c.release(ns.topo.Snapshot().Load[i])
	if ns.curConn == c.Conn {
		ns.curIdx, ns.curNode, ns.curConn = ns.homeIdx, ns.topo.Snapshot().Nodes[ns.homeIdx], nil
		if h := ns.conns[ns.homeIdx]; h != nil {
			ns.curConn = h.Conn
		}
	}
	if ns.hooks.closing != nil {
		ns.hooks.closing(c.Conn)
	}
}

// discard closes bc, a connection dial gave, as how says.
func (ns *nodeSet) discard(bc *backend.Conn, how ending) {
	if ns.hooks.discard != nil {
		ns.hooks.discard(bc, how)
		return
	}
	how.end(bc)
}

// settle records that the session ends between two commands: nothing is pending on its
// connections.
func (ns *nodeSet) settle() { ns.settled = true }

// taint records that the session ran something a reset may not undo (XA): its connections are
// closed at its end, never pooled.
func (ns *nodeSet) taint() { ns.tainted = true }

// releaseAll lets go of every connection as the session ends: lend takes those it may reuse
// (when the session settled, was not tainted, and no cursor may be open) and the set forgets
// them; the others are closed, with a goodbye (COM_QUIT) — after reading what may still come
// on the current one when the session ended in the middle of a command. The kill targets are unpublished first, under killMu, so that a
// KILL of this session that is under way finishes before any connection is lent.
func (ns *nodeSet) releaseAll(lend func(c *nodeConn) bool) {
	ns.killMu.Lock()
	ns.targets.Store(nil)
	ns.killMu.Unlock()
	reusable := ns.settled && !ns.tainted && !ns.mayHoldCursor() && lend != nil
	snap := ns.topo.Snapshot()
	for i, c := range ns.conns {
		if c == nil {
			continue
		}
		if reusable && !c.released.Load() && c.Fingerprint().Options == 0 && lend(c) {
			ns.conns[i] = nil
			if i < len(snap.Load) {
				c.release(snap.Load[i])
			}
			if ns.hooks.closing != nil {
				ns.hooks.closing(c.Conn) // the reset drops what the session bound there
			}
			continue
		}
		how := endIdle
		if !ns.settled && c.Conn == ns.curConn {
			how = endPending
		}
		ns.closeConn(i, how)
	}
	ns.curConn = nil
}

// lendAll lets go, between two commands, of the connections lend takes (pool_mode
// transaction: it gives them back to the pool), the session living on without them; the others
// stay. Under killMu, and republished before it is released: a KILL of this session that is
// under way finishes before any connection is lent, and none that comes after reaches one.
func (ns *nodeSet) lendAll(lend func(c *nodeConn) bool) {
	ns.killMu.Lock()
	defer ns.killMu.Unlock()
	snap := ns.topo.Snapshot()
	lent := false
	for i, c := range ns.conns {
		if c == nil || c.released.Load() || !lend(c) {
			continue
		}
		ns.conns[i] = nil
		if i < len(snap.Load) {
			c.release(snap.Load[i])
		}
		if ns.hooks.closing != nil {
			ns.hooks.closing(c.Conn)
		}
		if ns.curConn == c.Conn {
			ns.curConn = nil
		}
		ns.spare = c
		lent = true
	}
	if lent {
		ns.publish()
	}
}

// withTargets runs f on the published kill targets, holding killMu: f may act on them (send a
// KILL to their threads, close their connections) knowing none has been lent to another
// session. f must not wait on this session.
func (ns *nodeSet) withTargets(f func([]killTarget)) {
	ns.killMu.RLock()
	defer ns.killMu.RUnlock()
	f(ns.killTargets())
}

// closeAll closes every connection (the session ends, or its user changes).
func (ns *nodeSet) closeAll() {
	for i, c := range ns.conns {
		if c != nil {
			ns.closeConn(i, endIdle)
		}
	}
	ns.curConn = nil
	ns.targets.Store(nil)
}

// reset follows the session state's reset (COM_RESET_CONNECTION, COM_CHANGE_USER; the caller
// emptied state().Stmts and moved its epoch on): the other nodes' connections are closed, to
// be opened clean when needed; the home's, which the node resets itself, carries the new epoch.
func (ns *nodeSet) reset() {
	for i, c := range ns.conns {
		if c != nil && i != ns.homeIdx {
			ns.closeConn(i, endIdle)
		}
	}
	if c := ns.conns[ns.homeIdx]; c != nil {
		c.MarkReset(ns.st.Epoch) // the node resets it (COM_RESET_CONNECTION), or it is replaced
	}
	ns.share = sharing{active: ns.share.active} // user variables, LAST_INSERT_ID(), what held: gone
	ns.publish()
}

// inTxOn reports whether a transaction is open on node i: the session's own (rs), or one its
// connection there reports.
func (ns *nodeSet) inTxOn(i int, rs *route.Session) bool {
	if rs.InTx && rs.TxNode == i {
		return true
	}
	c := ns.at(i)
	return c != nil && c.Status&mysql.StatusInTrans != 0
}

// moveHome makes node i the session's home; the old home's connection is closed (whatever it
// holds, the server drops), and i's is opened at first use, with the session state. A
// connection the session had to i as a replica is closed too when i is now the primary: it
// was opened read-only.
func (ns *nodeSet) moveHome(i int) {
	ns.room(i) // i may be a node added since the session began
	old := ns.homeIdx
	n := ns.topo.Snapshot().Nodes[i]
	ns.log.Info("moving the session", "from", ns.homeNode.Name, "to", n.Name)
	ns.homeIdx, ns.homeNode = i, n
	ns.drop(old)
	if ns.topo.Snapshot().IsPrimary(i) {
		ns.drop(i)
	}
	if ns.curIdx == old {
		ns.curIdx, ns.curNode, ns.curConn = i, ns.topo.Snapshot().Nodes[i], nil
		if c := ns.conns[i]; c != nil {
			ns.curConn = c.Conn
		}
	}
}

// publish stores the kill targets of the set's connections. One connection's targets are kept
// on it and published again as they are while they hold (a session that takes a connection
// per statement, pool_mode transaction, allocates nothing for them).
func (ns *nodeSet) publish() {
	n, last := 0, -1
	for i, c := range ns.conns {
		if c != nil {
			n, last = n+1, i
		}
	}
	switch n {
	case 0:
		ns.targets.Store(&noTargets)
	case 1:
		c := ns.conns[last]
		t := ns.target(last, c)
		if c.pub == nil || c.pub.one[0] != t {
			c.pub = &targetSet{one: [1]killTarget{t}}
			c.pub.list = c.pub.one[:]
		}
		ns.targets.Store(c.pub)
	default:
		ts := &targetSet{list: make([]killTarget, 0, n)}
		for i, c := range ns.conns {
			if c != nil {
				ts.list = append(ts.list, ns.target(i, c))
			}
		}
		ns.targets.Store(ts)
	}
}

// target is node i's connection c as a kill target.
func (ns *nodeSet) target(i int, c *nodeConn) killTarget {
	return killTarget{home: i == ns.homeIdx, node: ns.topo.Snapshot().Nodes[i], threadID: c.Handshake.ConnectionID, conn: c.NetConn(), compressed: c.Compressed(), flight: &c.flight}
}

// targetSet is a published list of kill targets, never changed once published; one holds the
// list of a set with one connection.
type targetSet struct {
	list []killTarget
	one  [1]killTarget
}

// noTargets is the published kill targets of a set with no connection. Never changed.
var noTargets targetSet

// killTargets is the last published kill targets (nil: none). Any goroutine may call it; the
// slice is never changed once published.
func (ns *nodeSet) killTargets() []killTarget {
	if p := ns.targets.Load(); p != nil {
		return p.list
	}
	return nil
}

// noteCursor records that a cursor was opened on one of the connections.
func (ns *nodeSet) noteCursor() { ns.cursor.Store(true) }

// mayHoldCursor reports whether a cursor may be open on one of the connections. Any goroutine
// may call it.
func (ns *nodeSet) mayHoldCursor() bool { return ns.cursor.Load() }
