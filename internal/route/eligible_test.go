package route

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/topology"
)

// TestReadEligibility: the verdict per node is the one reads are routed by (a node it calls
// eligible is the only one reads reach when it is the only one), it looks without changing
// the lag gate's memory, and it depends on the endpoint: one replica lagging 10 s is eligible
// under a 30 s limit and not under a 5 s one.
func TestReadEligibility(t *testing.T) {
	snap := cluster()
	snap.Draining = 1 << 2
	snap.State = []*topology.NodeState{{}, {Lag: 10 * time.Second, LagKnown: true, Replica: &topology.ReplicaStatus{}},
		{Replica: &topology.ReplicaStatus{}}}
	loose, _ := NewEndpoint("rw", Settings{Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: NewWeighted(), MaxLag: 30 * time.Second})
	tight, _ := NewEndpoint("ro", Settings{Mode: ReadOnly, Weights: []int{100, 100, 100}, Policy: &LeastActive{}, MaxLag: 5 * time.Second})
	for _, c := range []struct {
		ep   *Endpoint
		want []Ineligible
	}{
		{loose, []Ineligible{NoWeight, Eligible, Unroutable}},
		{tight, []Ineligible{PrimaryExcluded, Lagging, Unroutable}},
	} {
		for i, want := range c.want {
			if got := ReadEligibility(c.ep.Settings(), snap, i); got != want {
				t.Errorf("%s, node %d: %v, want %v", c.ep.Name(), i, got, want)
			}
		}
	}
	read := classify.Result{Kind: classify.Select}
	s := NewSession()
	if d := Decide(&read, nil, &s, loose.Settings(), snap); d.Node != 1 || d.Reason != ReasonRead {
		t.Errorf("rw's read: %+v, want replica1", d)
	}
	if n := BindReplica(&s, tight.Settings(), snap); n != -1 {
		t.Errorf("ro bound node %d, want none", n)
	}
	// ro set replica1 aside (the binding decided); at 4 s it stays aside until under 3.75 s,
	// however often it is looked at.
	snap.State[1] = &topology.NodeState{Lag: 4 * time.Second, LagKnown: true, Replica: &topology.ReplicaStatus{}}
	for range 2 {
		if got := ReadEligibility(tight.Settings(), snap, 1); got != Lagging {
			t.Errorf("ro at 4 s: %v, want lagging", got)
		}
	}
	// Looking never set anything aside: rw at 40 s says lagging, and at 20 s it reads again.
	snap.State[1] = &topology.NodeState{Lag: 40 * time.Second, LagKnown: true, Replica: &topology.ReplicaStatus{}}
	if got := ReadEligibility(loose.Settings(), snap, 1); got != Lagging {
		t.Errorf("rw at 40 s: %v", got)
	}
	snap.State[1] = &topology.NodeState{Lag: 29 * time.Second, LagKnown: true, Replica: &topology.ReplicaStatus{}}
	if got := ReadEligibility(loose.Settings(), snap, 1); got != Eligible {
		t.Errorf("rw at 29 s after only looking at 40 s: %v", got)
	}
}
