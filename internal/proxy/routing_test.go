package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// lastRoute asks sluice where the previous statement of this connection went.
func lastRoute(t testing.TB, conn *sql.Conn) (node, role, reason string) {
	t.Helper()
	var pins string
	if err := conn.QueryRowContext(context.Background(), "/*PROXY_INTERNAL*/ SHOW LAST ROUTE").Scan(&node, &role, &reason, &pins); err != nil {
		t.Fatal(err)
	}
	return node, role, reason
}

// serverIDs maps each node's @@server_id to its name.
func serverIDs(t testing.TB) map[int]string {
	t.Helper()
	c := testutil.Cluster(t)
	ids := map[int]string{}
	for _, n := range c.Nodes {
		db, err := c.AdminDB(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		var id int
		if err := db.QueryRow("SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		db.Close()
		ids[id] = n.Name
	}
	return ids
}

func conn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRoutingRules runs statements on one connection and checks, with SHOW LAST ROUTE and
// @@server_id, where each went and why.
func TestRoutingRules(t *testing.T) {
	s := startSluice(t, nil)
	ids := serverIDs(t)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c := conn(t, db)
	ctx := context.Background()
	exec := func(q string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE IF NOT EXISTS t_route (id INT PRIMARY KEY AUTO_INCREMENT, v INT)")
	steps := []struct {
		q        string
		primary  bool // true: the primary; false: a replica
		reason   string
		onlyExec bool
	}{
		{q: "SELECT 1", reason: "read"},
		{q: "INSERT INTO t_route (v) VALUES (1)", primary: true, reason: "write", onlyExec: true},
		{q: "SELECT v FROM t_route WHERE id = 1 FOR UPDATE", primary: true, reason: "locking read"},
		{q: "SELECT v FROM t_route LIMIT 1 LOCK IN SHARE MODE", primary: true, reason: "locking read"},
		{q: "SELECT LAST_INSERT_ID()", primary: true, reason: "session function"},
		{q: "SELECT SQL_CALC_FOUND_ROWS v FROM t_route LIMIT 1", primary: true, reason: "session function"},
		{q: "SELECT FOUND_ROWS()", primary: true, reason: "previous statement"},
		{q: "SELECT @a := 5", primary: true, reason: "session function"},
		{q: "SELECT @a", primary: true, reason: "session function"},
		{q: "SELECT GET_LOCK('sluice_test', 0)", primary: true, reason: "session function"},
		{q: "SELECT 2", primary: true, reason: "pinned"},
		{q: "SELECT RELEASE_LOCK('sluice_test')", primary: true, reason: "session function"},
		{q: "SELECT 3", reason: "read"},
		{q: "CREATE TEMPORARY TABLE tmp_route (a INT)", primary: true, reason: "write", onlyExec: true},
		{q: "SELECT 4", primary: true, reason: "pinned"},
		{q: "DROP TEMPORARY TABLE tmp_route", primary: true, reason: "write", onlyExec: true},
		{q: "SELECT 5", reason: "read"},
		{q: "LOCK TABLES t_route READ", primary: true, reason: "write", onlyExec: true},
		{q: "SELECT 6", primary: true, reason: "pinned"},
		{q: "UNLOCK TABLES", primary: true, reason: "write", onlyExec: true},
		{q: "SELECT 7", reason: "read"},
		{q: "BEGIN", primary: true, reason: "transaction start", onlyExec: true},
		{q: "SELECT 8", primary: true, reason: "in transaction"},
		{q: "COMMIT", primary: true, reason: "in transaction", onlyExec: true},
		{q: "SELECT 9", reason: "read"},
		{q: "SET autocommit = 0", primary: true, reason: "session state", onlyExec: true},
		{q: "SELECT COUNT(*) FROM t_route", primary: true, reason: "in transaction"},
		{q: "COMMIT", primary: true, reason: "in transaction", onlyExec: true},
		{q: "SET autocommit = 1", primary: true, reason: "session state", onlyExec: true},
		{q: "SELECT 11", reason: "read"},
		{q: "SHOW TABLES", reason: "read", onlyExec: true},
		{q: "SHOW MASTER STATUS", primary: true, reason: "primary only", onlyExec: true},
		{q: "/*FORCE_MASTER*/ SELECT 12", primary: true, reason: "hint"},
		{q: "/*FORCE_SLAVE*/ SELECT 13", reason: "hint"},
		{q: "START TRANSACTION READ ONLY", reason: "read-only transaction", onlyExec: true},
		{q: "SELECT 14", reason: "in transaction"},
		{q: "COMMIT", reason: "in transaction", onlyExec: true},
	}
	for _, st := range steps {
		var sid int
		if st.onlyExec {
			exec(st.q)
		} else if err := c.QueryRowContext(ctx, st.q).Scan(new(any)); err != nil {
			t.Fatalf("%s: %v", st.q, err)
		}
		node, role, reason := lastRoute(t, c)
		if (role == "primary") != st.primary || reason != st.reason {
			t.Errorf("%s: went to %s (%s) for %q; want primary=%v for %q", st.q, node, role, reason, st.primary, st.reason)
		}
		if !st.onlyExec && !strings.Contains(st.q, "LAST_INSERT_ID") && !strings.Contains(st.q, "FOUND_ROWS") {
			// The statement's node, seen from inside: @@server_id on the same route.
			q := "SELECT @@server_id"
			switch {
			case role == "primary":
				q = "/*FORCE_MASTER*/ " + q
			default:
				q = fmt.Sprintf("/*FORCE_NODE='%s'*/ %s", node, q)
			}
			if err := c.QueryRowContext(ctx, q).Scan(&sid); err != nil || ids[sid] != node {
				t.Errorf("%s: @@server_id %d is %s, route says %s (%v)", st.q, sid, ids[sid], node, err)
			}
		}
	}
	// LAST_INSERT_ID after an INSERT comes from the insert's connection.
	res, err := c.ExecContext(ctx, "INSERT INTO t_route (v) VALUES (2)")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := res.LastInsertId()
	var got int64
	if err := c.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&got); err != nil || got != want {
		t.Fatalf("LAST_INSERT_ID() = %d, want %d (%v)", got, want, err)
	}
	// Hints that cannot be honoured are errors, never a silent reroute.
	if _, err := c.ExecContext(ctx, "/*FORCE_SLAVE*/ INSERT INTO t_route (v) VALUES (3)"); mysqlErr(t, err).Number != 1290 {
		t.Fatalf("FORCE_SLAVE write: %v", err)
	}
	if _, err := c.ExecContext(ctx, "/*FORCE_NODE='nope'*/ SELECT 1"); err == nil {
		t.Fatal("FORCE_NODE of an unknown node succeeded")
	}
	// FORCE_NODE never sends a write to a replica: sluice refuses it (before, the INSERT reached
	// the replica, where only the read-only session stopped it).
	_, err = c.ExecContext(ctx, "/*FORCE_NODE='replica1'*/ INSERT INTO t_route (v) VALUES (4)")
	if me := mysqlErr(t, err); me.Number != 1290 || !strings.Contains(me.Message, "FORCE_NODE") {
		t.Fatalf("FORCE_NODE write on a replica: %v", err)
	}
	// Session state set on the primary holds on the replicas too.
	exec("SET SESSION sql_mode = 'ANSI_QUOTES'")
	exec("SET NAMES latin1")
	for i := 0; i < 4; i++ {
		var mode, cs string
		if err := c.QueryRowContext(ctx, "SELECT @@sql_mode, @@character_set_client").Scan(&mode, &cs); err != nil {
			t.Fatal(err)
		}
		node, _, _ := lastRoute(t, c)
		if mode != "ANSI_QUOTES" || cs != "latin1" {
			t.Fatalf("on %s: sql_mode %q, character_set_client %q", node, mode, cs)
		}
	}
}

// TestPreparedRouting: a prepared SELECT runs on a replica, a prepared write on the primary,
// and prepared BEGIN/COMMIT keep the transaction on the primary.
func TestPreparedRouting(t *testing.T) {
	s := startSluice(t, nil)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c := conn(t, db)
	ctx := context.Background()
	if _, err := c.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t_proute (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	sel, err := c.PrepareContext(ctx, "SELECT ?")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		var v int
		if err := sel.QueryRowContext(ctx, i).Scan(&v); err != nil || v != i {
			t.Fatalf("prepared select: %d %v", v, err)
		}
		if _, role, reason := lastRoute(t, c); role != "replica" || reason != "read" {
			t.Fatalf("prepared SELECT went to the %s (%s)", role, reason)
		}
	}
	begin, err := c.PrepareContext(ctx, "BEGIN")
	if err != nil {
		t.Fatal(err)
	}
	commit, err := c.PrepareContext(ctx, "COMMIT")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := begin.ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := sel.QueryRowContext(ctx, 7).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if _, role, reason := lastRoute(t, c); role != "primary" || reason != "in transaction" {
		t.Fatalf("prepared SELECT in a prepared BEGIN went to the %s (%s)", role, reason)
	}
	if _, err := commit.ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sel.QueryRowContext(ctx, 8).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if _, role, _ := lastRoute(t, c); role != "replica" {
		t.Fatalf("after COMMIT the prepared SELECT went to the %s", role)
	}
}

// TestTransactionSplit: reads before the first write run on replicas; the transaction opens on
// the primary at its first write; a transaction that never writes never touches the primary.
func TestTransactionSplit(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Endpoints[0].TransactionSplit = true })
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c := conn(t, db)
	ctx := context.Background()
	if _, err := c.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t_split (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	type step struct{ q, role, reason string }
	check := func(steps []step) {
		t.Helper()
		for _, st := range steps {
			if _, err := c.ExecContext(ctx, st.q); err != nil {
				t.Fatalf("%s: %v", st.q, err)
			}
			if _, role, reason := lastRoute(t, c); role != st.role || reason != st.reason {
				t.Fatalf("%s: %s (%s), want %s (%s)", st.q, role, reason, st.role, st.reason)
			}
		}
	}
	check([]step{
		{"BEGIN", "proxy", "transaction deferred"},
		{"SELECT 1", "replica", "read"},
		{"REPLACE INTO t_split VALUES (1, 1)", "primary", "write"},
		{"SELECT v FROM t_split WHERE id = 1", "primary", "in transaction"},
		{"COMMIT", "primary", "in transaction"},
		{"START TRANSACTION", "proxy", "transaction deferred"},
		{"SELECT 2", "replica", "read"},
		{"COMMIT", "proxy", "transaction deferred"},
		{"SELECT 3", "replica", "read"},
	})
	// The write inside the split transaction was committed.
	var v int
	if err := c.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT v FROM t_split WHERE id = 1").Scan(&v); err != nil || v != 1 {
		t.Fatalf("split transaction lost its write: %d %v", v, err)
	}
}

