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
