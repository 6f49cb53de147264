package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestTxPoolShares: under pool_mode transaction two client sessions that are both connected
// share one node connection (max_per_node 1), statement by statement, each seeing its own
// session state on it: what one SET is brought back for it on every statement, the other's
// undone (a reset) when the other takes the connection.
func TestTxPoolShares(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	ta, tb := a.thread(t), b.thread(t)
	if ta != tb {
		t.Fatalf("A on node thread %d, B on %d: not shared under max_per_node 1", ta, tb)
	}
	a.exec(t, "SET SESSION sql_mode='ANSI_QUOTES'")
	a.exec(t, "SET time_zone='+05:00'")
	b.exec(t, "SET time_zone='-03:00'")
	for i := range 20 {
		if got := a.str(t, "SELECT @@time_zone").String; got != "+05:00" {
			t.Fatalf("round %d: A's time_zone %q", i, got)
		}
		if got := b.str(t, "SELECT @@time_zone").String; got != "-03:00" {
			t.Fatalf("round %d: B's time_zone %q", i, got)
		}
		if got := b.str(t, "SELECT @@sql_mode").String; strings.Contains(got, "ANSI_QUOTES") {
			t.Fatalf("round %d: B sees A's sql_mode %q", i, got)
		}
		if got := a.str(t, "SELECT @@sql_mode").String; got != "ANSI_QUOTES" {
			t.Fatalf("round %d: A's sql_mode %q", i, got)
		}
	}
	if a.thread(t) != ta || b.thread(t) != ta {
		t.Error("the node connection changed")
	}
	if p := poolOf(s, "primary", "app"); p.Created != 1 {
		t.Errorf("pool %+v: want one connection made", p)
	}
}

// TestTxPoolIsolation: client A leaves state of each kind that moves (session variables, the
// database, the character set, LAST_INSERT_ID()) and goes idle; client B, on the same node
// connection (max_per_node 1), sees none of it; A sees all of it on its next statement.
func TestTxPoolIsolation(t *testing.T) {
	cl := testutil.Cluster(t)
	direct := open(t, cl.DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE DATABASE IF NOT EXISTS pool_other")
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.txpool_ids (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	fresh := connect(t, cl.DSN("primary", "app", "app", "test"))
	defer fresh.leave()
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))

	for _, tc := range []struct {
		name  string
		set   []string
		probe string
		want  string // A's value ("" : read from A after set, must differ from B's)
	}{
		{"sql_mode", []string{"SET SESSION sql_mode='ANSI_QUOTES'"}, "SELECT @@sql_mode", "ANSI_QUOTES"},
		{"isolation", []string{"SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE"}, "SELECT @@tx_isolation", "SERIALIZABLE"},
		{"time_zone", []string{"SET time_zone='+05:00'"}, "SELECT @@time_zone", "+05:00"},
		{"charset", []string{"SET NAMES latin1"}, "SELECT @@character_set_client", "latin1"},
		{"max_statement_time", []string{"SET SESSION max_statement_time=5"}, "SELECT @@max_statement_time", "5"},
		{"autocommit", []string{"SET autocommit=0", "COMMIT"}, "SELECT @@autocommit", "0"},
		{"database", []string{"USE pool_other"}, "SELECT DATABASE()", "pool_other"},
		{"user variable", []string{"SET @a = 42"}, "SELECT @a", "42"},
		{"user variable assigned in a select", []string{"SELECT @s := _latin1 'h\xe9llo' COLLATE latin1_bin"},
			"SELECT CONCAT_WS(' ', HEX(@s), COLLATION(@s))", ""},
		{"user variable selected into", []string{"SELECT 7.50 INTO @i"}, "SELECT CONCAT(@i + 1, ' ', @i / 2)", ""},
		{"user variable read and set", []string{"SET @n = 1", "SET @n = @n + 1", "DO 1", "SET @n = @n * 10"}, "SELECT @n", "20"},
		{"last_insert_id", []string{"INSERT INTO test.txpool_ids (v) VALUES (1)", "INSERT INTO test.txpool_ids (id, v) VALUES (100000 + CONNECTION_ID(), 2)",
			"DO 1"}, "SELECT LAST_INSERT_ID()", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer a.leave()
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			clean := fresh.str(t, tc.probe).String
			if tc.name == "database" {
				clean = "test"
			}
			for _, q := range tc.set {
				a.exec(t, q)
			}
			want := tc.want
			if want == "" {
				want = a.str(t, tc.probe).String
				if want == clean {
					t.Fatalf("A's %s did not change (%q)", tc.probe, want)
				}
			}
			ta := a.thread(t)
			if got := b.str(t, tc.probe).String; got != clean {
				t.Errorf("B sees %s = %q, want %q", tc.probe, got, clean)
			}
			if tb := b.thread(t); tb != ta {
				t.Fatalf("B on thread %d, A on %d: not the same node connection", tb, ta)
			}
			if got := a.str(t, tc.probe).String; got != want {
				t.Errorf("A's own %s = %q after B used the connection, want %q", tc.probe, got, want)
			}
		})
	}
}