// TestReadOnlyEndpoint: each connection is bound to one replica; writes are refused.
func TestReadOnlyEndpoint(t *testing.T) {
	s := startSluice(t, nil)
	ids := serverIDs(t)
	db := open(t, dsn(s.ro, "app", "app", "test", ""))
	seen := map[string]bool{}
	for i := 0; i < 4; i++ {
		c := conn(t, db)
		var first int
		for j := 0; j < 3; j++ {
			var sid int
			if err := c.QueryRowContext(context.Background(), "SELECT @@server_id").Scan(&sid); err != nil {
				t.Fatal(err)
			}
			if ids[sid] == "primary" {
				t.Fatal("read-only endpoint used the primary")
			}
			if j == 0 {
				first = sid
			} else if sid != first {
				t.Fatalf("connection moved from %s to %s", ids[first], ids[sid])
			}
		}
		seen[ids[first]] = true
		_, err := c.ExecContext(context.Background(), "CREATE TABLE t_ro (id INT)")
		if me := mysqlErr(t, err); me.Number != 1290 || !strings.Contains(me.Message, "read-only") {
			t.Fatalf("write on the read-only endpoint: %v", me)
		}
	}
	if len(seen) != 2 {
		t.Errorf("connections bound to %v, want both replicas", seen)
	}
}

