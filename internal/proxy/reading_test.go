package proxy_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// replicaReads makes the rw endpoint read from the replicas only, so that a read that went to
// the primary went there for a reason.
func replicaReads(c *config.Config) {
	for i := range c.Endpoints {
		if c.Endpoints[i].Mode == "read-write" {
			for name := range c.Endpoints[i].ReadWeights {
				c.Endpoints[i].ReadWeights[name] = 100
			}
			c.Endpoints[i].ReadWeights["primary"] = 0
		}
	}
}

// monitored waits until the monitor has checked every node (SHOW NODES shows its threads): their
// versions are known.
func monitored(t *testing.T, db *sql.DB) {
	t.Helper()
	waitNodes(t, db, func(n map[string]nodeRow) bool {
		for _, r := range n {
			if r.state != "up" || !r.threads.Valid {
				return false
			}
		}
		return len(n) > 0
	})
}

// replicaRows counts table's rows on every replica, directly, once the replicas have
// replicated all the primary wrote (a CREATE TABLE just run there, say).
func replicaRows(t *testing.T, table string) map[string]int {
	t.Helper()
	cl := testutil.Cluster(t)
	if err := cl.WaitCaughtUp(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, r := range cl.Replicas() {
		db, err := cl.AdminDB(r.Name)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		db.Close()
		rows[r.Name] = n
	}
	return rows
}

// TestVersionedCommentsAsTheNodeReads: a versioned comment for a newer server is a comment to
// the node, quotes and -- and all; sluice reads it so. Before, /*!99999 SELECT 1 -- */ INSERT …
// was a SELECT to sluice: the read-only endpoint ran the INSERT on its replica, and the
// read-write endpoint sent /*!99999 SELECT 1 -- */ ANALYZE TABLE t to a replica, which wrote a
// binlogged event there.
func TestVersionedCommentsAsTheNodeReads(t *testing.T) {
	s := startSluice(t, replicaReads)
	ctx := context.Background()
	rw := open(t, dsn(s.rw, "app", "app", "test", ""))
	monitored(t, rw)
	mustExec(t, rw, "CREATE TABLE IF NOT EXISTS t_vc (id INT)")
	mustExec(t, rw, "DELETE FROM t_vc")
	c := conn(t, rw)
	for _, tc := range []struct{ q, role string }{
		{"/*!99999 SELECT 1 -- */ INSERT INTO t_vc VALUES (1)", "primary"},
		{"/*!99999 SELECT 1 -- */ ANALYZE TABLE t_vc", "primary"},
		{"/*!50700 SELECT 1 */ INSERT INTO t_vc VALUES (2)", "primary"}, // MySQL's version: a comment to MariaDB
		{"/*M!999999 SELECT 1 -- */ INSERT INTO t_vc VALUES (3)", "primary"},
		{"SELECT 1 /*!99999 ; DO 1 */", "replica"},
		{"/*M!100000 SELECT 1 */", "replica"}, // runs on every node (all 10.11): still a read
		{"/*!40101 SELECT 1 */", "replica"},
	} {
		rows, err := c.QueryContext(ctx, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		rows.Close()
		if node, role, reason := lastRoute(t, c); role != tc.role {
			t.Errorf("%s: ran on %s (%s, %s), want the %s", tc.q, node, role, reason, tc.role)
		}
	}
	var n int
	if err := c.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT COUNT(*) FROM t_vc").Scan(&n); err != nil || n != 3 {
		t.Fatalf("rows on the primary: %d %v, want 3", n, err)
	}
	// The read-only endpoint refuses what the node reads as a write.
	ro := open(t, dsn(s.ro, "app", "app", "test", ""))
	for _, q := range []string{
		"/*!99999 SELECT 1 -- */ INSERT INTO t_vc VALUES (10)",
		"/*!99999 SELECT 1 -- */ ANALYZE TABLE t_vc",
		"/*M!999999 SELECT 1 */ INSERT INTO t_vc VALUES (11)",
	} {
		_, err := ro.ExecContext(ctx, q)
		if me := mysqlErr(t, err); me.Number != 1290 {
			t.Errorf("%s on the read-only endpoint: %v", q, err)
		}
	}
	var one int
	if err := ro.QueryRowContext(ctx, "/*!99999 DELETE FROM t_vc; */ SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("a read behind a comment that does not run, on the read-only endpoint: %d %v", one, err)
	}
	for name, n := range replicaRows(t, "test.t_vc") {
		if n > 3 {
			t.Errorf("%s holds %d rows, the primary 3", name, n)
		}
	}
}

// TestSQLModeSplits: under NO_BACKSLASH_ESCAPES (or ANSI_QUOTES) a batch the default mode reads
// as one SELECT is three statements to the server. sluice follows the session's mode from the
// servers' status flags, and a batch that changes the mode half way is read every way it could
// be: such batches never reach a replica. Before, each went to a replica as one SELECT.
func TestSQLModeSplits(t *testing.T) {
	s := startSluice(t, replicaReads)
	ctx := context.Background()
	rw := open(t, dsn(s.rw, "app", "app", "test", "multiStatements=true"))
	mustExec(t, rw, "CREATE TABLE IF NOT EXISTS t_mode (id INT)")
	mustExec(t, rw, "DELETE FROM t_mode")
	batches := []struct{ mode, q string }{
		{"NO_BACKSLASH_ESCAPES", `SELECT 'x\' ; FLUSH LOGS; SELECT '1'`},
		{"NO_BACKSLASH_ESCAPES", `SELECT 'x\' ; INSERT INTO t_mode VALUES (1); SELECT '1'`},
		{"ANSI_QUOTES", `SELECT 1 AS "x\" ; FLUSH LOGS; SELECT 1 AS "1"`},
		{"ANSI_QUOTES", `SELECT 1 AS "x\" ; INSERT INTO t_mode VALUES (2); SELECT 1 AS "1"`},
		{"MSSQL", `SELECT 1 AS [a'] ; INSERT INTO t_mode VALUES (3); SELECT 1 AS ['b]`},
	}
	for _, b := range batches {
		c := conn(t, rw)
		if _, err := c.ExecContext(ctx, "SET SESSION sql_mode='"+b.mode+"'"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, b.q); err != nil {
			t.Fatalf("%s under %s: %v", b.q, b.mode, err)
		}
		if node, role, reason := lastRoute(t, c); role != "primary" {
			t.Errorf("%s under %s ran on %s (%s, %s)", b.q, b.mode, node, role, reason)
		}
		// The same mode set in the batch itself.
		c2 := conn(t, rw)
		if _, err := c2.ExecContext(ctx, "SET SESSION sql_mode='"+b.mode+"'; "+b.q); err != nil {
			t.Fatalf("%s in one batch: %v", b.q, err)
		}
		if node, role, reason := lastRoute(t, c2); role != "primary" {
			t.Errorf("SET sql_mode='%s'; %s ran on %s (%s, %s)", b.mode, b.q, node, role, reason)
		}
	}
	// Under the default mode the first two are one SELECT each: a read, on a replica.
	c := conn(t, rw)
	var v string
	if err := c.QueryRowContext(ctx, `SELECT 'x\' ; FLUSH LOGS; SELECT '`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if node, role, _ := lastRoute(t, c); role != "replica" {
		t.Errorf("a plain SELECT with an escaped quote ran on %s", node)
	}
	// The read-only endpoint refuses each (the batch holds a write under the mode).
	ro := open(t, dsn(s.ro, "app", "app", "test", "multiStatements=true"))
	for _, b := range batches {
		rc := conn(t, ro)
		if _, err := rc.ExecContext(ctx, "SET SESSION sql_mode='"+b.mode+"'"); err != nil {
			t.Fatal(err)
		}
		_, err := rc.ExecContext(ctx, b.q)
		if me := mysqlErr(t, err); me.Number != 1290 {
			t.Errorf("%s under %s on the read-only endpoint: %v", b.q, b.mode, err)
		}
		rc2 := conn(t, ro)
		_, err = rc2.ExecContext(ctx, "SET SESSION sql_mode='"+b.mode+"'; "+b.q)
		if me := mysqlErr(t, err); me.Number != 1290 {
			t.Errorf("SET sql_mode='%s'; %s on the read-only endpoint: %v", b.mode, b.q, err)
		}
	}
	var onPrimary int
	if err := rw.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT COUNT(*) FROM t_mode").Scan(&onPrimary); err != nil || onPrimary != 6 {
		t.Errorf("rows on the primary: %d %v, want 6 (three batches with an INSERT, twice)", onPrimary, err)
	}
	for name, n := range replicaRows(t, "test.t_mode") {
		if n > onPrimary {
			t.Errorf("%s holds %d rows, the primary %d", name, n, onPrimary)
		}
	}
}

// TestCharsetSplits: under SET NAMES gbk the server reads '\xbf\' as a string of one character,
// so SELECT '\xbf\' ; INSERT … ; SELECT '1' is three statements; sluice, which reads bytes,
// does not send such text to a replica when the client character set may be one of those.
// Before, it went to a replica as one SELECT.
func TestCharsetSplits(t *testing.T) {
	s := startSluice(t, replicaReads)
	ctx := context.Background()
	rw := open(t, dsn(s.rw, "app", "app", "test", "multiStatements=true"))
	mustExec(t, rw, "CREATE TABLE IF NOT EXISTS t_cs (id INT)")
	mustExec(t, rw, "DELETE FROM t_cs")
	trap := "SELECT '\xbf\\' ; FLUSH LOGS; SELECT '1'"
	c := conn(t, rw)
	if _, err := c.ExecContext(ctx, "SET NAMES gbk"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, trap); err != nil {
		t.Fatal(err)
	}
	if node, role, reason := lastRoute(t, c); role != "primary" {
		t.Errorf("under gbk: ran on %s (%s, %s)", node, role, reason)
	}
	ro := open(t, dsn(s.ro, "app", "app", "test", "multiStatements=true"))
	rc := conn(t, ro)
	if _, err := rc.ExecContext(ctx, "SET NAMES gbk"); err != nil {
		t.Fatal(err)
	}
	_, err := rc.ExecContext(ctx, "SELECT '\xbf\\' ; INSERT INTO t_cs VALUES (1); SELECT '1'")
	if me := mysqlErr(t, err); me.Number != 1290 {
		t.Errorf("under gbk on the read-only endpoint: %v", err)
	}
	// Under utf8mb4 the same bytes are one SELECT (0xbf is no character's start): a read.
	c2 := conn(t, rw)
	if _, err := c2.ExecContext(ctx, "SET NAMES utf8mb4"); err != nil {
		t.Fatal(err)
	}
	var v []byte
	if err := c2.QueryRowContext(ctx, "SELECT '\xbf\\' ; FLUSH LOGS; SELECT '").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if node, role, _ := lastRoute(t, c2); role != "replica" {
		t.Errorf("under utf8mb4: ran on %s", node)
	}
	for name, n := range replicaRows(t, "test.t_cs") {
		if n != 0 {
			t.Errorf("%s holds %d rows", name, n)
		}
	}
}

// TestHugeStatementReadOnly: a statement too large to hold whole is refused by the read-only
// endpoint, unsent: its head cannot show what its tail does. Before, the statement
// (a SELECT whose comment hides 1.1 MiB, then SET SESSION TRANSACTION READ WRITE and an INSERT)
// ran whole on the replica.
func TestHugeStatementReadOnly(t *testing.T) {
	s := startSluice(t, nil)
	ctx := context.Background()
	rw := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, rw, "CREATE TABLE IF NOT EXISTS t_huge (id INT)")
	mustExec(t, rw, "DELETE FROM t_huge")
	q := "SELECT 1 /*" + strings.Repeat("x", 1100<<10) + "*/; SET SESSION TRANSACTION READ WRITE; INSERT INTO t_huge VALUES (1); SELECT 2"
	ro := open(t, dsn(s.ro, "app", "app", "test", "multiStatements=true&maxAllowedPacket=67108864"))
	rc := conn(t, ro)
	_, err := rc.ExecContext(ctx, q)
	if me := mysqlErr(t, err); me.Number != 1290 || !strings.Contains(me.Message, "all of its text") {
		t.Fatalf("the huge batch on the read-only endpoint: %v", err)
	}
	// The session goes on.
	var one int
	if err := rc.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the refusal: %d %v", one, err)
	}
	// A huge read too: sluice cannot tell it from the above.
	if err := rc.QueryRowContext(ctx, "SELECT LENGTH('"+strings.Repeat("y", 2<<20)+"')").Scan(&one); err == nil {
		t.Fatal("a 2 MiB SELECT ran on the read-only endpoint")
	}
	for name, n := range replicaRows(t, "test.t_huge") {
		if n != 0 {
			t.Errorf("%s holds %d rows", name, n)
		}
	}
	// The read-write endpoint sends it to the primary, as before.
	rwm := open(t, dsn(s.rw, "app", "app", "test", "multiStatements=true&maxAllowedPacket=67108864"))
	wc := conn(t, rwm)
	if _, err := wc.ExecContext(ctx, q); err != nil {
		t.Fatal(err)
	}
	if node, role, _ := lastRoute(t, wc); role != "primary" {
		t.Errorf("the huge batch on the read-write endpoint ran on %s", node)
	}
	var n int
	if err := wc.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT COUNT(*) FROM t_huge").Scan(&n); err != nil || n != 1 {
		t.Errorf("rows on the primary: %d %v", n, err)
	}
}
