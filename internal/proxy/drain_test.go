package proxy_test

import (
	"context"
	"database/sql"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestDrainUnderLoad: replica1 is drained while 8 clients read through the read-write endpoint
// (reads on both replicas) and 8 through the read-only one (sessions bound to a replica). No
// client sees an error; the node reaches 0 connections from sluice (drained) well before the
// drain's timeout, an idle session's connection there included; reads no longer reach it; undrained, it takes reads again.
func TestDrainUnderLoad(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			e := &c.Endpoints[i]
			e.ReadWeights["primary"] = 0
			e.ReadWeights["replica1"], e.ReadWeights["replica2"] = 100, 100
		}
	})
	cl := testutil.Cluster(t)
	ids := map[string]string{}
	for _, n := range []string{"primary", "replica1", "replica2"} {
		db, err := cl.AdminDB(n)
		if err != nil {
			t.Fatal(err)
		}
		var id string
		if err := db.QueryRow("SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[id] = n
	}
	var (
		errs     atomic.Int64
		firstErr atomic.Value
		mu       sync.Mutex
		where    = map[string]int{} // reads per node, reset by phase
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for _, addr := range []string{s.rw, s.ro} {
		db := open(t, dsn(addr, "app", "app", "test", ""))
		db.SetMaxOpenConns(16)
		for range 8 {
			c := conn(t, db)
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					var id string
					if err := c.QueryRowContext(context.Background(), "SELECT @@server_id").Scan(&id); err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err)
						time.Sleep(10 * time.Millisecond)
						continue
					}
					mu.Lock()
					where[ids[id]]++
					mu.Unlock()
				}
			})
		}
	}
	phase := func(d time.Duration) map[string]int {
		mu.Lock()
		clear(where)
		mu.Unlock()
		time.Sleep(d)
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range where {
			out[k] = v
		}
		return out
	}
	// An idle session (a pooled connection) that last read on replica1 holds a connection
	// there: the drain must not wait for its next statement.
	idle := conn(t, open(t, dsn(s.rw, "app", "app", "test", "")))
	for range 50 {
		var id string
		if err := idle.QueryRowContext(context.Background(), "SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if ids[id] == "replica1" {
			break
		}
	}
	// An idle read-only session bound to replica1: its home connection is not closed at the
	// drain's start (it moves at its next statement, or is closed at the timeout).
	roDB := open(t, dsn(s.ro, "app", "app", "test", ""))
	var idleRO *sql.Conn
	for range 20 {
		c := conn(t, roDB)
		var id string
		if err := c.QueryRowContext(context.Background(), "SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if ids[id] == "replica1" {
			idleRO = c
			break
		}
	}
	if idleRO == nil {
		t.Fatal("no read-only session was bound to replica1")
	}
	before := phase(time.Second)
	if before["replica1"] == 0 || before["replica2"] == 0 {
		t.Fatalf("before the drain the reads went %v; want both replicas", before)
	}
	start := time.Now()
	n, err := s.app.DrainNode("replica1", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("drain answered: %s, %d connections", n.State, n.Connections)
	for {
		st := nodeState(t, s, "replica1")
		if st == "drained" {
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("replica1 is still %s after 15 s", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	during := phase(time.Second)
	if _, err := s.app.UndrainNode("replica1"); err != nil {
		t.Fatal(err)
	}
	after := phase(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("reads before %v, drained in %s, then %v, undrained %v; %d errors", before, took.Round(time.Millisecond), during, after, errs.Load())
	if errs.Load() != 0 {
		t.Errorf("%d client errors during the drain (first: %v)", errs.Load(), firstErr.Load())
	}
	if during["replica1"] != 0 || during["replica2"] == 0 {
		t.Errorf("reads while drained: %v; want none on replica1", during)
	}
	if after["replica1"] == 0 {
		t.Errorf("reads after undrain: %v; want replica1 back", after)
	}
	if err := idle.PingContext(context.Background()); err != nil {
		t.Errorf("the idle session after the drain: %v", err)
	}
	var id string
	if err := idleRO.QueryRowContext(context.Background(), "SELECT @@server_id").Scan(&id); err != nil {
		t.Errorf("the idle read-only session after the drain: %v", err)
	}
	if _, err := s.app.DrainNode("primary", time.Second); err == nil {
		t.Error("the primary could be drained")
	}
}

func nodeState(t *testing.T, s *sluice, name string) string {
	t.Helper()
	for _, n := range s.app.Nodes() {
		if n.Name == name {
			return n.State
		}
	}
	t.Fatalf("no node %s", name)
	return ""
}

// TestDrainIgnoresHints: hints do not keep a drained node busy. While clients keep sending
// /*FORCE_NODE='replica1'*/ and /*FORCE_SLAVE*/ statements, replica1's drain completes (before,
// every hinted statement opened a connection there again, and the drain never ended); during it
// FORCE_NODE='replica1' gets a clear error (1105, "is draining") and FORCE_SLAVE reads go to
// replica2 without error; undrained, FORCE_NODE reaches replica1 again.
func TestDrainIgnoresHints(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			e := &c.Endpoints[i]
			e.ReadWeights["primary"] = 0
			e.ReadWeights["replica1"], e.ReadWeights["replica2"] = 100, 100
		}
	})
	ids := serverIDs(t)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	db.SetMaxOpenConns(8)
	var (
		mu       sync.Mutex
		forced   = map[string]int{} // FORCE_NODE='replica1' outcomes: a node's name, or the error
		slave    = map[string]int{} // FORCE_SLAVE outcomes
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		draining atomic.Bool
	)
	record := func(m map[string]int, c *sql.Conn, q string) {
		var id int
		key := ""
		if err := c.QueryRowContext(context.Background(), q).Scan(&id); err != nil {
			key = "error: " + err.Error()
		} else {
			key = ids[id]
		}
		if draining.Load() {
			mu.Lock()
			m[key]++
			mu.Unlock()
		}
	}
	for range 4 {
		c := conn(t, db)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				record(forced, c, "/*FORCE_NODE='replica1'*/ SELECT @@server_id")
				record(slave, c, "/*FORCE_SLAVE*/ SELECT @@server_id")
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	draining.Store(true)
	start := time.Now()
	if _, err := s.app.DrainNode("replica1", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	for nodeState(t, s, "replica1") != "drained" {
		if time.Since(start) > 10*time.Second {
			close(stop)
			wg.Wait()
			t.Fatalf("replica1 is still %s 10 s into its drain while hints name it", nodeState(t, s, "replica1"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	time.Sleep(500 * time.Millisecond) // hinted statements against the drained node
	draining.Store(false)
	mu.Lock()
	forcedDuring, slaveDuring := maps.Clone(forced), maps.Clone(slave)
	mu.Unlock()
	if _, err := s.app.UndrainNode("replica1"); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	t.Logf("drained in %s; FORCE_NODE during: %v; FORCE_SLAVE during: %v", took.Round(time.Millisecond), forcedDuring, slaveDuring)
	if st := nodeState(t, s, "replica1"); st != "up" {
		t.Errorf("replica1 after undrain: %s", st)
	}
	for key := range slaveDuring {
		if key != "replica1" && key != "replica2" {
			t.Errorf("FORCE_SLAVE during the drain: %s", key)
		}
	}
	sawRefusal := false
	for key, n := range forcedDuring {
		switch {
		case strings.Contains(key, "1105") && strings.Contains(key, "is draining"):
			sawRefusal = true
		case key == "replica1":
			// Only before the drain had begun for the session (its statement was already
			// routed): a handful at most.
			if n > 8 {
				t.Errorf("FORCE_NODE='replica1' ran %d times on the draining node", n)
			}
		default:
			t.Errorf("FORCE_NODE='replica1' during the drain: %s (%d)", key, n)
		}
	}
	if !sawRefusal {
		t.Errorf("no FORCE_NODE='replica1' was refused during the drain: %v", forcedDuring)
	}
	c := conn(t, db)
	var id int
	if err := c.QueryRowContext(context.Background(), "/*FORCE_NODE='replica1'*/ SELECT @@server_id").Scan(&id); err != nil || ids[id] != "replica1" {
		t.Errorf("FORCE_NODE='replica1' after undrain: %s %v", ids[id], err)
	}
}
