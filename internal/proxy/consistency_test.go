package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// consistencyAt makes endpoint rw read from the replicas only (primary 0, replicas 100, as a
// user would weight them) at the given level.
func consistencyAt(level string) func(*config.Config) {
	return func(c *config.Config) {
		c.Monitor.Interval.Duration = 200 * time.Millisecond
		for i := range c.Endpoints {
			e := &c.Endpoints[i]
			if e.Mode != config.ModeReadWrite {
				continue
			}
			e.Consistency = level
			e.ConsistencyTimeout.Duration = 50 * time.Millisecond
			for name := range e.ReadWeights {
				e.ReadWeights[name] = 100
			}
			e.ReadWeights["primary"] = 0
		}
	}
}

// pairs writes a new value with writer and reads it back with reader, n times, and counts the
// reads that returned an older value (stale) and where the reads went.
func pairs(t *testing.T, writer, reader *sql.Conn, table string, n int) (stale int, where map[string]int) {
	t.Helper()
	ctx := context.Background()
	where = map[string]int{}
	for i := 1; i <= n; i++ {
		if _, err := writer.ExecContext(ctx, "UPDATE "+table+" SET v = ? WHERE id = 1", i); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := reader.QueryRowContext(ctx, "SELECT v FROM "+table+" WHERE id = 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != i {
			stale++
		}
		node, _, reason := lastRoute(t, reader)
		if reason != "read" {
			node += " (" + reason + ")"
		}
		where[node]++
	}
	return stale, where
}

func replicaShare(where map[string]int) float64 {
	total, replicas := 0, 0
	for node, n := range where {
		total += n
		if node == "replica1" || node == "replica2" {
			replicas += n
		}
	}
	if total == 0 {
		return 0
	}
	return float64(replicas) / float64(total)
}

