package topology

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
)

// TestAddAndRemoveNodes: a node added takes a new slot, starts down (no work before it is
// seen), and is up once the monitor sees it; only a drained node can be removed; a removed
// node's slot is marked and ignored by what the monitor reports; the same name takes its slot
// back, another name a new slot.
func TestAddAndRemoveNodes(t *testing.T) {
	topo, err := New(Options{Nodes: threeNodes()})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	for _, bad := range []Node{{Name: "replica1", Address: "127.0.0.1:9"}, {Name: "", Address: "127.0.0.1:9"}, {Name: "p2", Role: Primary}} {
		if _, err := topo.AddNode(bad); err == nil {
			t.Errorf("AddNode(%+v) accepted", bad)
		}
	}
	before := topo.Snapshot()
	slot, err := topo.AddNode(Node{Name: "replica3", Address: "127.0.0.1:4", Zone: "az2"})
	if err != nil || slot != 3 {
		t.Fatalf("AddNode: %d, %v", slot, err)
	}
	s := topo.Snapshot()
	select {
	case <-before.Changed():
	default:
		t.Error("the snapshot before the addition was not told of it")
	}
	if len(s.Nodes) != 4 || s.Nodes[3].Name != "replica3" || s.Nodes[3].Index != 3 || s.Up[3] || s.Load[3] == nil || len(s.State) != 4 ||
		s.StateName(3, 0) != "joining" {
		t.Fatalf("after AddNode: %+v up=%v %s", s.Nodes[3], s.Up, s.StateName(3, 0))
	}
	if len(before.Nodes) != 3 {
		t.Fatal("the snapshot before the addition changed")
	}
	topo.Observe([]*NodeState{nil, nil, nil, {Health: Healthy, Replica: &ReplicaStatus{}, Node: s.Nodes[3]}})
	if s = topo.Snapshot(); !s.Up[3] || s.StateName(3, 0) != "up" {
		t.Fatalf("replica3 seen healthy: up=%v %s", s.Up[3], s.StateName(3, 0))
	}

	if err := topo.RemoveNode(3); err == nil || !strings.Contains(err.Error(), "drain it first") {
		t.Errorf("removing a node in service: %v", err)
	}
	if err := topo.RemoveNode(0); err == nil || !strings.Contains(err.Error(), "primary") {
		t.Errorf("removing the primary: %v", err)
	}
	if err := topo.SetDraining(3, true); err != nil {
		t.Fatal(err)
	}
	s.Load[3].Conns.Add(1)
	if err := topo.RemoveNode(3); err == nil || !strings.Contains(err.Error(), "still draining") {
		t.Errorf("removing a node sluice holds a connection to: %v", err)
	}
	s.Load[3].Conns.Add(-1)
	if err := topo.RemoveNode(3); err != nil {
		t.Fatal(err)
	}
	s = topo.Snapshot()
	if !s.IsRemoved(3) || s.Up[3] || s.State[3] != nil || s.StateName(3, 0) != "removed" {
		t.Fatalf("after RemoveNode: removed=%v up=%v %s", s.IsRemoved(3), s.Up[3], s.StateName(3, 0))
	}
	if err := topo.RemoveNode(3); err == nil {
		t.Error("removed twice")
	}
	if err := topo.SetDraining(3, false); err == nil {
		t.Error("undrained a removed node")
	}
	// A late report of the removed node changes nothing.
	topo.Observe([]*NodeState{nil, nil, nil, {Health: Healthy}})
	topo.NodeFailed(3, nil)
	if s = topo.Snapshot(); s.Up[3] || s.State[3] != nil {
		t.Fatal("a removed node came back from a late report")
	}

	// Another name: a new slot; the removed node's name: its old slot, clean.
	if slot, err := topo.AddNode(Node{Name: "replica4", Address: "127.0.0.1:5"}); err != nil || slot != 4 {
		t.Fatalf("AddNode(replica4): %d, %v", slot, err)
	}
	old := s.Nodes[3]
	if slot, err := topo.AddNode(Node{Name: "replica3", Address: "127.0.0.1:6"}); err != nil || slot != 3 {
		t.Fatalf("AddNode(replica3) again: %d, %v", slot, err)
	}
	s = topo.Snapshot()
	if s.IsRemoved(3) || s.IsDraining(3) || s.Up[3] || s.Nodes[3] == old || s.Nodes[3].Address != "127.0.0.1:6" {
		t.Fatalf("replica3 again: removed=%v draining=%v up=%v %+v", s.IsRemoved(3), s.IsDraining(3), s.Up[3], s.Nodes[3])
	}
	// A state of the node the slot held before is not the new one's.
	topo.Observe([]*NodeState{nil, nil, nil, {Health: Healthy, Node: old}})
	if s = topo.Snapshot(); s.Up[3] || s.State[3] != nil || s.StateName(3, 0) != "joining" {
		t.Fatal("the new replica3 took the old one's state")
	}
	// Seen down by the monitor: down, no longer joining.
	topo.Observe([]*NodeState{nil, nil, nil, {Health: Down, Node: s.Nodes[3]}})
	if s = topo.Snapshot(); s.Up[3] || s.StateName(3, 0) != "down" {
		t.Fatalf("the new replica3 seen down: %s", s.StateName(3, 0))
	}
}

