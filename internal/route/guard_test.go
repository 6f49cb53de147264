package route

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// nodeChanging lists statements that change a node although a read-only transaction (sluice's
// replica guard, SET SESSION TRANSACTION READ ONLY) lets them run: maintenance, FLUSH and
// RESET, replication and plugin control, server-wide SETs, KILL, files written by SELECT,
// sequences, procedures and DO (whose functions may write), HANDLER. None may ever reach a
// replica through sluice; the guard is only a second line.
var nodeChanging = []string{
	"ANALYZE TABLE t", "ANALYZE NO_WRITE_TO_BINLOG TABLE t", "ANALYZE TABLE t PERSISTENT FOR ALL",
	"OPTIMIZE TABLE t", "OPTIMIZE LOCAL TABLE t", "REPAIR TABLE t", "CHECK TABLE t", "CHECKSUM TABLE t",
	"FLUSH LOGS", "FLUSH BINARY LOGS", "FLUSH NO_WRITE_TO_BINLOG LOGS", "FLUSH TABLES", "FLUSH PRIVILEGES", "FLUSH STATUS",
	"FLUSH TABLES WITH READ LOCK", "FLUSH TABLES t FOR EXPORT",
	"RESET MASTER", "RESET SLAVE", "RESET SLAVE ALL", "RESET REPLICA", "RESET QUERY CACHE",
	"PURGE BINARY LOGS TO 'b.000002'", "PURGE MASTER LOGS BEFORE NOW()",
	"CHANGE MASTER TO master_host='x'", "START SLAVE", "STOP SLAVE", "START REPLICA", "STOP ALL SLAVES",
	"INSTALL PLUGIN p SONAME 'p.so'", "UNINSTALL PLUGIN p", "INSTALL SONAME 'p'", "UNINSTALL SONAME 'p'",
	"SHUTDOWN", "BINLOG 'AAAA'", "CACHE INDEX t IN hot", "LOAD INDEX INTO CACHE t",
	"SET GLOBAL max_connections = 100", "SET @@global.read_only = 0", "SET @@GLOBAL.gtid_slave_pos = ''",
	"SET GLOBAL TRANSACTION READ WRITE",
	"KILL 5", "KILL QUERY 5", "KILL USER app", "KILL CONNECTION 5",
	"SELECT 1 INTO OUTFILE '/tmp/x'", "SELECT 1 INTO DUMPFILE '/tmp/x'", "SELECT * FROM t INTO OUTFILE '/tmp/x'",
	"SELECT @a := 1 INTO OUTFILE '/tmp/x'", "SELECT @a INTO OUTFILE '/tmp/x'", "SELECT a INTO OUTFILE '/tmp/x' FROM t WHERE a = @b",
	"SELECT NEXTVAL(s)", "SELECT NEXT VALUE FOR s", "SELECT SETVAL(s, 5)", "SELECT s.nextval",
	"CALL p()", "DO 1", "DO f()", "DO NEXTVAL(s)", "DO GET_LOCK('a', 1)",
	"HANDLER t OPEN", "LOCK TABLES t READ", "BACKUP STAGE START", "BACKUP LOCK t",
	"INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "DELETE FROM t", "REPLACE INTO t VALUES (1)",
	"LOAD DATA INFILE '/tmp/x' INTO TABLE t", "CREATE TABLE x (a INT)", "TRUNCATE t", "DROP TABLE t",
	"ALTER SEQUENCE s RESTART", "GRANT SELECT ON *.* TO u", "SET PASSWORD = PASSWORD('x')",
	"XA START 'x'", "BEGIN NOT ATOMIC INSERT INTO t VALUES (1); END", "CREATE TEMPORARY TABLE tt (a INT)",
}

// wrappings put a statement where a classifier might not look: in a batch, behind SET
// STATEMENT, EXECUTE IMMEDIATE, a PREPARE, MariaDB's ANALYZE, an executable comment, a
// comment, a hint.
var wrappings = []func(string) string{
	func(x string) string { return x },
	func(x string) string { return strings.ToLower(x) },
	func(x string) string { return "/* c */ " + x + " -- c" },
	func(x string) string { return "/*!50000 " + x + " */" },
	func(x string) string { return "SELECT 1; " + x },
	func(x string) string { return x + "; SELECT 1" },
	func(x string) string { return "SELECT 1; COMMIT; " + x },
	func(x string) string { return "COMMIT; " + x },
	func(x string) string { return "BEGIN; " + x },
	func(x string) string { return "START TRANSACTION READ ONLY; " + x },
	func(x string) string { return "ROLLBACK; " + x },
	func(x string) string { return "SET @a = 1; " + x },
	func(x string) string { return "USE test; " + x },
	func(x string) string { return "SHOW TABLES; " + x },
	func(x string) string { return "SELECT FOUND_ROWS(); " + x },
	func(x string) string { return "SHOW WARNINGS; " + x },
	func(x string) string { return "SET STATEMENT max_statement_time = 10 FOR " + x },
	func(x string) string { return "EXECUTE IMMEDIATE '" + strings.ReplaceAll(x, "'", "''") + "'" },
	func(x string) string { return "PREPARE s FROM '" + strings.ReplaceAll(x, "'", "''") + "'" },
	func(x string) string { return "ANALYZE " + x },
	func(x string) string { return "ANALYZE FORMAT=JSON " + x },
	func(x string) string { return "EXPLAIN ANALYZE " + x },
}