// TestTxPoolPins: state that cannot move holds the session's node connection until it is
// released (with max_per_node 1, B waits and gets the connection when A lets it go, or 1040
// when A never does), and the pin is named in SHOW LAST ROUTE.
func TestTxPoolPins(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE PROCEDURE IF NOT EXISTS test.txpool_proc() SET @p = 1")
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.txpool_ac (id INT)")
	s := startSluice(t, poolConfig("transaction", 1, 300*time.Millisecond))
	for _, tc := range []struct {
		name, pin     string
		hold, release []string // release empty: held until A leaves
	}{
		{"transaction", "", []string{"BEGIN", "SELECT 1"}, []string{"COMMIT"}},
		{"temporary table", "temporary_table", []string{"CREATE TEMPORARY TABLE txpool_tmp (id INT)"}, []string{"DROP TEMPORARY TABLE txpool_tmp"}},
		{"lock", "user_lock", []string{"DO GET_LOCK('txpool', 0)"}, []string{"DO RELEASE_LOCK('txpool')"}},
		{"autocommit off, in a transaction", "", []string{"SET autocommit=0", "INSERT INTO test.txpool_ac VALUES (1)"}, []string{"COMMIT"}},
		{"procedure", "stored_program", []string{"CALL test.txpool_proc()"}, nil},
		{"sql prepare", "sql_prepare", []string{"PREPARE txp FROM 'SELECT 1'"}, nil},
		{"warnings", "warnings", []string{"DO CAST('x' AS SIGNED)"}, []string{"SELECT COUNT(*) FROM mysql.user"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Both log in first (a login takes a node connection for a moment too).
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			a := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer a.leave()
			for _, q := range tc.hold {
				a.exec(t, q)
			}
			if tc.pin != "" {
				if got := lastRoutePins(t, a); !strings.Contains(got, tc.pin) {
					t.Errorf("SHOW LAST ROUTE pins %q, want %s", got, tc.pin)
				}
			}
			waitsThenGets(t, a, b, tc.release)
		})
	}
}

// lastRoutePins is the pins column of the client's SHOW LAST ROUTE.
func lastRoutePins(t *testing.T, cl *client) string {
	t.Helper()
	rows, err := cl.c.QueryContext(context.Background(), "/*PROXY_INTERNAL*/ SHOW LAST ROUTE")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatal("SHOW LAST ROUTE: no row")
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i, c := range cols {
		if c == "pins" {
			if b, ok := vals[i].([]byte); ok {
				return string(b)
			}
		}
	}
	return ""
}

// TestTxPoolResetForgets: under pool_mode transaction COM_RESET_CONNECTION drops what sluice
// carries for the session, as the node drops it: a user variable and LAST_INSERT_ID() set
// before it are not restored after it (on whatever connection the session lands), and a pin
// taken before it (SQL PREPARE) no longer holds the node connection: B, at max_per_node 1,
// gets it.
func TestTxPoolResetForgets(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	a := rawConnect(t, s.rw, "app", "app")
	defer a.Close()
	query(t, a, "SELECT @x := 5")
	query(t, a, "SELECT LAST_INSERT_ID(7)")
	command(t, a, append([]byte{smysql.ComQuery}, "PREPARE p FROM 'SELECT 1'"...), "result")
	if got := query(t, a, "SELECT CONCAT(@x, ' ', LAST_INSERT_ID())"); got != "5 7" {
		t.Fatalf("before the reset: %q", got)
	}
	if ps := command(t, a, []byte{smysql.ComResetConnection}, "single"); !smysql.IsOK(ps[0]) {
		t.Fatalf("reset: %q", ps[0])
	}
	if got := query(t, a, "SELECT CONCAT(@x IS NULL, ' ', LAST_INSERT_ID())"); got != "1 0" {
		t.Errorf("after the reset, @x IS NULL and LAST_INSERT_ID(): %q, want \"1 0\"", got)
	}
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	if got := b.str(t, "SELECT @x := 9").String; got != "9" {
		t.Errorf("B: %q", got)
	}
	if got := query(t, a, "SELECT CONCAT(@x IS NULL, ' ', LAST_INSERT_ID())"); got != "1 0" {
		t.Errorf("after B used the connection, A's @x IS NULL and LAST_INSERT_ID(): %q, want \"1 0\"", got)
	}
}

