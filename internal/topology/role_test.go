package topology

import (
	"slices"
	"testing"
)

func TestChoosePrimary(t *testing.T) {
	primary := &NodeState{Health: Healthy}                            // writable, replicates from no one
	replica := &NodeState{Health: Healthy, Replica: &ReplicaStatus{}} // writable (read_only off) but replicating
	readOnly := &NodeState{Health: Healthy, ReadOnly: true}           // demoted, not repointed yet
	roReplica := &NodeState{Health: Healthy, ReadOnly: true, Replica: &ReplicaStatus{}}
	down := &NodeState{Health: Down, Failures: 3}
	for _, tc := range []struct {
		name          string
		cur           int
		curSwitching  bool
		states        []*NodeState
		want          int
		wantSwitching bool
		wantWritable  []int
	}{
		{"as configured", 0, false, []*NodeState{primary, replica, replica}, 0, false, nil},
		{"not seen yet", 0, false, []*NodeState{nil, primary, replica}, 0, false, nil},
		{"read-only replicas", 0, false, []*NodeState{primary, roReplica, roReplica}, 0, false, nil},
		{"demoted, none promoted", 0, false, []*NodeState{readOnly, replica, replica}, 0, true, nil},
		{"demoted and replicating, none promoted", 0, false, []*NodeState{roReplica, replica, replica}, 0, true, nil},
		{"promoted", 0, true, []*NodeState{readOnly, primary, replica}, 1, false, nil},
		{"promoted, old one repointed", 0, false, []*NodeState{roReplica, primary, replica}, 1, false, nil},
		{"primary down: stays", 0, false, []*NodeState{down, replica, replica}, 0, false, nil},
		{"primary down during a switchover: still switching", 0, true, []*NodeState{down, replica, replica}, 0, true, nil},
		{"two writable: keep the one we had", 1, false, []*NodeState{primary, primary, replica}, 1, false, []int{0, 1}},
		{"two writable, neither ours: the first", 2, false, []*NodeState{primary, primary, readOnly}, 0, false, []int{0, 1}},
		{"writable but failing its checks", 0, false, []*NodeState{primary, {Health: Unknown, Failures: 1}, replica}, 0, false, nil},
	} {
		cur := &Snapshot{Primary: tc.cur, Switching: tc.curSwitching}
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
	topo.Observe([]*NodeState{{Health: Healthy}, replica, replica})
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
	// The monitor still sees it writable (its state predates the switch): the switchover ends.
	topo.Observe([]*NodeState{{Health: Healthy}, replica, replica})
	if topo.Snapshot().Switching {
		t.Fatal("still switching while the primary is seen writable")
	}
	topo.Observe([]*NodeState{{Health: Healthy, ReadOnly: true}, replica, replica})
	if s := topo.Snapshot(); !s.Switching || s.Primary != 0 {
		t.Fatalf("demoted: primary %d switching %v", s.Primary, s.Switching)
	}
	waiting := topo.Snapshot()
	topo.Observe([]*NodeState{{Health: Healthy, ReadOnly: true, Replica: &ReplicaStatus{}}, {Health: Healthy}, replica})
	<-waiting.Changed()
	if s := topo.Snapshot(); s.Switching || s.Primary != 1 || !s.IsPrimary(1) || s.Detached(0) {
		t.Fatalf("promoted: primary %d switching %v detached(0) %v", s.Primary, s.Switching, s.Detached(0))
	}
	// Two writable nodes: writes stay where they were; the other is listed and takes no reads.
	topo.Observe([]*NodeState{{Health: Healthy}, {Health: Healthy}, replica})
	if s := topo.Snapshot(); s.Primary != 1 || !slices.Equal(s.Writable, []int{0, 1}) || !s.Detached(0) {
		t.Fatalf("two writable: primary %d writable %v", s.Primary, s.Writable)
	}
}
