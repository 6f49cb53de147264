package route

import (
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/topology"
)

// TestLearnDiagnostics: DiagNode follows the statements that change a node's diagnostics area
// (one that raised a warning or an error, one that names a table) and stays where it is for one
// that names no table and raised nothing, wherever that ran, and for the diagnostics
// statements themselves.
func TestLearnDiagnostics(t *testing.T) {
	type step struct {
		stmt     string
		node     int
		warnings uint16
		failed   bool
		diag     int // DiagNode after it
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the issue: a statement without tables keeps the warnings where they are", []step{
			{"SELECT CAST('2024-13-01' AS DATE)", 1, 1, false, 1},
			{"SELECT 1", 2, 0, false, 1},
			{"SHOW WARNINGS", 1, 0, false, 1},
			{"SELECT @@warning_count", 1, 0, false, 1},
		}},
		{"a table clears them where it ran, with no warning", []step{
			{"SELECT CAST('x' AS SIGNED)", 1, 1, false, 1},
			{"SELECT a FROM t", 2, 0, false, 2},
			{"SELECT 1", 1, 0, false, 2},
		}},
		{"an error moves them", []step{
			{"SELECT CAST('x' AS SIGNED)", 1, 1, false, 1},
			{"SELECT * FROM missing", 2, 0, true, 2},
			{"SELECT @@server_id", 1, 0, false, 2},
			{"SHOW ERRORS", 2, 0, false, 2},
		}},
		{"a statement without tables that warns moves them", []step{
			{"SELECT a FROM t", 1, 0, false, 1},
			{"SELECT 'x' + 1", 2, 1, false, 2},
		}},
		{"session statements keep them", []step{
			{"SELECT CAST('x' AS SIGNED)", 2, 1, false, 2},
			{"SET @@session.sql_mode = DEFAULT", 0, 0, false, 2},
			{"USE db", 0, 0, false, 2},
			{"BEGIN", 0, 0, false, 2},
			{"COMMIT", 0, 0, false, 2},
			{"INSERT INTO t VALUES (1)", 0, 0, false, 0},
		}},
		{"a diagnostics statement that failed moves them", []step{
			{"SELECT CAST('x' AS SIGNED)", 2, 1, false, 2},
			{"SHOW WARNINGS LIMIT", 1, 0, true, 1},
		}},
		{"a diagnostics statement's own count moves nothing", []step{
			{"SELECT CAST('x' AS SIGNED)", 2, 1, false, 2},
			{"SHOW WARNINGS", 1, 1, false, 2},
		}},
		{"in doubt (a batch, CALL, EXECUTE), where it ran", []step{
			{"SELECT CAST('x' AS SIGNED)", 2, 1, false, 2},
			{"SELECT 1; SELECT 2", 0, 0, false, 0},
			{"SELECT CAST('x' AS SIGNED)", 2, 1, false, 2},
			{"CALL p()", 0, 0, false, 0},
			{"SELECT CAST('x' AS SIGNED)", 2, 1, false, 2},
			{"EXECUTE s", 0, 0, false, 0},
		}},
		{"a statement sluice answered itself touches nothing", []step{
			{"SELECT CAST('x' AS SIGNED)", 2, 1, false, 2},
			{"BEGIN", -1, 0, false, 2},
			{"COMMIT", -1, 0, true, 2},
		}},
	} {
		s := NewSession()
		if s.DiagNode != -1 {
			t.Fatalf("a new session's DiagNode is %d", s.DiagNode)
		}
		for i, st := range tc.steps {
			c := classify.Classify([]byte(st.stmt))
			s.Learn(&c, []byte(st.stmt), Decision{Node: st.node}, rw(), Outcome{Node: st.node, Primary: st.node == 0,
				Warnings: st.warnings, Failed: st.failed})
			if s.DiagNode != st.diag {
				t.Errorf("%s: step %d (%s on %d): DiagNode %d, want %d", tc.name, i, st.stmt, st.node, s.DiagNode, st.diag)
			}
		}
		s.Reset()
		if s.DiagNode != -1 {
			t.Errorf("%s: DiagNode %d after Reset", tc.name, s.DiagNode)
		}
	}
}