// TestTxPoolLoginUnknownDatabase: a login naming a database the node does not have fails with
// the node's error 1049 under pool_mode transaction too, also when it takes a connection given
// back by another session (which carries the session state's prefix, and another database).
func TestTxPoolLoginUnknownDatabase(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	a.exec(t, "DO 1") // its connection is given back, unreset, and idle
	db := open(t, dsn(s.rw, "app", "app", "no_such_db_for_login", ""))
	err := db.Ping()
	if me := mysqlErr(t, err); me.Number != 1049 {
		t.Errorf("login with an unknown database: %v, want error 1049", err)
	}
}

// TestTxPoolKill: under pool_mode transaction CONNECTION_ID() and KILL keep sluice's ids. With
// A and C sharing one node connection (max_per_node 1), a KILL QUERY of idle A reaches nothing
// (C's statement on the node thread A used before runs on); a KILL QUERY of C interrupts C's.
func TestTxPoolKill(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 5*time.Second))
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	c := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer c.leave()
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	ida, idc := a.int(t, "SELECT CONNECTION_ID()"), c.int(t, "SELECT CONNECTION_ID()")
	if ida == idc || a.thread(t) != c.thread(t) {
		t.Fatalf("A (%d) and C (%d): want their own sluice ids on one node thread", ida, idc)
	}
	run := func(cl *client) chan error {
		done := make(chan error, 1)
		go func() {
			var n int64
			done <- cl.c.QueryRowContext(context.Background(), "SELECT SLEEP(1.5)").Scan(&n)
		}()
		time.Sleep(300 * time.Millisecond) // C's sleep is running
		return done
	}
	done := run(c)
	b.exec(t, "KILL QUERY "+strconv.FormatInt(ida, 10))
	if err := <-done; err != nil {
		t.Errorf("C's statement after a KILL QUERY of idle A: %v, want it to run to its end", err)
	}
	done = run(c)
	b.exec(t, "KILL QUERY "+strconv.FormatInt(idc, 10))
	select {
	case err := <-done:
		if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1317 {
			// SLEEP interrupted by KILL QUERY returns 1, not an error, on MariaDB: both mean it
			// did not run its 1.5 s.
			if err != nil {
				t.Errorf("C's statement after KILL QUERY of C: %v", err)
			}
		}
	case <-time.After(time.Second):
		t.Error("KILL QUERY of C did not interrupt C's statement")
	}
	if n := c.int(t, "SELECT 1"); n != 1 {
		t.Error("C after its statement was killed")
	}
}

// TestTxPoolReadsYourWrites: under pool_mode transaction at consistency session, reads still go
// to the replicas (the session knows its primary connection reports GTIDs, whichever pooled
// connection it took), and each read after a write finds it, the connection under the session
// changing as another session takes it.
func TestTxPoolReadsYourWrites(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.txpool_ryw (id INT PRIMARY KEY)")
	mustExec(t, direct, "DELETE FROM test.txpool_ryw")
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			c.Endpoints[i].PoolMode = "transaction"
			c.Endpoints[i].Pool.MaxPerNode = 1
			c.Endpoints[i].Pool.AcquireTimeout.Duration = 5 * time.Second
			c.Endpoints[i].Consistency = config.ConsistencySession
		}
	})
	// B first: A's login takes the primary connection B's login opened and gave back.
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	for i := range 30 {
		b.exec(t, "SET time_zone = '+0"+strconv.Itoa(i%10)+":00'") // B's state differs: A's connection is reset under it
		// The replicas have A's last insert: a read finds one there at once, unless the
		// session lost track of its primary connection's GTIDs (then it cannot know, and
		// reads on the primary). Waited for here, not left to the 10 ms consistency timeout,
		// which a loaded machine's replication can exceed.
		if err := testutil.Cluster(t).WaitCaughtUp(context.Background(), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if n := a.int(t, "SELECT COUNT(*) FROM test.txpool_ryw WHERE id < 0"); n != 0 {
			t.Fatal(n)
		}
		if _, role, reason := lastRoute(t, a.c); role != "replica" {
			t.Fatalf("round %d: a read with nothing to wait for went to the %s (%s)", i, role, reason)
		}
		a.exec(t, "INSERT INTO test.txpool_ryw VALUES ("+strconv.Itoa(i)+")")
		if n := a.int(t, "SELECT COUNT(*) FROM test.txpool_ryw WHERE id = "+strconv.Itoa(i)); n != 1 {
			t.Fatalf("round %d: A's own insert not read back", i)
		}
	}
}

