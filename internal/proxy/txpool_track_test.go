package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestTxPoolStoredProgramVars: under pool_mode transaction a stored function that changes a
// session variable the node's default session_track_system_variables does not list
// (div_precision_increment, max_statement_time; not sql_mode, which a stored program restores
// on its return) is seen (sluice tracks every variable on pooled connections): A keeps the
// connection (stored_program) and sees its change; B, at max_per_node 1, waits for it and,
// once A left, finds the server's default, not A's change.
func TestTxPoolStoredProgramVars(t *testing.T) {
	cl := testutil.Cluster(t)
	adm, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for _, q := range []string{
		"CREATE OR REPLACE FUNCTION test.txpool_f_div() RETURNS INT DETERMINISTIC NO SQL BEGIN SET SESSION div_precision_increment = 7; RETURN 1; END",
		"CREATE OR REPLACE FUNCTION test.txpool_f_mst() RETURNS INT DETERMINISTIC NO SQL BEGIN SET SESSION max_statement_time = 9; RETURN 1; END",
	} {
		if _, err := adm.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	fresh := connect(t, cl.DSN("primary", "app", "app", "test"))
	defer fresh.leave()
	s := startSluice(t, poolConfig("transaction", 1, 300*time.Millisecond))
	for _, tc := range []struct{ fn, probe, want string }{
		{"test.txpool_f_div()", "SELECT @@session.div_precision_increment", "7"},
		{"test.txpool_f_mst()", "SELECT @@session.max_statement_time", "9"},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			clean := fresh.str(t, tc.probe).String
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			a := connect(t, dsn(s.rw, "app", "app", "test", ""))
			if got := a.int(t, "SELECT "+tc.fn); got != 1 {
				t.Fatalf("SELECT %s = %d", tc.fn, got)
			}
			if got := lastRoutePins(t, a); !strings.Contains(got, "stored_program") {
				t.Errorf("pins after SELECT %s: %q, want stored_program", tc.fn, got)
			}
			if got := a.str(t, tc.probe).String; got != tc.want {
				t.Errorf("A's own %s = %q, want %q", tc.probe, got, tc.want)
			}
			waitsThenGets(t, a, b, nil)
			if got := b.str(t, tc.probe).String; got != clean {
				t.Errorf("B on A's connection: %s = %q, want the default %q", tc.probe, got, clean)
			}
		})
	}
}

// TestTxPoolTrackShown: under pool_mode transaction sluice tracks every session variable on its
// node connections, but a client that tracks session state is told of the changes its own list
// reports, as on a connection of its own: a SET of sql_mode (not in the default list) says
// nothing, a SET of time_zone (in it) says so, and a client that sets its list to '*' itself
// hears of every change.
func TestTxPoolTrackShown(t *testing.T) {
	cl := testutil.Cluster(t)
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	reported := func(c *backend.Conn, q string) string {
		t.Helper()
		if err := c.WriteQuery([]byte(q)); err != nil {
			t.Fatal(err)
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		c.SetSeq(1)
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if !smysql.IsOK(p) {
			t.Fatalf("%s: packet % x, want an OK", q, p)
		}
		ok, err := smysql.ParseOK(p, c.Caps)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for block := ok.SessionState; len(block) > 0; {
			sc, rest, err := smysql.NextSessionChange(block)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Type == smysql.SessionTrackSystemVariables && string(sc.Name) != "last_gtid" {
				names = append(names, string(sc.Name))
			}
			block = rest
		}
		return strings.Join(names, ",")
	}
	var primary string
	for _, n := range cl.Nodes {
		if n.Name == "primary" {
			primary = n.Address
		}
	}
	direct := rawConnect(t, primary, "app", "app")
	defer direct.Close()
	proxied := rawConnect(t, s.rw, "app", "app")
	defer proxied.Close()
	for _, q := range []string{
		"SET SESSION sql_mode = 'ANSI_QUOTES'",
		"SET time_zone = '+02:00'",
		"SET SESSION sql_mode = 'TRADITIONAL', time_zone = '-01:00', max_statement_time = 3",
		"SET SESSION session_track_system_variables = '*'",
		"SET SESSION sql_mode = ''",
	} {
		want, got := reported(direct, q), reported(proxied, q)
		if got != want {
			t.Errorf("%s: reported %q through sluice, %q directly", q, got, want)
		}
	}
}

// BenchmarkTxPoolSwitch: two client sessions with different session state take turns on one
// node connection (pool_mode transaction, max_per_node 1): every statement takes the
// connection from the other session, which costs a reset, the replay of the session's SET and
// the tracking of every variable ('*', one round trip after each reset).
func BenchmarkTxPoolSwitch(b *testing.B) {
	s := startSluice(b, poolConfig("transaction", 1, 5*time.Second))
	var cs [2]*sql.Conn
	for i := range cs {
		db, err := sql.Open("mysql", dsn(s.rw, "app", "app", "test", ""))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if cs[i], err = db.Conn(context.Background()); err != nil {
			b.Fatal(err)
		}
		defer cs[i].Close()
		if _, err := cs[i].ExecContext(context.Background(), fmt.Sprintf("SET time_zone = '+0%d:00'", i+1)); err != nil {
			b.Fatal(err)
		}
	}
	var n int
	b.ResetTimer()
	for i := range b.N {
		if err := cs[i%2].QueryRowContext(context.Background(), "SELECT 1").Scan(&n); err != nil {
			b.Fatal(err)
		}
	}
}
