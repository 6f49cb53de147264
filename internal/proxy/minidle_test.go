package proxy_test

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
)

// waitPool polls node and user's pool figures until ok holds (or 6 s pass: the top-up runs
// every second) and returns the last ones; every sample is checked against max open.
func waitPool(t *testing.T, s *sluice, node string, max int, ok func(admin.Pool) bool) admin.Pool {
	t.Helper()
	deadline := time.Now().Add(6 * time.Second)
	for {
		p := poolOf(s, node, "app")
		if p.Open > max {
			t.Fatalf("pool of %s: %+v: more than max_per_node %d open", node, p, max)
		}
		if ok(p) || time.Now().After(deadline) {
			return p
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPoolMinIdle: pool.min_idle. No top-up before a session of the user used the node; after
// one left, the pool opens connections in the background until min_idle are idle; idle_timeout
// does not close those; new sessions take them (created does not grow); with sessions holding
// some, the top-up stops at max_per_node; a node that takes no new work (drained: the same
// check as down or removed) loses its idle connections and gets none.
func TestPoolMinIdle(t *testing.T) {
	const minIdle, maxPerNode = 3, 4
	s := startSluice(t, func(c *config.Config) {
		poolConfig("session", maxPerNode, 5*time.Second)(c)
		for i := range c.Endpoints {
			c.Endpoints[i].Pool.MinIdle = minIdle
			c.Endpoints[i].Pool.IdleTimeout.Duration = 1500 * time.Millisecond
		}
	})
	time.Sleep(1200 * time.Millisecond) // a tick or more: nothing to top up yet
	if p := poolOf(s, "primary", "app"); p.Open != 0 {
		t.Fatalf("connections opened before any session: %+v", p)
	}

	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	a.int(t, "SELECT 1")
	a.leave()
	p := waitPool(t, s, "primary", maxPerNode, func(p admin.Pool) bool { return p.Idle >= minIdle })
	if p.Idle != minIdle || p.Open != minIdle || p.Created != minIdle || p.InUse != 0 {
		t.Fatalf("after one session: %+v; want %d idle, all created (1 by the session, the rest by the top-up)", p, minIdle)
	}

	// Past idle_timeout (1.5 s) and a sweep: min_idle stay.
	time.Sleep(2500 * time.Millisecond)
	if p := poolOf(s, "primary", "app"); p.Idle != minIdle || p.Created != minIdle {
		t.Fatalf("after idle_timeout: %+v; want the %d kept, none replaced", p, minIdle)
	}

	// Three sessions at once take the three idle connections: none dialed.
	var held []*client
	threads := map[int64]bool{}
	for range minIdle {
		c := connect(t, dsn(s.rw, "app", "app", "test", ""))
		threads[c.thread(t)] = true
		held = append(held, c)
	}
	if p := poolOf(s, "primary", "app"); p.Created != minIdle || p.Reused != minIdle || len(threads) != minIdle {
		t.Fatalf("three sessions on a topped-up pool: %+v, %d threads; want created %d, reused %d", p, len(threads), minIdle, minIdle)
	}
	// With three in use, the top-up wants three idle but max_per_node leaves room for one.
	// (Open counts a top-up's dial under way: wait for it to land idle.)
	p = waitPool(t, s, "primary", maxPerNode, func(p admin.Pool) bool { return p.Open == maxPerNode && p.Idle == 1 })
	if p.Open != maxPerNode || p.Idle != 1 || p.InUse != minIdle {
		t.Fatalf("with %d in use: %+v; want %d open, 1 idle", minIdle, p, maxPerNode)
	}
	time.Sleep(1500 * time.Millisecond) // more ticks: still nothing past max_per_node
	waitPool(t, s, "primary", maxPerNode, func(admin.Pool) bool { return true })
	// The fourth session takes the one the top-up opened.
	d := connect(t, dsn(s.rw, "app", "app", "test", ""))
	if th := d.thread(t); threads[th] {
		t.Fatalf("the fourth session shares thread %d", th)
	}
	held = append(held, d)
	if p := poolOf(s, "primary", "app"); p.Created != maxPerNode || p.Reused != maxPerNode {
		t.Fatalf("four sessions: %+v; want created %d, reused %d", p, maxPerNode, maxPerNode)
	}
	for _, c := range held {
		c.leave()
	}
	p = waitPool(t, s, "primary", maxPerNode, func(p admin.Pool) bool { return p.Idle == maxPerNode })
	if p.Idle != maxPerNode || p.Created != maxPerNode {
		t.Fatalf("all left: %+v", p)
	}

	// A replica: a read-only session binds one, the top-up follows; then it is drained.
	r := connect(t, dsn(s.ro, "app", "app", "test", ""))
	r.int(t, "SELECT 1")
	r.leave()
	var replica string
	deadline := time.Now().Add(6 * time.Second)
	for replica == "" && time.Now().Before(deadline) {
		for _, q := range s.app.Pools() {
			if q.User == "app" && q.Node != "primary" && q.Idle >= minIdle {
				replica = q.Node
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if replica == "" {
		t.Fatalf("no replica topped up after a read-only session: %+v", s.app.Pools())
	}
	created := poolOf(s, replica, "app").Created
	if _, err := s.app.DrainNode(replica, time.Minute); err != nil {
		t.Fatal(err)
	}
	p = waitPool(t, s, replica, maxPerNode, func(p admin.Pool) bool { return p.Open == 0 })
	if p.Open != 0 {
		t.Fatalf("drained %s kept %+v", replica, p)
	}
	time.Sleep(2500 * time.Millisecond) // ticks: no top-up of a node that takes no new work
	if p := poolOf(s, replica, "app"); p.Open != 0 || p.Created != created {
		t.Fatalf("drained %s was topped up: %+v (created %d before)", replica, p, created)
	}
	// The primary, untouched, keeps its connections.
	if p := poolOf(s, "primary", "app"); p.Idle < minIdle {
		t.Fatalf("the primary lost its idle connections: %+v", p)
	}
}
