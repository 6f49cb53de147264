package proxy_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// A read-only endpoint's sessions are bound to one replica each. A replica unfit for the
// endpoint's reads (past its max_replica_lag, down, draining, errant) loses them at their next
// statement boundary, as a drain moves them: no error, their state replayed on the other
// replica. TestDrainUnderLoad and TestErrantAndBrokenReplicas cover draining and errant ones.

// roMaxLag2s: the monitor every 200 ms, the read-only endpoint at max_replica_lag 2s.
func roMaxLag2s(c *config.Config) {
	c.Monitor.Interval.Duration = 200 * time.Millisecond
	for i := range c.Endpoints {
		if c.Endpoints[i].Mode == "read-only" {
			c.Endpoints[i].MaxReplicaLag.Duration = 2 * time.Second
		}
	}
}

// boundSession is one read-only session (its own connection) and where it reads.
type boundSession struct {
	c      *sql.Conn
	server string
}

// bindSessions opens n sessions to the read-only endpoint ro and reads where each is bound:
// the endpoint's policy spreads them over both replicas.
func bindSessions(t *testing.T, ro *sql.DB, n int, names map[int]string) []*boundSession {
	t.Helper()
	var out []*boundSession
	seen := map[string]int{}
	for range n {
		b := &boundSession{c: conn(t, ro)}
		// Session state that a move replays on the new replica.
		if _, err := b.c.ExecContext(context.Background(), "SET SESSION sql_mode = 'ANSI_QUOTES'"); err != nil {
			t.Fatal(err)
		}
		b.server = readAt(t, b.c, time.Minute, names).server
		seen[b.server]++
		out = append(out, b)
	}
	if seen["replica1"] == 0 || seen["replica2"] == 0 {
		t.Fatalf("sessions bound to %v, want some on each replica", seen)
	}
	return out
}

// boundRead is what one read of a bound session saw.
type boundRead struct {
	server string
	rows   int    // rows of test.bound_rows
	mode   string // the session's sql_mode
}

// readAt reads through c, within limit: which node it ran on (names: serverIDs), what it
// saw and the session's sql_mode.
func readAt(t *testing.T, c *sql.Conn, limit time.Duration, names map[int]string) boundRead {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var r boundRead
	var id int
	if err := c.QueryRowContext(ctx, `SELECT @@server_id, (SELECT COUNT(*) FROM test.bound_rows), @@sql_mode`).Scan(&id, &r.rows, &r.mode); err != nil {
		t.Fatalf("read through a bound session: %v", err)
	}
	r.server = names[id]
	return r
}

