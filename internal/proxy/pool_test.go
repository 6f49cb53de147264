package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// poolConfig sets every endpoint's pool mode and max_per_node, reads on the primary (so that a
// session holds one node connection: the primary's).
func poolConfig(mode string, maxPerNode int, acquire time.Duration) func(*config.Config) {
	return func(c *config.Config) {
		primaryReads(c)
		for i := range c.Endpoints {
			c.Endpoints[i].PoolMode = mode
			c.Endpoints[i].Pool.MaxPerNode = maxPerNode
			c.Endpoints[i].Pool.AcquireTimeout.Duration = acquire
		}
	}
}

// client is one client session through sluice: a single connection of its own.
type client struct {
	db *sql.DB
	c  *sql.Conn
}

func connect(t *testing.T, d string) *client {
	t.Helper()
	db := open(t, d)
	db.SetMaxOpenConns(1)
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &client{db: db, c: c}
}

// leave ends the client's session (COM_QUIT).
func (cl *client) leave() {
	cl.c.Close()
	cl.db.Close()
}

// thread is the node thread under the client's session (CONNECTION_ID() alone is sluice's id;
// an expression goes to the node).
func (cl *client) thread(t *testing.T) int64 {
	t.Helper()
	return cl.int(t, "SELECT CONNECTION_ID()+0")
}

