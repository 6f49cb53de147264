package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Node sets on their own: no session, no proxy. The connections come from a fake dialer over
// in-memory connections that answer every command with the OK loaded into them.

// plant puts bcs into the set as the connections to nodes 0, 1, ..., as if opened (not
// counted in the nodes' loads, not published); node 0 is home and current.
func (ns *nodeSet) plant(bcs ...*backend.Conn) {
	snap := ns.topo.Snapshot()
	for i, bc := range bcs {
		ns.room(i)
		ns.conns[i] = &nodeConn{Conn: bc, idx: i, name: snap.Nodes[i].Name}
	}
	ns.homeIdx, ns.curIdx, ns.curNode, ns.curConn = 0, 0, snap.Nodes[0], bcs[0]
	ns.homeNode = ns.curNode
}

// fakeNodeConn is an in-memory node connection that remembers being closed.
type fakeNodeConn struct {
	memConn
	closed bool
}

func (c *fakeNodeConn) Close() error { c.closed = true; return nil }

// fakeDialer opens fakeNodeConns; dial fails with err when set. It records every dial.
type fakeDialer struct {
	err    error
	answer []byte // what each new connection's node answers
	nextID uint32
	dials  []fakeDial
	conns  []*fakeNodeConn
	closed []*backend.Conn // what the set told its owner it closes
}

type fakeDial struct {
	node     string
	readOnly bool
	db       string
}

func (d *fakeDialer) dial(n *topology.Node, readOnly bool, st *backend.State) (*backend.Conn, error) {
	d.dials = append(d.dials, fakeDial{node: n.Name, readOnly: readOnly, db: st.DB})
	if d.err != nil {
		return nil, d.err
	}
	d.nextID++
	nc := &fakeNodeConn{}
	nc.load(d.answer)
	d.conns = append(d.conns, nc)
	bc := &backend.Conn{Conn: mysql.NewConn(nc, 0, 4<<10), Caps: frontCaps, Handshake: &mysql.Handshake{ConnectionID: 100 + d.nextID}}
	bc.MarkReset(st.Epoch) // as backend.Dial starts it at the session's epoch
	return bc, nil
}