var hints = []string{"", "/*FORCE_SLAVE*/ ", "/*FORCE_REPLICA*/ ", "/*FORCE_NODE='replica1'*/ ", "/*FORCE_NODE=replica2*/ ", "/*FORCE_MASTER*/ "}

// TestNodeChangingNeverOnReplica: every statement of nodeChanging, in every wrapping, with or
// without a hint, in every session state, never goes to a replica on a read-write endpoint
// (it goes to the primary or is refused), and is refused on a read-only endpoint.
func TestNodeChangingNeverOnReplica(t *testing.T) {
	split := &Settings{Name: "rw", Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: NewWeighted(), SplitTx: true}
	ro := &Settings{Name: "ro", Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted()}
	states := []struct {
		name string
		ep   *Settings
		set  func(*Session)
	}{
		{"autocommit", rw(), nil},
		{"autocommit off", rw(), func(s *Session) { s.Autocommit = false }},
		{"read-only transaction on a replica", rw(), func(s *Session) { s.InTx, s.TxNode = true, 1 }},
		{"transaction on the primary", rw(), func(s *Session) { s.InTx, s.TxNode = true, 0 }},
		{"split: deferred begin", split, func(s *Session) { s.TxPending = true }},
		{"split: read-only transaction on a replica", split, func(s *Session) { s.InTx, s.TxNode = true, 2 }},
		{"pinned", rw(), func(s *Session) { s.Pins = PinTempTable }},
		{"previous statement on a replica", rw(), func(s *Session) { s.LastNode = 2 }},
		{"read-only endpoint", ro, func(s *Session) { s.Bound = 1 }},
		{"read-only endpoint in a transaction", ro, func(s *Session) { s.Bound = 1; s.InTx, s.TxNode = true, 1 }},
	}
	checked := 0
	for _, x := range nodeChanging {
		for _, wrap := range wrappings {
			for _, h := range hints {
				stmt := h + wrap(x)
				c := classify.Classify([]byte(stmt))
				for _, st := range states {
					s := NewSession()
					if st.set != nil {
						st.set(&s)
					}
					d := Decide(&c, []byte(stmt), &s, st.ep, cluster())
					checked++
					switch {
					case st.ep.Mode == ReadOnly && d.Err == nil:
						t.Errorf("%s: %q (%v %v) not refused: node %d (%s) local %v", st.name, stmt, c.Kind, c.Flags, d.Node, d.Reason, d.Local)
					case d.Err == nil && d.Local:
						t.Errorf("%s: %q (%v %v) answered by sluice (%s): the statement would not run", st.name, stmt, c.Kind, c.Flags, d.Reason)
					case d.Err == nil && d.Node != 0:
						t.Errorf("%s: %q (%v %v) went to replica %d (%s)", st.name, stmt, c.Kind, c.Flags, d.Node, d.Reason)
					}
				}
			}
		}
	}
	t.Logf("%d decisions checked", checked)
}

// TestReplicaTransactionGuardToggle: SET SESSION TRANSACTION READ WRITE alone runs in the
// read-only transaction a session holds on a replica (it is session state for later
// transactions, and the proxy restores the guard right after it), but not in a batch, where what
// follows a COMMIT would run read-write; the read-only endpoint refuses it either way.
func TestReplicaTransactionGuardToggle(t *testing.T) {
	for _, tc := range []struct {
		stmt string
		node int
	}{
		{"SET SESSION TRANSACTION READ WRITE", 2},
		{"SET tx_read_only = 0", 2},
		{"SET SESSION TRANSACTION READ WRITE; COMMIT; SELECT 1", -1},
		{"COMMIT; SET tx_read_only = 0; SELECT 1", -1},
	} {
		c := classify.Classify([]byte(tc.stmt))
		s := NewSession()
		s.InTx, s.TxNode = true, 2
		if d := Decide(&c, []byte(tc.stmt), &s, rw(), cluster()); d.Node != tc.node || (d.Err != nil) != (tc.node < 0) {
			t.Errorf("%q in a replica's read-only transaction: node %d err %v, want node %d", tc.stmt, d.Node, d.Err, tc.node)
		}
		s = NewSession()
		s.Bound = 1
		ro := &Settings{Name: "ro", Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted()}
		if d := Decide(&c, []byte(tc.stmt), &s, ro, cluster()); d.Err == nil {
			t.Errorf("%q on the read-only endpoint: node %d, want refused", tc.stmt, d.Node)
		}
	}
}

