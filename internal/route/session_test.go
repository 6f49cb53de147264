package route

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
)

// TestLearnTransactionState: the transaction state follows the status the node reported, but a
// statement that ran on another node than the open transaction's says nothing of it; autocommit
// is learnt from the primary only on a read-write endpoint (replica connections stay in
// autocommit), from the bound replica on a read-only one.
func TestLearnTransactionState(t *testing.T) {
	const inTx, auto = mysql.StatusInTrans, mysql.StatusAutocommit
	for _, tc := range []struct {
		name       string
		before     Session
		ep         *Settings
		o          Outcome
		inTx       bool
		txNode     int
		pending    bool
		autocommit bool
	}{
		{"opened on the primary", NewSession(), rw(), Outcome{Node: 0, Primary: true, Status: inTx | auto}, true, 0, false, true},
		{"opened on a replica", NewSession(), rw(), Outcome{Node: 1, Status: inTx | auto}, true, 1, false, true},
		{"ended", Session{InTx: true, TxNode: 0, Autocommit: true}, rw(), Outcome{Node: 0, Primary: true, Status: auto}, false, -1, false, true},
		{"a deferred transaction opens at its first write", Session{TxPending: true, TxNode: -1, Autocommit: true}, rw(),
			Outcome{Node: 0, Primary: true, Status: inTx | auto}, true, 0, false, true},
		{"a hint's statement elsewhere leaves the transaction open", Session{InTx: true, TxNode: 0, Autocommit: true}, rw(),
			Outcome{Node: 2, Status: auto}, true, 0, false, true},
		{"SET autocommit=0 on the primary", NewSession(), rw(), Outcome{Node: 0, Primary: true}, false, -1, false, false},
		{"a replica's autocommit says nothing", Session{TxNode: -1}, rw(), Outcome{Node: 1, Status: auto}, false, -1, false, false},
		{"the bound replica's does on a read-only endpoint", NewSession(),
			&Settings{Name: "ro", Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted()}, Outcome{Node: 1}, false, -1, false, false},
		{"an ERR keeps the last status", Session{InTx: true, TxNode: 0, Autocommit: true}, rw(),
			Outcome{Node: 0, Primary: true, Status: inTx | auto, Failed: true}, true, 0, false, true},
	} {
		s := tc.before
		c := classify.Classify([]byte("SELECT 1"))
		s.Learn(&c, []byte("SELECT 1"), Decision{Node: tc.o.Node}, tc.ep, tc.o)
		if s.InTx != tc.inTx || s.TxNode != tc.txNode || s.TxPending != tc.pending || s.Autocommit != tc.autocommit {
			t.Errorf("%s: in tx %v on %d, pending %v, autocommit %v; want %v on %d, %v, %v", tc.name,
				s.InTx, s.TxNode, s.TxPending, s.Autocommit, tc.inTx, tc.txNode, tc.pending, tc.autocommit)
		}
		if s.LastNode != tc.o.Node {
			t.Errorf("%s: last node %d, want %d", tc.name, s.LastNode, tc.o.Node)
		}
	}
}

