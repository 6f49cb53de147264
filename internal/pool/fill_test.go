package pool

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// filler is a Fill's plan and dial for tests: the plan gives the last Put's limits (or
// override's when set) unless refuse says no; dial records what it was asked for and fails
// while fail is set.
type filler struct {
	r        *rig
	mu       sync.Mutex
	refuse   bool
	override *Limits
	fail     bool
	dialed   []Variant
	origins  []string
}

func (f *filler) fill() int {
	return f.r.p.Fill(func(k Key, last Limits) (Limits, bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.origins = append(f.origins, last.Origin)
		if f.override != nil {
			return *f.override, !f.refuse
		}
		return last, !f.refuse
	}, func(k Key, v Variant) (*conn, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.dialed = append(f.dialed, v)
		if f.fail {
			return nil, errors.New("refused")
		}
		return f.r.dial()
	})
}

// TestFillTopsUpToMinIdle: no top-up before a Put (no variant to open with); after one, the
// group is filled to min_idle with the Put's variant, and those connections are what the next
// Gets take (created does not grow).
func TestFillTopsUpToMinIdle(t *testing.T) {
	r := newRig()
	f := &filler{r: r}
	lim := Limits{MinIdle: 3, IdleTimeout: time.Minute, Origin: "rw"}
	if n := f.fill(); n != 0 || len(f.dialed) != 0 {
		t.Fatalf("fill before any Put opened %d", n)
	}
	v2 := Variant{Caps: 2, Charset: 33}
	r.get(t, k1, v1, lim) // in use, never put back: not the template
	a, _ := r.get(t, k1, v2, lim)
	r.p.Put(a, v2, lim)
	if n := f.fill(); n != 2 {
		t.Fatalf("fill opened %d, want 2 (min_idle 3, one idle)", n)
	}
	for _, v := range f.dialed {
		if v != v2 {
			t.Fatalf("fill dialed variant %+v, want the last Put's %+v", v, v2)
		}
	}
	if len(f.origins) != 1 || f.origins[0] != "rw" {
		t.Fatalf("plan saw origins %q, want the last Put's [rw]", f.origins)
	}
	if s := stat(r.p, k1); s.Idle != 3 || s.Open != 4 || s.Created != 4 {
		t.Fatalf("after fill: %+v", s)
	}
	if n := f.fill(); n != 0 {
		t.Fatalf("a full group was topped up again: %d", n)
	}
	for range 3 {
		if _, reused := r.get(t, k1, v2, lim); !reused {
			t.Fatal("a Get after the fill dialed")
		}
	}
	if s := stat(r.p, k1); s.Created != 4 || s.Reused != 3 {
		t.Fatalf("after three Gets: %+v", s)
	}
}

// TestFillRespectsMaxPerNode: the connections in use count; the top-up stops at max_per_node.
func TestFillRespectsMaxPerNode(t *testing.T) {
	r := newRig()
	f := &filler{r: r}
	lim := Limits{MinIdle: 5, MaxPerNode: 3}
	a, _ := r.get(t, k1, v1, lim)
	r.get(t, k1, v1, lim) // in use
	r.p.Put(a, v1, lim)
	if n := f.fill(); n != 1 {
		t.Fatalf("fill opened %d, want 1 (max_per_node 3, 2 open)", n)
	}
	if s := stat(r.p, k1); s.Open != 3 || s.Idle != 2 {
		t.Fatalf("after fill: %+v", s)
	}
	// Lowered live (the plan's limits, not the Put's): nothing more, nothing past it.
	f.override = &Limits{MinIdle: 1, MaxPerNode: 2}
	if n := f.fill(); n != 0 {
		t.Fatalf("fill over max_per_node: %d", n)
	}
}

