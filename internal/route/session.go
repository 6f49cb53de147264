package route

import (
	"bytes"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
)

// Session is the routing state of one client session: what Decide and Retry read, and what
// Learn keeps up to date from each statement's outcome. It belongs to the session's goroutine
// (the proxy publishes copies of InTx and Pins for the control plane).
type Session struct {
	// InTx: the server reported a transaction open (SERVER_STATUS_IN_TRANS) on TxNode.
	InTx   bool
	TxNode int
	// TxPending: transaction splitting deferred the client's BEGIN (the session keeps its
	// text) until the first write.
	TxPending bool
	// Autocommit is false after SET autocommit=0: every statement is part of a transaction.
	Autocommit bool
	// HasTarget: the statement's read must see a position (a consistency level); Reached has
	// bit i set when node i is known to have applied it. Replicas that reached it are
	// preferred; when none has, any may be picked, and the read waits there (the proxy's
	// guard) or goes to the primary. Set by the proxy before each Decide.
	HasTarget bool
	Reached   uint64
	Pins      Pin
	LastNode  int // node of the previous statement, -1 before the first
	Bound     int // read-only endpoint: the replica the session is bound to
	// DiagNode is the node whose diagnostics area holds what the server would show the
	// session now (SHOW WARNINGS, SHOW ERRORS, @@warning_count…), -1 when none is known: the
	// node of the last statement that changed it there (Learn). Decide sends the statements
	// that read it there (classify.ReadsDiagnostics).
	DiagNode int
	// DiagKept: the diagnostics area on DiagNode holds conditions (the last statement that
	// changed it failed or warned): what SHOW WARNINGS would show is there and nowhere else.
	DiagKept bool

	// tempTables and userLocks count what holds PinTempTable and PinGetLock (Learn): the
	// temporary tables the session created and has not dropped, the GET_LOCK locks it holds.
	tempTables, userLocks int

	// scratch for the candidate lists, reused so that a decision does not allocate.
	cand, wts []int
}

// NewSession returns the state of a session that just connected.
func NewSession() Session {
	return Session{TxNode: -1, Autocommit: true, LastNode: -1, Bound: -1, DiagNode: -1}
}

// Reset makes s the state of a session that just connected (COM_RESET_CONNECTION,
// COM_CHANGE_USER: the node dropped the session's state), but for the replica it is bound to.
func (s *Session) Reset() {
	bound, cand, wts := s.Bound, s.cand, s.wts
	*s = NewSession()
	s.Bound, s.cand, s.wts = bound, cand[:0], wts[:0]
}

// Outcome is what the proxy saw of one statement's run, for Learn.
type Outcome struct {
	Node    int    // the node it ran on (the session's current node)
	Primary bool   // Node is the primary
	Status  uint16 // the server status the node reported last (an ERR reports none)
	// Failed: it ended with an ERR. What it did before is unknown, so it pins nothing and
	// releases nothing.
	Failed bool
	// StateFull: the session holds as many session statements to replay as it may: a SET that
	// would be replayed pins the session to the primary instead.
	StateFull bool
	// Warnings is the warning count the node reported in the statement's last OK/EOF.
	Warnings uint16
	// Dialect is how the node read the statement (the session's sql_mode), under which a SET's
	// variables are named (classify.SetVars); DialectSure: the mode is known. A SET whose
	// reading depends on what is not known is judged as one sluice cannot name.
	Dialect     classify.Dialect
	DialectSure bool
}

// Replay is what a successful statement leaves for the session's other node connections
// (Learn).
type Replay uint8

// The replays.
const (
	ReplayNone Replay = iota // nothing
	ReplayText               // the statement's text, replayed as it is (SET NAMES, SET a = 'x')
	// ReplayValues: a SET of session system variables (classify.SetVars names them) whose
	// values are expressions, or that sets autocommit with them. The caller reads back, on
	// the connection that ran it, the values the variables took, and replays those as
	// literals (autocommit left out: the status flags follow it); when it cannot, it pins the
	// session as for a SET that cannot be replayed (PinSet).
	ReplayValues
)