// TestTxPoolUserVarsAndPrograms: user variables a CALL sets (directly or through SQL EXECUTE)
// are the session's afterwards, and a statement prepared (binary) while a variable is another
// session's on the connection neither sees that value nor fails when the session sets its own
// (a restore between PREPARE and EXECUTE that changed the variable's type would give 1615).
func TestTxPoolUserVarsAndPrograms(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE PROCEDURE IF NOT EXISTS test.txpool_addmul(a INT, b INT, OUT s INT, OUT m INT) BEGIN SET s = a + b; SET m = a * b; END")
	s := startSluice(t, poolConfig("transaction", 1, 5*time.Second))

	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	a.exec(t, "CALL test.txpool_addmul(6, 7, @s, @m)")
	if got := a.str(t, "SELECT CONCAT(@s, ' ', @m)").String; got != "13 42" {
		t.Errorf("after CALL: %q, want 13 42", got)
	}
	a.leave()
	a = connect(t, dsn(s.rw, "app", "app", "test", ""))
	a.exec(t, "PREPARE c FROM 'CALL test.txpool_addmul(?, ?, @s2, @m2)'")
	a.exec(t, "SET @x = 6")
	a.exec(t, "EXECUTE c USING @x, 7")
	if got := a.str(t, "SELECT CONCAT(@s2, ' ', @m2)").String; got != "13 42" {
		t.Errorf("after EXECUTE of a CALL: %q, want 13 42", got)
	}
	a.leave()

	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	c := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer c.leave()
	b.exec(t, "SET @pv = 'b-secret'")
	var v sql.NullString
	var n int
	if err := c.c.QueryRowContext(context.Background(), "SELECT @pv, ?", 1).Scan(&v, &n); err != nil || v.Valid {
		t.Fatalf("C's prepared SELECT @pv on B's connection: %v, %v; want NULL", v, err)
	}
	c.exec(t, "SET @pv = 'c-own'")
	if err := c.c.QueryRowContext(context.Background(), "SELECT @pv, ?", 2).Scan(&v, &n); err != nil || v.String != "c-own" {
		t.Fatalf("C's prepared SELECT @pv after its SET: %v, %v; want c-own", v, err)
	}
	if got := b.str(t, "SELECT @pv").String; got != "b-secret" {
		t.Errorf("B's @pv = %q", got)
	}
}

// waitsThenGets checks that B, while A holds the only node connection (max_per_node 1), gets
// 1040 after acquire_timeout, and gets the connection once A runs release (nil: A leaves).
func waitsThenGets(t *testing.T, a, b *client, release []string) {
	t.Helper()
	var n int
	err := b.c.QueryRowContext(context.Background(), "SELECT 1").Scan(&n)
	if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1040 {
		t.Fatalf("B while A holds the connection: %v, want 1040 after acquire_timeout", err)
	}
	for _, q := range release {
		a.exec(t, q)
	}
	if release == nil {
		a.leave()
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		err = b.c.QueryRowContext(context.Background(), "SELECT 1").Scan(&n)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("B once A let the connection go: %v", err)
	}
}

// TestParkedAfterLogin: a session's client buffers are parked as soon as its login is done,
// not after idleProbe (a burst of clients that connect and wait would hold 32 KiB each for
// that second), and the first statement afterwards takes them back and runs.
func TestParkedAfterLogin(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 2, 2*time.Second))
	const n = 4
	before := smysql.Parks()
	start := time.Now()
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = connect(t, dsn(s.rw, "app", "app", "test", ""))
		defer clients[i].leave()
		if err := clients[i].c.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Each session's first wait began with its client parked; the pings (answered by sluice
	// or a node) parked nothing more yet: the idle probe is a second away.
	for smysql.Parks()-before < n && time.Since(start) < 900*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	if got := smysql.Parks() - before; got < n {
		t.Fatalf("%d parks within %s of %d logins, want at least %d", got, time.Since(start).Round(time.Millisecond), n, n)
	}
	for i, c := range clients {
		if got := c.int(t, "SELECT 40+"+strconv.Itoa(i)); got != int64(40+i) {
			t.Fatalf("client %d after its park: %d", i, got)
		}
	}
}
