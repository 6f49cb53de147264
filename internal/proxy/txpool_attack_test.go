package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// Attacks on pool_mode transaction: two clients of one user share one node connection
// (max_per_node 1); A does something that leaves state on the connection, B takes the
// connection and must see none of it, and A must still see its own.

// TestTxPoolAttackLeaks: statements whose effect on the session sluice does not see as a SET:
// a batch that failed after its SET, a stored function or trigger that sets a session variable
// the node's session tracking reports, a sequence's last value, SET STATEMENT … FOR SET,
// sql_log_bin, the next transaction's characteristics, USE inside a batch.
func TestTxPoolAttackLeaks(t *testing.T) {
	cl := testutil.Cluster(t)
	direct := open(t, cl.DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE SEQUENCE IF NOT EXISTS test.txa_seq")
	mustExec(t, direct, "CREATE OR REPLACE FUNCTION test.txa_tz() RETURNS INT DETERMINISTIC BEGIN SET SESSION time_zone = '+07:00'; RETURN 1; END")
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.txa_trg (id INT)")
	mustExec(t, direct, "CREATE OR REPLACE TRIGGER test.txa_trg_bi BEFORE INSERT ON test.txa_trg FOR EACH ROW SET SESSION time_zone = '+06:00'")
	fresh := connect(t, cl.DSN("primary", "app", "app", "test"))
	defer fresh.leave()
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	for _, tc := range []struct {
		name   string
		params string
		set    []string
		fails  bool // the last statement of set fails
		probe  string
		own    string // what A must read back ("": as read right after set)
	}{
		{"failed multi-statement", "multiStatements=true", []string{"SET SESSION time_zone='+05:00'; SELECT * FROM test.txa_none"}, true, "SELECT @@time_zone", "+05:00"},
		{"function sets a session variable", "", []string{"SELECT test.txa_tz()"}, false, "SELECT @@time_zone", "+07:00"},
		{"trigger sets time_zone", "", []string{"INSERT INTO test.txa_trg VALUES (1)", "DO 1"}, false, "SELECT @@time_zone", "+06:00"},
		{"sequence", "", []string{"SELECT NEXTVAL(test.txa_seq)"}, false, "SELECT LASTVAL(test.txa_seq)", ""},
		{"set @@session spelling", "", []string{"SET @@session.time_zone='+01:00'"}, false, "SELECT @@time_zone", "+01:00"},
		{"set local spelling", "", []string{"SET LOCAL time_zone='+01:30'"}, false, "SELECT @@time_zone", "+01:30"},
		{"set @@ spelling", "", []string{"SET @@time_zone='+02:00'"}, false, "SELECT @@time_zone", "+02:00"},
		{"set names then collation", "", []string{"SET NAMES latin1", "SET collation_connection='latin1_bin'"}, false, "SELECT CONCAT(@@character_set_client, ' ', @@collation_connection)", "latin1 latin1_bin"},
		{"character_set_results null", "", []string{"SET character_set_results=NULL"}, false, "SELECT COALESCE(@@character_set_results, 'NULL')", "NULL"},
		{"user variable and session variable at once", "", []string{"SET @txa_x = 1, time_zone='+04:00'"}, false, "SELECT @@time_zone", "+04:00"},
		{"execute immediate", "", []string{"EXECUTE IMMEDIATE 'SET time_zone=''+08:00'''"}, false, "SELECT @@time_zone", "+08:00"},
		{"prepared set", "", []string{"PREPARE txa_p FROM 'SET time_zone=''+09:00'''", "EXECUTE txa_p"}, false, "SELECT @@time_zone", "+09:00"},
		{"set statement for set", "", []string{"SET STATEMENT max_statement_time=100 FOR SET SESSION time_zone='+03:00'"}, false, "SELECT @@time_zone", "+03:00"},
		{"sql_log_bin", "", []string{"SET SESSION sql_log_bin=0"}, false, "SELECT @@sql_log_bin", "0"},
		{"set transaction read only", "", []string{"SET TRANSACTION READ ONLY", "SELECT 1"}, false, "SELECT @@tx_read_only", ""},
		{"use in a multi-statement", "multiStatements=true", []string{"SELECT 1; USE pool_other"}, false, "SELECT DATABASE()", "pool_other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustExec(t, direct, "CREATE DATABASE IF NOT EXISTS pool_other")
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			a := connect(t, dsn(s.rw, "app", "app", "test", tc.params))
			defer a.leave()
			clean := fresh.str(t, tc.probe)
			for i, q := range tc.set {
				_, err := a.c.ExecContext(context.Background(), q)
				if err != nil && !(tc.fails && i == len(tc.set)-1) {
					t.Fatalf("%s: %v", q, err)
				}
			}
			own := a.str(t, tc.probe)
			if tc.own != "" && own.String != tc.own {
				t.Fatalf("A's %s right after: %v, want %q", tc.probe, own, tc.own)
			}
			// B gets the connection (and must see none of A's), or A holds it (1040).
			var got sql.NullString
			err := b.c.QueryRowContext(context.Background(), tc.probe).Scan(&got)
			if me := (*mysql.MySQLError)(nil); errors.As(err, &me) && me.Number == 1040 {
				a.leave() // held: B gets it reset once A is gone
				if got = b.str(t, tc.probe); got != clean {
					t.Errorf("B, after A left, sees %s = %v, want %v (a fresh connection's)", tc.probe, got, clean)
				}
				return
			} else if err != nil {
				t.Fatalf("B: %s: %v", tc.probe, err)
			}
			if got != clean {
				t.Errorf("B sees %s = %v, want %v (a fresh connection's)", tc.probe, got, clean)
			}
			if got := a.str(t, tc.probe); got != own {
				t.Errorf("A's own %s = %v after B used the connection, want %v", tc.probe, got, own)
			}
		})
	}
}

