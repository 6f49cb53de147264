package proxy_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// nodeRow is one row of /*PROXY_INTERNAL*/ SHOW NODES.
type nodeRow struct {
	name, address, role, zone, state          string
	lagMs, secondsBehind, position, lastError sql.NullString
	connections                               int64
	threads, rtt                              sql.NullString
	source                                    sql.NullString
	readOnly                                  sql.NullString
	reads                                     string // this endpoint's: yes, or no: why
}

func showNodes(t testing.TB, db *sql.DB) map[string]nodeRow {
	t.Helper()
	rows, err := db.Query("/*PROXY_INTERNAL*/ SHOW NODES")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]nodeRow{}
	for rows.Next() {
		var r nodeRow
		if err := rows.Scan(&r.name, &r.address, &r.role, &r.zone, &r.state, &r.lagMs, &r.secondsBehind, &r.position,
			&r.connections, &r.threads, &r.rtt, &r.lastError, &r.source, &r.readOnly, &r.reads); err != nil {
			t.Fatal(err)
		}
		out[r.name] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeStream runs stmt on db every 100 ms (a steady write stream for replication to carry)
// until the returned function is called, which reports the first error.
func writeStream(db *sql.DB, stmt string) (stop func() error) {
	done := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				result <- nil
				return
			case <-tick.C:
			}
			if _, err := db.Exec(stmt); err != nil {
				result <- err
				return
			}
		}
	}()
	return func() error { close(done); return <-result }
}

func lagMs(r nodeRow) int64 {
	v, err := strconv.ParseInt(r.lagMs.String, 10, 64)
	if !r.lagMs.Valid || err != nil {
		return -1
	}
	return v
}