// TestReplicaTransactionKeepsReads: the read-only transaction a session holds on a replica still
// takes its reads, session statements and their batches (the rule above does not refuse them).
func TestReplicaTransactionKeepsReads(t *testing.T) {
	for _, stmt := range []string{
		"SELECT 1", "SELECT LAST_INSERT_ID()", "SELECT * FROM t FOR UPDATE", "SELECT @a", "SELECT 1 INTO @a",
		"SHOW TABLES", "SHOW MASTER STATUS", "EXPLAIN UPDATE t SET a = 1", "SET @a = 1", "SET SESSION sql_mode = ''",
		"SELECT 1; SELECT 2", "SELECT 1; COMMIT", "COMMIT", "ROLLBACK", "SAVEPOINT a", "USE test",
		"PREPARE s FROM 'SELECT ?'", "EXECUTE s", "DEALLOCATE PREPARE s",
		"SET SESSION TRANSACTION READ WRITE", "PREPARE s FROM 'SET SESSION TRANSACTION READ WRITE'",
	} {
		c := classify.Classify([]byte(stmt))
		s := NewSession()
		s.InTx, s.TxNode = true, 2
		if d := Decide(&c, []byte(stmt), &s, rw(), cluster()); d.Err != nil || d.Node != 2 {
			t.Errorf("%q: node %d (%s) err %v, want the transaction's replica 2", stmt, d.Node, d.Reason, d.Err)
		}
	}
}

// TestHintsSkipIneligibleNodes: a hint never sends a statement to a node that takes no new work
// (down, draining, drained, joining, removed): FORCE_NODE naming one is refused with an error
// that says why, FORCE_SLAVE picks among the others; a transaction already open on a draining
// node finishes there.
func TestHintsSkipIneligibleNodes(t *testing.T) {
	draining := func() *topology.Snapshot { s := cluster(); s.Draining = 1 << 1; return s }
	joining := func() *topology.Snapshot { s := cluster(true, true, false); s.Joining = 1 << 2; return s }
	removed := func() *topology.Snapshot { s := cluster(true, true, false); s.Removed = 1 << 2; return s }
	faulty := func(st topology.NodeState) *topology.Snapshot {
		s := cluster()
		s.State = make([]*topology.NodeState, len(s.Up))
		s.State[1] = &st
		return s
	}
	errant := func() *topology.Snapshot { return faulty(topology.NodeState{Errant: "9-3-2"}) }
	broken := func() *topology.Snapshot { return faulty(topology.NodeState{Broken: "Error 1062"}) }
	for _, tc := range []struct {
		name, stmt string
		snap       *topology.Snapshot
		set        func(*Session)
		node       int
		msg        string // in the error, when node is -1
	}{
		{"force node draining", "/*FORCE_NODE='replica1'*/ SELECT 1", draining(), nil, -1, "is draining"},
		{"force node down", "/*FORCE_NODE='replica1'*/ SELECT 1", cluster(true, false, true), nil, -1, "is down"},
		{"force node joining", "/*FORCE_NODE='replica2'*/ SELECT 1", joining(), nil, -1, "is joining"},
		{"force node removed", "/*FORCE_NODE='replica2'*/ SELECT 1", removed(), nil, -1, "names no node"},
		{"force node eligible", "/*FORCE_NODE='replica2'*/ SELECT 1", draining(), nil, 2, ""},
		{"force node in the draining node's open transaction", "/*FORCE_NODE='replica1'*/ SELECT 1", draining(),
			func(s *Session) { s.InTx, s.TxNode = true, 1 }, 1, ""},
		{"force node errant", "/*FORCE_NODE='replica1'*/ SELECT 1", errant(), nil, -1, "is errant"},
		{"force node broken", "/*FORCE_NODE='replica1'*/ SELECT 1", broken(), nil, -1, "is broken"},
		{"force slave avoids the errant replica", "/*FORCE_SLAVE*/ SELECT 1", errant(), nil, 2, ""},
		{"force slave avoids the draining replica", "/*FORCE_SLAVE*/ SELECT 1", draining(), nil, 2, ""},
		{"force slave with every replica draining", "/*FORCE_SLAVE*/ SELECT 1",
			func() *topology.Snapshot { s := cluster(); s.Draining = 1<<1 | 1<<2; return s }(), nil, -1, "no replica"},
	} {
		for range 3 { // the policy moves on: every pick, not the first
			c := classify.Classify([]byte(tc.stmt))
			s := NewSession()
			if tc.set != nil {
				tc.set(&s)
			}
			d := Decide(&c, []byte(tc.stmt), &s, rw(), tc.snap)
			if d.Node != tc.node || (tc.node < 0) != (d.Err != nil) {
				t.Fatalf("%s: node %d err %v, want node %d", tc.name, d.Node, d.Err, tc.node)
			}
			if d.Err != nil && !strings.Contains(d.Err.Message, tc.msg) {
				t.Fatalf("%s: %q does not say %q", tc.name, d.Err.Message, tc.msg)
			}
			// A node that cannot take the statement is 1105, a server's code: it was 2003,
			// which libmariadb refuses in an ERR packet (2027 "Received malformed packet").
			if d.Err != nil && (d.Err.Code != mysql.ErrUnknown || d.Err.State != "HY000") {
				t.Fatalf("%s: error %d (%s), want 1105 (HY000)", tc.name, d.Err.Code, d.Err.State)
			}
		}
	}
}
