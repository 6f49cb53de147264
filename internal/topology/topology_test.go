package topology

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func threeNodes() []Node {
	return []Node{
		{Name: "primary", Address: "127.0.0.1:1", Role: Primary, Zone: "az1"},
		{Name: "replica1", Address: "127.0.0.1:2", Zone: "az2"},
		{Name: "replica2", Address: "127.0.0.1:3"},
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"no primary", []Node{{Name: "a"}, {Name: "b"}}, "no primary"},
		{"two primaries", []Node{{Name: "a", Role: Primary}, {Name: "b", Role: Primary}}, "more than one primary"},
		{"duplicate name", []Node{{Name: "a", Role: Primary}, {Name: "a"}}, "duplicate"},
		{"empty name", []Node{{Name: "", Role: Primary}}, "empty"},
	} {
		if _, err := New(Options{Nodes: tc.nodes}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestSnapshotStartsAllUp(t *testing.T) {
	topo, err := New(Options{Nodes: threeNodes()})
	if err != nil {
		t.Fatal(err)
	}
	s := topo.Snapshot()
	if s.Primary != 0 || !s.IsPrimary(0) || s.IsPrimary(1) {
		t.Fatalf("primary %d", s.Primary)
	}
	for i, n := range s.Nodes {
		if n.Index != i || !s.Up[i] || s.Load[i] == nil {
			t.Fatalf("node %d: %+v up=%v", i, n, s.Up[i])
		}
	}
	if s.Nodes[1].Zone != "az2" || s.Nodes[2].Zone != "" {
		t.Fatal("zones")
	}
}

// TestNodeFailedProbesUntilUp: a reported node is down in the next snapshot at once (the one
// taken before is unchanged), is probed until the probe succeeds, then is up again; the live
// counters survive every swap.
func TestNodeFailedProbesUntilUp(t *testing.T) {
	var probes atomic.Int32
	var healthy atomic.Bool
	topo, err := New(Options{
		Nodes:         threeNodes(),
		ProbeInterval: 10 * time.Millisecond,
		Probe: func(ctx context.Context, n *Node) error {
			if n.Name != "replica1" {
				t.Errorf("probed %s", n.Name)
			}
			probes.Add(1)
			if healthy.Load() {
				return nil
			}
			return errors.New("refused")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	before := topo.Snapshot()
	before.Load[1].Conns.Add(3)
	topo.NodeFailed(1, errors.New("connection reset"))
	topo.NodeFailed(1, errors.New("again")) // one probe loop, not two
	after := topo.Snapshot()
	if after.Up[1] || !before.Up[1] {
		t.Fatalf("up before %v, after %v", before.Up[1], after.Up[1])
	}
	if after.Load[1].Conns.Load() != 3 {
		t.Fatal("counters lost in the swap")
	}
	deadline := time.Now().Add(5 * time.Second)
	for probes.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("not probed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if topo.Snapshot().Up[1] {
		t.Fatal("up while its probe fails")
	}
	healthy.Store(true)
	for !topo.Snapshot().Up[1] {
		if time.Now().After(deadline) {
			t.Fatal("not up again after a successful probe")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A second failure starts a new probe loop.
	healthy.Store(false)
	topo.NodeFailed(1, errors.New("again"))
	if topo.Snapshot().Up[1] {
		t.Fatal("not down after the second report")
	}
}

// TestCloseStopsProbes: Close ends a probe in progress (the probe's context ends) and waits.
func TestCloseStopsProbes(t *testing.T) {
	started := make(chan struct{}, 1)
	topo, err := New(Options{
		Nodes:         threeNodes(),
		ProbeInterval: time.Millisecond,
		Probe: func(ctx context.Context, n *Node) error {
			select {
			case started <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	topo.NodeFailed(2, errors.New("gone"))
	<-started
	done := make(chan struct{})
	go func() { topo.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the probe")
	}
	topo.NodeFailed(1, errors.New("after close")) // ignored, no goroutine left behind
	if !topo.Snapshot().Up[1] {
		t.Fatal("a report after Close changed the topology")
	}
}

func TestParseRole(t *testing.T) {
	for _, s := range []string{"primary", "replica"} {
		r, err := ParseRole(s)
		if err != nil || r.String() != s {
			t.Errorf("%s: %v %v", s, r, err)
		}
	}
	if _, err := ParseRole("master"); err == nil {
		t.Error("master accepted")
	}
}

// TestProbePanicRecovered: a probe that panics counts as a failed check; sluice goes on.
func TestProbePanicRecovered(t *testing.T) {
	var calls atomic.Int32
	topo, err := New(Options{
		Nodes:         threeNodes(),
		ProbeInterval: time.Millisecond,
		Probe: func(ctx context.Context, n *Node) error {
			if calls.Add(1) == 1 {
				panic("a node's bytes broke the probe")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	topo.NodeFailed(1, errors.New("gone"))
	deadline := time.Now().Add(5 * time.Second)
	for !topo.Snapshot().Up[1] {
		if time.Now().After(deadline) {
			t.Fatal("not up after the probe recovered")
		}
		time.Sleep(time.Millisecond)
	}
	if calls.Load() < 2 {
		t.Fatalf("%d probes", calls.Load())
	}
}

// TestObserveRevivesOnlyOnSuccess: a node a session reported failed comes back with a successful
// check made since, not with one that is failing but not yet counted down, nor with an older one.
func TestObserveRevivesOnlyOnSuccess(t *testing.T) {
	topo, err := New(Options{Nodes: threeNodes()})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	topo.NodeFailed(1, errors.New("connection reset"))
	topo.Observe([]*NodeState{nil, {Health: Healthy, Failures: 1, LastErr: "EOF", Checked: time.Now()}, nil})
	if topo.Snapshot().Up[1] {
		t.Fatal("revived by a failing check")
	}
	// A successful check made before the session's report (a monitor round publishes states
	// up to an interval old) says nothing of the node now.
	topo.Observe([]*NodeState{nil, {Health: Healthy, Checked: before}, nil})
	if topo.Snapshot().Up[1] {
		t.Fatal("revived by a check older than the failure")
	}
	topo.Observe([]*NodeState{nil, {Health: Healthy, Checked: time.Now()}, nil})
	if !topo.Snapshot().Up[1] {
		t.Fatal("not revived by a successful check")
	}
	topo.Observe([]*NodeState{nil, {Health: Down, Failures: 3}, nil})
	if topo.Snapshot().Up[1] {
		t.Fatal("up while the monitor says down")
	}
}
