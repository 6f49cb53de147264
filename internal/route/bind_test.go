package route

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/topology"
)

// replicating is a healthy replica's state with its lag known.
func replicating(lag time.Duration) *topology.NodeState {
	return &topology.NodeState{Health: topology.Healthy, Lag: lag, LagKnown: true,
		Replica: &topology.ReplicaStatus{IORunning: "Yes", SQLRunning: "Yes"}}
}

// TestUnfit: the replicas a read-only endpoint's bound sessions must leave are those a new
// binding would not choose (one rule): the primary, a replica down, draining, removed, errant,
// broken, detached, past max_replica_lag (and not back under three quarters of it), or with no
// weight. A session leaving replica1 goes where a new binding goes; with none fit, it stays.
func TestUnfit(t *testing.T) {
	const replica1 = 1 << 1
	for _, tc := range []struct {
		name   string
		change func(*topology.Snapshot, *Settings)
		unfit  uint64 // replica1's bit, with the primary's (always set)
		bind   []int  // where a new binding may go (-1: none, a session on replica1 stays)
	}{
		{"fit", func(*topology.Snapshot, *Settings) {}, 0, []int{1, 2}},
		{"down", func(s *topology.Snapshot, _ *Settings) { s.Up[1] = false }, replica1, []int{2}},
		{"draining", func(s *topology.Snapshot, _ *Settings) { s.Draining = replica1 }, replica1, []int{2}},
		{"removed", func(s *topology.Snapshot, _ *Settings) { s.Removed, s.Up[1] = replica1, false }, replica1, []int{2}},
		{"errant", func(s *topology.Snapshot, _ *Settings) { s.State[1].Errant = "holds 9-3-2" }, replica1, []int{2}},
		{"broken", func(s *topology.Snapshot, _ *Settings) { s.State[1].Broken = "SQL thread: 1062" }, replica1, []int{2}},
		{"detached", func(s *topology.Snapshot, _ *Settings) { s.State[1].Replica = nil }, replica1, []int{2}},
		{"lagging", func(s *topology.Snapshot, _ *Settings) { s.State[1] = replicating(3 * time.Second) }, replica1, []int{2}},
		{"lag unlimited", func(s *topology.Snapshot, ep *Settings) {
			s.State[1] = replicating(time.Hour)
			ep.MaxLag = 0
		}, 0, []int{1, 2}},
		{"weight 0", func(_ *topology.Snapshot, ep *Settings) { ep.Weights = []int{0, 0, 100} }, replica1, []int{2}},
		{"no weight given", func(_ *topology.Snapshot, ep *Settings) { ep.Weights = []int{0} }, replica1 | 1<<2, []int{-1}},
		{"the primary now", func(s *topology.Snapshot, ep *Settings) {
			s.Primary, s.State[1].Replica, s.State[0].Replica = 1, nil, &topology.ReplicaStatus{}
			ep.Weights = []int{100, 100, 100}
		}, replica1, []int{0, 2}}, // (the old primary, now a replica, fit again)
		{"both lagging", func(s *topology.Snapshot, _ *Settings) {
			s.State[1], s.State[2] = replicating(3*time.Second), replicating(3*time.Second)
		}, replica1 | 1<<2, []int{-1}},
		{"the other down", func(s *topology.Snapshot, _ *Settings) {
			s.State[1], s.Up[2] = replicating(3*time.Second), false
		}, replica1 | 1<<2, []int{-1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := cluster()
			snap.State = []*topology.NodeState{{Health: topology.Healthy, LagKnown: true}, replicating(0), replicating(0)}
			set := Settings{Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted(), MaxLag: 2 * time.Second}
			tc.change(snap, &set)
			ep, err := NewEndpoint("ro", set)
			if err != nil {
				t.Fatal(err)
			}
			primary := uint64(1) << snap.Primary
			for range 2 { // computed, then kept
				if got, want := Unfit(ep.Settings(), snap), tc.unfit|primary; got != want {
					t.Fatalf("Unfit %03b, want %03b", got, want)
				}
			}
			// Settings built by hand (no cache) say the same.
			if got, want := Unfit(&set, snap), tc.unfit|primary; got != want {
				t.Fatalf("Unfit of hand-built settings %03b, want %03b", got, want)
			}
			// Unfit and a binding say the same of every node.
			for i := range snap.Nodes {
				if unfit := Unfit(ep.Settings(), snap)&(1<<i) != 0; unfit != (ReadEligibility(ep.Settings(), snap, i) != Eligible) {
					t.Errorf("node %d: unfit %v, ReadEligibility %v", i, unfit, ReadEligibility(ep.Settings(), snap, i))
				}
			}
			s := NewSession()
			if n := BindReplica(&s, ep.Settings(), snap); !slices.Contains(tc.bind, n) {
				t.Fatalf("BindReplica %d, want %d", n, tc.bind)
			}
		})
	}
}

// TestUnfitLagHysteresis: a replica set aside for lag stays unfit until its lag is under three
// quarters of max_replica_lag, so sessions do not move onto a replica hovering at the
// threshold; it is judged again with each snapshot, and with each version of the settings.
func TestUnfitLagHysteresis(t *testing.T) {
	ep, err := NewEndpoint("ro", Settings{Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: &LeastActive{}, MaxLag: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	at := func(lag time.Duration) *topology.Snapshot {
		snap := cluster()
		snap.State = []*topology.NodeState{{LagKnown: true}, replicating(lag), replicating(0)}
		return snap
	}
	for _, step := range []struct {
		lag   time.Duration
		unfit bool
	}{
		{time.Second, false},
		{2 * time.Second, false}, // at the threshold: still fit
		{2100 * time.Millisecond, true},
		{1900 * time.Millisecond, true}, // under it, not under 3/4 of it: still set aside
		{1600 * time.Millisecond, true},
		{1400 * time.Millisecond, false},
		{1900 * time.Millisecond, false}, // back in: out again only past the threshold
	} {
		if got := Unfit(ep.Settings(), at(step.lag))&(1<<1) != 0; got != step.unfit {
			t.Fatalf("replica1 at %s: unfit %v, want %v", step.lag, got, step.unfit)
		}
	}
	// A new version of the settings is judged anew on the same snapshot.
	snap := at(0)
	if Unfit(ep.Settings(), snap)&(1<<1) != 0 {
		t.Fatal("replica1 without lag is unfit")
	}
	next := *ep.Settings()
	next.Weights = []int{0, 0, 100}
	if err := ep.Update(next); err != nil {
		t.Fatal(err)
	}
	if Unfit(ep.Settings(), snap)&(1<<1) == 0 {
		t.Fatal("replica1 given weight 0 is still fit for the settings' new version on the same snapshot")
	}
}

// TestUnfitAllocs: once computed for a snapshot, Unfit allocates nothing (it runs before every
// statement of a read-only endpoint's session).
func TestUnfitAllocs(t *testing.T) {
	ep, _ := NewEndpoint("ro", Settings{Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: &LeastActive{}, MaxLag: time.Second})
	snap := cluster()
	Unfit(ep.Settings(), snap)
	if n := testing.AllocsPerRun(100, func() { Unfit(ep.Settings(), snap) }); n != 0 {
		t.Fatalf("Unfit allocates %v per call", n)
	}
}