// TestIdleTimeoutKeepsMinIdle: idle_timeout closes only the idle connections beyond min_idle
// (the oldest first); max_lifetime closes the kept ones too, and the next fill replaces them; a
// plan that refuses the group (its node down) lets idle_timeout close them all.
func TestIdleTimeoutKeepsMinIdle(t *testing.T) {
	r := newRig()
	f := &filler{r: r}
	lim := Limits{MinIdle: 2, IdleTimeout: time.Minute, MaxLifetime: time.Hour}
	var cs []*conn
	for range 4 {
		c, _ := r.get(t, k1, v1, lim)
		cs = append(cs, c)
	}
	for _, c := range cs {
		r.p.Put(c, v1, lim)
		r.advance(time.Second)
	}
	r.advance(2 * time.Minute)
	r.p.Sweep(nil)
	if !cs[0].closed.Load() || !cs[1].closed.Load() || cs[2].closed.Load() || cs[3].closed.Load() {
		t.Fatalf("closed: %v %v %v %v; want the two oldest only", cs[0].closed.Load(), cs[1].closed.Load(),
			cs[2].closed.Load(), cs[3].closed.Load())
	}
	// A Get past the idle timeout still finds the kept ones (pinged: idle long).
	c, reused := r.get(t, k1, v1, lim)
	if c != cs[3] || !reused || c.pings.Load() != 1 {
		t.Fatalf("get: %d reused %v pings %d", c.id, reused, c.pings.Load())
	}
	r.p.Put(c, v1, lim)
	// Past max_lifetime: closed whatever min_idle says, then replaced by the fill.
	r.advance(time.Hour)
	r.p.Sweep(nil)
	if s := stat(r.p, k1); s.Idle != 0 || !cs[2].closed.Load() || !cs[3].closed.Load() {
		t.Fatalf("after max_lifetime: %+v", s)
	}
	if n := f.fill(); n != 2 {
		t.Fatalf("fill after max_lifetime opened %d, want 2", n)
	}
	// The node goes down: the plan refuses, the floor drops to 0, idle_timeout closes them.
	f.refuse = true
	if n := f.fill(); n != 0 {
		t.Fatalf("fill of a refused group opened %d", n)
	}
	r.advance(2 * time.Minute)
	r.p.Sweep(nil)
	if s := stat(r.p, k1); s.Idle != 0 || s.Open != 0 {
		t.Fatalf("a refused group kept idle connections: %+v", s)
	}
}

// TestFillBackoff: after a failed dial the group waits (1 s, doubling) before the next try; a
// success ends the backoff. A node found full (EvictNode) pauses the top-up too.
func TestFillBackoff(t *testing.T) {
	r := newRig()
	f := &filler{r: r, fail: true}
	lim := Limits{MinIdle: 2}
	a, _ := r.get(t, k1, v1, lim)
	r.p.Put(a, v1, lim)
	if n := f.fill(); n != 0 || len(f.dialed) != 1 {
		t.Fatalf("failing fill: opened %d, dialed %d (want 0, 1)", n, len(f.dialed))
	}
	if s := stat(r.p, k1); s.Open != 1 {
		t.Fatalf("a failed dial kept its place: %+v", s)
	}
	f.fill()
	if len(f.dialed) != 1 {
		t.Fatal("fill dialed again within the backoff")
	}
	r.advance(time.Second)
	f.fill() // fails again: the backoff doubles to 2 s
	r.advance(time.Second)
	f.fill()
	if len(f.dialed) != 2 {
		t.Fatalf("dialed %d times, want 2 (second backoff 2 s)", len(f.dialed))
	}
	f.fail = false
	r.advance(time.Second)
	if n := f.fill(); n != 1 {
		t.Fatalf("fill after the backoff opened %d", n)
	}
	if r.p.EvictNode("n1") != 2 {
		t.Fatal("evict")
	}
	if n := f.fill(); n != 0 {
		t.Fatalf("fill right after the node was found full opened %d", n)
	}
	r.advance(time.Second)
	if n := f.fill(); n != 2 {
		t.Fatalf("fill a second after the eviction opened %d, want 2", n)
	}
}

// TestFillNotWhileWaitingOrClosed: a group with a Get waiting for room is not topped up (the
// Get dials itself), and a closed pool opens nothing.
func TestFillNotWhileWaitingOrClosed(t *testing.T) {
	r := newRig()
	f := &filler{r: r}
	lim := Limits{MinIdle: 3}
	a, _ := r.get(t, k1, v1, lim)
	r.p.Put(a, v1, lim)
	r.p.mu.Lock()
	r.p.groups[k1].waiting++
	r.p.mu.Unlock()
	if n := f.fill(); n != 0 {
		t.Fatalf("fill with a Get waiting opened %d", n)
	}
	r.p.mu.Lock()
	r.p.groups[k1].waiting--
	r.p.mu.Unlock()
	r.p.Close()
	if n := f.fill(); n != 0 {
		t.Fatalf("fill of a closed pool opened %d", n)
	}
}