// boundRowsTable makes test.bound_rows empty on every node and waits until the monitor sees
// both replicas up and caught up.
func boundRowsTable(t *testing.T, rw *sql.DB) {
	t.Helper()
	mustExec(t, rw, "CREATE TABLE IF NOT EXISTS test.bound_rows (id INT PRIMARY KEY)")
	mustExec(t, rw, "DELETE FROM test.bound_rows")
	if err := testutil.Cluster(t).WaitCaughtUp(context.Background(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, rw, func(n map[string]nodeRow) bool {
		return n["replica1"].state == "up" && n["replica2"].state == "up" && lagMs(n["replica1"]) == 0 && lagMs(n["replica2"]) == 0
	})
}

// TestBoundSessionsLeaveLaggingReplica: with max_replica_lag 2s on the read-only endpoint,
// replica1's SQL thread stops and a row is written on the primary. Once replica1's lag is past
// 2 s, the next read of every session bound to it runs on replica2 and sees the row, without an
// error, its sql_mode replayed there; a session in a transaction there stays until the
// transaction ends; sessions bound to replica2 stay; and once replica1 caught up, no session
// goes back to it. Before, bound sessions kept reading replica1's stale data.
func TestBoundSessionsLeaveLaggingReplica(t *testing.T) {
	s := startSluice(t, roMaxLag2s)
	cl := testutil.Cluster(t)
	ctx := context.Background()
	names := serverIDs(t)
	rw := open(t, dsn(s.rw, "app", "app", "test", ""))
	boundRowsTable(t, rw)
	sessions := bindSessions(t, open(t, dsn(s.ro, "app", "app", "test", "")), 6, names)

	// One session on replica1 holds a read-only transaction open.
	var inTx *boundSession
	for _, b := range sessions {
		if b.server == "replica1" {
			inTx = b
			if _, err := b.c.ExecContext(ctx, "START TRANSACTION READ ONLY"); err != nil {
				t.Fatal(err)
			}
			break
		}
	}

	if err := cl.Pause(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			_ = cl.Resume(ctx, "replica1")
		}
	}()
	mustExec(t, rw, "INSERT INTO test.bound_rows VALUES (1)")
	waitNodes(t, rw, func(n map[string]nodeRow) bool { return lagMs(n["replica1"]) > 2500 })

	for _, b := range sessions {
		r := readAt(t, b.c, 10*time.Second, names)
		switch {
		case b == inTx:
			if r.server != "replica1" || r.rows != 0 {
				t.Errorf("a session in a transaction on replica1 read on %s (%d rows): it moved", r.server, r.rows)
			}
		case r.server != "replica2" || r.rows != 1:
			t.Errorf("a session bound to %s read on %s, %d rows; want replica2 and the row written", b.server, r.server, r.rows)
		case r.mode != "ANSI_QUOTES":
			t.Errorf("sql_mode %q after the move, want ANSI_QUOTES replayed", r.mode)
		}
	}
	if _, err := inTx.c.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if r := readAt(t, inTx.c, 10*time.Second, names); r.server != "replica2" || r.rows != 1 {
		t.Errorf("after its transaction, the session read on %s, %d rows; want replica2 and the row", r.server, r.rows)
	}

	// replica1 catches up: nobody goes back.
	if err := cl.Resume(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	paused = false
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, rw, func(n map[string]nodeRow) bool { return lagMs(n["replica1"]) == 0 })
	time.Sleep(500 * time.Millisecond) // a few monitor rounds: replica1 fit again
	for _, b := range sessions {
		if r := readAt(t, b.c, 10*time.Second, names); r.server != "replica2" {
			t.Errorf("a session read on %s after replica1 recovered, want it to stay on replica2", r.server)
		}
	}
}

// TestBoundSessionsLeaveHungReplica: replica1 stops answering (SIGSTOP: a disk stall or a
// partition looks the same) and the monitor finds it down. The next read of every session
// bound to it runs on replica2 at once, without an error; once replica1 answers again, they
// stay on replica2. Before, each read waited on the hung replica for as long as it hung.
func TestBoundSessionsLeaveHungReplica(t *testing.T) {
	s := startSluice(t, roMaxLag2s)
	names := serverIDs(t)
	rw := open(t, dsn(s.rw, "app", "app", "test", ""))
	boundRowsTable(t, rw)
	sessions := bindSessions(t, open(t, dsn(s.ro, "app", "app", "test", "")), 6, names)

	resume := freeze(t, "replica1") // hung_test.go's
	waitNodes(t, rw, func(n map[string]nodeRow) bool { return n["replica1"].state == "down" })
	for _, b := range sessions {
		start := time.Now()
		r := readAt(t, b.c, 5*time.Second, names)
		if r.server != "replica2" {
			t.Errorf("a session bound to %s read on %s, want replica2", b.server, r.server)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("a read took %s with replica1 hung and known down", took)
		}
	}
	resume()
	waitNodes(t, rw, func(n map[string]nodeRow) bool { return n["replica1"].state == "up" })
	for _, b := range sessions {
		if r := readAt(t, b.c, 10*time.Second, names); r.server != "replica2" {
			t.Errorf("a session read on %s after replica1 answered again, want it to stay on replica2", r.server)
		}
	}
}
