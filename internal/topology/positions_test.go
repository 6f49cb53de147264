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