// TestDecideDiagnostics: the statements that read the diagnostics area go to DiagNode while it
// takes work, else where the previous statement went (as before DiagNode); hints and the
// transaction's node still win; anything else is routed as ever.
func TestDecideDiagnostics(t *testing.T) {
	draining := cluster()
	draining.Draining = 1 << 2
	for _, tc := range []struct {
		name     string
		stmt     string
		s        func(*Session)
		snap     *topology.Snapshot
		node     int
		reason   Reason
		notRoute bool // any replica: a read balanced as usual
	}{
		{name: "SHOW WARNINGS where the warnings are", stmt: "SHOW WARNINGS", s: func(s *Session) { s.DiagNode, s.LastNode = 1, 2 }, node: 1, reason: ReasonPrevious},
		{name: "SHOW ERRORS", stmt: "SHOW ERRORS", s: func(s *Session) { s.DiagNode, s.LastNode = 2, 1 }, node: 2, reason: ReasonPrevious},
		{name: "SHOW COUNT(*) WARNINGS", stmt: "SHOW COUNT(*) WARNINGS", s: func(s *Session) { s.DiagNode, s.LastNode = 0, 1 }, node: 0, reason: ReasonPrevious},
		{name: "@@warning_count", stmt: "SELECT @@warning_count", s: func(s *Session) { s.DiagNode, s.LastNode = 2, 1 }, node: 2, reason: ReasonPrevious},
		{name: "@@session.error_count", stmt: "SELECT @@session.error_count AS e", s: func(s *Session) { s.DiagNode, s.LastNode = 1, 2 }, node: 1, reason: ReasonPrevious},
		{name: "none known: where the previous statement went", stmt: "SHOW WARNINGS", s: func(s *Session) { s.LastNode = 2 }, node: 2, reason: ReasonPrevious},
		{name: "DiagNode down: where the previous statement went", stmt: "SHOW WARNINGS", s: func(s *Session) { s.DiagNode, s.LastNode = 1, 2 },
			snap: cluster(true, false, true), node: 2, reason: ReasonPrevious},
		{name: "DiagNode draining: its connection goes, the previous statement's node", stmt: "SHOW WARNINGS", s: func(s *Session) { s.DiagNode, s.LastNode = 2, 1 },
			snap: draining, node: 1, reason: ReasonPrevious},
		{name: "a hint wins", stmt: "/*FORCE_MASTER*/ SHOW WARNINGS", s: func(s *Session) { s.DiagNode = 2 }, node: 0, reason: ReasonHint},
		{name: "FORCE_NODE wins", stmt: "/*FORCE_NODE='replica1'*/ SELECT @@warning_count", s: func(s *Session) { s.DiagNode = 2 }, node: 1, reason: ReasonHint},
		{name: "the transaction's node wins", stmt: "SHOW WARNINGS", s: func(s *Session) { s.DiagNode, s.InTx, s.TxNode = 2, true, 0 }, node: 0, reason: ReasonInTransaction},
		{name: "@@warning_count with a table is a read", stmt: "SELECT @@warning_count FROM t", s: func(s *Session) { s.DiagNode = 0 }, notRoute: true},
		{name: "SELECT 1 stays balanced", stmt: "SELECT 1", s: func(s *Session) { s.DiagNode = 0 }, notRoute: true},
		{name: "SELECT @@server_id stays balanced", stmt: "SELECT @@server_id", s: func(s *Session) { s.DiagNode = 0 }, notRoute: true},
		{name: "FOUND_ROWS still follows the previous statement", stmt: "SELECT FOUND_ROWS()", s: func(s *Session) { s.DiagNode, s.LastNode = 1, 2 }, node: 2, reason: ReasonPrevious},
	} {
		s := NewSession()
		if tc.s != nil {
			tc.s(&s)
		}
		snap := tc.snap
		if snap == nil {
			snap = cluster()
		}
		c := classify.Classify([]byte(tc.stmt))
		ep := rw()
		if MayReadReplica(&c, &s, ep, snap) && classify.ReadsDiagnostics(&c) {
			t.Errorf("%s: a diagnostics statement may read a replica (it needs no position)", tc.name)
		}
		d := Decide(&c, []byte(tc.stmt), &s, ep, snap)
		if tc.notRoute {
			if d.Err != nil || d.Reason != ReasonRead || d.Node == 0 {
				t.Errorf("%s: node %d (%v) err %v, want a read on a replica", tc.name, d.Node, d.Reason, d.Err)
			}
			continue
		}
		if d.Err != nil || d.Node != tc.node || d.Reason != tc.reason {
			t.Errorf("%s: node %d (%v) err %v, want %d (%v)", tc.name, d.Node, d.Reason, d.Err, tc.node, tc.reason)
		}
	}
}

