package topology

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
)

func pos(t *testing.T, s string) gtid.Position {
	t.Helper()
	p, err := gtid.Parse(gtid.MariaDB, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPositionsAdvanceAndWake: a node's position only moves forward, merging what each source
// reports; each move wakes whoever waits on the node; Reached compares against the latest.
func TestPositionsAdvanceAndWake(t *testing.T) {
	p := NewPositions(2)
	if p.Reached(0, pos(t, "")) {
		t.Fatal("an unknown position reached something")
	}
	_, changed := p.At(0)
	p.Advance(0, pos(t, "0-1-5"))
	select {
	case <-changed:
	default:
		t.Fatal("advancing did not wake the waiter")
	}
	if !p.Reached(0, pos(t, "0-1-5")) || p.Reached(0, pos(t, "0-1-6")) || p.Reached(1, pos(t, "0-1-1")) {
		t.Fatal("reached")
	}
	_, changed = p.At(0)
	p.Advance(0, pos(t, "0-1-3")) // older: nothing moves, nobody wakes
	select {
	case <-changed:
		t.Fatal("an older position woke the waiter")
	default:
	}
	if cur, _ := p.At(0); cur.String() != "0-1-5" {
		t.Fatalf("after an older report: %q", cur)
	}
	p.Advance(0, pos(t, "5-1-2")) // another domain: merged
	if cur, _ := p.At(0); !cur.Equal(pos(t, "0-1-5,5-1-2")) {
		t.Fatalf("merged: %q", cur)
	}
	// A waiter woken by a move made from another goroutine.
	_, changed = p.At(1)
	go func() {
		time.Sleep(10 * time.Millisecond)
		p.Advance(1, pos(t, "0-1-9"))
	}()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken")
	}
	if !p.Reached(1, pos(t, "0-1-9")) {
		t.Fatal("node 1 did not reach 0-1-9")
	}
	_, changed = p.At(1)
	p.Reset(1)
	<-changed
	if p.Reached(1, pos(t, "0-1-1")) {
		t.Fatal("reached after a reset")
	}
	// Out of range: nothing, no panic.
	p.Advance(7, pos(t, "0-1-1"))
	p.Reset(-1)
	if p.Reached(7, pos(t, "")) {
		t.Fatal("out of range reached")
	}
}

func TestPositionsReachedDoesNotAllocate(t *testing.T) {
	p := NewPositions(1)
	p.Advance(0, pos(t, "0-1-100,5-1-3"))
	target := pos(t, "0-1-99")
	if n := testing.AllocsPerRun(1000, func() { _ = p.Reached(0, target) }); n != 0 {
		t.Fatalf("Reached allocates %.1f times", n)
	}
}

func TestPositionsChangedWakesOnAnyNode(t *testing.T) {
	p := NewPositions(3)
	any := p.Changed()
	p.Advance(2, pos(t, "0-1-1"))
	select {
	case <-any:
	default:
		t.Fatal("a move of node 2 did not wake a waiter on any node")
	}
	any = p.Changed()
	p.Advance(2, pos(t, "0-1-1")) // no move
	select {
	case <-any:
		t.Fatal("woken without a move")
	default:
	}
}

// TestPositionsVisible: what a wait found visible on a node is kept per node and merged per
// domain; a confirmation of an older epoch (the node's positions were forgotten after the wait
// was sent) records nothing; ForgetNode, Reset and Own forget it; Visible does not allocate.
func TestPositionsVisible(t *testing.T) {
	n0, n1 := &Node{Name: "a", Index: 0}, &Node{Name: "b", Index: 1}
	p := NewPositions(2)
	p.Own(0, n0)
	p.Own(1, n1)
	if p.Visible(0, pos(t, "0-1-1")) {
		t.Fatal("visible before any confirmation")
	}
	e := p.Epoch(0)
	p.Confirm(0, e, pos(t, "0-1-10"))
	p.Confirm(0, e, pos(t, "5-1-3"))
	for _, s := range []string{"0-1-10", "0-1-9", "5-1-3", "0-1-10,5-1-3"} {
		if !p.Visible(0, pos(t, s)) {
			t.Errorf("%s not visible on node 0 after confirming 0-1-10 and 5-1-3", s)
		}
	}
	for _, s := range []string{"0-1-11", "0-1-10,5-1-4", "7-1-1"} {
		if p.Visible(0, pos(t, s)) {
			t.Errorf("%s visible on node 0, beyond what was confirmed", s)
		}
	}
	if p.Visible(1, pos(t, "0-1-1")) {
		t.Error("node 1 visible through node 0's confirmation")
	}
	// Older confirmations change nothing.
	p.Confirm(0, e, pos(t, "0-1-5"))
	if !p.Visible(0, pos(t, "0-1-10")) {
		t.Error("an older confirmation moved the visible position back")
	}
	target := pos(t, "0-1-9")
	if n := testing.AllocsPerRun(1000, func() { _ = p.Visible(0, target) }); n != 0 {
		t.Errorf("Visible allocates %.1f times", n)
	}
	// A wait sent before the node was forgotten confirms nothing after.
	stale := p.Epoch(0)
	p.ForgetNode(n0)
	if p.Visible(0, pos(t, "0-1-1")) {
		t.Fatal("visible after ForgetNode")
	}
	p.Confirm(0, stale, pos(t, "0-1-10"))
	if p.Visible(0, pos(t, "0-1-10")) {
		t.Fatal("a confirmation of the epoch before ForgetNode was recorded")
	}
	p.Confirm(0, p.Epoch(0), pos(t, "0-1-12"))
	if !p.Visible(0, pos(t, "0-1-12")) {
		t.Fatal("a confirmation of the current epoch was not recorded")
	}
	// ForgetNode of a node that no longer owns the slot changes nothing.
	p.ForgetNode(&Node{Name: "gone", Index: 0})
	if !p.Visible(0, pos(t, "0-1-12")) {
		t.Fatal("ForgetNode of another node forgot slot 0")
	}
	p.Reset(0)
	if p.Visible(0, pos(t, "0-1-1")) {
		t.Fatal("visible after Reset")
	}
	p.Confirm(1, p.Epoch(1), pos(t, "0-1-3"))
	p.Own(1, &Node{Name: "c", Index: 1})
	if p.Visible(1, pos(t, "0-1-1")) {
		t.Fatal("visible after the slot changed hands")
	}
}

// TestPositionsCheckNodeForgetsOnRegression: a check that began after a confirmation and read
// less than was confirmed forgets it (the node's replication position went back); a check that
// began before the confirmation, or that read as much, keeps it.
func TestPositionsCheckNodeForgetsOnRegression(t *testing.T) {
	n := &Node{Name: "r", Index: 0}
	p := NewPositions(1)
	p.Own(0, n)
	before := time.Now()
	time.Sleep(time.Millisecond)
	p.Confirm(0, p.Epoch(0), pos(t, "0-1-10"))
	time.Sleep(time.Millisecond)
	after := time.Now()
	p.CheckNode(n, pos(t, "0-1-5"), before) // began before the confirmation: inconclusive
	if !p.Visible(0, pos(t, "0-1-10")) {
		t.Fatal("a check that began before the confirmation forgot it")
	}
	p.CheckNode(n, pos(t, "0-1-12"), after) // as much or more: kept
	if !p.Visible(0, pos(t, "0-1-10")) {
		t.Fatal("a check that read more forgot the confirmation")
	}
	p.CheckNode(&Node{Name: "other", Index: 0}, pos(t, "0-1-5"), after) // not the slot's node
	if !p.Visible(0, pos(t, "0-1-10")) {
		t.Fatal("another node's check forgot the confirmation")
	}
	p.CheckNode(n, pos(t, "0-1-5"), after)
	if p.Visible(0, pos(t, "0-1-1")) {
		t.Fatal("a check that read less than was confirmed kept the confirmation")
	}
}

// TestPositionsFlights: a read needing no more than the wait in flight on a node follows it; one
// needing more leads a wait of its own (which later ones then follow); ending a flight wakes its
// followers and leaves the node without one; a flight replaced meanwhile is not cleared by its
// old leader.
func TestPositionsFlights(t *testing.T) {
	p := NewPositions(2)
	f, lead := p.BeginFlight(0, pos(t, "0-1-10"))
	if !lead {
		t.Fatal("the first read does not lead")
	}
	g, lead := p.BeginFlight(0, pos(t, "0-1-9"))
	if lead || g != f {
		t.Fatal("a read needing less does not follow the wait in flight")
	}
	if _, lead := p.BeginFlight(1, pos(t, "0-1-9")); !lead {
		t.Fatal("a flight on node 0 was followed on node 1")
	}
	h, lead := p.BeginFlight(0, pos(t, "0-1-11"))
	if !lead || h == f {
		t.Fatal("a read needing more follows a wait for less")
	}
	if k, lead := p.BeginFlight(0, pos(t, "0-1-10")); lead || k != h {
		t.Fatal("the newer flight is not followed")
	}
	p.EndFlight(0, f) // the old leader: h stays
	select {
	case <-f.Done():
	default:
		t.Fatal("ending a flight did not wake its followers")
	}
	if k, lead := p.BeginFlight(0, pos(t, "0-1-11")); lead || k != h {
		t.Fatal("the old leader's end cleared the newer flight")
	}
	p.EndFlight(0, h)
	if _, lead := p.BeginFlight(0, pos(t, "0-1-1")); !lead {
		t.Fatal("a flight was left after it ended")
	}
}