func threeNodes(tb testing.TB) *topology.Topology {
	tb.Helper()
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{
		{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary},
		{Name: "replica1", Address: "127.0.0.1:1", Role: topology.Replica},
		{Name: "replica2", Address: "127.0.0.1:1", Role: topology.Replica},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(topo.Close)
	return topo
}

func newTestNodeSet(tb testing.TB, topo Topology) (*nodeSet, *fakeDialer) {
	d := &fakeDialer{}
	ns := &nodeSet{}
	ns.init(topo, slog.New(slog.NewTextHandler(io.Discard, nil)), nodeHooks{
		dial:    d.dial,
		closing: func(bc *backend.Conn) { d.closed = append(d.closed, bc) },
	})
	return ns, d
}

func conns(snap *topology.Snapshot, i int) int64 { return snap.Load[i].Conns.Load() }

func TestNodeSetOpenReuseDropClose(t *testing.T) {
	topo := threeNodes(t)
	ns, d := newTestNodeSet(t, topo)
	snap := topo.Snapshot()

	home, err := ns.openHome(0)
	if err != nil {
		t.Fatal(err)
	}
	if ns.home() != 0 || ns.cur() != 0 || ns.conn() != home.Conn || ns.node() != snap.Nodes[0] {
		t.Fatalf("after openHome(0): home %d cur %d", ns.home(), ns.cur())
	}
	if len(d.dials) != 1 || d.dials[0].readOnly {
		t.Fatalf("dials %+v, want one read-write dial of the primary", d.dials)
	}

	c1, err := ns.use(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.dials) != 2 || !d.dials[1].readOnly || d.dials[1].node != "replica1" {
		t.Fatalf("dials %+v, want a read-only dial of replica1", d.dials)
	}
	if ns.cur() != 1 || ns.conn() != c1.Conn || ns.node().Name != "replica1" || ns.home() != 0 {
		t.Fatalf("after use(1): cur %d home %d", ns.cur(), ns.home())
	}
	if again, err := ns.use(1); err != nil || again != c1 {
		t.Fatalf("use(1) again: %v, %v: want the same connection", again, err)
	}
	if again, err := ns.use(0); err != nil || again != home || ns.cur() != 0 {
		t.Fatalf("use(0): %v, %v, cur %d: want the home connection", again, err, ns.cur())
	}
	if len(d.dials) != 2 {
		t.Fatalf("%d dials, want 2: open connections are reused", len(d.dials))
	}
	if conns(snap, 0) != 1 || conns(snap, 1) != 1 {
		t.Fatalf("loads %d, %d, want 1, 1", conns(snap, 0), conns(snap, 1))
	}
	if ns.at(2) != nil || ns.at(-1) != nil || ns.at(7) != nil {
		t.Fatal("at: a connection where none was opened")
	}

	// Dropping the current connection falls back to the home's.
	if _, err := ns.use(1); err != nil {
		t.Fatal(err)
	}
	ns.drop(1)
	if ns.at(1) != nil || !d.conns[1].closed || conns(snap, 1) != 0 {
		t.Fatalf("drop(1): conn %v closed %v load %d", ns.at(1), d.conns[1].closed, conns(snap, 1))
	}
	if len(d.closed) != 1 || d.closed[0] != c1.Conn {
		t.Fatalf("closing hook got %v, want replica1's connection", d.closed)
	}
	if ns.cur() != 0 || ns.conn() != home.Conn {
		t.Fatalf("after dropping the current connection: cur %d, want the home", ns.cur())
	}
	ns.drop(1) // nothing there: nothing happens
	if len(d.closed) != 1 {
		t.Fatal("drop of a node without a connection closed something")
	}

	// A dropped node's connection is opened anew at its next use.
	if _, err := ns.use(1); err != nil || len(d.dials) != 3 {
		t.Fatalf("use(1) after drop: %v, %d dials", err, len(d.dials))
	}

	// dropFailed names the failed node until its connection, the current one, is gone.
	if _, err := ns.use(0); err != nil {
		t.Fatal(err)
	}
	ns.dropFailed(1)
	if ns.node().Name != "replica1" || ns.cur() != 0 || ns.at(1) != nil {
		t.Fatalf("dropFailed(1) of a connection not current: node %s cur %d", ns.node().Name, ns.cur())
	}

	ns.closeAll()
	for i, c := range d.conns {
		if !c.closed {
			t.Errorf("connection %d not closed by closeAll", i)
		}
	}
	if ns.conn() != nil || ns.killTargets() != nil || conns(snap, 0) != 0 {
		t.Fatalf("after closeAll: conn %v, targets %v, load %d", ns.conn(), ns.killTargets(), conns(snap, 0))
	}
}

func TestNodeSetDialFailure(t *testing.T) {
	topo := threeNodes(t)
	ns, d := newTestNodeSet(t, topo)
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	d.err = errors.New("connection refused")
	if c, err := ns.use(2); err != d.err || c != nil {
		t.Fatalf("use(2) with a failing dialer: %v, %v", c, err)
	}
	if ns.cur() != 0 || ns.at(2) != nil || len(ns.killTargets()) != 1 || conns(topo.Snapshot(), 2) != 0 {
		t.Fatalf("a failed open left cur %d, conn %v, %d targets", ns.cur(), ns.at(2), len(ns.killTargets()))
	}
}

// TestNodeSetNodeRemovedWhileDialing: a node that left the topology while its connection was
// being opened gets no connection, and its slot's load is as before.
func TestNodeSetNodeRemovedWhileDialing(t *testing.T) {
	topo := threeNodes(t)
	ns, d := newTestNodeSet(t, topo)
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	if err := topo.SetDraining(2, true); err != nil {
		t.Fatal(err)
	}
	dial := ns.hooks.dial
	ns.hooks.dial = func(n *topology.Node, readOnly bool, st *backend.State) (*backend.Conn, error) {
		bc, err := dial(n, readOnly, st)
		if err := topo.RemoveNode(2); err != nil {
			t.Fatal(err)
		}
		return bc, err
	}
	_, err := ns.use(2)
	if !errors.Is(err, errNodeGone) || nodeFault(err) {
		t.Fatalf("use of a node removed meanwhile: %v, want errNodeGone", err)
	}
	if ns.at(2) != nil || !d.conns[1].closed || conns(topo.Snapshot(), 2) != 0 {
		t.Fatal("the connection to the removed node was kept")
	}
}

// TestNodeSetSyncOnlyWhenStateDiffers: use sends a connection only what it lacks of the session
// state, nothing when it is in line, and replaces one that carries state the session reset.
func TestNodeSetSyncOnlyWhenStateDiffers(t *testing.T) {
	topo := threeNodes(t)
	ns, d := newTestNodeSet(t, topo)
	ns.state().DB = "app"
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	if d.dials[0].db != "app" {
		t.Fatalf("dialed with schema %q, want app", d.dials[0].db)
	}
	node := d.conns[0]
	node.load(okPacket)
	if _, err := ns.use(0); err != nil {
		t.Fatal(err)
	}
	if want := packets(0, append([]byte{mysql.ComInitDB}, "app"...)); !bytes.Equal(node.out, want) {
		t.Fatalf("first use sent %x, want COM_INIT_DB app %x", node.out, want)
	}
	node.load(nil)
	if _, err := ns.use(0); err != nil {
		t.Fatal(err)
	}
	if len(node.out) != 0 {
		t.Fatalf("use of a connection in line sent %x", node.out)
	}

	// A statement recorded: replayed once, then nothing.
	ns.state().Stmts = append(ns.state().Stmts, []byte("SET NAMES utf8mb4"))
	node.load(okPacket)
	if _, err := ns.use(0); err != nil {
		t.Fatal(err)
	}
	if want := packets(0, append([]byte{mysql.ComQuery}, "SET NAMES utf8mb4"...)); !bytes.Equal(node.out, want) {
		t.Fatalf("use after a SET sent %x, want the SET %x", node.out, want)
	}
	node.load(nil)
	if _, err := ns.use(0); err != nil || len(node.out) != 0 {
		t.Fatalf("use in line again: %v, sent %x", err, node.out)
	}

	// A refusal of the state is errStateSync; the connection stays.
	ns.state().DB = "gone"
	node.load(packets(1, mysql.AppendERR(nil, mysql.NewError(1049, "42000", "Unknown database 'gone'"))))
	if _, err := ns.use(0); !errors.Is(err, errStateSync) {
		t.Fatalf("use with a schema the node refuses: %v, want errStateSync", err)
	}
	ns.state().DB = "app"

	// The session reset its state (a new epoch): the connection, which carries the old one, is
	// replaced, not synced; the new one gets the schema.
	ns.state().Stmts = ns.state().Stmts[:0]
	ns.state().Epoch++
	d.answer = okPacket
	node.load(nil)
	c, err := ns.use(0)
	if err != nil {
		t.Fatal(err)
	}
	// The old one is sent nothing but its goodbye (COM_QUIT).
	if len(d.dials) != 2 || !node.closed || !bytes.Equal(node.out, comQuit) || ns.at(0) != c || ns.conn() != c.Conn {
		t.Fatalf("a connection of an old epoch: %d dials, closed %v, sent %x", len(d.dials), node.closed, node.out)
	}
	if want := packets(0, append([]byte{mysql.ComInitDB}, "app"...)); !bytes.Equal(d.conns[1].out, want) {
		t.Fatalf("the new connection got %x, want COM_INIT_DB app", d.conns[1].out)
	}
}

// TestNodeSetMoveHome: the old home's connection is closed, the current node follows the home,
// a read-only connection to a node that became the primary is not kept, and the kill targets
// say which connection is the home's.
func TestNodeSetMoveHome(t *testing.T) {
	topo := threeNodes(t)
	ns, d := newTestNodeSet(t, topo)
	if _, err := ns.openHome(1); err != nil {
		t.Fatal(err)
	}
	c2, err := ns.use(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns.use(1); err != nil {
		t.Fatal(err)
	}
	homeOf := func() (homes []string) {
		for _, t := range ns.killTargets() {
			if t.home {
				homes = append(homes, t.node.Name)
			}
		}
		return homes
	}
	if h := homeOf(); len(h) != 1 || h[0] != "replica1" {
		t.Fatalf("home targets %v, want replica1", h)
	}

	ns.moveHome(2)
	if ns.home() != 2 || ns.cur() != 2 || ns.conn() != c2.Conn || ns.at(1) != nil || !d.conns[0].closed {
		t.Fatalf("after moveHome(2): home %d cur %d, old home closed %v", ns.home(), ns.cur(), d.conns[0].closed)
	}
	if h := homeOf(); len(h) != 1 || h[0] != "replica2" {
		t.Fatalf("home targets %v, want replica2", h)
	}

	// To the primary: a connection there (opened read-only when it was a replica) is dropped.
	if _, err := ns.use(0); err != nil {
		t.Fatal(err)
	}
	c0 := d.conns[len(d.conns)-1]
	if _, err := ns.use(2); err != nil {
		t.Fatal(err)
	}
	ns.moveHome(0)
	if ns.home() != 0 || ns.cur() != 0 || ns.conn() != nil || ns.at(0) != nil || !c0.closed || ns.at(2) != nil {
		t.Fatalf("after moveHome(0): home %d cur %d conn %v", ns.home(), ns.cur(), ns.conn())
	}
	if len(ns.killTargets()) != 0 {
		t.Fatalf("targets %v after every connection was closed", ns.killTargets())
	}
	if _, err := ns.use(0); err != nil || d.dials[len(d.dials)-1].readOnly {
		t.Fatalf("the new home opened at first use: %v, %+v", err, d.dials[len(d.dials)-1])
	}
}

// TestNodeSetInTxAndMovable: a transaction on a node is the session's own or one its
// connection reports; a home holding one, or pinned state, keeps the session where it is.
func TestNodeSetInTxAndMovable(t *testing.T) {
	topo := threeNodes(t)
	ns, _ := newTestNodeSet(t, topo)
	c, err := ns.openHome(0)
	if err != nil {
		t.Fatal(err)
	}
	rs := route.NewSession()
	if ns.inTxOn(0, &rs) || !ns.movable(&rs) {
		t.Fatal("no transaction anywhere, yet one is seen")
	}
	c.Status |= mysql.StatusInTrans
	if !ns.inTxOn(0, &rs) || ns.movable(&rs) || ns.inTxOn(1, &rs) {
		t.Fatal("the connection's open transaction is not seen (or seen elsewhere)")
	}
	c.Status &^= mysql.StatusInTrans
	rs.InTx, rs.TxNode = true, 1
	if !ns.inTxOn(1, &rs) || ns.inTxOn(0, &rs) || !ns.movable(&rs) {
		t.Fatal("the session's transaction on node 1 is not seen there alone")
	}
	rs.InTx, rs.TxNode, rs.Pins = false, -1, route.PinTempTable
	if ns.movable(&rs) {
		t.Fatal("a pinned session is movable")
	}
}

// TestNodeSetLeaveDraining: a drained node's connection is let go unless it holds a transaction
// or a cursor; a read-only endpoint's home there moves to another replica.
func TestNodeSetLeaveDraining(t *testing.T) {
	topo := threeNodes(t)
	ns, _ := newTestNodeSet(t, topo)
	var cursorConn *backend.Conn
	ns.hooks.cursorOn = func(bc *backend.Conn) bool { return bc == cursorConn }
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	c1, err := ns.use(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.SetDraining(1, true); err != nil {
		t.Fatal(err)
	}
	rs := route.NewSession()
	set := &route.Settings{Mode: route.ReadWrite, Weights: []int{0, 100, 100}, Policy: &route.LeastActive{}}

	cursorConn = c1.Conn
	ns.leave(&rs, set, topo.Snapshot())
	if ns.at(1) == nil {
		t.Fatal("a connection with an open cursor was let go")
	}
	cursorConn = nil
	rs.InTx, rs.TxNode = true, 1
	ns.leave(&rs, set, topo.Snapshot())
	if ns.at(1) == nil {
		t.Fatal("a connection with an open transaction was let go")
	}
	rs.InTx, rs.TxNode = false, -1
	ns.leave(&rs, set, topo.Snapshot())
	if ns.at(1) != nil || ns.at(0) == nil {
		t.Fatal("the drained node's connection was kept, or the home's let go")
	}

	// A read-only session bound to the drained replica moves to the other one.
	ro, _ := newTestNodeSet(t, topo)
	if _, err := ro.openHome(1); err != nil {
		t.Fatal(err)
	}
	rors := route.NewSession()
	rors.Bound = 1
	roSet := &route.Settings{Mode: route.ReadOnly, Weights: []int{0, 100, 100}, Policy: &route.LeastActive{}}
	ro.leave(&rors, roSet, topo.Snapshot())
	if ro.home() != 2 || rors.Bound != 2 || ro.at(1) != nil {
		t.Fatalf("read-only session on a drained replica: home %d, bound %d", ro.home(), rors.Bound)
	}
}

// TestNodeSetKillTargetsFromAnotherGoroutine: the kill targets are published whole: a reader on
// another goroutine sees each version complete and unchanged while the set opens and drops
// connections (run with -race).
func TestNodeSetKillTargetsFromAnotherGoroutine(t *testing.T) {
	topo := threeNodes(t)
	ns, _ := newTestNodeSet(t, topo)
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var bad error
	go func() {
		defer wg.Done()
		var prev []killTarget
		var prevCopy []killTarget
		for {
			select {
			case <-stop:
				return
			default:
			}
			ts := ns.killTargets()
			if len(prev) > 0 && !equalTargets(prev, prevCopy) {
				bad = errors.New("a published kill target list changed after publication")
				return
			}
			homes := 0
			for _, t := range ts {
				if t.conn == nil || t.threadID == 0 || t.node == nil {
					bad = errors.New("an incomplete kill target")
					return
				}
				if t.home {
					homes++
				}
			}
			if len(ts) > 3 || homes != 1 {
				bad = errors.New("a kill target list that was never true")
				return
			}
			prev, prevCopy = ts, append(prevCopy[:0], ts...)
		}
	}()
	for range 500 {
		if _, err := ns.use(1); err != nil {
			t.Fatal(err)
		}
		if _, err := ns.use(2); err != nil {
			t.Fatal(err)
		}
		ns.drop(1)
		ns.drop(2)
	}
	close(stop)
	wg.Wait()
	if bad != nil {
		t.Fatal(bad)
	}
	if ts := ns.killTargets(); len(ts) != 1 || !ts[0].home || ts[0].node.Name != "primary" {
		t.Fatalf("final targets %+v, want the home alone", ts)
	}
}

func equalTargets(a, b []killTarget) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNodeSetCursorAndReset(t *testing.T) {
	topo := threeNodes(t)
	ns, d := newTestNodeSet(t, topo)
	if ns.mayHoldCursor() {
		t.Fatal("a cursor before any was opened")
	}
	ns.noteCursor()
	done := make(chan bool)
	go func() { done <- ns.mayHoldCursor() }()
	if !<-done {
		t.Fatal("the cursor note is not seen from another goroutine")
	}

	home, err := ns.openHome(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns.use(1); err != nil {
		t.Fatal(err)
	}
	ns.state().Epoch++
	ns.reset()
	if ns.at(1) != nil || !d.conns[1].closed || ns.at(0) != home || d.conns[0].closed {
		t.Fatal("reset: another node's connection kept, or the home's closed")
	}
	if fp := home.Fingerprint(); fp.Epoch != ns.state().Epoch {
		t.Fatalf("the home connection carries epoch %d after the reset, want %d", fp.Epoch, ns.state().Epoch)
	}
	if len(ns.killTargets()) != 1 {
		t.Fatalf("targets %+v after reset, want the home's", ns.killTargets())
	}
	node := d.conns[0]
	node.load(nil)
	if _, err := ns.use(0); err != nil || len(node.out) != 0 {
		t.Fatalf("use of the reset home: %v, sent %x", err, node.out)
	}
}

// fakeTopo is a Topology whose snapshot the test sets (a switchover without a monitor).
type fakeTopo struct{ snap *topology.Snapshot }

func (f *fakeTopo) Snapshot() *topology.Snapshot { return f.snap }
func (f *fakeTopo) NodeFailed(int, error)        {}
func (f *fakeTopo) PrimaryReadOnly(int)          {}

// with makes f's snapshot a copy of the current one changed by change.
func (f *fakeTopo) with(change func(*topology.Snapshot)) *topology.Snapshot {
	next := *f.snap
	change(&next)
	f.snap = &next
	return f.snap
}

// TestNodeSetFollowPrimary: a read-write session that holds nothing on its home follows the
// primary between commands (its old connections closed, the new one opened at first use, or
// at once with autocommit off replayed there); one that holds a transaction stays; a switchover
// under way moves nothing; a read-only session leaves a replica that became the primary or that
// the monitor found errant.
func TestNodeSetFollowPrimary(t *testing.T) {
	ft := &fakeTopo{snap: threeNodes(t).Snapshot()}
	ns, d := newTestNodeSet(t, ft)
	rw := &route.Settings{Mode: route.ReadWrite, Weights: []int{0, 100, 100}, Policy: &route.LeastActive{}}
	rs := route.NewSession()
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.use(1); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.use(0); err != nil {
		t.Fatal(err)
	}
	if ns.movesPrimary(rw, ft.snap) {
		t.Fatal("a session on the primary moves")
	}
	rs.LastNode = 0

	// replica1 is promoted; autocommit on: nothing opened until used.
	snap := ft.with(func(s *topology.Snapshot) { s.Primary = 1 })
	if !ns.movesPrimary(rw, snap) {
		t.Fatal("a session on the old primary does not move")
	}
	dials := len(d.dials)
	if err := ns.follow(&rs, rw, snap); err != nil {
		t.Fatal(err)
	}
	if ns.home() != 1 || ns.cur() != 1 || ns.conn() != nil || ns.at(0) != nil || ns.at(1) != nil || rs.LastNode != -1 {
		t.Fatalf("after following to replica1: home %d cur %d conn %v; read-only connection kept %v", ns.home(), ns.cur(), ns.conn(), ns.at(1))
	}
	if len(d.dials) != dials || !d.conns[0].closed || !d.conns[1].closed {
		t.Fatal("following the primary with autocommit on dialed, or kept the old connections")
	}
	if ns.movesPrimary(rw, snap) {
		t.Fatal("the session moves again")
	}

	// A transaction open on the home holds the session there.
	rs.InTx, rs.TxNode = true, 1
	snap = ft.with(func(s *topology.Snapshot) { s.Primary = 0 })
	if err := ns.follow(&rs, rw, snap); err != nil || ns.home() != 1 {
		t.Fatalf("a session in a transaction followed the primary: %v, home %d", err, ns.home())
	}
	rs.InTx, rs.TxNode = false, -1

	// Autocommit off: the new primary's connection is opened at once, autocommit=0 replayed.
	rs.Autocommit = false
	d.answer = okPacket
	if err := ns.follow(&rs, rw, snap); err != nil {
		t.Fatal(err)
	}
	last := d.dials[len(d.dials)-1]
	if ns.home() != 0 || ns.cur() != 0 || ns.conn() == nil || last.node != "primary" || last.readOnly {
		t.Fatalf("after following with autocommit off: home %d cur %d, last dial %+v", ns.home(), ns.cur(), last)
	}
	if want := packets(0, append([]byte{mysql.ComQuery}, "SET autocommit=0"...)); !bytes.Equal(d.conns[len(d.conns)-1].out, want) {
		t.Fatalf("the new primary got %q, want SET autocommit=0", d.conns[len(d.conns)-1].out)
	}

	// A switchover under way: the session is on the (old) primary; no command moves it.
	snap = ft.with(func(s *topology.Snapshot) { s.Switching = true })
	if !ns.movesPrimary(rw, snap) {
		t.Fatal("a switchover under way is not looked at")
	}
	if err := ns.follow(&rs, rw, snap); err != nil || ns.home() != 0 || ns.conn() == nil {
		t.Fatalf("a switchover under way moved the session: %v, home %d", err, ns.home())
	}

	// Read-only: bound to replica1, which becomes the primary, then to replica2, found errant.
	ro := &route.Settings{Mode: route.ReadOnly, Weights: []int{0, 100, 100}, Policy: &route.LeastActive{}}
	snap = ft.with(func(s *topology.Snapshot) { s.Switching, s.Primary = false, 0 })
	rons, _ := newTestNodeSet(t, ft)
	rors := route.NewSession()
	if _, err := rons.openHome(1); err != nil {
		t.Fatal(err)
	}
	rors.Bound = 1
	if rons.movesPrimary(ro, snap) {
		t.Fatal("a read-only session on a healthy replica moves")
	}
	snap = ft.with(func(s *topology.Snapshot) { s.Primary = 1 })
	if err := rons.follow(&rors, ro, snap); err != nil || rons.home() != 2 || rors.Bound != 2 {
		t.Fatalf("a read-only session on the new primary: %v, home %d", err, rons.home())
	}
	snap = ft.with(func(s *topology.Snapshot) {
		s.Primary = 0
		s.State = []*topology.NodeState{nil, nil, {Errant: "0-1-5"}}
	})
	if !rons.movesPrimary(ro, snap) {
		t.Fatal("a read-only session on an errant replica does not move")
	}
	if err := rons.follow(&rors, ro, snap); err != nil || rons.home() != 1 {
		t.Fatalf("a read-only session on an errant replica: %v, home %d", err, rons.home())
	}
}

// TestAwaitPrimary: the wait ends with the first snapshot that has a primary taking writes, at
// its deadline, or when the session is killed.
func TestAwaitPrimary(t *testing.T) {
	topo := threeNodes(t)
	ft := &fakeTopo{snap: topo.Snapshot()}
	switching := ft.with(func(s *topology.Snapshot) { s.Switching = true })
	if _, ok := awaitPrimary(ft, switching, time.Now().Add(20*time.Millisecond), nil); ok {
		t.Fatal("a switchover that never ends ended")
	}
	stop := make(chan struct{})
	close(stop)
	start := time.Now()
	if _, ok := awaitPrimary(ft, switching, time.Now().Add(time.Minute), stop); ok || time.Since(start) > 10*time.Second {
		t.Fatal("a killed session kept waiting")
	}
	if got, ok := awaitPrimary(ft, topo.Snapshot(), time.Now().Add(time.Minute), nil); !ok || got.Switching {
		t.Fatal("no switchover, yet a wait")
	}
}

// TestProxyKillSession: KILL of another session runs on the nodes of the session killed, from
// the killer's own connection there or a new one, and closes the session killed (not for KILL
// QUERY, nor when a node refused).
func TestProxyKillSession(t *testing.T) {
	p := testProxy(t, Options{})
	target := func(thread uint32) *session {
		s := p.newSession(p.endpoints["rw"], &memConn{})
		s.view.loggedIn("app", time.Now())
		if thread != 0 {
			s.nodes.plant(&backend.Conn{Conn: mysql.NewConn(&memConn{}, 0, 0), Handshake: &mysql.Handshake{ConnectionID: thread}})
		}
		s.nodes.publish()
		p.mu.Lock()
		p.byID[s.id] = s
		p.mu.Unlock()
		return s
	}
	by, d := newTestNodeSet(t, p.topo)
	d.answer = okPacket

	victim := target(42)
	got, failed, err := p.killSession(victim.id, false, by, "app")
	if err != nil || got != victim || failed != -1 {
		t.Fatalf("KILL: %v, %v, %d", got, err, failed)
	}
	if want := append(packets(0, append([]byte{mysql.ComQuery}, "KILL CONNECTION 42"...)), comQuit...); len(d.conns) != 1 || !bytes.Equal(d.conns[0].out, want) || !d.conns[0].closed {
		t.Fatalf("the killer's node got %q, want KILL CONNECTION 42 on a connection closed after (COM_QUIT)", d.conns[0].out)
	}
	if !victim.life.killed() {
		t.Fatal("the session killed goes on")
	}

	// KILL QUERY, from the killer's own connection to the node.
	if _, err := by.openHome(0); err != nil {
		t.Fatal(err)
	}
	own := d.conns[1]
	own.load(okPacket)
	busy := target(43)
	if _, _, err := p.killSession(busy.id, true, by, "app"); err != nil {
		t.Fatal(err)
	}
	if want := packets(0, append([]byte{mysql.ComQuery}, "KILL QUERY 43"...)); len(d.conns) != 2 || !bytes.Equal(own.out, want) || own.closed {
		t.Fatalf("KILL QUERY: %d dials, own connection got %q", len(d.conns), own.out)
	}
	if busy.life.killed() {
		t.Fatal("KILL QUERY ended the session")
	}

	// Another user: the node decides, and refuses (no CONNECTION ADMIN): the client reads the
	// refusal with the sluice id it named (43 is the node's thread), the session is not closed.
	own.load(packets(1, mysql.AppendERR(nil, mysql.NewError(1095, "HY000", "You are not owner of thread 43"))))
	var se *mysql.SQLError
	want := fmt.Sprintf("You are not owner of thread %d", busy.id)
	if _, _, err := p.killSession(busy.id, false, by, "ops"); !errors.As(err, &se) || se.Code != 1095 || se.Message != want || busy.life.killed() {
		t.Fatalf("a refused KILL: %v, killed %v", err, busy.life.killed())
	}

	if got, _, err := p.killSession(9999, false, by, "app"); got != nil || !errors.As(err, &se) || se.Code != mysql.ErrNoSuchThread {
		t.Fatalf("KILL of an unknown id: %v, %v", got, err)
	}

	// A session without a node thread (its node down): its own user kills it; another user
	// cannot be asked about on a node, and is refused.
	idle := target(0)
	if _, _, err := p.killSession(idle.id, false, by, "ops"); !errors.As(err, &se) || se.Code != 1095 || idle.life.killed() {
		t.Fatalf("another user's KILL of a session without threads: %v, killed %v", err, idle.life.killed())
	}
	if _, _, err := p.killSession(idle.id, false, by, "app"); err != nil || !idle.life.killed() {
		t.Fatalf("its own user's KILL of a session without threads: %v, killed %v", err, idle.life.killed())
	}
	// A session still logging in is no thread yet.
	p.mu.Lock()
	p.byID[idle.id] = p.newSession(p.endpoints["rw"], &memConn{})
	p.mu.Unlock()
	if _, _, err := p.killSession(idle.id, false, by, "app"); !errors.As(err, &se) || se.Code != mysql.ErrNoSuchThread {
		t.Fatalf("KILL of a session logging in: %v", err)
	}
}
