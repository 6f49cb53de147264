package proxy

import (
	"bytes"
	"fmt"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// What a statement leaves behind: the transaction state the node reports, the pins that keep a
// session on the primary, and the session state replayed on the session's other connections.

// routeInfo is one statement's route, for SHOW LAST ROUTE.
type routeInfo struct {
	valid  bool
	node   int
	reason route.Reason
}

// afterStatus follows the transaction state the node reported. A statement that ran on another
// node than the session's open transaction (a hint sent it elsewhere) says nothing about that
// transaction, which stays open where it is.
func (s *session) afterStatus(set *route.Settings) {
	switch {
	case s.rs.InTx && s.rs.TxNode >= 0 && s.cur != s.rs.TxNode:
	case s.status&mysql.StatusInTrans != 0:
		s.rs.InTx, s.rs.TxNode, s.rs.TxPending = true, s.cur, false
	default:
		s.rs.InTx, s.rs.TxNode = false, -1
	}
	if s.p.topo.Snapshot().IsPrimary(s.cur) || set.Mode == route.ReadOnly {
		s.rs.Autocommit = s.status&mysql.StatusAutocommit != 0
	}
	if c := s.conns[s.cur]; c != nil {
		c.Adopt(&s.state) // a USE ran there
	}
}

// after learns from a statement that ran on s.cur: transaction state, pins, session state.
// A statement that may have made a replica connection read-write (mayTurnReadWrite) is
// followed by the guard there; when that fails the session ends.
func (s *session) after(c *classify.Result, stmt []byte, d route.Decision, set *route.Settings) error {
	s.view.routed(d.Node, d.Reason)
	s.rs.LastNode = d.Node
	s.afterStatus(set)
	s.view.count(d.Node, d.Reason, s.view.commandTook(time.Now()), s.p.topo)
	if s.gtidTracked && (c.Kind == classify.Set || c.Kind == classify.Prepare || c.Flags&classify.SetStatement != 0) &&
		mentionsFold(stmt, "session_track") {
		// The client set the tracked variables itself (or prepared that): commits may no
		// longer say their GTID. What it wrote is known to be on the primary only until an
		// OK says a GTID again (which it will if the client kept last_gtid tracked).
		s.gtidUnknown = true
	}
	if s.gtidTracked && !s.failed && !s.respGTID && commitsUnseen(c) && d.Node >= 0 && s.p.topo.Snapshot().IsPrimary(d.Node) {
		// A statement that may commit without counting rows in its OK (a DDL, a procedure, a
		// dynamic statement) said no GTID: what it did is known to be only on the primary;
		// inside a transaction, the transaction's commit must say one (noteCommit).
		if s.status&mysql.StatusInTrans != 0 {
			s.txWrote = true
		} else {
			s.gtidUnknown = true
		}
	}
	if (c.Kind == classify.Set || c.Kind == classify.Prepare || c.Flags&classify.SetStatement != 0) && mentionsFold(stmt, "session_track") ||
		c.Kinds&runsAnything != 0 {
		// Nor may a change of the client character set be reported any more (or, after text
		// that may run anything, be known to be).
		s.reader.mode.blind = true
	}
	if s.failed && d.Node >= 0 && s.p.topo.Snapshot().IsPrimary(d.Node) && mayCommit(c) {
		// The primary answered with an error, but a statement that can commit may have done
		// so first (a DDL's implicit commit, a procedure's earlier statements), and an ERR
		// carries no GTID: what the session wrote is known to be only on the primary.
		s.gtidUnknown = true
	}
	if mayTurnReadWrite(c) && d.Node >= 0 {
		// Even when it failed: a procedure may have changed the session before its error.
		if conn := s.conns[d.Node]; conn != nil {
			if err := conn.Guard(); err != nil {
				// The client has its answer already; a replica that cannot be made
				// read-only again must not serve this session: it ends.
				return fmt.Errorf("node %s: restoring the read-only guard: %w", conn.name, err)
			}
		}
	}
	if s.failed {
		if mayChangeMode(c) {
			s.reader.mode.lost() // an ERR carries no status: the mode may have changed before it
		}
		return nil
	}
	switch c.Kind {
	case classify.Set:
		s.recordSet(c, stmt)
	case classify.DDL:
		if c.Flags&classify.TempTable != 0 {
			// In doubt a create (SET STATEMENT … FOR CREATE TEMPORARY …, EXECUTE IMMEDIATE):
			// a session kept on the primary too long is safe, one released too early is not.
			if !classify.FirstWordIs(stmt, "DROP") {
				s.tempTables++
			} else if s.tempTables > 0 {
				s.tempTables--
			}
			s.pin(route.PinTempTable, s.tempTables > 0)
		}
	case classify.LockTables:
		s.pin(route.PinLockTables, true)
	case classify.UnlockTables:
		s.pin(route.PinLockTables, false)
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
	s.pin(route.PinGetLock, s.userLocks > 0)
	if c.Flags&classify.Multi != 0 && (set.StrictMulti || classify.LeavesSessionState(c)) {
		s.pin(route.PinMulti, true)
	}
	return nil
}

// commitsUnseen reports whether c may commit a change whose OK counts no rows: a DDL (but a
// temporary table's), a DCL, a procedure, DO (its functions may write), an EXECUTE of a
// prepared statement, anything unclassified (EXECUTE IMMEDIATE of an expression). Such a
// statement that says no GTID leaves the session's last commit unknown; a read-only procedure
// too, until the session's next commit says its GTID: the safe side.
func commitsUnseen(c *classify.Result) bool {
	switch c.Kind {
	case classify.DDL:
		return c.Flags&classify.TempTable == 0
	case classify.DCL, classify.Call, classify.Do, classify.Execute, classify.Unknown:
		return true
	}
	return false
}

// mayTurnReadWrite reports whether c may have made its connection read-write: a SET that says
// so (SET SESSION TRANSACTION READ WRITE, tx_read_only = 0), or a statement whose effects sluice
// cannot see (an EXECUTE of an SQL prepared statement, a CALL, EXECUTE IMMEDIATE of a
// variable, anything unclassified). The guard follows it on a replica's connection.
func mayTurnReadWrite(c *classify.Result) bool {
	return c.Flags&classify.SetReadWrite != 0 || c.Kind == classify.Execute || c.Kind == classify.Call ||
		c.Kind == classify.Unknown
}

func (s *session) pin(p route.Pin, on bool) {
	if on {
		s.rs.Pins |= p
	} else {
		s.rs.Pins &^= p
	}
}

// recordSet keeps a successful SET for replay on the session's other node connections, or
// pins the session when it cannot be replayed.
func (s *session) recordSet(c *classify.Result, stmt []byte) {
	const replayable = classify.SetSession | classify.SetNames | classify.SetRole
	switch {
	case c.Flags&classify.SetGlobal != 0 && c.Flags&replayable == 0:
		return // server-wide, not session state
	case c.Flags&classify.SetAutocommit != 0 && c.Flags&^(classify.SetAutocommit|classify.SetSession) == 0:
		return // followed through the server's status flags; replicas stay in autocommit
	case c.Flags&classify.SetTransaction != 0 && c.Flags&classify.SetSession == 0:
		return // SET TRANSACTION: only the next transaction, on this node
	case c.Flags&(classify.UserVar|classify.UserVarAssign|classify.Multi|classify.SetAutocommit|classify.SetGlobal) != 0,
		c.Flags&replayable == 0, bytes.IndexByte(stmt, '(') >= 0, len(s.state.Stmts) >= maxState:
		// User variables live where they were set; expressions may not give the same value
		// elsewhere; a SET that also changes the server (SET SESSION a = 1, GLOBAL b = 2)
		// must never be replayed on a replica: keep the session on the primary.
		s.pin(route.PinSet, true)
		return
	}
	s.state.Stmts = append(s.state.Stmts, append([]byte(nil), stmt...))
	if cur := s.conns[s.cur]; cur != nil {
		cur.Adopt(&s.state) // it ran there
	}
}

// resetState forgets the session state (COM_RESET_CONNECTION, COM_CHANGE_USER): other nodes'
// connections are closed and will be opened clean when needed.
func (s *session) resetState() {
	clear(s.stmts)
	s.kept = 0
	s.state.Stmts = s.state.Stmts[:0]
	s.state.Epoch++
	s.begin = s.begin[:0]
	s.tempTables, s.userLocks = 0, 0
	s.reader.reset(s.login.charset) // the global sql_mode again: learnt from the next status
	// s.lastGTID stays: the client's connection goes on, and so does what it wrote (a read
	// after the reset still sees it at consistency session).
	bound := s.rs.Bound
	s.rs = route.NewSession()
	s.rs.Bound = bound
	for i, c := range s.conns {
		if c != nil && i != s.home {
			s.closeConn(i)
		}
	}
	if c := s.conns[s.home]; c != nil {
		c.MarkReset(s.state.Epoch) // the node resets it (COM_RESET_CONNECTION), or it is replaced
	}
	s.updateKillTarget()
}