// TestLearnPins: the statements that leave state on the primary pin the session there, and the
// statements that release that state unpin it once nothing holds it any more; a statement that
// failed changes no pin.
func TestLearnPins(t *testing.T) {
	type step struct {
		stmt   string
		failed bool
		full   bool   // the replay list is full
		pins   Pin    // after it
		replay Replay // what Learn asks to replay
		unsure bool   // the session's sql_mode is not known
	}
	for _, tc := range []struct {
		name   string
		strict bool
		steps  []step
	}{
		{"temporary tables, counted", false, []step{
			{stmt: "CREATE TEMPORARY TABLE t1 (a INT)", pins: PinTempTable},
			{stmt: "CREATE TEMPORARY TABLE t2 (a INT)", pins: PinTempTable},
			{stmt: "DROP TEMPORARY TABLE t1", pins: PinTempTable},
			{stmt: "DROP TEMPORARY TABLE t2"},
			{stmt: "DROP TEMPORARY TABLE t3"},
			{stmt: "CREATE TEMPORARY TABLE t1 (a INT)", pins: PinTempTable},
		}},
		{"a failed create pins nothing", false, []step{
			{stmt: "CREATE TEMPORARY TABLE t1 (a INT)", failed: true},
		}},
		{"a failed drop releases nothing", false, []step{
			{stmt: "CREATE TEMPORARY TABLE t1 (a INT)", pins: PinTempTable},
			{stmt: "DROP TEMPORARY TABLE t1", failed: true, pins: PinTempTable},
		}},
		{"LOCK TABLES", false, []step{
			{stmt: "LOCK TABLES t READ", pins: PinLockTables},
			{stmt: "SELECT 1", pins: PinLockTables},
			{stmt: "UNLOCK TABLES"},
		}},
		{"GET_LOCK, counted, RELEASE_ALL_LOCKS", false, []step{
			{stmt: "SELECT GET_LOCK('a', 1)", pins: PinGetLock},
			{stmt: "SELECT GET_LOCK('b', 1)", pins: PinGetLock},
			{stmt: "SELECT RELEASE_LOCK('a')", pins: PinGetLock},
			{stmt: "SELECT RELEASE_LOCK('b')"},
			{stmt: "SELECT GET_LOCK('a', 1)", pins: PinGetLock},
			{stmt: "SELECT GET_LOCK('b', 1)", pins: PinGetLock},
			{stmt: "SELECT RELEASE_ALL_LOCKS()"},
		}},
		{"SET: replayed, or pinned when it cannot be", false, []step{
			{stmt: "SET NAMES utf8mb4", replay: ReplayText},
			{stmt: "SET SESSION sql_mode = 'ANSI'", replay: ReplayText},
			{stmt: "SET autocommit = 0"},
			{stmt: "SET GLOBAL max_connections = 10"},
			{stmt: "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"},
			{stmt: "SET SESSION sql_mode = 'ANSI'", failed: true},
			{stmt: "SET SESSION sql_mode = 'ANSI'", full: true, pins: PinSet},
		}},
		{"SET of a user variable", false, []step{{stmt: "SET @a = 1", pins: PinUserVar}}},
		{"SET of a user variable and a session variable", false, []step{{stmt: "SET @a = 1, SESSION sql_mode = ''", pins: PinSet}}},
		{"SET of an expression: evaluated", false, []step{
			{stmt: "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI')", replay: ReplayValues},
			{stmt: "set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')", replay: ReplayValues},
			{stmt: "SET SESSION sql_mode = REPLACE(@@sql_mode,'ONLY_FULL_GROUP_BY','')", replay: ReplayValues},
			{stmt: "SET time_zone = CONCAT('+0','0:00')", replay: ReplayValues},
			{stmt: "SET @@session.max_statement_time = 2*5", replay: ReplayValues},
			{stmt: "SET sql_mode = @@global.sql_mode", replay: ReplayValues},
			{stmt: "SET sql_mode = (SELECT m FROM t LIMIT 1)", replay: ReplayValues},
			{stmt: "SET autocommit = 0, time_zone = '+01:00'", replay: ReplayValues},
			// A prepared SET's text holds its parameters, not their values.
			{stmt: "SET SESSION time_zone = ?", replay: ReplayValues},
			{stmt: "SET SESSION time_zone = '+01:00', wait_timeout = -1", replay: ReplayText},
			{stmt: "SET SESSION TIME_ZONE = '+01:00', Rand_Seed2 = 5", replay: ReplayText},
			{stmt: "SET sql_mode = CONCAT(@@sql_mode, ',ANSI')", failed: true},
		}},
		{"SET of an expression that cannot be evaluated: pinned", false, []step{
			{stmt: "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI')", full: true, pins: PinSet},
			{stmt: "SET NAMES utf8mb4, sql_mode = CONCAT(@@sql_mode, ',ANSI')", pins: PinSet},
			{stmt: "SET sql_mode = CONCAT(@a, ',ANSI')", pins: PinSet},
			{stmt: "SET sql_mode = CONCAT(@@sql_mode, ',ANSI'), GLOBAL wait_timeout = 10", pins: PinSet},
			{stmt: "SET wait_timeout = CONNECTION_ID()", pins: PinSet},
			{stmt: "SET rand_seed1 = ABS(2), time_zone = '+01:00'", pins: PinSet},
			{stmt: "SET wait_timeout = GET_LOCK('a', 1)", pins: PinSet | PinGetLock},
			{stmt: "SET tx_read_only = (0)", pins: PinSet | PinGetLock},
			{stmt: "SET sql_mode = CONCAT(@@sql_mode, \"ANSI\")", unsure: true, pins: PinSet | PinGetLock},
			{stmt: "SET autocommit = 1, time_zone = CONCAT('+0','0:00') /*!99999 , x = 1 */", pins: PinSet | PinGetLock},
		}},
		{"a double-quoted string in a known sql_mode: evaluated", false, []step{
			{stmt: "SET sql_mode = CONCAT(@@sql_mode, \"ANSI\")", replay: ReplayValues},
		}},
		{"a batch that leaves state", false, []step{{stmt: "SELECT 1; SET @a = 1", pins: PinMulti}}},
		{"a batch of reads", false, []step{{stmt: "SELECT 1; SELECT 2"}}},
		{"a batch of reads, strict", true, []step{{stmt: "SELECT 1; SELECT 2", pins: PinMulti}}},
	} {
		ep := rw()
		ep.StrictMulti = tc.strict
		s := NewSession()
		for _, st := range tc.steps {
			c := classify.Classify([]byte(st.stmt))
			replay := s.Learn(&c, []byte(st.stmt), Decision{Node: 0}, ep,
				Outcome{Node: 0, Primary: true, Status: mysql.StatusAutocommit, Failed: st.failed, StateFull: st.full, DialectSure: !st.unsure})
			if s.Pins != st.pins || replay != st.replay {
				t.Errorf("%s: after %q (failed %v): pins %b, replay %d; want %b, %d", tc.name, st.stmt, st.failed, s.Pins, replay, st.pins, st.replay)
			}
		}
	}
}

