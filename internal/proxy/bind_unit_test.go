package proxy

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// TestNodeSetLeavesUnfitReplica: a read-only endpoint's session bound to a replica that goes
// past the endpoint's max_replica_lag, or down, moves to the other replica between commands,
// as a drain moves it; a transaction or a cursor open there holds it until it ends; with no
// other replica fit it stays; and it does not move back when the replica it left recovers. The
// check before each statement allocates nothing.
func TestNodeSetLeavesUnfitReplica(t *testing.T) {
	replicating := func(lag time.Duration) *topology.NodeState {
		return &topology.NodeState{Health: topology.Healthy, Lag: lag, LagKnown: true, Replica: &topology.ReplicaStatus{}}
	}
	ft := &fakeTopo{snap: threeNodes(t).Snapshot()}
	lags := func(l1, l2 time.Duration) *topology.Snapshot {
		return ft.with(func(s *topology.Snapshot) {
			s.State = []*topology.NodeState{{Health: topology.Healthy, LagKnown: true}, replicating(l1), replicating(l2)}
		})
	}
	snap := lags(0, 0)
	ep, err := route.NewEndpoint("ro", route.Settings{Mode: route.ReadOnly, Weights: []int{0, 100, 100},
		Policy: &route.LeastActive{}, MaxLag: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	set := ep.Settings()
	ns, _ := newTestNodeSet(t, ft)
	var cursorConn *backend.Conn
	ns.hooks.cursorOn = func(bc *backend.Conn) bool { return bc == cursorConn }
	rs := route.NewSession()
	home, err := ns.openHome(1)
	if err != nil {
		t.Fatal(err)
	}
	rs.Bound = 1
	if ns.movesPrimary(set, snap) {
		t.Fatal("a session on a replica within max_replica_lag moves")
	}
	assertNoAllocs(t, "a read-only session's check of its replica", func() {
		if ns.movesPrimary(set, snap) {
			t.Fatal("moves")
		}
	})

	// replica1 at 3 s: past the limit. A cursor open there, then a transaction, hold it.
	snap = lags(3*time.Second, 0)
	if !ns.movesPrimary(set, snap) {
		t.Fatal("a session on a replica past max_replica_lag is not moved")
	}
	cursorConn = home.Conn
	if err := ns.follow(&rs, set, snap); err != nil || ns.home() != 1 || ns.at(1) == nil {
		t.Fatalf("a session with a cursor open on the lagging replica moved: %v, home %d", err, ns.home())
	}
	cursorConn = nil
	rs.InTx, rs.TxNode = true, 1
	if err := ns.follow(&rs, set, snap); err != nil || ns.home() != 1 || ns.at(1) == nil {
		t.Fatalf("a session in a transaction on the lagging replica moved: %v, home %d", err, ns.home())
	}
	rs.InTx, rs.TxNode = false, -1
	if err := ns.follow(&rs, set, snap); err != nil || ns.home() != 2 || rs.Bound != 2 || ns.at(1) != nil {
		t.Fatalf("a session on a lagging replica: %v, home %d, bound %d", err, ns.home(), rs.Bound)
	}

	// replica1 recovers: the session stays on replica2.
	snap = lags(0, 0)
	if ns.movesPrimary(set, snap) {
		t.Fatal("the session moves back to the replica it left")
	}
	if err := ns.follow(&rs, set, snap); err != nil || ns.home() != 2 {
		t.Fatalf("the session went back: home %d", ns.home())
	}

	// replica2 goes down: back to replica1.
	snap = ft.with(func(s *topology.Snapshot) { s.Up = []bool{true, true, false} })
	if err := ns.follow(&rs, set, snap); err != nil || ns.home() != 1 || rs.Bound != 1 {
		t.Fatalf("a session on a replica that went down: %v, home %d", err, ns.home())
	}

	// Both replicas unfit (replica1 past the limit, replica2 down): the session stays, and
	// moves once replica2 is back.
	snap = ft.with(func(s *topology.Snapshot) { s.State[1] = replicating(5 * time.Second) })
	if !ns.movesPrimary(set, snap) {
		t.Fatal("the lagging replica is not unfit")
	}
	if err := ns.follow(&rs, set, snap); err != nil || ns.home() != 1 || rs.Bound != 1 {
		t.Fatalf("with no replica fit: %v, home %d", err, ns.home())
	}
	snap = ft.with(func(s *topology.Snapshot) { s.Up = []bool{true, true, true} })
	if err := ns.follow(&rs, set, snap); err != nil || ns.home() != 2 || rs.Bound != 2 {
		t.Fatalf("replica2 back: %v, home %d", err, ns.home())
	}
}