// TestMonitorShowsNodesAndLag: the monitor watches every node (SHOW NODES: up, positions,
// threads, round trip) and measures a delayed replica's lag from GTID positions: with a
// replication delay of 5 s and a steady write stream, replica1's lag is between 3 500 and
// 6 000 ms, and drops back to 0 once the delay is off. (The delay is not 3 s to the
// millisecond: a binlog event carries its time in whole seconds, and the replica applies it 3 s
// after that second began, so an event waits 4 to 5 s; the monitor's 200 ms rounds add their
// own step, and a write stream slowed by a loaded machine moves the primary less often.)
func TestMonitorShowsNodesAndLag(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Monitor.Interval.Duration = 200 * time.Millisecond })
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	deadline := time.Now().Add(10 * time.Second)
	for {
		nodes := showNodes(t, db)
		ok := len(nodes) == 3
		for _, n := range nodes {
			ok = ok && n.state == "up" && n.position.Valid && n.threads.Valid && n.rtt.Valid && lagMs(n) == 0
		}
		if ok {
			if nodes["primary"].role != "primary" || nodes["replica1"].role != "replica" {
				t.Fatalf("roles: %+v", nodes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes not all up, checked and caught up: %+v", nodes)
		}
		time.Sleep(100 * time.Millisecond)
	}

	mustExec(t, db, "CREATE TABLE IF NOT EXISTS test.monitor_lag (id INT AUTO_INCREMENT PRIMARY KEY, at TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3))")
	if err := cl.Lag(ctx, "replica1", 5); err != nil {
		t.Fatal(err)
	}
	lagOff := false
	defer func() {
		if !lagOff {
			_ = cl.Lag(ctx, "replica1", 0)
		}
	}()
	stopWrites := writeStream(db, "INSERT INTO test.monitor_lag () VALUES ()")
	// After the delay has had time to show: the lag seen over a couple of seconds.
	time.Sleep(6 * time.Second)
	var seen []int64
	for range 10 {
		seen = append(seen, lagMs(showNodes(t, db)["replica1"]))
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("replica1 lag_ms with a 5 s delay: %v", seen)
	if err := stopWrites(); err != nil {
		t.Fatal(err)
	}
	for _, l := range seen {
		if l < 3500 || l > 6000 {
			t.Errorf("replica1 lag %d ms with a 5 s delay (seen %v), want 3 500 to 6 000", l, seen)
			break
		}
	}
	if l := lagMs(showNodes(t, db)["replica2"]); l < 0 || l > 1000 {
		t.Errorf("replica2 (no delay) lag %d ms", l)
	}
	if err := cl.Lag(ctx, "replica1", 0); err != nil {
		t.Fatal(err)
	}
	lagOff = true
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for lagMs(showNodes(t, db)["replica1"]) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("replica1 lag did not drop to 0 after the delay was turned off: %+v", showNodes(t, db)["replica1"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// maxLag2s: the monitor every 200 ms, and every endpoint at max_replica_lag 2s with weighted
// balancing (reads alternate between the replicas that qualify).
func maxLag2s(c *config.Config) {
	c.Monitor.Interval.Duration = 200 * time.Millisecond
	for i := range c.Endpoints {
		c.Endpoints[i].MaxReplicaLag.Duration = 2 * time.Second
		c.Endpoints[i].Balance = config.BalanceWeighted
	}
}

// TestLaggingReplicaSetAside: with max_replica_lag 2s, a replica delayed by 4 s takes no reads
// while it lags; with both replicas lagging, reads go to the primary; once the delay is off and
// the replicas caught up, reads return to them.
func TestLaggingReplicaSetAside(t *testing.T) {
	s := startSluice(t, maxLag2s)
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS test.lag_aside (id INT AUTO_INCREMENT PRIMARY KEY)")
	stopWrites := writeStream(db, "INSERT INTO test.lag_aside () VALUES ()")
	delayed := map[string]bool{}
	defer func() {
		for name := range delayed {
			_ = cl.Lag(ctx, name, 0)
		}
	}()
	delay := func(name string, seconds int) {
		if err := cl.Lag(ctx, name, seconds); err != nil {
			t.Fatal(err)
		}
		delayed[name] = seconds > 0
	}
	waitLag := func(name string, atLeast int64) {
		deadline := time.Now().Add(15 * time.Second)
		for lagMs(showNodes(t, db)[name]) < atLeast {
			if time.Now().After(deadline) {
				t.Fatalf("%s: lag never reached %d ms: %+v", name, atLeast, showNodes(t, db)[name])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	reads := func() map[string]int {
		c := conn(t, db)
		defer c.Close()
		got := map[string]int{}
		for range 20 {
			if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			node, _, _ := lastRoute(t, c)
			got[node]++
		}
		return got
	}

	delay("replica1", 4)
	waitLag("replica1", 2500)
	if got := reads(); got["replica1"] != 0 || got["replica2"] != 20 {
		t.Errorf("replica1 lagging past 2s: reads went %v, want all on replica2", got)
	}
	if r := showNodes(t, db); r["replica1"].state != "lagging" || !strings.HasPrefix(r["replica1"].reads, "no: lag ") ||
		!strings.Contains(r["replica1"].reads, "max_replica_lag 2s") || r["replica2"].reads != "yes" {
		t.Errorf("SHOW NODES: replica1 %s, reads %q; replica2 reads %q; want lagging, no: lag ... max_replica_lag 2s; yes",
			r["replica1"].state, r["replica1"].reads, r["replica2"].reads)
	}
	delay("replica2", 4)
	waitLag("replica2", 2500)
	if got := reads(); got["primary"] != 20 {
		t.Errorf("both replicas lagging: reads went %v, want all on the primary", got)
	}
	delay("replica1", 0)
	delay("replica2", 0)
	if err := stopWrites(); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := reads()
		if got["replica1"] > 0 && got["replica2"] > 0 && got["primary"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("reads did not return to the replicas: %v; nodes %+v", got, showNodes(t, db))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPausedReplicaLagGrows: a replica whose SQL thread is stopped (sandbox pause) applies
// nothing: Seconds_Behind_Master reads NULL, but its GTID lag keeps growing under a write
// stream, so with max_replica_lag 2s it takes no reads; resumed, it catches up and takes reads
// again.
func TestPausedReplicaLagGrows(t *testing.T) {
	s := startSluice(t, maxLag2s)
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS test.lag_pause (id INT AUTO_INCREMENT PRIMARY KEY)")
	stopWrites := writeStream(db, "INSERT INTO test.lag_pause () VALUES ()")
	defer func() { _ = stopWrites() }()
	if err := cl.Pause(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	paused := true
	defer func() {
		if paused {
			_ = cl.Resume(ctx, "replica1")
		}
	}()
	time.Sleep(time.Second)
	first := showNodes(t, db)["replica1"]
	time.Sleep(2 * time.Second)
	later := showNodes(t, db)["replica1"]
	l1, l2 := lagMs(first), lagMs(later)
	t.Logf("paused replica1: lag_ms %d, 2 s later %d; seconds_behind %v", l1, l2, later.secondsBehind)
	if l1 < 200 || l2 < l1+1500 {
		t.Errorf("paused replica1's lag does not keep growing: %d ms, then %d ms 2 s later", l1, l2)
	}
	if later.secondsBehind.Valid {
		t.Errorf("seconds_behind %s with the SQL thread stopped, want NULL", later.secondsBehind.String)
	}
	if later.state != "lagging" {
		t.Errorf("SHOW NODES: paused replica1 %s, want lagging", later.state)
	}
	c := conn(t, db)
	for range 20 {
		if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		if node, _, _ := lastRoute(t, c); node == "replica1" {
			t.Fatal("a read went to the paused replica")
		}
	}
	c.Close()
	if err := cl.Resume(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	paused = false
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := showNodes(t, db)["replica1"]
		if n.state == "up" && lagMs(n) < 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("resumed replica1 did not catch up: %+v", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