// TestTxPoolAttackReset: COM_RESET_CONNECTION forgets the session's user variables and
// LAST_INSERT_ID() on the node; sluice must not bring them back.
func TestTxPoolAttackReset(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	for _, how := range []string{"reset connection", "change user"} {
		t.Run(how, func(t *testing.T) {
			a := rawConnect(t, s.rw, "app", "app")
			defer a.Close()
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			if err := a.Exec("SET @txa_r = 'secret'"); err != nil {
				t.Fatal(err)
			}
			if err := a.Exec("SELECT LAST_INSERT_ID(77)"); err != nil {
				t.Fatal(err)
			}
			b.exec(t, "DO 1") // B takes the connection: A's values are read back
			var p []byte
			if how == "reset connection" {
				p = command(t, a, []byte{smysql.ComResetConnection}, "single")[0]
			} else {
				p = changeUserRaw(t, a, "app", "app")
			}
			if p[0] != 0 {
				t.Fatalf("%s: %x", how, p)
			}
			b.exec(t, "DO 1")
			rows, err := a.Query("SELECT @txa_r, LAST_INSERT_ID()")
			if err != nil {
				t.Fatal(err)
			}
			if v := rows.Values[0]; !v[0].Null || v[1].S != "0" {
				t.Errorf("after %s: @txa_r = %+v, LAST_INSERT_ID() = %+v; want NULL and 0 (the node forgot them)", how, v[0], v[1])
			}
		})
	}
}

// TestTxPoolAttackKill: KILL QUERY and KILL of an idle session whose node connection another
// session now runs a statement on reaches neither that statement nor that connection.
func TestTxPoolAttackKill(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 5*time.Second))
	for _, kill := range []string{"KILL QUERY", "KILL"} {
		t.Run(kill, func(t *testing.T) {
			a := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer a.leave()
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			// The killer logs in before B holds the connection (a login takes it too), and
			// its KILL is answered by sluice on another connection.
			c := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer c.leave()
			ida := a.int(t, "SELECT CONNECTION_ID()")
			ta := a.thread(t)
			done := make(chan error, 1)
			var slept int64
			go func() {
				done <- b.c.QueryRowContext(context.Background(), "SELECT SLEEP(1.5)").Scan(&slept)
			}()
			time.Sleep(300 * time.Millisecond)
			_, kerr := c.c.ExecContext(context.Background(), fmt.Sprintf("%s %d", kill, ida))
			if err := <-done; err != nil {
				t.Fatalf("B's statement after %s of idle A (%v): %v", kill, kerr, err)
			}
			if slept != 0 {
				t.Errorf("B's SLEEP interrupted by %s of A (%v)", kill, kerr)
			}
			if tb := b.thread(t); tb != ta {
				t.Logf("B on thread %d, A was on %d", tb, ta)
			}
		})
	}
}