func (cl *client) exec(t *testing.T, q string) {
	t.Helper()
	if _, err := cl.c.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (cl *client) str(t *testing.T, q string) sql.NullString {
	t.Helper()
	var s sql.NullString
	if err := cl.c.QueryRowContext(context.Background(), q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

func (cl *client) int(t *testing.T, q string) int64 {
	t.Helper()
	var n int64
	if err := cl.c.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestPoolIsolation: client A leaves state of every kind on its node connection and leaves;
// client B, forced onto the same node connection (max_per_node 1) under pool_mode session,
// sees none of it, as a fresh direct connection would not, and has its own handshake's
// database; under pool_mode off B gets a connection of its own. A session without a database
// never takes a pooled connection that has one.
func TestPoolIsolation(t *testing.T) {
	cl := testutil.Cluster(t)
	direct := open(t, cl.DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE DATABASE IF NOT EXISTS pool_other")
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.pool_tx (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	fresh := connect(t, cl.DSN("primary", "app", "app", "test"))
	defer fresh.leave()
	global := map[string]string{}
	for _, v := range []string{"@@sql_mode", "@@tx_isolation", "@@time_zone", "@@character_set_client", "@@collation_connection",
		"@@session_track_system_variables", "@@max_statement_time"} {
		global[v] = fresh.str(t, "SELECT "+v).String
	}

	for _, mode := range []string{"session", "off"} {
		t.Run(mode, func(t *testing.T) {
			s := startSluice(t, poolConfig(mode, 1, 5*time.Second))
			a := connect(t, dsn(s.rw, "app", "app", "test", ""))
			ta := a.thread(t)
			for _, q := range []string{
				"SET SESSION sql_mode='ANSI_QUOTES'",
				"SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE",
				"SET time_zone='+05:00'",
				"SET NAMES latin1",
				"SET SESSION max_statement_time=5",
				"SET SESSION session_track_system_variables=''",
				"SET @a=42",
				"CREATE TEMPORARY TABLE pool_tmp (id INT)",
				"DO GET_LOCK('pool_lock', 0)",
				"PREPARE pool_stmt FROM 'SELECT 1'",
				"INSERT INTO test.pool_tx (v) VALUES (1)",
				"USE pool_other",
				"BEGIN",
				"INSERT INTO test.pool_tx (v) VALUES (42)",
				"DO CAST('x' AS SIGNED)", // a warning
			} {
				a.exec(t, q)
			}
			if a.int(t, "SELECT LAST_INSERT_ID()") == 0 || a.str(t, "SELECT DATABASE()").String != "pool_other" {
				t.Fatal("A's state did not take")
			}
			a.leave()

			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			// The first statement: a reset leaves no warnings either.
			if n := b.int(t, "SELECT @@warning_count"); n != 0 {
				t.Errorf("B sees %d warnings", n)
			}
			tb := b.thread(t)
			if mode == "session" && tb != ta {
				t.Fatalf("B is on node thread %d, A was on %d: not reused under max_per_node 1", tb, ta)
			}
			if mode == "off" && tb == ta {
				t.Fatalf("pool_mode off: B reused A's thread %d", ta)
			}
			for v, want := range global {
				if got := b.str(t, "SELECT "+v).String; got != want {
					t.Errorf("B's %s = %q, a fresh connection's %q", v, got, want)
				}
			}
			if db := b.str(t, "SELECT DATABASE()"); db.String != "test" {
				t.Errorf("B's database %v, want its handshake's (test)", db)
			}
			if v := b.str(t, "SELECT @a"); v.Valid {
				t.Errorf("B sees A's @a = %q", v.String)
			}
			if n := b.int(t, "SELECT LAST_INSERT_ID()"); n != 0 {
				t.Errorf("B's LAST_INSERT_ID() = %d", n)
			}
			if n := b.int(t, "SELECT @@in_transaction"); n != 0 {
				t.Error("B is in A's transaction")
			}
			var rows int
			if err := direct.QueryRow("SELECT COUNT(*) FROM test.pool_tx WHERE v = 42").Scan(&rows); err != nil || rows != 0 {
				t.Errorf("A's uncommitted row: %d (%v), want rolled back", rows, err)
			}
			if v := b.str(t, "SELECT IS_USED_LOCK('pool_lock')"); v.Valid {
				t.Errorf("A's lock is still held (by %s)", v.String)
			}
			_, err := b.c.ExecContext(context.Background(), "SELECT * FROM pool_tmp")
			if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1146 {
				t.Errorf("B reading A's temporary table: %v, want 1146", err)
			}
			_, err = b.c.ExecContext(context.Background(), "EXECUTE pool_stmt")
			if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1243 {
				t.Errorf("B executing A's prepared statement: %v, want 1243", err)
			}
			// B's own state works on that connection.
			b.exec(t, "SET @b=1")
			if b.int(t, "SELECT @b") != 1 {
				t.Error("B's own user variable")
			}
			b.leave()

			// A session without a database never takes a connection that has one: B left
			// "test" selected on it.
			c := connect(t, dsn(s.rw, "app", "app", "", ""))
			defer c.leave()
			if db := c.str(t, "SELECT DATABASE()"); db.Valid {
				t.Errorf("a session without a database is in %q", db.String)
			}
			if tc := c.thread(t); tc == ta {
				t.Errorf("a session without a database took the pooled connection (thread %d) that has one", ta)
			}
			if mode == "session" {
				// And one that has none is reused by the next session without one.
				c.exec(t, "SET @c=1")
				tc := c.thread(t)
				c.leave()
				d := connect(t, dsn(s.rw, "app", "app", "", ""))
				defer d.leave()
				if td := d.thread(t); td != tc {
					t.Errorf("a connection without a database was not reused (%d, then %d)", tc, td)
				}
				if db := d.str(t, "SELECT DATABASE()"); db.Valid {
					t.Errorf("no database asked, in %q", db.String)
				}
			}
		})
	}
}

// TestPoolDatabaseSeen: the reset of a session that did nothing to hide its database changes
// takes the connection's database from what the node reported (no question asked): a client
// that changed its database with USE leaves, and the next one, on the same node connection,
// is in its own handshake's database; one that left the connection in no database (its
// database dropped under it) gives the next one with a database its own, and one without none.
func TestPoolDatabaseSeen(t *testing.T) {
	cl := testutil.Cluster(t)
	direct := open(t, cl.DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE DATABASE IF NOT EXISTS pool_other")
	s := startSluice(t, poolConfig("session", 1, 5*time.Second))

	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	ta := a.thread(t)
	a.exec(t, "USE pool_other")
	a.leave()
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	if tb := b.thread(t); tb != ta {
		t.Fatalf("B is on node thread %d, A was on %d: not reused under max_per_node 1", tb, ta)
	}
	if db := b.str(t, "SELECT DATABASE()"); db.String != "test" {
		t.Errorf("B's database %v after A's USE pool_other, want its handshake's (test)", db)
	}
	b.exec(t, "USE pool_other")
	b.leave()
	c := connect(t, dsn(s.rw, "app", "app", "", ""))
	if db := c.str(t, "SELECT DATABASE()"); db.Valid {
		t.Errorf("a session without a database is in %q (B left pool_other)", db.String)
	}
	c.leave()

	mustExec(t, direct, "CREATE DATABASE IF NOT EXISTS pool_gone")
	d := connect(t, dsn(s.rw, "app", "app", "test", ""))
	d.exec(t, "USE pool_gone")
	d.exec(t, "DROP DATABASE pool_gone")
	if db := d.str(t, "SELECT DATABASE()"); db.Valid {
		t.Fatalf("after dropping its database the session is in %q", db.String)
	}
	d.leave()
	e := connect(t, dsn(s.rw, "app", "app", "test", ""))
	if db := e.str(t, "SELECT DATABASE()"); db.String != "test" {
		t.Errorf("after D's database was dropped, E is in %v, want test", db)
	}
	e.leave()
	mustExec(t, direct, "CREATE DATABASE IF NOT EXISTS pool_gone")
	f := connect(t, dsn(s.rw, "app", "app", "test", ""))
	f.exec(t, "USE pool_gone")
	f.exec(t, "DROP DATABASE pool_gone")
	f.leave()
	g := connect(t, dsn(s.rw, "app", "app", "", ""))
	defer g.leave()
	if db := g.str(t, "SELECT DATABASE()"); db.Valid {
		t.Errorf("after F's database was dropped, G (no database) is in %q", db.String)
	}
}

// TestPoolOtherCharset: a client whose handshake has another character set does not take a
// pooled connection opened with another one (a reset goes back to the handshake's), and gets its own.
func TestPoolOtherCharset(t *testing.T) {
	s := startSluice(t, poolConfig("session", 1, 5*time.Second))
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	ta := a.thread(t)
	a.leave()
	b := connect(t, dsn(s.rw, "app", "app", "test", "collation=latin1_swedish_ci"))
	defer b.leave()
	if tb := b.thread(t); tb == ta {
		t.Errorf("a latin1 client took a utf8mb4 connection (thread %d)", ta)
	}
	if cs := b.str(t, "SELECT @@character_set_client").String; cs != "latin1" {
		t.Errorf("character_set_client %q, want latin1 (the handshake's)", cs)
	}
}

// poolOf is the pool figures of node and user.
func poolOf(s *sluice, node, user string) admin.Pool {
	for _, p := range s.app.Pools() {
		if p.Node == node && p.User == user {
			return p
		}
	}
	return admin.Pool{}
}

// TestPoolReuse: 200 short client sessions one after another use the same few node
// connections: the primary's threads of the user grow by the pooled connections only (not by
// one per session), and created + reused add up to the sessions.
func TestPoolReuse(t *testing.T) {
	s := startSluice(t, poolConfig("session", 0, 5*time.Second))
	adm, err := testutil.Cluster(t).AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	threads := func() int {
		var n int
		if err := adm.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE user = 'app'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := threads()
	const sessions = 200
	for i := range sessions {
		c := connect(t, dsn(s.rw, "app", "app", "test", ""))
		if n := c.int(t, "SELECT 1"); n != 1 {
			t.Fatalf("session %d: %d", i, n)
		}
		c.leave()
	}
	// The last session's connection goes back once its reset is done.
	deadline := time.Now().Add(5 * time.Second)
	for poolOf(s, "primary", "app").InUse > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p := poolOf(s, "primary", "app")
	if p.Created+p.Reused != sessions {
		t.Errorf("created %d + reused %d, want %d sessions", p.Created, p.Reused, sessions)
	}
	// A client may log in before the previous one's connection is back (its reset runs after
	// the client left): a few connections, never one per session.
	if p.Created > 10 || p.Resets != sessions || p.ResetFailures != 0 || p.InUse != 0 || p.Idle != p.Open {
		t.Errorf("pool %+v: want at most 10 connections made for %d sequential sessions", p, sessions)
	}
	if after := threads(); after-before > p.Open {
		t.Errorf("the primary's threads of app went from %d to %d over %d sessions (%d pooled)", before, after, sessions, p.Open)
	}
	t.Logf("%d sessions: created %d, reused %d, resets %d; app's threads %d -> %d", sessions, p.Created, p.Reused, p.Resets, before, threads())
}

// TestPoolLimit: at max_per_node a client waits acquire_timeout, then gets 1040 saying which
// limit; once the connection is released, the next client gets it.
func TestPoolLimit(t *testing.T) {
	s := startSluice(t, poolConfig("session", 1, 300*time.Millisecond))
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	ta := a.thread(t)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	start := time.Now()
	err := db.Ping()
	me := (*mysql.MySQLError)(nil)
	if !errors.As(err, &me) || me.Number != 1040 || !strings.Contains(me.Message, "pool.max_per_node=1") ||
		!strings.Contains(me.Message, "node primary for user app") {
		t.Fatalf("a client past max_per_node: %v, want 1040 naming the limit", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("refused after %s, before acquire_timeout", d)
	}
	if p := poolOf(s, "primary", "app"); p.Waits == 0 || p.WaitSeconds < 0.3 {
		t.Errorf("pool %+v: the wait is not counted", p)
	}
	a.leave()
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	if tb := b.thread(t); tb != ta {
		t.Errorf("after A left, B got thread %d, not A's %d", tb, ta)
	}
}

// TestPoolRestsUntouched: under pool_mode session, short sessions whose reads go to a replica
// leave their primary connection untouched: it goes back to the pool without a reset (the
// primary runs no command for them at all), and the replica's connection is reset with its
// read-only guard in one round trip, so the next session's login sends the replica nothing.
// (backend's TestResetSessionGuards checks the guard holds.) What the next session finds is
// still clean: no user variable, none of the session variables a session that used the
// primary set.
func TestPoolRestsUntouched(t *testing.T) {
	cl := testutil.Cluster(t)
	direct := open(t, cl.DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS pool_rest (id INT PRIMARY KEY)")
	mustExec(t, direct, "REPLACE INTO pool_rest VALUES (1)")
	if err := cl.WaitCaughtUp(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			c.Endpoints[i].PoolMode = "session"
			c.Endpoints[i].Pool.MaxPerNode = 1
			c.Endpoints[i].Pool.AcquireTimeout.Duration = 5 * time.Second
			if c.Endpoints[i].Mode == "read-write" {
				for name := range c.Endpoints[i].ReadWeights {
					c.Endpoints[i].ReadWeights[name] = 0
				}
				c.Endpoints[i].ReadWeights["replica1"] = 100
			}
		}
	})
	counters := func(node string) (resets, sets int64) {
		db, err := cl.AdminDB(node)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_admin_commands', 'Com_set_option')")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var v int64
			if err := rows.Scan(&name, &v); err != nil {
				t.Fatal(err)
			}
			if name == "Com_admin_commands" {
				resets = v
			} else {
				sets = v
			}
		}
		return resets, sets
	}
	settle := func() {
		deadline := time.Now().Add(5 * time.Second)
		for (poolOf(s, "primary", "app").InUse > 0 || poolOf(s, "replica1", "app").InUse > 0) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Warm up: the first session dials both connections.
	w := connect(t, dsn(s.rw, "app", "app", "test", ""))
	w.int(t, "SELECT id FROM pool_rest")
	w.leave()
	settle()
	pr0, ps0 := counters("primary")
	rr0, rs0 := counters("replica1")
	const sessions = 30
	for i := range sessions {
		c := connect(t, dsn(s.rw, "app", "app", "test", ""))
		c.int(t, "SELECT id FROM pool_rest")
		var node, primary, reason, pin sql.NullString
		if err := c.c.QueryRowContext(context.Background(), "SLUICE SHOW LAST ROUTE").Scan(&node, &primary, &reason, &pin); err != nil || node.String != "replica1" {
			t.Fatalf("session %d: the read ran on %v (%v), want replica1", i, node, err)
		}
		c.leave()
		settle()
	}
	pr1, ps1 := counters("primary")
	rr1, rs1 := counters("replica1")
	// The counters' own reads are Com_show_status and a login, neither counted here: the
	// deltas are sluice's.
	if pr1-pr0 != 0 || ps1-ps0 != 0 {
		t.Errorf("primary ran %d resets and %d SETs for %d sessions that never used it, want 0", pr1-pr0, ps1-ps0, sessions)
	}
	// Each session: its reads, the reset and the guard (one round trip) as it left.
	if rr1-rr0 != sessions || rs1-rs0 != sessions {
		t.Errorf("replica1 ran %d resets and %d SETs for %d sessions, want one of each per session", rr1-rr0, rs1-rs0, sessions)
	}
	if p := poolOf(s, "primary", "app"); p.Created != 1 || p.ResetFailures != 0 {
		t.Errorf("primary's pool %+v: want the one connection, never reset", p)
	}
	if p := poolOf(s, "replica1", "app"); p.Created != 1 || p.ResetFailures != 0 {
		t.Errorf("replica1's pool %+v: want the one connection", p)
	}
	// A session that does use the primary leaves it reset: the next one sees none of its state.
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	a.exec(t, "SET @rest_probe = 'a'")
	a.exec(t, "SET SESSION sql_mode = 'ANSI'")
	ta := a.int(t, "SELECT CONNECTION_ID()+0 FROM pool_rest /*FORCE_MASTER*/")
	a.leave()
	settle()
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	if tb := b.int(t, "/*FORCE_MASTER*/ SELECT CONNECTION_ID()+0"); tb != ta {
		t.Fatalf("B is on primary thread %d, A was on %d: not reused under max_per_node 1", tb, ta)
	}
	if v := b.str(t, "/*FORCE_MASTER*/ SELECT @rest_probe"); v.Valid {
		t.Errorf("B sees A's @rest_probe = %q on the primary", v.String)
	}
	if m := b.str(t, "/*FORCE_MASTER*/ SELECT @@session.sql_mode"); m.String == "ANSI" || strings.Contains(m.String, "ANSI_QUOTES") {
		t.Errorf("B has A's sql_mode %q", m.String)
	}
}