// TestReadWeights: weights 0:1:2 give a 1:2 split of 3 000 autocommit reads, and
// 100:200:200 a 1:2:2 split, with smooth weighted round robin.
func TestReadWeights(t *testing.T) {
	for _, tc := range []struct {
		weights map[string]int
		want    map[string]float64 // share of reads
	}{
		{map[string]int{"primary": 0, "replica1": 1, "replica2": 2}, map[string]float64{"primary": 0, "replica1": 1.0 / 3, "replica2": 2.0 / 3}},
		{map[string]int{"primary": 100, "replica1": 200, "replica2": 200}, map[string]float64{"primary": 0.2, "replica1": 0.4, "replica2": 0.4}},
	} {
		s := startSluice(t, func(c *config.Config) {
			c.Endpoints[0].Balance = "weighted"
			c.Endpoints[0].ReadWeights = tc.weights
		})
		db := open(t, dsn(s.rw, "app", "app", "", ""))
		c := conn(t, db)
		counts := map[string]int{}
		const reads = 3000
		for i := 0; i < reads; i++ {
			var one int
			if err := c.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			node, _, _ := lastRoute(t, c)
			counts[node]++
		}
		t.Logf("weights %v: reads %v", tc.weights, counts)
		for node, share := range tc.want {
			got := float64(counts[node]) / reads
			if got < share*0.95 || got > share*1.05 {
				t.Errorf("weights %v: %s got %.3f of the reads, want %.3f (±5%%)", tc.weights, node, got, share)
			}
		}
	}
}

