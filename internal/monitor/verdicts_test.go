package monitor

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/topology"
)

// verdictRig drives the monitor's rounds over states set by hand: the primary (node 0) and two
// replicas, each check given when it began and ended.
type verdictRig struct {
	t    *testing.T
	topo *topology.Topology
	m    *Monitor
	t0   time.Time
}

func newVerdictRig(t *testing.T) *verdictRig {
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{
		{Name: "primary", Address: "127.0.0.1:3306", Role: topology.Primary},
		{Name: "replica1", Address: "127.0.0.1:3307"},
		{Name: "replica2", Address: "127.0.0.1:3308"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(topo.Close)
	positions := topology.NewPositions(3)
	for i, n := range topo.Snapshot().Nodes {
		positions.Own(i, n)
	}
	m := New(topo, Options{Positions: positions})
	return &verdictRig{t: t, topo: topo, m: m, t0: time.Unix(1000, 0)}
}

// check records node i's check, begun at ms milliseconds and ended 1 ms later.
func (r *verdictRig) check(i int, ms int, binlog, applied string, replica *topology.ReplicaStatus) {
	began := r.t0.Add(time.Duration(ms) * time.Millisecond)
	st := &topology.NodeState{Node: r.topo.Snapshot().Nodes[i], Health: topology.Healthy, Version: "10.11.19-MariaDB",
		Began: began, Checked: began.Add(time.Millisecond), BinlogPos: binlog, Applied: applied, Replica: replica, ReadOnly: i != 0}
	for len(r.m.latest) <= i {
		r.m.latest = append(r.m.latest, checked{})
	}
	r.m.latest[i] = checked{n: st.Node, st: st}
}

// round runs one round at ms and returns the published snapshot.
func (r *verdictRig) round(ms int) *topology.Snapshot {
	r.m.round(r.t0.Add(time.Duration(ms) * time.Millisecond))
	return r.topo.Snapshot()
}

var replicating = &topology.ReplicaStatus{IORunning: "Yes", SQLRunning: "Yes"}

// TestErrantNotFromTheRace: a replica checked after the primary, under writes, holds more than
// the primary's older reading: that is the race between the two checks, not an errant
// transaction. It is compared with the primary's next reading (begun after the replica's check),
// which holds it. Comparing the latest states alone would call it errant.
func TestErrantNotFromTheRace(t *testing.T) {
	r := newVerdictRig(t)
	for k := range 6 {
		at := k * 1000
		seq := func(d int) string { return "0-1-" + itoa(100+k*10+d) }
		r.check(0, at, seq(0), seq(0), nil)
		r.check(1, at+500, seq(5), seq(5), replicating) // ahead of the primary's reading before it
		r.check(2, at+500, seq(-3), seq(-3), replicating)
		snap := r.round(at + 900)
		for i := 1; i <= 2; i++ {
			if st := snap.State[i]; st.Errant != "" || snap.StateName(i, 0) != "up" {
				t.Fatalf("round %d: %s %q (%s)", k, snap.Nodes[i].Name, snap.StateName(i, 0), st.Errant)
			}
		}
	}
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestErrantReplica: a replica holding a GTID the primary does not (a write on it, in a domain
// of its own) is errant once compared with a reading of the primary begun after its check, and
// takes no reads; a lagging one is not; the verdict ends when the replica holds nothing more
// than the primary (rebuilt).
func TestErrantReplica(t *testing.T) {
	r := newVerdictRig(t)
	r.check(0, 0, "0-1-100", "0-1-100", nil)
	r.check(1, 100, "0-1-100,9-3-2", "0-1-100,9-3-2", replicating)
	r.check(2, 100, "0-1-90", "0-1-90", replicating) // lagging
	snap := r.round(200)
	if snap.State[1].Errant != "" {
		t.Fatal("errant before any reading of the primary began after the replica's check")
	}
	r.check(0, 1000, "0-1-101", "0-1-101", nil)
	r.check(1, 1100, "0-1-101,9-3-2", "0-1-101,9-3-2", replicating)
	r.check(2, 1100, "0-1-91", "0-1-91", replicating)
	snap = r.round(1200)
	if snap.StateName(1, 0) != "errant" || !snap.TakesNoReads(1, false) || topology.Problem(snap.State[1]) == "" {
		t.Fatalf("replica1: %s %+v", snap.StateName(1, 0), snap.State[1])
	}
	if snap.StateName(2, 0) != "up" || snap.TakesNoReads(2, true) {
		t.Fatalf("lagging replica2: %s", snap.StateName(2, 0))
	}
	// It stays errant while it holds that GTID, whatever the primary's sequence numbers do.
	r.check(0, 2000, "0-1-102", "0-1-102", nil)
	r.check(1, 2100, "0-1-102,9-3-2", "0-1-102,9-3-2", replicating)
	if snap = r.round(2200); snap.StateName(1, 0) != "errant" {
		t.Fatalf("replica1 after another round: %s", snap.StateName(1, 0))
	}
	// Rebuilt (its binlog reset: the errant domain gone): no longer errant.
	r.check(0, 3000, "0-1-103", "0-1-103", nil)
	r.check(1, 3100, "0-1-103", "0-1-103", replicating)
	r.round(3200)
	r.check(0, 4000, "0-1-103", "0-1-103", nil)
	if snap = r.round(4200); snap.StateName(1, 0) != "up" {
		t.Fatalf("replica1 rebuilt: %s %+v", snap.StateName(1, 0), snap.State[1])
	}
}

// TestErrantUnderAnotherServerID: a write on a replica made under the primary's server_id (SUPER
// can set it) shows in its @@gtid_binlog_pos only (@@gtid_current_pos keeps the replicated
// GTID of that domain): errant all the same.
func TestErrantUnderAnotherServerID(t *testing.T) {
	r := newVerdictRig(t)
	r.check(0, 0, "0-1-100", "0-1-100", nil)
	r.check(1, 100, "0-1-101", "0-1-100", replicating)
	r.round(200)
	r.check(0, 1000, "0-1-100", "0-1-100", nil)
	if snap := r.round(1200); snap.StateName(1, 0) != "errant" {
		t.Fatalf("replica1: %s %+v", snap.StateName(1, 0), snap.State[1])
	}
}

// TestBrokenReplica: a replica whose SQL thread stopped with an error is broken at once: out of
// rotation, its lag unknown (not 0); a thread an operator stopped is not broken.
func TestBrokenReplica(t *testing.T) {
	r := newVerdictRig(t)
	r.check(0, 0, "0-1-100", "0-1-100", nil)
	r.check(1, 100, "0-1-100", "0-1-100", &topology.ReplicaStatus{IORunning: "Yes", SQLRunning: "No", SQLErrno: 1062, SQLError: "Duplicate entry"})
	r.check(2, 100, "0-1-100", "0-1-100", &topology.ReplicaStatus{IORunning: "Yes", SQLRunning: "No"})
	snap := r.round(200)
	if snap.StateName(1, 0) != "broken" || !snap.TakesNoReads(1, false) || snap.State[1].LagKnown {
		t.Fatalf("replica1: %s, lag known %v", snap.StateName(1, 0), snap.State[1].LagKnown)
	}
	if snap.StateName(2, 0) != "up" || !snap.State[2].LagKnown {
		t.Fatalf("paused replica2: %s", snap.StateName(2, 0))
	}
	r.check(1, 1100, "0-1-100", "0-1-100", replicating)
	if snap = r.round(1200); snap.StateName(1, 0) != "up" {
		t.Fatalf("replica1 replicating again: %s", snap.StateName(1, 0))
	}
}

// TestPrimaryPositionRegression: the primary's position goes backwards (RESET MASTER): every
// replica is unsynced (no read needing a position goes to it; lag unknown; known positions
// forgotten) until a check, compared with a later reading of the primary, shows it holding the
// primary's new position and nothing more.
func TestPrimaryPositionRegression(t *testing.T) {
	r := newVerdictRig(t)
	r.check(0, 0, "0-1-500", "0-1-500", nil)
	r.check(1, 100, "0-1-500", "0-1-500", replicating)
	r.check(2, 100, "0-1-500", "0-1-500", replicating)
	r.round(200)
	if !r.m.opts.Positions.Reached(1, pos(t, "0-1-3")) {
		t.Fatal("replica1's position not known before the reset")
	}
	r.check(0, 1000, "0-1-3", "0-1-3", nil) // RESET MASTER, and three writes
	snap := r.round(1200)
	for i := 1; i <= 2; i++ {
		st := snap.State[i]
		if !st.Unsynced || st.LagKnown || !snap.TakesNoReads(i, true) || snap.TakesNoReads(i, false) && st.Errant == "" {
			t.Fatalf("%s after the reset: %s %+v", snap.Nodes[i].Name, snap.StateName(i, 0), st)
		}
	}
	if r.m.opts.Positions.Reached(1, pos(t, "0-1-3")) {
		t.Fatal("replica1's old position still counts after the reset")
	}
	// replica1 is rebuilt and replicates the new history; replica2 still holds the old one.
	r.check(0, 2000, "0-1-4", "0-1-4", nil)
	r.check(1, 2100, "0-1-4", "0-1-4", replicating)
	r.check(2, 2100, "0-1-500", "0-1-500", &topology.ReplicaStatus{IORunning: "No", SQLRunning: "Yes", IOErrno: 1236, IOError: "not in the binlog"})
	r.round(2200)
	r.check(0, 3000, "0-1-5", "0-1-5", nil)
	snap = r.round(3200)
	if st := snap.State[1]; st.Unsynced || !st.LagKnown || snap.StateName(1, 0) != "up" {
		t.Fatalf("replica1 caught up with the new history: %s %+v", snap.StateName(1, 0), st)
	}
	if st := snap.State[2]; !st.Unsynced || st.LagKnown || !snap.TakesNoReads(2, false) {
		t.Fatalf("replica2 on the old history: %s %+v", snap.StateName(2, 0), st)
	}
}

// TestPrimaryPositionIncludesWhatSluiceKnows: the primary's published binlog position holds what
// its binlog stream reported past the monitor's last check, so that a new primary must hold that
// too: a candidate that has only what the last check saw is not taken.
func TestPrimaryPositionIncludesWhatSluiceKnows(t *testing.T) {
	r := newVerdictRig(t)
	r.check(0, 0, "0-1-10", "0-1-10", nil)
	r.check(1, 100, "0-1-10", "0-1-10", replicating)
	r.check(2, 100, "0-1-10", "0-1-10", replicating)
	r.round(200)
	r.m.opts.Positions.Advance(0, pos(t, "0-1-12")) // two acknowledged writes, streamed
	// The primary turns read-only and dies before a check sees the two writes; replica1 is
	// promoted with what it had.
	r.check(0, 1000, "0-1-10", "0-1-10", nil)
	r.m.latest[0].st.ReadOnly = true
	r.check(1, 1100, "0-1-10", "0-1-10", nil)
	r.m.latest[1].st.ReadOnly = false
	snap := r.round(1200)
	if got := snap.State[0].BinlogPos; got != "0-1-12" {
		t.Fatalf("the primary's published position %q, want 0-1-12", got)
	}
	if snap.Primary != 0 || !snap.Switching {
		t.Fatalf("primary %d switching %v: a node without the acknowledged writes was taken", snap.Primary, snap.Switching)
	}
}
