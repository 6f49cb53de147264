package pool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// conn is a fake connection: what it is, and what the pool did to it.
type conn struct {
	id     int
	db     string
	closed atomic.Bool
	pings  atomic.Int32
	bad    bool // its ping fails
}

type rig struct {
	p     *Pool[*conn]
	clock atomic.Int64 // nanoseconds since start
	start time.Time
	next  atomic.Int32
}

func newRig() *rig {
	r := &rig{start: time.Unix(1000, 0)}
	r.p = New(Options[*conn]{
		Ops: Ops[*conn]{
			Ping: func(c *conn) error {
				c.pings.Add(1)
				if c.bad {
					return errors.New("gone")
				}
				return nil
			},
			Close: func(c *conn) {
				if !c.closed.CompareAndSwap(false, true) {
					panic("closed twice")
				}
			},
		},
		PingAfter: 10 * time.Second,
		Now:       func() time.Time { return r.start.Add(time.Duration(r.clock.Load())) },
	})
	return r
}

func (r *rig) advance(d time.Duration) { r.clock.Add(int64(d)) }

func (r *rig) dial() (*conn, error) { return &conn{id: int(r.next.Add(1))}, nil }

var (
	k1 = Key{Node: "n1", User: "app"}
	v1 = Variant{Caps: 1, Charset: 45}
)

func (r *rig) get(t *testing.T, k Key, v Variant, lim Limits) (*conn, bool) {
	t.Helper()
	c, reused, err := r.p.Get(context.Background(), k, v, lim, nil, r.dial)
	if err != nil {
		t.Fatal(err)
	}
	return c, reused
}

func stat(p *Pool[*conn], k Key) Stat {
	for _, s := range p.Stats() {
		if s.Node == k.Node && s.User == k.User {
			return s
		}
	}
	return Stat{}
}

func TestReuseLIFOAndVariants(t *testing.T) {
	r := newRig()
	lim := Limits{}
	a, reused := r.get(t, k1, v1, lim)
	b, _ := r.get(t, k1, v1, lim)
	if reused || a == b {
		t.Fatal("two Gets of an empty pool must dial two connections")
	}
	r.p.Put(a, v1, lim)
	r.p.Put(b, v1, lim)
	c, reused := r.get(t, k1, v1, lim)
	if !reused || c != b {
		t.Fatalf("got %d (reused %v), want the last put back (%d)", c.id, reused, b.id)
	}
	// Another variant, or another user, never gets a's connection.
	if d, reused := r.get(t, k1, Variant{Caps: 2, Charset: 45}, lim); reused || d == a {
		t.Fatal("a connection of another variant was handed out")
	}
	if d, reused := r.get(t, Key{Node: "n1", User: "other"}, v1, lim); reused || d == a {
		t.Fatal("a connection of another user was handed out")
	}
	// accept refuses a connection: a new one is dialed, a stays idle.
	d, reused, err := r.p.Get(context.Background(), k1, v1, lim, func(c *conn) bool { return c.db == "" && c != a }, r.dial)
	if err != nil || reused || d == a {
		t.Fatalf("accept was ignored: %v %v", reused, err)
	}
	s := stat(r.p, k1)
	if s.Created != 4 || s.Reused != 1 || s.Resets != 2 || s.Idle != 1 || s.Open != 4 || s.InUse != 3 {
		t.Fatalf("stats %+v", s)
	}
}

