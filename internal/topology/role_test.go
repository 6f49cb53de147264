package topology

import (
	"slices"
	"testing"
	"time"
)

func TestChoosePrimary(t *testing.T) {
	const ver = "10.11.19-MariaDB"
	at := func(st NodeState, binlog, applied string) *NodeState {
		st.Version, st.BinlogPos, st.Applied = ver, binlog, applied
		return &st
	}
	healthy := NodeState{Health: Healthy}
	replicating := NodeState{Health: Healthy, Replica: &ReplicaStatus{}}
	ro := NodeState{Health: Healthy, ReadOnly: true}
	roReplicating := NodeState{Health: Healthy, ReadOnly: true, Replica: &ReplicaStatus{}}
	primary := at(healthy, "0-1-10", "0-1-10")           // writable, replicates from no one
	activePassive := at(replicating, "0-1-10", "0-1-10") // writable primary replicating from its passive peer
	replica := at(replicating, "0-1-10", "0-1-10")       // writable (MariaDB's default) but replicating
	demoted := at(ro, "0-1-10", "0-1-10")                // read-only, not repointed yet
	demotedRepl := at(roReplicating, "0-2-12", "0-2-12") // read-only, replicating from the new one
	demotedRepl.Replica = &ReplicaStatus{Source: "localhost:3307"}
	promoted := at(healthy, "0-1-10", "0-1-10")      // has all the old primary wrote
	promotedAhead := at(healthy, "0-2-12", "0-2-12") // and has taken writes since
	stale := at(healthy, "0-1-7", "0-1-7")           // replication reset long ago, writable
	down := &NodeState{Health: Down, Failures: 3, Version: ver, BinlogPos: "0-1-10"}
	full := &NodeState{Health: Full, Failures: 1, Version: ver, BinlogPos: "0-1-10"}
	asConfigured := []*NodeState{primary, replica, replica}
	nodes := []*Node{{Address: "127.0.0.1:3306"}, {Address: "127.0.0.1:3307"}, {Address: "127.0.0.1:3308"}}
	for _, tc := range []struct {
		name          string
		cur           int
		curSwitching  bool
		states        []*NodeState
		want          int
		wantSwitching bool
		wantWritable  []int
		before        []*NodeState // the states in force (nil: as configured)
	}{
		{"as configured", 0, false, []*NodeState{primary, replica, replica}, 0, false, nil, nil},
		{"not seen yet", 0, false, []*NodeState{nil, promoted, replica}, 0, false, nil, nil},
		{"active/passive: the writable primary replicates, and stays", 0, false, []*NodeState{activePassive, replica, replica}, 0, false, nil, nil},
		{"demoted, none promoted", 0, false, []*NodeState{demoted, replica, replica}, 0, true, nil, nil},
		{"demoted and replicating, none promoted", 0, false, []*NodeState{demotedRepl, replica, replica}, 0, true, nil, nil},
		{"promoted", 0, true, []*NodeState{demoted, promoted, replica}, 1, false, nil, nil},
		{"promoted, old one repointed (a stale config at start)", 0, false, []*NodeState{demotedRepl, promotedAhead, replica}, 1, false, nil, nil},
		{"demoted; the only writable node is stale: no", 0, false, []*NodeState{demoted, stale, replica}, 0, true, nil, nil},
		{"demoted; two caught-up candidates: wait", 0, false, []*NodeState{demoted, promoted, promoted}, 0, true, nil, nil},
		{"primary down: stays, stale writable node or not", 0, false, []*NodeState{down, stale, replica}, 0, false, nil, nil},
		{"primary full: stays", 0, false, []*NodeState{full, promoted, replica}, 0, false, nil, nil},
		{"primary went down while demoted: still switching", 0, true, []*NodeState{down, replica, replica}, 0, true, nil, nil},
		{"primary went down while demoted, then one promoted", 0, true, []*NodeState{down, promoted, replica}, 1, false, nil, nil},
		{"second writable node: listed, primary kept", 1, false, []*NodeState{stale, primary, replica}, 1, false, []int{1, 0}, nil},
		{"writable but failing its checks", 0, false, []*NodeState{primary, {Health: Unknown, Failures: 1}, replica}, 0, false, nil, nil},
		// A replica detached (RESET SLAVE ALL) before the primary went read-only is never
		// taken, caught up or not: a read_only on and off on the primary keeps its writes.
		{"demoted; the caught-up writable node was detached before: no", 0, false, []*NodeState{demoted, promoted, replica}, 0, true, nil,
			[]*NodeState{primary, promoted, replica}},
		{"switching; the caught-up writable node was detached before: still no", 0, true, []*NodeState{demoted, promoted, replica}, 0, true, nil,
			[]*NodeState{primary, promoted, replica}},
		{"switching; the node was detached before, the old primary now replicates from it: yes", 0, true,
			[]*NodeState{demotedRepl, promotedAhead, replica}, 1, false, nil, []*NodeState{primary, promoted, replica}},
		{"demoted; the one that replicated at the start, promoted within a round: yes", 0, false, []*NodeState{demoted, promoted, replica}, 1, false, nil, nil},
		{"demoted; an errant node: no", 0, true, []*NodeState{demoted, {Health: Healthy, Version: ver, BinlogPos: "0-1-10", Applied: "0-1-10", Errant: "9-2-1"}, replica}, 0, true, nil, nil},
		{"primary writable again: it stays", 0, true, []*NodeState{primary, promoted, replica}, 0, false, []int{0, 1}, []*NodeState{primary, promoted, replica}},
	} {
		before := tc.before
		if before == nil {
			before = asConfigured
		}
		cur := &Snapshot{Primary: tc.cur, Switching: tc.curSwitching, Nodes: nodes, State: before}
		if tc.curSwitching {
			cur.Candidates = Replicating(before)
		}
		p, sw, w := ChoosePrimary(cur, tc.states)
		if p != tc.want || sw != tc.wantSwitching || !slices.Equal(w, tc.wantWritable) {
			t.Errorf("%s: primary %d switching %v writable %v, want %d %v %v", tc.name, p, sw, w, tc.want, tc.wantSwitching, tc.wantWritable)
		}
	}
}