// TestConsistencyLevels: write-then-read pairs through the read-write endpoint with the reads on
// the replicas. At session (one connection), global and latest (write on one connection, read
// on another) no read is stale, healthy or with replica1's SQL thread paused or delayed by 2 s,
// and with healthy replicas most reads are still served by replicas; with both replicas paused
// every read waits and goes to the primary; latest never reads the primary's position. At eventual, the paused replica makes reads stale:
// the test can see a stale read when there is one.
func TestConsistencyLevels(t *testing.T) {
	cl := testutil.Cluster(t)
	ctx := context.Background()
	const n = 400
	for _, level := range []string{"session", "global", "latest", "eventual"} {
		t.Run(level, func(t *testing.T) {
			s := startSluice(t, consistencyAt(level))
			db := open(t, dsn(s.rw, "app", "app", "test", ""))
			table := "test.consistency_" + level
			mustExec(t, db, "DROP TABLE IF EXISTS "+table)
			mustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, v INT)")
			mustExec(t, db, "INSERT INTO "+table+" VALUES (1, 0)")
			if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			writer, reader := conn(t, db), conn(t, db)
			if level == "session" {
				reader = writer // the level promises a session its own writes
			}

			if level != "eventual" {
				stale, where := pairs(t, writer, reader, table, n)
				t.Logf("%s, healthy replicas: %d stale of %d; reads: %v", level, stale, n, where)
				if stale != 0 {
					t.Errorf("%s, healthy replicas: %d stale reads of %d", level, stale, n)
				}
				if share := replicaShare(where); share < 0.5 {
					t.Errorf("%s, healthy replicas: only %.0f%% of the reads on replicas (%v)", level, 100*share, where)
				}
			}

			if err := cl.Pause(ctx, "replica1"); err != nil {
				t.Fatal(err)
			}
			stale, where := pairs(t, writer, reader, table, n)
			if err := cl.Resume(ctx, "replica1"); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, replica1 paused: %d stale of %d; reads: %v", level, stale, n, where)
			switch {
			case level == "eventual" && stale == 0:
				t.Errorf("eventual, replica1 paused: no stale read in %d (reads %v): the test cannot see one", n, where)
			case level != "eventual" && stale != 0:
				t.Errorf("%s, replica1 paused: %d stale reads of %d", level, stale, n)
			}
			if level == "eventual" {
				return
			}

			if err := cl.Lag(ctx, "replica1", 2); err != nil {
				t.Fatal(err)
			}
			stale, where = pairs(t, writer, reader, table, n/4)
			if err := cl.Lag(ctx, "replica1", 0); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, replica1 2 s behind: %d stale of %d; reads: %v", level, stale, n/4, where)
			if stale != 0 {
				t.Errorf("%s, replica1 2 s behind: %d stale reads of %d", level, stale, n/4)
			}
			// Both replicas paused: no replica can serve; the reads wait, then go to the
			// primary (those waits time out, and are counted).
			for _, r := range []string{"replica1", "replica2"} {
				if err := cl.Pause(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			stale, where = pairs(t, writer, reader, table, n/8)
			for _, r := range []string{"replica1", "replica2"} {
				if err := cl.Resume(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%s, both replicas paused: %d stale of %d; reads: %v", level, stale, n/8, where)
			if stale != 0 || where["primary (consistency: no replica reached the position)"] != n/8 {
				t.Errorf("%s, both replicas paused: %d stale, reads %v; want every read on the primary", level, stale, where)
			}
			var c struct {
				endpoint, level              string
				timeoutMs, waits, tos, reads int64
			}
			if err := db.QueryRow("/*PROXY_INTERNAL*/ SHOW CONSISTENCY").Scan(&c.endpoint, &c.level, &c.timeoutMs, &c.waits, &c.tos, &c.reads); err != nil {
				t.Fatal(err)
			}
			t.Logf("SHOW CONSISTENCY: %s", fmt.Sprint(c))
			if c.level != level || c.waits == 0 || c.tos == 0 {
				t.Errorf("SHOW CONSISTENCY: %+v, want level %s with waits and timeouts counted", c, level)
			}
			if level == config.ConsistencyLatest && c.reads != 0 {
				t.Errorf("latest: %d readings of the primary's position, want none", c.reads)
			}
		})
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestNewUserReadsOwnWrites is what a new user tries first against the sandbox's configuration
// (endpoint rw: reads on the replicas, consistency session): CREATE TABLE, INSERT, SELECT on one
// connection, as one `mariadb -e` does. The SELECT must find the row, every time.
func TestNewUserReadsOwnWrites(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			if c.Endpoints[i].Name == "rw" {
				c.Endpoints[i].Consistency = config.ConsistencySession // as the sandbox writes it
			}
		}
	})
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	for i := range 20 {
		c := conn(t, db)
		table := fmt.Sprintf("test.newuser_%d", i)
		for _, q := range []string{"CREATE TABLE " + table + " (id INT PRIMARY KEY, name VARCHAR(20))", "INSERT INTO " + table + " VALUES (1, 'first')"} {
			if _, err := c.ExecContext(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
		var name string
		if err := c.QueryRowContext(context.Background(), "SELECT name FROM "+table).Scan(&name); err != nil {
			t.Fatalf("try %d: the SELECT after CREATE and INSERT: %v", i, err)
		}
		if node, _, reason := lastRoute(t, c); name != "first" {
			t.Fatalf("try %d: read %q from %s (%s)", i, name, node, reason)
		}
		if _, err := c.ExecContext(context.Background(), "DROP TABLE "+table); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// TestGlobalReadsShareThePrimaryPosition: at the global level, reads that arrive together
// share one reading of the primary's position, and none of them is stale for it: 8 pairs of
// connections at once, each writing a value and reading it back through the other connection.
func TestGlobalReadsShareThePrimaryPosition(t *testing.T) {
	s := startSluice(t, consistencyAt("global"))
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	db.SetMaxOpenConns(32)
	readings := func() int64 {
		var ep, level string
		var timeoutMs, waits, tos, reads int64
		if err := db.QueryRow("/*PROXY_INTERNAL*/ SHOW CONSISTENCY").Scan(&ep, &level, &timeoutMs, &waits, &tos, &reads); err != nil {
			t.Fatal(err)
		}
		return reads
	}
	const pairsN, n = 8, 150
	for p := range pairsN {
		table := fmt.Sprintf("test.share_%d", p)
		mustExec(t, db, "DROP TABLE IF EXISTS "+table)
		mustExec(t, db, "CREATE TABLE "+table+" (id INT PRIMARY KEY, v INT)")
		mustExec(t, db, "INSERT INTO "+table+" VALUES (1, 0)")
	}
	before := readings()
	type outcome struct {
		stale int
		where map[string]int
	}
	results := make(chan outcome, pairsN)
	for p := range pairsN {
		writer, reader := conn(t, db), conn(t, db)
		go func() {
			// pairs fails the test with t.Fatal, which ends this goroutine: the outcome is
			// sent whatever happens.
			o := outcome{where: map[string]int{}}
			defer func() { results <- o }()
			o.stale, o.where = pairs(t, writer, reader, fmt.Sprintf("test.share_%d", p), n)
		}()
	}
	stale, where := 0, map[string]int{}
	for range pairsN {
		o := <-results
		stale += o.stale
		for k, v := range o.where {
			where[k] += v
		}
	}
	used := readings() - before
	t.Logf("%d global reads by %d pairs at once: %d stale; %d readings of the primary's position; reads: %v", pairsN*n, pairsN, stale, used, where)
	if stale != 0 {
		t.Errorf("%d stale reads of %d", stale, pairsN*n)
	}
	if used == 0 || used > pairsN*n*9/10 {
		t.Errorf("%d readings of the primary's position for %d reads: not shared", used, pairsN*n)
	}
}

// TestTrackingOffByDynamicSQL: a session at consistency session that turns its GTID tracking off
// with dynamic SQL sluice cannot read (EXECUTE IMMEDIATE CONCAT('SET SESSION session_tr',
// 'ack_system_variables = …')) still reads its own writes: the write's OK says no GTID, so its
// reads go to the primary (before, they went to a replica, paused here, and read stale rows). A
// later write whose OK says its GTID again brings its reads back to the replicas.
func TestTrackingOffByDynamicSQL(t *testing.T) {
	s := startSluice(t, consistencyAt(config.ConsistencySession))
	ctx := context.Background()
	cl := testutil.Cluster(t)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c := conn(t, db)
	if _, err := c.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t_dyntrack (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "REPLACE INTO t_dyntrack VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	paused := map[string]bool{}
	resume := func() {
		for r := range paused {
			if err := cl.Resume(ctx, r); err != nil {
				t.Error(err)
			}
			delete(paused, r)
		}
	}
	defer resume()
	for _, r := range []string{"replica1", "replica2"} {
		if err := cl.Pause(ctx, r); err != nil {
			t.Fatal(err)
		}
		paused[r] = true
	}
	if _, err := c.ExecContext(ctx, "EXECUTE IMMEDIATE CONCAT('SET SESSION session_tr', 'ack_system_variables = ''''')"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := c.ExecContext(ctx, "UPDATE t_dyntrack SET v = ? WHERE id = 1", i); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := c.QueryRowContext(ctx, "SELECT v FROM t_dyntrack WHERE id = 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if node, _, reason := lastRoute(t, c); v != i {
			t.Fatalf("write %d: read %d on %s (%s): a stale read of the session's own write", i, v, node, reason)
		}
	}
	// Tracking back on: the next write says its GTID, and the session's reads may use replicas
	// again (they wait for the position there, or go to the primary after the timeout).
	if _, err := c.ExecContext(ctx, "SET SESSION session_track_system_variables = 'last_gtid'"); err != nil {
		t.Fatal(err)
	}
	resume()
	if _, err := c.ExecContext(ctx, "UPDATE t_dyntrack SET v = 10 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := c.QueryRowContext(ctx, "SELECT v FROM t_dyntrack WHERE id = 1").Scan(&v); err != nil || v != 10 {
		t.Fatalf("after tracking came back: %d %v", v, err)
	}
	if node, role, reason := lastRoute(t, c); role != "replica" {
		t.Errorf("the read after tracking came back ran on %s (%s, %s), want a replica: the session did not recover", node, role, reason)
	}
}

// TestLatestAcrossConnections: at the latest level, a row written and acknowledged on one client
// connection is found by a read on another client connection (another pool, so another TCP
// connection to sluice) right after, every time: 4 writers and 4 readers at once, 2 000
// insert-then-read pairs, the readers' reads on the replicas when they have the row. No read
// costs a statement on the primary beyond the reads sent there: sluice reads no position
// (SHOW CONSISTENCY), and the primary's Com_select grows by the reads it served, plus the
// monitor's checks.
func TestLatestAcrossConnections(t *testing.T) { acrossConnections(t, config.ConsistencyLatest) }

// TestGlobalAcrossConnections: the same pairs at the global level, whose reads each see what
// the primary had committed when they arrived (a reading of its position, shared by the reads
// that arrive together): 0 rows not found.
func TestGlobalAcrossConnections(t *testing.T) { acrossConnections(t, config.ConsistencyGlobal) }

// acrossConnections runs the pairs of TestLatestAcrossConnections at level (latest or global).
func acrossConnections(t *testing.T, level string) {
	s := startSluice(t, consistencyAt(level))
	cl := testutil.Cluster(t)
	ctx := context.Background()
	writers := open(t, dsn(s.rw, "app", "app", "test", ""))
	readers := open(t, dsn(s.rw, "app", "app", "test", ""))
	const pairsN, n = 4, 500
	table := "test." + level + "_pairs"
	mustExec(t, writers, "DROP TABLE IF EXISTS "+table)
	mustExec(t, writers, "CREATE TABLE "+table+" (id INT PRIMARY KEY, v INT)")
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	admin, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	comSelect := func() int64 {
		var name string
		var v int64
		if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	wantLevel := level
	consistency := func() (waits, timeouts, readings int64) {
		var ep, level string
		var timeoutMs int64
		if err := readers.QueryRow("/*PROXY_INTERNAL*/ SHOW CONSISTENCY").Scan(&ep, &level, &timeoutMs, &waits, &timeouts, &readings); err != nil {
			t.Fatal(err)
		}
		if got := level; got != wantLevel {
			t.Fatalf("SHOW CONSISTENCY says %s", got)
		}
		return waits, timeouts, readings
	}
	selectsBefore := comSelect()
	_, _, readingsBefore := consistency()
	type outcome struct {
		missing int
		where   map[string]int
	}
	results := make(chan outcome, pairsN)
	for p := range pairsN {
		writer, reader := conn(t, writers), conn(t, readers)
		go func() {
			o := outcome{where: map[string]int{}}
			defer func() { results <- o }()
			for i := range n {
				id := p*n + i + 1
				if _, err := writer.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?)", id, id); err != nil {
					t.Error(err)
					return
				}
				var v int
				err := reader.QueryRowContext(ctx, "SELECT v FROM "+table+" WHERE id = ?", id).Scan(&v)
				if err != nil && err != sql.ErrNoRows {
					t.Error(err)
					return
				}
				var node, reason string
				if err := reader.QueryRowContext(ctx, "/*PROXY_INTERNAL*/ SHOW LAST ROUTE").Scan(&node, new(string), &reason, new(string)); err != nil {
					t.Error(err)
					return
				}
				if v != id {
					o.missing++
					t.Logf("pair %d: row %d not found by the reader (read on %s, %s)", p, id, node, reason)
				}
				if node == "primary" {
					o.where["primary"]++
				} else {
					o.where["replicas"]++
				}
			}
		}()
	}
	missing, where := 0, map[string]int{}
	for range pairsN {
		o := <-results
		missing += o.missing
		for k, v := range o.where {
			where[k] += v
		}
	}
	selects := comSelect() - selectsBefore
	waits, timeouts, readings := consistency()
	t.Logf("%s, %d pairs on %d writer and %d reader connections: %d rows not found; reads %v; primary Com_select +%d; "+
		"sluice: %d waits, %d timeouts, %d position readings", level, pairsN*n, pairsN, pairsN, missing, where, selects, waits, timeouts, readings-readingsBefore)
	if missing != 0 {
		t.Errorf("%d of %d reads did not find the row acknowledged to another connection", missing, pairsN*n)
	}
	if where["primary"]+where["replicas"] != pairsN*n {
		return // a pair failed (reported above)
	}
	if where["replicas"] < pairsN*n/2 {
		t.Errorf("only %d of %d reads on the replicas (%v)", where["replicas"], pairsN*n, where)
	}
	if level != config.ConsistencyLatest {
		return // global reads the primary's position: that is its cost
	}
	if readings != readingsBefore {
		t.Errorf("%d readings of the primary's position, want none", readings-readingsBefore)
	}
	// Every SELECT on the primary is a read sent there, or the monitor's (a check every 200 ms,
	// a few statements each): a position query per read would add about one per read.
	if extra := selects - int64(where["primary"]); extra > pairsN*n/8 {
		t.Errorf("the primary ran %d SELECTs beyond the %d reads sent there, for %d reads", extra, where["primary"], pairsN*n)
	}
}