// TestWeightedAcrossSessions: the balancing state belongs to the endpoint. Ten sessions of a
// read-only endpoint with balance: weighted bind 5 and 5 to two equally weighted replicas, and
// the first reads of ten new sessions of a read-write endpoint alternate; before, each session
// had a round robin of its own, and all of them started on replica1.
func TestWeightedAcrossSessions(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			c.Endpoints[i].Balance = "weighted"
		}
	})
	ctx := context.Background()
	for _, ep := range []string{s.ro, s.rw} {
		counts := map[string]int{}
		for i := 0; i < 10; i++ {
			db := open(t, dsn(ep, "app", "app", "", ""))
			c := conn(t, db)
			var one int
			if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			node, _, _ := lastRoute(t, c)
			counts[node]++
			c.Close()
			db.Close()
		}
		if counts["replica1"] != 5 || counts["replica2"] != 5 {
			t.Errorf("first reads of ten sessions on %s: %v, want 5 and 5", ep, counts)
		}
	}
}

// TestReplicasDownFallback: with both replicas stopped, reads go to the primary; when they
// start again, reads return to them.
func TestReplicasDownFallback(t *testing.T) {
	s := startSluice(t, nil)
	cl := testutil.Cluster(t)
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	c := conn(t, db)
	ctx := context.Background()
	var one int
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"replica1", "replica2"} {
		if err := cl.Stop(ctx, r); err != nil {
			t.Fatal(err)
		}
		defer cl.Start(ctx, r)
	}
	for i := 0; i < 3; i++ {
		if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatalf("read with the replicas down: %v", err)
		}
		if _, role, reason := lastRoute(t, c); role != "primary" {
			t.Fatalf("read with the replicas down went to %s (%s)", role, reason)
		}
	}
	for _, r := range []string{"replica1", "replica2"} {
		if err := cl.Start(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
		if _, role, _ := lastRoute(t, c); role == "replica" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reads did not return to the replicas")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestSplitReadsReportInTransaction: with transaction splitting, a read that a replica answers
// inside the client's (deferred) transaction reports SERVER_STATUS_IN_TRANS, as the primary
// would; after COMMIT it does not.
func TestSplitReadsReportInTransaction(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Endpoints[0].TransactionSplit = true })
	{
		bc := rawConnect(t, s.rw, "app", "app")
		status := func(q string) uint16 {
			t.Helper()
			ps := command(t, bc, append([]byte{smysql.ComQuery}, q...), "result")
			last := ps[len(ps)-1]
			if last[0] == 0xff {
				t.Fatalf("%s: %v", q, smysql.ParseERR(last))
			}
			if last[0] == 0xfe && len(last) == 5 {
				return smysql.ParseEOF(last).Status
			}
			ok, err := smysql.ParseOK(last, bc.Caps)
			if err != nil {
				t.Fatal(err)
			}
			return ok.Status
		}
		if st := status("BEGIN"); st&smysql.StatusInTrans == 0 {
			t.Fatalf("BEGIN: status %#x", st)
		}
		if st := status("SELECT 1"); st&smysql.StatusInTrans == 0 {
			t.Fatalf("a read of the deferred transaction: status %#x, want IN_TRANS", st)
		}
		if got := query(t, bc, "/*PROXY_INTERNAL*/ SHOW LAST ROUTE"); got != "replica1" && got != "replica2" {
			t.Fatalf("the read ran on %s, want a replica", got)
		}
		if st := status("COMMIT"); st&smysql.StatusInTrans != 0 {
			t.Fatalf("COMMIT: status %#x", st)
		}
		if st := status("SELECT 1"); st&smysql.StatusInTrans != 0 {
			t.Fatalf("a read after COMMIT: status %#x", st)
		}
		bc.Close()
	}
}