// TestLearnTruncated: a statement too large to hold, whose head shows it may leave session
// state, pins the session to the primary; one whose head is a plain read does not.
func TestLearnTruncated(t *testing.T) {
	for stmt, want := range map[string]Pin{
		"SELECT a FROM t WHERE b IN (1, 2, 3":    0,
		"SET @a = (SELECT COUNT(*) FROM t WHERE": PinMulti,
		"CREATE TEMPORARY TABLE t AS SELECT 1":   PinMulti,
	} {
		s := NewSession()
		c := classify.Classify([]byte(stmt))
		s.LearnTruncated(&c)
		if s.Pins != want {
			t.Errorf("%q: pins %b, want %b", stmt, s.Pins, want)
		}
	}
}

// TestSessionReset: a reset forgets the transaction, the pins and what holds them (a temporary
// table created before it is gone: its DROP after counts nothing), but keeps the replica the
// session is bound to.
func TestSessionReset(t *testing.T) {
	s := NewSession()
	s.Bound = 2
	for _, stmt := range []string{"CREATE TEMPORARY TABLE t (a INT)", "SELECT GET_LOCK('a', 1)", "BEGIN"} {
		c := classify.Classify([]byte(stmt))
		s.Learn(&c, []byte(stmt), Decision{Node: 0}, rw(), Outcome{Node: 0, Primary: true, Status: mysql.StatusInTrans})
	}
	if s.Pins != PinTempTable|PinGetLock || !s.InTx {
		t.Fatalf("before the reset: pins %b, in tx %v", s.Pins, s.InTx)
	}
	s.Reset()
	want := NewSession()
	want.Bound = 2
	if s.Pins != 0 || s.InTx || s.TxNode != -1 || !s.Autocommit || s.LastNode != -1 || s.Bound != 2 || s.tempTables != 0 || s.userLocks != 0 {
		t.Fatalf("after the reset: %+v, want %+v", s, want)
	}
	for _, st := range []struct {
		stmt string
		pins Pin
	}{
		{"DROP TEMPORARY TABLE t", 0}, // gone with the reset: no count below zero
		{"CREATE TEMPORARY TABLE u (a INT)", PinTempTable},
		{"DROP TEMPORARY TABLE u", 0},
	} {
		c := classify.Classify([]byte(st.stmt))
		s.Learn(&c, []byte(st.stmt), Decision{Node: 0}, rw(), Outcome{Node: 0, Primary: true})
		if s.Pins != st.pins {
			t.Fatalf("after the reset, %s: pins %b, want %b", st.stmt, s.Pins, st.pins)
		}
	}
}

// TestPinNames: each pin has its own stable name (an interface: the API, SHOW LAST ROUTE and the
// metric's label), named in bit order, and every bit below NumPins has one.
func TestPinNames(t *testing.T) {
	for _, c := range []struct {
		pin  Pin
		want string
	}{
		{0, ""},
		{PinTempTable, "temporary_table"},
		{PinLockTables, "lock_tables"},
		{PinGetLock, "user_lock"},
		{PinSet, "session_variable"},
		{PinMulti, "multi_statement"},
		{PinTempTable | PinGetLock, "temporary_table,user_lock"},
		{PinMulti | PinSet | PinLockTables, "lock_tables,session_variable,multi_statement"},
	} {
		if got := c.pin.String(); got != c.want {
			t.Errorf("Pin(%#x): %q, want %q", uint32(c.pin), got, c.want)
		}
	}
	if got := Pin(1<<NumPins - 1).Names(nil); len(got) != NumPins {
		t.Errorf("every pin: %v, want %d names", got, NumPins)
	}
	if PinSequence != 1<<(NumPins-1) {
		t.Errorf("NumPins %d does not cover the last pin %#x", NumPins, uint32(PinSequence))
	}
	seen := map[string]bool{}
	for _, n := range PinNames {
		if n == "" || seen[n] || strings.ContainsAny(n, " ,") {
			t.Errorf("pin name %q: empty, repeated, or not a label", n)
		}
		seen[n] = true
	}
}