func TestDetached(t *testing.T) {
	s := &Snapshot{Primary: 0, State: []*NodeState{
		{Health: Healthy},
		{Health: Healthy, Replica: &ReplicaStatus{}},
		{Health: Healthy, ReadOnly: true},
		nil,
		{Health: Down},
	}}
	for i, want := range []bool{false, false, true, false, false} {
		if got := s.Detached(i); got != want {
			t.Errorf("node %d: detached %v, want %v", i, got, want)
		}
	}
}

// TestObserveFollowsTheWritableNode: the topology's primary follows the monitor's view through
// a switchover, each change wakes whoever waits on the snapshot it replaces, and a read-only
// refusal reported by a session starts the switchover early, but only with a monitor.
func TestObserveFollowsTheWritableNode(t *testing.T) {
	topo, err := New(Options{Nodes: threeNodes()})
	if err != nil {
		t.Fatal(err)
	}
	first := topo.Snapshot()
	topo.PrimaryReadOnly(0)
	if topo.Snapshot() != first {
		t.Fatal("PrimaryReadOnly without a monitor changed the snapshot")
	}
	replica := &NodeState{Health: Healthy, Replica: &ReplicaStatus{}}
	writable := &NodeState{Health: Healthy}
	topo.Observe([]*NodeState{writable, replica, replica})
	select {
	case <-first.Changed():
	default:
		t.Fatal("the replaced snapshot's Changed channel is open")
	}
	s := topo.Snapshot()
	if s.Primary != 0 || s.Switching {
		t.Fatalf("primary %d switching %v", s.Primary, s.Switching)
	}

	topo.PrimaryReadOnly(1) // not the primary: nothing
	if topo.Snapshot() != s {
		t.Fatal("PrimaryReadOnly of a replica changed the snapshot")
	}
	topo.PrimaryReadOnly(0)
	if s2 := topo.Snapshot(); !s2.Switching || s2.Primary != 0 {
		t.Fatalf("after the primary refused a write: primary %d switching %v", s2.Primary, s2.Switching)
	}
	// A check from before the refusal still says writable: that does not end it.
	topo.Observe([]*NodeState{writable, replica, replica})
	if !topo.Snapshot().Switching {
		t.Fatal("a check older than the read-only refusal ended the switchover")
	}
	// Nor does one that began before it and ended after it: it read read_only before then.
	began := time.Now().Add(-time.Second)
	topo.Observe([]*NodeState{{Health: Healthy, Began: began, Checked: time.Now()}, replica, replica})
	if !topo.Snapshot().Switching {
		t.Fatal("a check that began before the read-only refusal ended the switchover")
	}
	// A check after it says writable (the operator changed their mind): it ends.
	topo.Observe([]*NodeState{{Health: Healthy, Began: time.Now(), Checked: time.Now()}, replica, replica})
	if topo.Snapshot().Switching {
		t.Fatal("still switching while the primary is seen writable")
	}
	topo.Observe([]*NodeState{{Health: Healthy, ReadOnly: true}, replica, replica})
	if s := topo.Snapshot(); !s.Switching || s.Primary != 0 {
		t.Fatalf("demoted: primary %d switching %v", s.Primary, s.Switching)
	}
	waiting := topo.Snapshot()
	topo.Observe([]*NodeState{{Health: Healthy, ReadOnly: true, Replica: &ReplicaStatus{}}, writable, replica})
	<-waiting.Changed()
	if s := topo.Snapshot(); s.Switching || s.Primary != 1 || !s.IsPrimary(1) || s.Detached(0) {
		t.Fatalf("promoted: primary %d switching %v detached(0) %v", s.Primary, s.Switching, s.Detached(0))
	}
	// Two writable nodes: writes stay where they were; the other is listed and takes no reads.
	topo.Observe([]*NodeState{writable, writable, replica})
	if s := topo.Snapshot(); s.Primary != 1 || !slices.Equal(s.Writable, []int{1, 0}) || !s.Detached(0) {
		t.Fatalf("two writable: primary %d writable %v", s.Primary, s.Writable)
	}
}