// TestAddNodeSlots: past MaxNodes a free removed slot is taken, and with none the addition is
// refused.
func TestAddNodeSlots(t *testing.T) {
	topo, err := New(Options{Nodes: threeNodes()})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	for i := 3; i < MaxNodes; i++ {
		if _, err := topo.AddNode(Node{Name: "r" + string(rune('a'+i/26)) + string(rune('a'+i%26)), Address: "127.0.0.1:1"}); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	if _, err := topo.AddNode(Node{Name: "one-more", Address: "127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "no free node slot") {
		t.Fatalf("past MaxNodes: %v", err)
	}
	if err := topo.SetDraining(5, true); err != nil {
		t.Fatal(err)
	}
	if err := topo.RemoveNode(5); err != nil {
		t.Fatal(err)
	}
	if slot, err := topo.AddNode(Node{Name: "one-more", Address: "127.0.0.1:1"}); err != nil || slot != 5 {
		t.Fatalf("into the free slot: %d, %v", slot, err)
	}
}

// TestAddNodeWithoutMonitorIsProbed: without a monitor, a node added is probed until it
// answers, then is up; down (not joining) once a probe failed.
func TestAddNodeWithoutMonitorIsProbed(t *testing.T) {
	var answers atomic.Bool
	topo, err := New(Options{Nodes: threeNodes(), ProbeInterval: 5 * time.Millisecond,
		Probe: func(ctx context.Context, n *Node) error {
			if !answers.Load() {
				return errors.New("refused")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	slot, err := topo.AddNode(Node{Name: "replica3", Address: "127.0.0.1:4"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for topo.Snapshot().StateName(slot, 0) != "down" {
		if time.Now().After(deadline) {
			t.Fatalf("a node that does not answer: %s", topo.Snapshot().StateName(slot, 0))
		}
		time.Sleep(5 * time.Millisecond)
	}
	answers.Store(true)
	for !topo.Snapshot().Up[slot] {
		if time.Now().After(deadline) {
			t.Fatal("the added node was never probed up")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFollow: a run per node, started for a node added, its ctx ended when the node is
// removed; every run ends with Follow's ctx.
func TestFollow(t *testing.T) {
	topo, err := New(Options{Nodes: threeNodes()})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	var mu sync.Mutex
	running := map[string]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, topo.Snapshot, func(ctx context.Context, i int, n *Node) {
			mu.Lock()
			running[n.Name] = true
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			running[n.Name] = false
			mu.Unlock()
		})
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			good := ok()
			mu.Unlock()
			if good {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, running)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	waitFor("a run per node", func() bool { return running["primary"] && running["replica1"] && running["replica2"] })
	if _, err := topo.AddNode(Node{Name: "replica3", Address: "127.0.0.1:4"}); err != nil {
		t.Fatal(err)
	}
	waitFor("replica3's run", func() bool { return running["replica3"] })
	if err := topo.SetDraining(1, true); err != nil {
		t.Fatal(err)
	}
	if err := topo.RemoveNode(1); err != nil {
		t.Fatal(err)
	}
	waitFor("replica1's run ended", func() bool { return !running["replica1"] && running["replica2"] })
	cancel()
	<-done
	for name, r := range running {
		if r {
			t.Errorf("%s still running after Follow returned", name)
		}
	}
}

// TestPositionsOwned: a source reporting a node no longer in its slot moves nothing.
func TestPositionsOwned(t *testing.T) {
	a, b := &Node{Name: "a", Index: 1}, &Node{Name: "b", Index: 1}
	p := NewPositions(2)
	pos := func(s string) gtid.Position {
		g, err := gtid.Parse(gtid.MariaDB, s)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	p.Own(1, a)
	p.AdvanceNode(a, pos("0-1-10"))
	p.SetStreamingNode(a, true)
	if !p.Reached(1, pos("0-1-10")) || !p.Streaming(1) {
		t.Fatal("the owner's report was not taken")
	}
	p.Own(1, b)
	if p.Reached(1, pos("0-1-1")) || p.Streaming(1) {
		t.Fatal("a new owner inherited the old one's position")
	}
	p.AdvanceNode(a, pos("0-1-20"))
	p.SetStreamingNode(a, true)
	if p.Reached(1, pos("0-1-1")) || p.Streaming(1) {
		t.Fatal("the old owner's late report moved the new one's position")
	}
	p.AdvanceNode(b, pos("0-1-5"))
	if !p.Reached(1, pos("0-1-5")) {
		t.Fatal("the new owner's report was not taken")
	}
}
