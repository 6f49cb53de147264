package proxy_test

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// setExprCases are SETs whose values are expressions, as drivers and frameworks send them at
// start-up: evaluated once where they run, their values replayed elsewhere, no pin.
var setExprCases = []struct{ name, set, probe string }{
	{"Connector/J", "set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')", "SELECT @@sql_mode"},
	{"Connector/J, a mode that changes", "set autocommit=1, sql_mode = concat(@@sql_mode,',ANSI_QUOTES')", "SELECT @@sql_mode"},
	{"Django", "SET SESSION sql_mode = REPLACE(@@sql_mode,'ONLY_FULL_GROUP_BY','')", "SELECT @@sql_mode"},
	{"REPLACE that changes", "SET SESSION sql_mode = REPLACE(@@sql_mode,'STRICT_TRANS_TABLES','')", "SELECT @@sql_mode"},
	{"time_zone", "SET time_zone = CONCAT('+0','3:30')", "SELECT @@time_zone"},
	{"integer", "SET @@session.max_statement_time = 2*5", "SELECT @@max_statement_time"},
	// Another node gives another value: what the primary gave is replayed, not the text.
	{"the node's own value", "SET max_statement_time = @@server_id", "SELECT @@max_statement_time"},
	{"from a table", "SET sql_mode = (SELECT m FROM test.setexpr_modes LIMIT 1)", "SELECT @@sql_mode"},
}

