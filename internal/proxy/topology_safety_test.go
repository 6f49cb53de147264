package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// Following the topology safely: the monitor's verdicts on replicas (errant, broken), a
// maintenance freeze of the primary next to a detached writable replica, and a primary whose
// GTID position goes backwards. Each test leaves the cluster as the others expect it.

// adminExec runs stmts in order on one administrator session of node name (root, not through
// sluice).
func adminExec(t testing.TB, name string, stmts ...string) {
	t.Helper()
	db, err := testutil.Cluster(t).AdminDB(name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range stmts {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %s: %v", name, q, err)
			return
		}
	}
}

// adminScalar reads one value on node name, as root.
func adminScalar(t testing.TB, name, q string) string {
	t.Helper()
	db, err := testutil.Cluster(t).AdminDB(name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v sql.NullString
	if err := db.QueryRow(q).Scan(&v); err != nil {
		t.Fatalf("%s: %s: %v", name, q, err)
	}
	return v.String
}

// repointSQL makes a replica replicate from the cluster's primary again (after RESET SLAVE ALL).
func repointSQL(cl *sandbox.Cluster) []string {
	return []string{"STOP SLAVE",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', "+
			"MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, MASTER_SSL=1, MASTER_SSL_VERIFY_SERVER_CERT=0",
			cl.Primary().Port, sandbox.ReplUser, sandbox.ReplPassword),
		"START SLAVE"}
}

// readServers runs n reads of @@server_id through db and returns the servers that answered.
func readServers(t testing.TB, db *sql.DB, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		var id string
		if err := db.QueryRow("SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		seen[id]++
	}
	return seen
}

// TestErrantAndBrokenReplicas: the third line of defence. A write made on a replica directly (as
// root: a GTID the primary never had) makes it errant; a replica whose SQL thread stopped on an
// error is broken, its lag unknown (not 0). Either takes no reads through either endpoint, and
// SHOW NODES says why; replicas running with read_only=OFF are flagged. Before the monitor's
// verdicts, both stayed up with lag 0 and kept taking reads.
func TestErrantAndBrokenReplicas(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Monitor.Interval.Duration = 200 * time.Millisecond })
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, db, "DROP TABLE IF EXISTS test.errant_t")
	mustExec(t, db, "CREATE TABLE test.errant_t (id INT PRIMARY KEY)")
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, db, func(n map[string]nodeRow) bool {
		return n["replica1"].state == "up" && n["replica2"].state == "up" && n["primary"].role == "primary" && n["replica2"].readOnly.Valid
	})
	for _, name := range []string{"replica1", "replica2"} {
		if ro := showNodes(t, db)[name].readOnly; ro.String != "OFF" {
			t.Errorf("%s runs with read_only OFF; SHOW NODES read_only %q", name, ro.String)
		}
	}
	ids := map[string]string{}
	for _, name := range []string{"primary", "replica1", "replica2"} {
		ids[name] = adminScalar(t, name, "SELECT @@server_id")
	}

	// Read-only sessions bound before: those bound to replica2 must leave it.
	ro := open(t, dsn(s.ro, "app", "app", "test", ""))
	var bound []*sql.Conn
	onReplica2 := 0
	for range 6 {
		c := conn(t, ro)
		var id string
		if err := c.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if id == ids["replica2"] {
			onReplica2++
		}
		bound = append(bound, c)
	}

	// An errant transaction on replica2, in a domain of its own (as a hostile write would be).
	t.Cleanup(func() {
		// Forget it: replica2's binlog (where it lives) is reset; its slave position is intact.
		adminExec(t, "replica2", "STOP SLAVE", "RESET MASTER", "START SLAVE")
	})
	adminExec(t, "replica2", "SET SESSION gtid_domain_id = 9", "INSERT INTO test.errant_t VALUES (1)")
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["replica2"].state == "errant" })
	if n := showNodes(t, db)["replica2"]; !strings.Contains(n.lastError.String, "errant") {
		t.Errorf("SHOW NODES last_error of the errant replica: %q", n.lastError.String)
	}
	for _, c := range bound {
		var id string
		if err := c.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if id == ids["replica2"] {
			t.Errorf("a read-only session bound to replica2 before it was errant still reads there")
		}
	}
	t.Logf("%d of %d read-only sessions were bound to replica2", onReplica2, len(bound))
	for _, d := range []*sql.DB{db, ro} {
		if seen := readServers(t, d, 30); seen[ids["replica2"]] > 0 {
			t.Errorf("reads reached the errant replica: %v", seen)
		}
	}

	// replica1 breaks: a row of its own (not binlogged), then the same key from the primary.
	t.Cleanup(func() {
		adminExec(t, "replica1", "SET SESSION sql_log_bin = 0", "DELETE FROM test.errant_t WHERE id = 100", "START SLAVE SQL_THREAD")
		if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Error(err)
		}
		mustExec(t, db, "DROP TABLE IF EXISTS test.errant_t")
	})
	adminExec(t, "replica1", "SET SESSION sql_log_bin = 0", "INSERT INTO test.errant_t VALUES (100)")
	mustExec(t, db, "INSERT INTO test.errant_t VALUES (100)")
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["replica1"].state == "broken" })
	n := showNodes(t, db)["replica1"]
	if n.lagMs.Valid || !strings.Contains(n.lastError.String, "1062") {
		t.Errorf("the broken replica: lag_ms %v, last_error %q; want NULL and the replication error", n.lagMs, n.lastError.String)
	}
	if seen := readServers(t, db, 30); len(seen) != 1 || seen[ids["primary"]] != 30 {
		t.Errorf("with one replica errant and the other broken, reads went to %v (server ids %v), want the primary only", seen, ids)
	}

	// Repaired, both take reads again.
	adminExec(t, "replica1", "SET SESSION sql_log_bin = 0", "DELETE FROM test.errant_t WHERE id = 100", "START SLAVE SQL_THREAD")
	adminExec(t, "replica2", "STOP SLAVE", "RESET MASTER", "START SLAVE")
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["replica1"].state == "up" && n["replica2"].state == "up" })
}

