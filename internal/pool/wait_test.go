package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls until Waiting of k1 is n (the Gets started have queued).
func waitFor(t *testing.T, p *Pool[*conn], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for stat(p, k1).Waiting != n {
		if time.Now().After(deadline) {
			t.Fatalf("waiting %d, want %d", stat(p, k1).Waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWaitersServedInOrder: at max_per_node, the Gets that wait get the connections put back
// in the order they came, one per Put, and a Get that comes while they wait (TakeIdle or Get)
// does not take a connection put back before them.
func TestWaitersServedInOrder(t *testing.T) {
	r := newRig()
	lim := Limits{MaxPerNode: 1, AcquireTimeout: 10 * time.Second}
	a, _ := r.get(t, k1, v1, lim)
	const n = 5
	got := make([]chan *conn, n)
	for i := range got {
		got[i] = make(chan *conn, 1)
		go func() {
			c, _, err := r.p.Get(context.Background(), k1, v1, lim, nil, r.dial)
			if err != nil {
				t.Error(err)
			}
			got[i] <- c
		}()
		waitFor(t, r.p, i+1) // queued in this order
	}
	for i := range n {
		r.p.Put(a, v1, lim)
		if i < n-1 {
			// Others still wait: a newcomer does not take what the first was woken for.
			if _, _, ok := r.p.TakeIdle(k1, Want[*conn]{Variant: v1}); ok {
				t.Fatalf("put %d: TakeIdle took a connection while Gets wait", i)
			}
		}
		select {
		case c := <-got[i]:
			if c != a {
				t.Fatalf("waiter %d got %d, want %d", i, c.id, a.id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d did not get the connection put back", i)
		}
		for j := i + 1; j < n; j++ {
			select {
			case <-got[j]:
				t.Fatalf("put %d went to waiter %d, before waiter %d", i, j, i)
			default:
			}
		}
	}
	if s := stat(r.p, k1); s.Waiting != 0 || s.Open != 1 || s.Created != 1 || s.Reused != n || s.Waits != n {
		t.Fatalf("stats %+v", s)
	}
}

// TestWokenWaiterThatLeavesPassesItsTurn: a Get woken for room that ends (its session's
// context) at the same moment hands the room to the next waiter, which would otherwise wait
// out acquire_timeout beside an idle connection.
func TestWokenWaiterThatLeavesPassesItsTurn(t *testing.T) {
	r := newRig()
	lim := Limits{MaxPerNode: 1, AcquireTimeout: 10 * time.Second}
	a, _ := r.get(t, k1, v1, lim)
	ctx, cancel := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, _, err := r.p.Get(ctx, k1, v1, lim, nil, r.dial)
		firstDone <- err
	}()
	waitFor(t, r.p, 1)
	second := make(chan *conn, 1)
	go func() {
		c, _, err := r.p.Get(context.Background(), k1, v1, lim, nil, r.dial)
		if err != nil {
			t.Error(err)
		}
		second <- c
	}()
	waitFor(t, r.p, 2)
	// Cancelled and woken at once: the first's select may see either, and it may look
	// before or after the Put; in every order the second ends with the connection.
	cancel()
	r.p.Put(a, v1, lim)
	var firstGot bool
	select {
	case err := <-firstDone:
		firstGot = err == nil
	case <-time.After(5 * time.Second):
		t.Fatal("the first waiter did not return")
	}
	if firstGot {
		// The select took the wake: it has the connection; the second gets it next.
		r.p.Put(a, v1, lim)
	}
	select {
	case c := <-second:
		if c != a {
			t.Fatalf("the second waiter got %d, want %d", c.id, a.id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second waiter was not handed the room the first gave up")
	}
}

// TestManyWaitersAllServed: with many Gets waiting on a few connections (each Put wakes one
// of them), every Get is served, max_per_node holds, and the queue ends empty.
func TestManyWaitersAllServed(t *testing.T) {
	r := newRig()
	const max, clients, rounds = 4, 200, 5
	lim := Limits{MaxPerNode: max, AcquireTimeout: 30 * time.Second}
	var inUse, peak atomic.Int32
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range rounds {
				c, _, err := r.p.Get(context.Background(), k1, v1, lim, nil, r.dial)
				if err != nil {
					t.Error(err)
					return
				}
				n := inUse.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(50 * time.Microsecond)
				inUse.Add(-1)
				r.p.Return(c, v1, lim)
			}
		})
	}
	wg.Wait()
	s := stat(r.p, k1)
	if peak.Load() > max || s.Open > max || s.Waiting != 0 || s.InUse != 0 {
		t.Fatalf("peak %d, stats %+v", peak.Load(), s)
	}
	if s.Reused+s.Created != clients*rounds {
		t.Fatalf("served %d, want %d", s.Reused+s.Created, clients*rounds)
	}
	if g := r.p.groups[k1]; g.queue.head != nil || g.queue.tail != nil {
		t.Fatal("the wait queue is not empty")
	}
}