// Learn follows what statement c (its text stmt), decided as d under ep, left behind: the
// transaction state its node reported, and the pins that keep the session on the primary
// (temporary tables, LOCK TABLES, GET_LOCK, a SET that cannot be replayed elsewhere, a batch
// that may leave state behind). It reports whether c is session state the proxy must replay on
// the session's other node connections (a successful, replayable SET), and how.
func (s *Session) Learn(c *classify.Result, stmt []byte, d Decision, ep *Settings, o Outcome) (replay Replay) {
	s.LastNode = d.Node
	s.learnDiagnostics(c, o)
	switch {
	case s.InTx && s.TxNode >= 0 && o.Node != s.TxNode:
		// It ran on another node than the session's open transaction (a hint sent it
		// elsewhere): it says nothing of that transaction, which stays open where it is.
	case o.Status&mysql.StatusInTrans != 0:
		s.InTx, s.TxNode, s.TxPending = true, o.Node, false
	default:
		s.InTx, s.TxNode = false, -1
	}
	if o.Primary || ep.Mode == ReadOnly {
		// A replica connection of a read-write endpoint stays in autocommit whatever the
		// session set: only its primary's (or its own replica's) status tells.
		s.Autocommit = o.Status&mysql.StatusAutocommit != 0
	}
	if o.Failed {
		return ReplayNone
	}
	switch c.Kind {
	case classify.Set:
		switch setEffect(c, stmt, &o) {
		case setReplay:
			replay = ReplayText
		case setEvaluate:
			replay = ReplayValues
		case setPin:
			s.Pins |= PinSet
		case setUserVar:
			s.Pins |= PinUserVar
		}
	case classify.DDL:
		if c.Flags&classify.TempTable != 0 {
			// In doubt a create (SET STATEMENT … FOR CREATE TEMPORARY …, EXECUTE IMMEDIATE):
			// a session kept on the primary too long is safe, one released too early is not.
			if !classify.FirstWordIs(stmt, "DROP") {
				s.tempTables++
			} else if s.tempTables > 0 {
				s.tempTables--
			}
			s.pin(PinTempTable, s.tempTables > 0)
		}
	case classify.LockTables:
		s.pin(PinLockTables, true)
	case classify.UnlockTables:
		s.pin(PinLockTables, false)
	}
	if c.Flags&classify.LockFunction != 0 {
		s.userLocks++
	}
	if c.Flags&classify.ReleaseLock != 0 {
		if classify.ReleasesAllLocks(stmt) {
			s.userLocks = 0
		} else if s.userLocks > 0 {
			s.userLocks--
		}
	}
	s.pin(PinGetLock, s.userLocks > 0)
	if c.Flags&classify.Multi != 0 && (ep.StrictMulti || classify.LeavesSessionState(c)) {
		s.pin(PinMulti, true)
	}
	return replay
}

// learnDiagnostics follows where the session's diagnostics area is (DiagNode) after a
// statement c that ran on o.Node. MariaDB (10.11, checked statement by statement on a live
// server: classify's servertest TestDiagnosticsRule) keeps one list of conditions per
// connection and changes it so:
//
//   - a statement that raises a condition (o.Failed, o.Warnings > 0) replaces the list with its
//     own: the node that ran it holds what SHOW WARNINGS must show;
//   - one that names a table clears the list before it runs, even with no warning: its node's
//     list is now the right one (empty), while another node may still hold older warnings;
//   - one that names no table and raises nothing (SELECT 1, SET, BEGIN, SHOW GRANTS…:
//     classify.KeepsDiagnostics) leaves the list as it was, on the node of the statement
//     before: DiagNode stays, wherever this one ran;
//   - the diagnostics statements (classify.ReadsDiagnostics) never change it but by their own
//     error.
//
// A statement sluice answers itself (o.Node < 0) touches no node's list.
func (s *Session) learnDiagnostics(c *classify.Result, o Outcome) {
	switch {
	case o.Node < 0:
	case o.Failed:
		s.DiagNode, s.DiagKept = o.Node, true
	case classify.ReadsDiagnostics(c):
	case o.Warnings > 0 || !classify.KeepsDiagnostics(c):
		s.DiagNode, s.DiagKept = o.Node, o.Warnings > 0
	}
}

// LearnPrepare follows a COM_STMT_PREPARE of the text classified c, sent to node: failed when
// it answered ERR, warnings its prepare OK's warning count. MariaDB prepares by the rule it runs
// by (checked on 10.11): a prepare that names a table clears the session's warnings, one that
// failed or warned replaces them, one of SELECT 1 or SHOW WARNINGS keeps them.
func (s *Session) LearnPrepare(c *classify.Result, node int, failed bool, warnings uint16) {
	s.learnDiagnostics(c, Outcome{Node: node, Failed: failed, Warnings: warnings})
}

// LearnTruncated follows a statement that ran but of which only the head was seen (too large
// to hold), head classified: what the rest did is unknown, so when the head shows that it may
// leave session state behind (a temporary table, a lock, a SET, a user variable...), the session
// stays on the primary from now on. Learn ran for it first, as for an unclassified statement.
func (s *Session) LearnTruncated(head *classify.Result) {
	if classify.LeavesSessionState(head) {
		s.pin(PinMulti, true)
	}
}

func (s *Session) pin(p Pin, on bool) {
	if on {
		s.Pins |= p
	} else {
		s.Pins &^= p
	}
}

// What a successful SET means for the session's other node connections.
const (
	setNone     = iota // not session state there: nothing to replay, nothing held
	setReplay          // session state the proxy replays on them before their next use
	setEvaluate        // session variables set to expressions: their values are read back and replayed (ReplayValues)
	setPin             // session state that cannot be replayed: the session stays on the primary
	setUserVar         // user variables only: they live on the primary's connection (pool_mode transaction carries them)
)