// TestMaintenanceFreezeKeepsThePrimary: replica2 is detached (RESET SLAVE ALL; writable, has
// everything), then the primary goes read-only for a while and back. No write may go to
// replica2: during the freeze writes fail with a clear "no writable primary" (after
// switchover_timeout), and afterwards they go to the primary again. Before, the freeze made
// replica2 the primary for good, and every later write forked the data there.
func TestMaintenanceFreezeKeepsThePrimary(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Monitor.Interval.Duration = 200 * time.Millisecond
		c.Monitor.SwitchoverTimeout.Duration = time.Second
	})
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, db, "DROP TABLE IF EXISTS test.freeze_t")
	mustExec(t, db, "CREATE TABLE test.freeze_t (id INT PRIMARY KEY)")
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		adminExec(t, "primary", "SET GLOBAL read_only = OFF")
		adminExec(t, "replica2", repointSQL(cl)...)
		if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Error(err)
		}
		mustExec(t, db, "DROP TABLE IF EXISTS test.freeze_t")
	})
	adminExec(t, "replica2", "STOP SLAVE", "RESET SLAVE ALL")
	waitNodes(t, db, func(n map[string]nodeRow) bool {
		return n["replica2"].state == "writable" || n["replica2"].state == "detached"
	})
	before := adminScalar(t, "replica2", "SELECT @@gtid_binlog_pos")

	adminExec(t, "primary", "SET GLOBAL read_only = ON")
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["primary"].state == "switching" })
	_, err := db.Exec("INSERT INTO test.freeze_t VALUES (1)")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 || !strings.Contains(me.Message, "no writable primary") {
		t.Errorf("a write during the freeze: %v, want error 1290 saying no writable primary", err)
	}
	if n := showNodes(t, db); n["primary"].role != "primary" || n["replica2"].role != "replica" {
		t.Errorf("during the freeze: primary %s, replica2 %s", n["primary"].role, n["replica2"].role)
	}

	adminExec(t, "primary", "SET GLOBAL read_only = OFF")
	// Writable again: it takes the writes (its state says writable: replica2 is writable too).
	waitNodes(t, db, func(n map[string]nodeRow) bool {
		return n["primary"].role == "primary" && n["primary"].state != "switching"
	})
	for i := 2; i <= 6; i++ {
		mustExec(t, db, fmt.Sprintf("INSERT INTO test.freeze_t VALUES (%d)", i))
	}
	if got := adminScalar(t, "primary", "SELECT COUNT(*) FROM test.freeze_t"); got != "5" {
		t.Errorf("rows on the primary after the freeze: %s, want 5", got)
	}
	if after := adminScalar(t, "replica2", "SELECT @@gtid_binlog_pos"); after != before {
		t.Errorf("the detached replica gained GTIDs: %q, then %q", before, after)
	}
	if got := adminScalar(t, "replica2", "SELECT COUNT(*) FROM test.freeze_t"); got != "0" {
		t.Errorf("rows on the detached replica: %s, want 0", got)
	}
}