// setExprWant is what the primary itself gives for probe after set, on a connection of its own.
func setExprWant(t *testing.T, set, probe string) (before, after string) {
	t.Helper()
	d := connect(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	defer d.leave()
	before = d.str(t, probe).String
	d.exec(t, set)
	return before, d.str(t, probe).String
}

func setExprTable(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.setexpr_modes (m VARCHAR(200))")
	mustExec(t, direct, "DELETE FROM test.setexpr_modes")
	mustExec(t, direct, "INSERT INTO test.setexpr_modes VALUES ('NO_ENGINE_SUBSTITUTION,PIPES_AS_CONCAT')")
}

// TestTxPoolSetExpression: under pool_mode transaction (max_per_node 1, so that two sessions
// share the node connection) a SET of an expression pins nothing; the session sees the value
// the primary gives for it on its next statements, after another session used the connection,
// and that other session sees none of it.
func TestTxPoolSetExpression(t *testing.T) {
	setExprTable(t)
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	for _, tc := range setExprCases {
		t.Run(tc.name, func(t *testing.T) {
			clean, want := setExprWant(t, tc.set, tc.probe)
			a := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer a.leave()
			b := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer b.leave()
			a.exec(t, tc.set)
			if pins := lastRoutePins(t, a); pins != "" {
				t.Errorf("after %q: pins %q, want none", tc.set, pins)
			}
			ta := a.thread(t)
			for i := range 3 {
				if got := b.str(t, tc.probe).String; got != clean {
					t.Errorf("round %d: B sees %q, want %q", i, got, clean)
				}
				if tb := b.thread(t); tb != ta {
					t.Fatalf("B on thread %d, A on %d: not the same node connection", tb, ta)
				}
				if got := a.str(t, tc.probe).String; got != want {
					t.Errorf("round %d: A sees %q, want %q (the primary's)", i, got, want)
				}
			}
			if pins := lastRoutePins(t, a); pins != "" {
				t.Errorf("pins %q, want none", pins)
			}
		})
	}
}

// TestSetExpressionOnReplicas: with pool_mode off on the read-write endpoint, a SET of an
// expression no longer keeps the session on the primary: its reads are balanced over the
// replicas, which see the value the expression gave on the primary.
func TestSetExpressionOnReplicas(t *testing.T) {
	setExprTable(t)
	s := startSluice(t, poolOff)
	for _, tc := range setExprCases {
		t.Run(tc.name, func(t *testing.T) {
			_, want := setExprWant(t, tc.set, tc.probe)
			a := connect(t, dsn(s.rw, "app", "app", "test", ""))
			defer a.leave()
			a.exec(t, tc.set)
			replica := 0
			for i := range 4 {
				got := a.str(t, tc.probe).String
				node, role, reason := lastRoute(t, a.c)
				if got != want {
					t.Errorf("read %d on %s: %q, want %q (the primary's)", i, node, got, want)
				}
				if role == "replica" {
					replica++
				} else if reason == "pinned" {
					t.Errorf("read %d: on %s, pinned", i, node)
				}
			}
			if replica == 0 {
				t.Errorf("no read went to a replica")
			}
		})
	}
}

// TestSetExpressionFailed: a SET of an expression that fails changes nothing: the session's
// value stays what it was, on the primary and on the replicas, and nothing pins.
func TestSetExpressionFailed(t *testing.T) {
	s := startSluice(t, poolOff)
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	a.exec(t, "SET time_zone = CONCAT('+0','1:00')")
	if _, err := a.c.ExecContext(t.Context(), "SET time_zone = CONCAT('no', 'such zone')"); err == nil {
		t.Fatal("a bad time zone was accepted")
	}
	if _, err := a.c.ExecContext(t.Context(), "SET sql_mode = 'ANSI', time_zone = CONCAT('no', 'such zone')"); err == nil {
		t.Fatal("a bad time zone was accepted")
	}
	for i := range 4 {
		if got := a.str(t, "SELECT CONCAT(@@time_zone, ' ', @@sql_mode)").String; got != "+01:00 "+defaultMode(t) {
			node, _, _ := lastRoute(t, a.c)
			t.Errorf("read %d on %s: %q", i, node, got)
		}
	}
	if pins := lastRoutePins(t, a); pins != "" {
		t.Errorf("pins %q, want none", pins)
	}
}

// TestSetExpressionWarnings: the read-back after a SET of an expression leaves the SET's
// warnings where SHOW WARNINGS finds them (pool_mode off: the session's warnings stay on the
// primary, which ran both).
func TestSetExpressionWarnings(t *testing.T) {
	s := startSluice(t, poolOff)
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	const set = "SET max_statement_time = CAST('7x' AS UNSIGNED)"
	_, want := setExprWant(t, set, "SELECT @@max_statement_time")
	a.exec(t, set)
	var level, msg string
	var code int
	if err := a.c.QueryRowContext(t.Context(), "SHOW WARNINGS").Scan(&level, &code, &msg); err != nil {
		t.Fatalf("SHOW WARNINGS: %v", err)
	}
	if code != 1292 {
		t.Errorf("SHOW WARNINGS: %s %d %s, want the SET's 1292", level, code, msg)
	}
	for i := range 3 {
		if got := a.str(t, "SELECT @@max_statement_time").String; got != want {
			t.Errorf("read %d: %q", i, got)
		}
	}
	if pins := lastRoutePins(t, a); pins != "" {
		t.Errorf("pins %q, want none", pins)
	}
}

func defaultMode(t *testing.T) string {
	d := connect(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	defer d.leave()
	return d.str(t, "SELECT @@sql_mode").String
}

// TestSetPreparedParameter: a SET prepared with a parameter (the binary protocol: the text
// holds ?, not the value) is evaluated like an expression: its value, read back where it ran,
// is what the replicas get.
func TestSetPreparedParameter(t *testing.T) {
	s := startSluice(t, poolOff)
	a := connect(t, dsn(s.rw, "app", "app", "test", ""))
	defer a.leave()
	if _, err := a.c.ExecContext(t.Context(), "SET time_zone = ?", "+04:00"); err != nil {
		t.Fatal(err)
	}
	replica := 0
	for i := range 4 {
		got := a.str(t, "SELECT @@time_zone").String
		node, role, _ := lastRoute(t, a.c)
		if got != "+04:00" {
			t.Errorf("read %d on %s: %q", i, node, got)
		}
		if role == "replica" {
			replica++
		}
	}
	if replica == 0 {
		t.Error("no read went to a replica")
	}
	if pins := lastRoutePins(t, a); pins != "" {
		t.Errorf("pins %q, want none", pins)
	}
}

// poolOff sets every endpoint to pool_mode off, the sandbox's routing otherwise (reads on the
// replicas).
func poolOff(c *config.Config) {
	for i := range c.Endpoints {
		c.Endpoints[i].PoolMode = "off"
	}
}
