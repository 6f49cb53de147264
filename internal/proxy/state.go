package proxy

import (
	"fmt"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
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

// after learns from a statement that ran on s.cur, decided as d: the route's state (transaction,
// pins: route.Session.Learn), what its commits said (readTarget.learn), the session state to
// replay. A statement that may have made a replica connection read-write (mayTurnReadWrite) is
// followed by the guard there; when that fails the session ends.
func (s *session) after(c *classify.Result, stmt []byte, d route.Decision, set *route.Settings) error {
	s.view.routed(d.Node, d.Reason)
	if c.Kind == classify.XA {
		s.nodes.taint() // an XA transaction may outlive a reset: no pooling of this session's connections
	}
	snap := s.p.topo.Snapshot()
	dialect := classify.Dialect{Mode: s.reader.mode.mode}
	replay := s.rs.Learn(c, stmt, d, set, route.Outcome{Node: s.nodes.cur(), Primary: snap.IsPrimary(s.nodes.cur()), Status: s.status,
		Failed: s.resp.Failed, Warnings: s.resp.Warnings, StateFull: len(s.nodes.state().Stmts) >= maxState,
		Dialect: dialect, DialectSure: s.reader.mode.unsure == 0})
	if conn := s.nodes.at(s.nodes.cur()); conn != nil {
		conn.Adopt(s.nodes.state()) // a USE ran there
		if d.Node >= 0 {
			s.nodes.share.learn(c, &s.resp, conn.Conn)
		}
	}
	s.view.count(d.Node, d.Reason, s.view.commandTook(time.Now), s.p.topo)
	s.reads.learn(c, stmt, s.resp.Failed, d.Node >= 0 && snap.IsPrimary(d.Node), s.status)
	if (c.Kind == classify.Set || c.Kind == classify.Prepare || c.Flags&classify.SetStatement != 0) && mentionsFold(stmt, "session_track") ||
		c.Kinds&runsAnything != 0 {
		// Nor may a change of the client character set be reported any more (or, after text
		// that may run anything, be known to be).
		s.reader.mode.blind = true
	}
	if mayTurnReadWrite(c) && d.Node >= 0 {
		// Even when it failed: a procedure may have changed the session before its error.
		if conn := s.nodes.at(d.Node); conn != nil {
			if err := conn.Guard(); err != nil {
				// The client has its answer already; a replica that cannot be made
				// read-only again must not serve this session: it ends.
				return fmt.Errorf("node %s: restoring the read-only guard: %w", conn.name, err)
			}
		}
	}
	if s.resp.Failed {
		if mayChangeMode(c) {
			s.reader.mode.lost() // an ERR carries no status: the mode may have changed before it
		}
		return nil
	}
	switch replay {
	case route.ReplayText:
		// A SET to replay on the session's other node connections before their next use.
		s.nodes.state().Stmts = append(s.nodes.state().Stmts, append([]byte(nil), stmt...))
		if cur := s.nodes.at(s.nodes.cur()); cur != nil {
			cur.Adopt(s.nodes.state()) // it ran there
		}
	case route.ReplayValues:
		// Expressions: the values they gave here are read back and replayed, or, when that
		// fails, the session stays where they are, as for any SET sluice cannot replay.
		ok, err := s.nodes.evaluated(stmt, dialect)
		if err != nil {
			return err
		}
		if !ok {
			s.rs.Pins |= route.PinSet
		}
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

// resetState forgets the session state (COM_RESET_CONNECTION, COM_CHANGE_USER): other nodes'
// connections are closed and will be opened clean when needed.
func (s *session) resetState() {
	s.stmts.reset()
	s.nodes.state().Stmts = s.nodes.state().Stmts[:0]
	s.nodes.state().Epoch++
	s.begin = s.begin[:0]
	s.reader.reset(s.login.charset) // the global sql_mode again: learnt from the next status
	// s.reads stays: the client's connection goes on, and so does what it wrote (a read after
	// the reset still sees it at consistency session).
	s.rs.Reset()
	s.nodes.reset()
}