// setEffect judges a successful SET (o.StateFull: the session's replay list is full).
func setEffect(c *classify.Result, stmt []byte, o *Outcome) int {
	const replayable = classify.SetSession | classify.SetNames | classify.SetRole
	full := o.StateFull
	switch {
	case c.Flags&classify.SetGlobal != 0 && c.Flags&replayable == 0:
		return setNone // server-wide, not session state
	case c.Flags&classify.SetAutocommit != 0 && c.Flags&^(classify.SetAutocommit|classify.SetSession) == 0 && !setsMore(stmt, o):
		return setNone // followed through the server's status flags; replicas stay in autocommit
	case c.Flags&classify.SetTransaction != 0 && c.Flags&classify.SetSession == 0:
		return setNone // SET TRANSACTION: only the next transaction, on this node
	case c.Flags&classify.UserVarAssign != 0 && c.Flags&(replayable|classify.Multi|classify.SetAutocommit|classify.SetGlobal|classify.SetTransaction) == 0 && !full:
		// SET @a = …, @b := …: the session stays on the primary, where they live.
		return setUserVar
	case c.Flags&(classify.UserVar|classify.UserVarAssign|classify.Multi|classify.SetGlobal) != 0,
		c.Flags&replayable == 0, full:
		// User variables live where they were set; a SET that also changes the server (SET
		// SESSION a = 1, GLOBAL b = 2) must never be replayed on a replica: keep the session
		// on the primary.
		return setPin
	}
	if e := evaluated(c, stmt, o); e != setNone {
		return e
	}
	if c.Flags&classify.SetAutocommit != 0 || bytes.IndexByte(stmt, '(') >= 0 {
		// Expressions that sluice cannot name or read back (SET NAMES x, sql_mode = f(),
		// a value read through CONNECTION_ID()…) may not give the same value elsewhere.
		return setPin
	}
	return setReplay
}

// noEvaluate are the flags of a SET whose values are not read back and replayed: what the
// expression did besides giving a value stays on its connection (a lock taken or released)
// or means something else there (CONNECTION_ID() is the node's thread id, not the
// session's), or what it sets guards a replica (tx_read_only).
const noEvaluate = classify.SetNames | classify.SetRole | classify.SetTransaction | classify.SetReadWrite |
	classify.TxReadOnlyRead | classify.ConnectionID | classify.LockFunction | classify.ReleaseLock | classify.LockQuery

// evaluated judges a SET of session system variables by the names classify.SetVars gives:
// setEvaluate when it names them all and some value is an expression or autocommit is set
// with them, setReplay when every value is a literal, setNone when it cannot judge (then
// setEffect's older rule does), or when an expression sets rand_seed1 or rand_seed2, which
// read back as 0 whatever was set.
func evaluated(c *classify.Result, stmt []byte, o *Outcome) int {
	if c.Flags&noEvaluate != 0 || !readSure(c, o) {
		return setNone
	}
	literal, auto, others, unread := true, false, false, false
	if !classify.SetVars(stmt, o.Dialect, func(name []byte, lit bool) {
		if isAutocommit(name) {
			auto = true
			return
		}
		others = true
		literal = literal && lit
		unread = unread || !lit && (foldEq(name, "rand_seed1") || foldEq(name, "rand_seed2"))
	}) || !others || unread {
		return setNone
	}
	if literal && !auto {
		return setReplay
	}
	return setEvaluate
}

// setsMore reports whether a SET that sets autocommit (and no other flag) names variables
// besides it: SET autocommit = 1, sql_mode = 'x' is session state to replay.
func setsMore(stmt []byte, o *Outcome) bool {
	more := false
	classify.SetVars(stmt, o.Dialect, func(name []byte, _ bool) {
		more = more || !isAutocommit(name)
	})
	return more
}

// readSure reports whether c reads the same under every sql_mode, flavor and character set
// the session may be in, as far as its variables' names go: a versioned comment, a client
// character set that may swallow a quote, or a mode that changes quoting and is not known
// could hide an assignment from SetVars.
func readSure(c *classify.Result, o *Outcome) bool {
	return c.Depends&(classify.DependsVersion|classify.DependsCharset|classify.DependsSpace) == 0 &&
		(c.Depends&classify.DependsMode == 0 || o.DialectSure)
}

// isAutocommit reports whether name is autocommit's, in any case.
func isAutocommit(name []byte) bool { return foldEq(name, "autocommit") }

// foldEq reports whether name spells lower (lower case letters, digits and '_'), ignoring
// the case of name's letters.
func foldEq(name []byte, lower string) bool {
	if len(name) != len(lower) {
		return false
	}
	for i := range len(lower) {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
