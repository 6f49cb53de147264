package proxy

import (
	"net/netip"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func testBlocker(max int, block time.Duration) (*authBlocker, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	b := newAuthBlocker(max, block)
	b.now = clk.now
	return b, clk
}

// TestAuthBlockerCounts: an address is blocked at its max-th failure, each within the block time
// of the previous, until the block time has passed since its last failure; a pause longer than
// the block time starts the count again; IPv4-mapped addresses are their IPv4 address; other
// addresses are not affected.
func TestAuthBlockerCounts(t *testing.T) {
	b, clk := testBlocker(3, time.Minute)
	ip := netip.MustParseAddr("127.0.0.2")
	mapped := netip.MustParseAddr("::ffff:127.0.0.2")
	other := netip.MustParseAddr("127.0.0.3")
	if b.fail(ip) || b.fail(mapped) {
		t.Fatal("blocked before the limit")
	}
	if b.isBlocked(ip) {
		t.Fatal("blocked after 2 of 3 failures")
	}
	clk.add(59 * time.Second)
	if !b.fail(ip) {
		t.Fatal("the 3rd failure did not report the block")
	}
	if !b.isBlocked(ip) || !b.isBlocked(mapped) {
		t.Fatal("not blocked after 3 failures")
	}
	if b.isBlocked(other) {
		t.Fatal("another address is blocked")
	}
	if b.fail(ip) {
		t.Fatal("a failure while blocked reported the block again")
	}
	clk.add(time.Minute)
	if !b.isBlocked(ip) {
		t.Fatal("the block ended before the block time since the last failure")
	}
	clk.add(time.Second)
	if b.isBlocked(ip) {
		t.Fatal("still blocked after the block time")
	}
	// Expired: the count starts again.
	if b.fail(ip) || b.isBlocked(ip) {
		t.Fatal("blocked again by one failure after the block")
	}
	// Failures further apart than the block time never block.
	b2, clk2 := testBlocker(2, time.Minute)
	for range 5 {
		if b2.fail(ip) {
			t.Fatal("failures a block time apart blocked")
		}
		clk2.add(61 * time.Second)
	}
	if b2.blocked.Load() != 0 || b.blocked.Load() != 1 {
		t.Fatalf("blocked counters %d %d, want 0 1", b2.blocked.Load(), b.blocked.Load())
	}
	// Disabled: nil table, never blocked.
	var off *authBlocker = newAuthBlocker(0, time.Minute)
	if off != nil || off.fail(ip) || off.isBlocked(ip) {
		t.Fatal("max 0 does not disable blocking")
	}
}

// TestAuthBlockerBounded: many addresses never grow the table past its bound: the address with
// the oldest last failure is forgotten first, and expired entries go as failures arrive.
func TestAuthBlockerBounded(t *testing.T) {
	b, clk := testBlocker(2, time.Minute)
	b.limit = 100
	blockedIP := netip.MustParseAddr("127.255.0.1")
	b.fail(blockedIP)
	b.fail(blockedIP)
	for i := range 1000 {
		clk.add(time.Millisecond)
		b.fail(netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(i)}))
		if n := b.size(); n > 100 {
			t.Fatalf("%d entries after %d addresses, bound 100", n, i+1)
		}
	}
	if b.isBlocked(blockedIP) {
		t.Fatal("the oldest address was not the one evicted")
	}
	last := netip.AddrFrom4([4]byte{127, 1, 3, 231}) // the 1000th
	if !b.fail(last) || !b.isBlocked(last) {
		t.Fatal("a recent address lost its count")
	}
	if int(b.n.Load()) != b.size() {
		t.Fatalf("n %d, size %d", b.n.Load(), b.size())
	}
	// All expired: the next failure clears them.
	clk.add(2 * time.Minute)
	b.fail(blockedIP)
	if n := b.size(); n != 1 {
		t.Fatalf("%d entries after every one expired, want 1", n)
	}
}