// TestDiagnosticsFollowTheServer runs random statements through Decide and Learn over a primary
// and two replicas, reads spread by the weighted policy, with a model of each node's
// diagnostics area kept by MariaDB's rule (classify.KeepsDiagnostics), and checks that every
// diagnostics statement reads what one server, running the same statements, would show. The
// rule itself is checked against a live server in classify's servertest.
func TestDiagnosticsFollowTheServer(t *testing.T) {
	type stmt struct {
		text   string
		warns  bool // raises a warning
		failed bool
	}
	stmts := []stmt{
		{"SELECT CAST('2024-13-01' AS DATE)", true, false},
		{"SELECT 'x' + 1", true, false},
		{"SELECT 1", false, false},
		{"SELECT @@server_id", false, false},
		{"SELECT a FROM t", false, false},
		{"SELECT CAST(a AS SIGNED) FROM t", true, false},
		{"SELECT * FROM missing", false, true},
		{"SHOW TABLES", false, false},
		{"SHOW GRANTS", false, false},
		{"SET @@session.sql_mode = DEFAULT", false, false},
		{"INSERT INTO t VALUES (1)", false, false},
		{"INSERT INTO t VALUES ('x')", true, false},
		{"BEGIN", false, false},
		{"COMMIT", false, false},
		{"SHOW WARNINGS", false, false},
		{"SHOW ERRORS", false, false},
		{"SHOW COUNT(*) WARNINGS", false, false},
		{"SELECT @@warning_count", false, false},
		{"SELECT @@error_count", false, false},
	}
	r := rand.New(rand.NewPCG(21, 3))
	snap, ep := cluster(), rw()
	for run := 0; run < 200; run++ {
		s := NewSession()
		var server int    // the one server's list: the statement that left it (0: empty)
		nodes := [3]int{} // each node's list, as this session's connections there hold it
		for i := 1; i <= 40; i++ {
			st := stmts[r.IntN(len(stmts))]
			c := classify.Classify([]byte(st.text))
			d := Decide(&c, []byte(st.text), &s, ep, snap)
			if d.Err != nil || d.Node < 0 {
				t.Fatalf("%s: %+v", st.text, d)
			}
			if classify.ReadsDiagnostics(&c) {
				if nodes[d.Node] != server {
					t.Fatalf("run %d, statement %d: %s on node %d reads the list of statement %d, the server's is %d",
						run, i, st.text, d.Node, nodes[d.Node], server)
				}
			}
			apply := func(list *int) {
				switch {
				case classify.ReadsDiagnostics(&c):
				case st.warns || st.failed:
					*list = i
				case !classify.KeepsDiagnostics(&c):
					*list = 0
				}
			}
			apply(&server)
			apply(&nodes[d.Node])
			var w uint16
			if st.warns {
				w = 1
			}
			s.Learn(&c, []byte(st.text), d, ep, Outcome{Node: d.Node, Primary: d.Node == 0, Warnings: w, Failed: st.failed})
		}
	}
}

// TestLearnPrepare: a COM_STMT_PREPARE changes the diagnostics area by the same rule.
func TestLearnPrepare(t *testing.T) {
	for _, tc := range []struct {
		text     string
		failed   bool
		warnings uint16
		diag     int
	}{
		{"SELECT 1", false, 0, 2},
		{"SHOW WARNINGS", false, 0, 2},
		{"SELECT @@warning_count", false, 0, 2},
		{"SELECT a FROM t WHERE a = ?", false, 0, 0},
		{"INSERT INTO t VALUES (?)", false, 0, 0},
		{"SELECT * FROM missing", true, 0, 0},
		{"SELECT 'x' + 1", false, 1, 0},
	} {
		s := NewSession()
		s.DiagNode = 2
		c := classify.Classify([]byte(tc.text))
		s.LearnPrepare(&c, 0, tc.failed, tc.warnings)
		if s.DiagNode != tc.diag {
			t.Errorf("prepare %q (failed %v, %d warnings): DiagNode %d, want %d", tc.text, tc.failed, tc.warnings, s.DiagNode, tc.diag)
		}
	}
}