func TestMaxPerNodeWaitsForPut(t *testing.T) {
	r := newRig()
	lim := Limits{MaxPerNode: 1, AcquireTimeout: 5 * time.Second}
	a, _ := r.get(t, k1, v1, lim)
	got := make(chan *conn)
	go func() {
		c, _, err := r.p.Get(context.Background(), k1, v1, lim, nil, r.dial)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	for stat(r.p, k1).Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	r.p.Put(a, v1, lim)
	if c := <-got; c != a {
		t.Fatalf("the waiter got %d, want the connection put back", c.id)
	}
	s := stat(r.p, k1)
	if s.Open != 1 || s.Waits != 1 || s.Waited <= 0 || s.Created != 1 || s.Reused != 1 {
		t.Fatalf("stats %+v", s)
	}
	// A Discard makes room too: the waiter dials.
	go func() {
		c, _, err := r.p.Get(context.Background(), k1, v1, lim, nil, r.dial)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	for stat(r.p, k1).Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	r.p.Discard(a, true)
	if c := <-got; c == a || c == nil {
		t.Fatal("the waiter did not dial after a discard")
	}
	if s := stat(r.p, k1); s.ResetFailures != 1 || s.Open != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestAcquireTimeoutIs1040(t *testing.T) {
	r := newRig()
	lim := Limits{MaxPerNode: 2, AcquireTimeout: 50 * time.Millisecond}
	r.get(t, k1, v1, lim)
	r.get(t, k1, v1, lim)
	start := time.Now()
	_, _, err := r.p.Get(context.Background(), k1, v1, lim, nil, r.dial)
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Code != mysql.ErrConCount || se.State != "08004" {
		t.Fatalf("got %v, want 1040", err)
	}
	for _, w := range []string{"node n1", "user app", "pool.max_per_node=2", "50ms", "acquire_timeout"} {
		if !strings.Contains(se.Message, w) {
			t.Errorf("message %q lacks %q", se.Message, w)
		}
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > 2*time.Second {
		t.Fatalf("waited %s", d)
	}
	// The session's end (ctx) ends a wait too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.p.Get(ctx, k1, v1, Limits{MaxPerNode: 2, AcquireTimeout: time.Hour}, nil, r.dial); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
	if s := stat(r.p, k1); s.Waiting != 0 || s.Waits != 2 || s.Open != 2 {
		t.Fatalf("stats %+v", s)
	}
	// No wait at all with acquire_timeout 0.
	if _, _, err := r.p.Get(context.Background(), k1, v1, Limits{MaxPerNode: 2}, nil, r.dial); !errors.As(err, &se) {
		t.Fatalf("got %v, want 1040 at once", err)
	}
}

func TestIdleTimeoutAndLifetime(t *testing.T) {
	r := newRig()
	lim := Limits{IdleTimeout: time.Minute, MaxLifetime: time.Hour}
	a, _ := r.get(t, k1, v1, lim)
	b, _ := r.get(t, k1, v1, lim)
	r.p.Put(a, v1, lim)
	r.advance(30 * time.Second)
	r.p.Put(b, v1, lim)
	r.advance(31 * time.Second) // a idle 61 s, b 31 s
	r.p.Sweep(nil)
	if !a.closed.Load() || b.closed.Load() {
		t.Fatalf("sweep: a closed %v (want true), b closed %v (want false)", a.closed.Load(), b.closed.Load())
	}
	// b idle past PingAfter: pinged before reuse.
	c, reused := r.get(t, k1, v1, lim)
	if c != b || !reused || b.pings.Load() != 1 {
		t.Fatalf("reuse of b: %v %v pings %d", c.id, reused, b.pings.Load())
	}
	// Put back at once and taken again: no ping.
	r.p.Put(b, v1, lim)
	r.get(t, k1, v1, lim)
	if b.pings.Load() != 1 {
		t.Fatal("a connection idle for less than PingAfter was pinged")
	}
	// Past max_lifetime: closed at Put.
	r.advance(time.Hour)
	r.p.Put(b, v1, lim)
	if !b.closed.Load() {
		t.Fatal("a connection past max_lifetime was kept")
	}
	// A dead idle connection (its ping fails) is closed and another dialed.
	d, _ := r.get(t, k1, v1, lim)
	d.bad = true
	r.p.Put(d, v1, lim)
	r.advance(20 * time.Second)
	e, reused := r.get(t, k1, v1, lim)
	if e == d || reused || !d.closed.Load() {
		t.Fatal("a connection whose ping failed was handed out")
	}
	if s := stat(r.p, k1); s.Open != 1 || s.Idle != 0 {
		t.Fatalf("stats %+v", s)
	}
	// Sweep drops the idle connections of a key refused (its node left).
	r.p.Put(e, v1, lim)
	r.p.Sweep(func(k Key) bool { return k.Node != "n1" })
	if !e.closed.Load() || stat(r.p, k1).Open != 0 {
		t.Fatal("sweep kept a connection of a node that left")
	}
}

func TestOtherVariantGivesItsPlace(t *testing.T) {
	r := newRig()
	lim := Limits{MaxPerNode: 1, AcquireTimeout: time.Second}
	a, _ := r.get(t, k1, v1, lim)
	r.p.Put(a, v1, lim)
	b, reused := r.get(t, k1, Variant{Charset: 8}, lim)
	if reused || b == a || !a.closed.Load() {
		t.Fatal("the idle connection of another variant did not give its place")
	}
	if s := stat(r.p, k1); s.Open != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestUnknownAndClosed(t *testing.T) {
	r := newRig()
	stray := &conn{}
	r.p.Put(stray, v1, Limits{})
	if !stray.closed.Load() {
		t.Fatal("a connection the pool never handed out was kept")
	}
	a, _ := r.get(t, k1, v1, Limits{})
	b, _ := r.get(t, k1, v1, Limits{})
	r.p.Put(a, v1, Limits{})
	r.p.Close()
	if !a.closed.Load() {
		t.Fatal("Close left an idle connection open")
	}
	r.p.Put(b, v1, Limits{})
	if !b.closed.Load() {
		t.Fatal("a connection put back after Close was kept")
	}
	if _, _, err := r.p.Get(context.Background(), k1, v1, Limits{}, nil, r.dial); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

// TestConcurrent: many callers Get and Put at once under a limit; never more open than the
// limit, nothing handed to two callers, every count adds up (run with -race).
func TestConcurrent(t *testing.T) {
	r := newRig()
	lim := Limits{MaxPerNode: 4, AcquireTimeout: 10 * time.Second}
	var inUse sync.Map
	var wg sync.WaitGroup
	var maxOpen atomic.Int32
	var open atomic.Int32
	dial := func() (*conn, error) {
		if n := open.Add(1); n > maxOpen.Load() {
			maxOpen.Store(n)
		}
		return r.dial()
	}
	for w := range 16 {
		wg.Go(func() {
			for i := range 200 {
				c, _, err := r.p.Get(context.Background(), k1, v1, lim, nil, dial)
				if err != nil {
					t.Error(err)
					return
				}
				if _, dup := inUse.LoadOrStore(c, true); dup {
					t.Error("a connection was handed to two callers")
				}
				inUse.Delete(c)
				if (w+i)%17 == 0 {
					open.Add(-1)
					r.p.Discard(c, false)
				} else {
					r.p.Put(c, v1, lim)
				}
				if i%50 == 0 {
					r.p.Sweep(nil)
					_ = r.p.Stats()
				}
			}
		})
	}
	wg.Wait()
	s := stat(r.p, k1)
	if maxOpen.Load() > 4 || s.Open > 4 || s.InUse != 0 || s.Waiting != 0 {
		t.Fatalf("max open %d, stats %+v", maxOpen.Load(), s)
	}
	if s.Created+s.Reused != 16*200 {
		t.Fatalf("created %d + reused %d != %d Gets", s.Created, s.Reused, 16*200)
	}
}

// TestEvictNode: a node found full gets its idle connections closed, every user's, and only
// that node's; those in use stay.
func TestEvictNode(t *testing.T) {
	r := newRig()
	lim := Limits{}
	k2 := Key{Node: "n1", User: "other"}
	k3 := Key{Node: "n2", User: "app"}
	a, _ := r.get(t, k1, v1, lim)
	b, _ := r.get(t, k2, v1, lim)
	c, _ := r.get(t, k3, v1, lim)
	busy, _ := r.get(t, k1, v1, lim)
	r.p.Put(a, v1, lim)
	r.p.Put(b, v1, lim)
	r.p.Put(c, v1, lim)
	if n := r.p.EvictNode("n1"); n != 2 {
		t.Fatalf("evicted %d, want 2", n)
	}
	if !a.closed.Load() || !b.closed.Load() || c.closed.Load() || busy.closed.Load() {
		t.Fatal("EvictNode closed the wrong connections")
	}
	if s := stat(r.p, k1); s.Open != 1 || s.Idle != 0 || s.InUse != 1 {
		t.Fatalf("stats %+v", s)
	}
}