// TestPrimaryPositionGoesBackwards: RESET MASTER on the primary (as root, not through sluice)
// starts its GTIDs again from 1, and MariaDB compares GTIDs by sequence number alone, so every
// replica looked as if it had every later write: session-level reads returned stale rows, and
// the replicas, whose replication broke, showed lag 0. Once the monitor has seen the position go
// backwards, no replica is trusted with a read that needs a position until it is seen caught up
// with the new one, and SHOW NODES says so.
func TestPrimaryPositionGoesBackwards(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Monitor.Interval.Duration = 200 * time.Millisecond
		for i := range c.Endpoints {
			if c.Endpoints[i].Name == "rw" {
				c.Endpoints[i].Consistency = config.ConsistencySession
			}
		}
	})
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, db, "DROP TABLE IF EXISTS test.reset_t")
	mustExec(t, db, "CREATE TABLE test.reset_t (id INT PRIMARY KEY)")
	for i := range 20 {
		mustExec(t, db, fmt.Sprintf("INSERT INTO test.reset_t VALUES (%d)", -1-i))
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["replica1"].state == "up" && n["replica2"].state == "up" })
	t.Cleanup(func() {
		// The replicas follow the primary's new history from its start (they hold everything
		// it had before the reset).
		for _, r := range []string{"replica1", "replica2"} {
			adminExec(t, r, "STOP SLAVE", "RESET MASTER", "SET GLOBAL gtid_slave_pos = ''", "START SLAVE")
		}
		if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Error(err)
		}
		mustExec(t, db, "DROP TABLE IF EXISTS test.reset_t")
	})
	adminExec(t, "primary", "RESET MASTER")
	// The monitor sees it within a round or two.
	untrusted := func(state string) bool { return state == "unsynced" || state == "broken" || state == "errant" }
	deadline := time.Now().Add(10 * time.Second)
	for n := showNodes(t, db); !untrusted(n["replica1"].state) || !untrusted(n["replica2"].state); n = showNodes(t, db) {
		if time.Now().After(deadline) {
			t.Errorf("SHOW NODES 10 s after RESET MASTER on the primary: replica1 %s (lag %v), replica2 %s (lag %v)",
				n["replica1"].state, n["replica1"].lagMs, n["replica2"].state, n["replica2"].lagMs)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Session-level reads of one's own writes see them, every time.
	c := conn(t, db)
	for i := range 30 {
		if _, err := c.ExecContext(ctx, fmt.Sprintf("INSERT INTO test.reset_t VALUES (%d)", i)); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := c.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM test.reset_t WHERE id = %d", i)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if node, _, reason := lastRoute(t, c); n != 1 {
			t.Fatalf("write %d after RESET MASTER: read %d rows from %s (%s), want 1", i, n, node, reason)
		}
	}
	for name, n := range showNodes(t, db) {
		if name != "primary" && n.state != "errant" && n.lagMs.Valid {
			t.Errorf("%s (%s) shows lag %s ms after the primary's position went backwards, want unknown", name, n.state, n.lagMs.String)
		}
	}
}