// TestTxPoolAttackHolds: what would hold every session of the user out of a table, or the
// whole server, if its connection were given back holding it (a global read lock, a backup
// stage, locks taken inside a batch, a transaction that autocommit off opened with a locking
// read) holds the session's connection: B, on the only one, waits and gets 1040, and gets the
// connection once A released it.
func TestTxPoolAttackHolds(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.txa_plain (id INT)")
	s := startSluice(t, poolConfig("transaction", 1, 300*time.Millisecond))
	for _, tc := range []struct {
		name          string
		params        string
		hold, release []string
	}{
		{"global read lock", "", []string{"FLUSH TABLES WITH READ LOCK"}, []string{"UNLOCK TABLES"}},
		{"backup stage", "", []string{"BACKUP STAGE START"}, []string{"BACKUP STAGE END"}},
		{"backup lock", "", []string{"BACKUP LOCK test.txa_plain"}, []string{"BACKUP UNLOCK"}},
		{"lock tables in a batch", "multiStatements=true", []string{"SELECT 1; LOCK TABLES test.txa_plain WRITE"}, nil},
		{"get_lock in a batch", "multiStatements=true", []string{"DO 1; DO GET_LOCK('txa', 0)"}, nil},
		{"temporary table in a batch", "multiStatements=true", []string{"DO 1; CREATE TEMPORARY TABLE txa_tmp (id INT)"}, nil},
		{"autocommit off, locking read", "", []string{"SET autocommit=0", "SELECT * FROM test.txa_plain FOR UPDATE"}, []string{"COMMIT"}},
		{"read-only transaction", "", []string{"START TRANSACTION READ ONLY", "SELECT 1"}, []string{"COMMIT"}},
		{"handler", "", []string{"HANDLER test.txa_plain OPEN"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			a := connect(t, dsn(s.rw, "app", "app", "test", tc.params))
			defer a.leave()
			for _, q := range tc.hold {
				a.exec(t, q)
			}
			waitsThenGets(t, a, b, tc.release)
			// What A held is gone: B writes the table.
			b.exec(t, "INSERT INTO test.txa_plain VALUES (1)")
		})
	}
}

// TestTxPoolAttackNextTx: SET TRANSACTION (the next transaction's characteristics) followed by
// a statement that opens no transaction leaves them pending on the node: the connection stays
// with the session (its next transaction takes them: A's stays read-only) and the next session
// on it does not have its writes refused as a read-only transaction's.
func TestTxPoolAttackNextTx(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.txa_plain (id INT)")
	s := startSluice(t, poolConfig("transaction", 1, 300*time.Millisecond))
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	a.exec(t, "SET TRANSACTION READ ONLY")
	a.exec(t, "DO 1")
	var n int
	err := b.c.QueryRowContext(context.Background(), "SELECT 1").Scan(&n)
	if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1040 {
		t.Fatalf("B while A's next transaction's characteristics are pending: %v, want 1040", err)
	}
	a.exec(t, "BEGIN")
	_, err = a.c.ExecContext(context.Background(), "INSERT INTO test.txa_plain VALUES (2)")
	if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1792 {
		t.Errorf("A's write in the read-only transaction it asked for: %v, want 1792", err)
	}
	a.exec(t, "COMMIT")
	a.exec(t, "SELECT COUNT(*) FROM test.txa_plain") // clears the error A's connection held (warnings)
	b.exec(t, "BEGIN")
	b.exec(t, "INSERT INTO test.txa_plain VALUES (2)")
	b.exec(t, "COMMIT")
}

// TestTxPoolAttackTrackAll: a client that tracks every session variable
// (session_track_system_variables='*', as some connectors ask) is told of the database's
// character set on USE: that is no stored program's doing, and holds nothing.
func TestTxPoolAttackTrackAll(t *testing.T) {
	mustExec(t, open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test")), "CREATE DATABASE IF NOT EXISTS pool_other")
	s := startSluice(t, poolConfig("transaction", 1, 300*time.Millisecond))
	b := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer b.leave()
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	a.exec(t, "SET SESSION session_track_system_variables='*'")
	a.exec(t, "USE pool_other")
	if got := lastRoutePins(t, a); got != "" {
		t.Errorf("pins after USE: %q, want none", got)
	}
	if got := b.str(t, "SELECT DATABASE()").String; got != "test" {
		t.Errorf("B's database %q", got)
	}
	if got := a.str(t, "SELECT DATABASE()").String; got != "pool_other" {
		t.Errorf("A's database %q", got)
	}
}
