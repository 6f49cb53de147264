package proxy

import (
	"bytes"
	"errors"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Consistency levels. Under session and global, a read sent to a replica must see a position:
// the session's last commit (session: its GTID came back in the OK packet of the write or
// COMMIT, lastGTID), or everything the primary had committed when the read arrived (global: the
// primary's position, read from it then). Before the read, the replica is asked to reach that
// position within the endpoint's consistency_timeout (MASTER_GTID_WAIT on MariaDB,
// WAIT_FOR_EXECUTED_GTID_SET on MySQL, over the session's connection there); when it does not,
// the read goes to the primary instead. A replica the known positions (topology.Positions: the
// monitor's checks, the binlog streams) say has it already is preferred, so that the wait
// returns at once. A read never returns a stale row and never fails because of the level.
//
// The wait is asked even of a replica whose known position contains the target: a node writes a
// transaction to its binlog (which is where streams and @@gtid_current_pos see it) a moment
// before the transaction is visible to readers; MASTER_GTID_WAIT returns once it is.

// errNotReached: the replica did not reach the read's position within consistency_timeout.
var errNotReached = errors.New("the replica did not reach the position the consistency level needs")

// consistencyTarget sets, before a statement is routed under set's consistency level, the
// position its read must see (s.target, its text; empty: none) and which nodes are known to
// have it (s.rs.HasTarget, s.rs.Reached). A global read whose position cannot be read goes to
// the primary (s.targetFailed).
func (s *session) consistencyTarget(set *route.Settings, snap *topology.Snapshot) {
	s.rs.HasTarget, s.rs.Reached, s.targetFailed = false, 0, false
	s.target = s.target[:0]
	if set.Consistency == route.Eventual {
		return
	}
	var err error
	switch set.Consistency {
	case route.SessionConsistency:
		if !s.gtidTracked || s.gtidUnknown {
			// The primary does not say which GTID each commit got: what this session wrote
			// is known to be only there.
			s.targetFailed = true
			return
		}
		if len(s.lastGTID) == 0 {
			return // nothing committed yet: nothing to see
		}
		s.target = append(s.target, s.lastGTID...)
	case route.Global:
		// A reading of the primary's position begun after this read arrived, shared with
		// the global reads that arrived with it; within connect_timeout.
		if s.target, err = s.p.primaryPos.get(s, snap, s.target, s.p.connectTimeout()); err != nil {
			s.log.Debug("reading the primary's position failed; the read goes to the primary", "err", err)
			s.targetFailed = true
			return
		}
	}
	if !gtidText(s.target) {
		s.targetFailed = true
		return
	}
	s.rs.HasTarget = true
	if string(s.target) != s.targetPos.String() {
		if s.targetPos, err = gtid.Parse(s.flavor(), string(s.target)); err != nil {
			s.targetPos = gtid.Position{} // no node is known to have it
		}
	}
}

// markReached sets s.rs.Reached: the nodes known to have applied the read's position.
func (s *session) markReached(snap *topology.Snapshot) {
	s.rs.Reached = 0
	positions := s.p.opts.Positions
	if positions == nil || s.targetPos.IsZero() {
		return
	}
	for i := range snap.Nodes {
		if i < 64 && positions.Reached(i, s.targetPos) {
			s.rs.Reached |= 1 << i
		}
	}
}

// decideAt routes r, a read that must see s.target: to a replica known to have it, preferred by
// route.Decide; when the one decided is not known to have it and its binlog stream runs (its
// position is real time), r waits, woken by every move of a node's position, until one is (then
// it is decided again), or until set's consistency timeout, when it goes to the primary. A
// replica without a stream is asked to wait itself (awaitTarget).
func (s *session) decideAt(r *request, set *route.Settings, snap *topology.Snapshot) route.Decision {
	positions := s.p.opts.Positions
	var timer *time.Timer
	var deadline time.Time
	for {
		var moved <-chan struct{}
		if positions != nil {
			moved = positions.Changed() // before reading the positions: no move is missed
		}
		s.markReached(snap)
		d := route.Decide(&r.class, r.stmt, &s.rs, set, snap)
		// Known to have it, or no stream to tell when it will: the read goes there, and waits on
		// the node itself (awaitTarget).
		if d.Err != nil || d.Local || d.Node == snap.Primary || !s.needsWait(d, snap) ||
			(d.Node < 64 && s.rs.Reached&(1<<d.Node) != 0) || positions == nil || !positions.Streaming(d.Node) {
			if timer != nil {
				timer.Stop()
			}
			return d
		}
		if deadline.IsZero() {
			s.p.consistencyWaits.Add(1)
			deadline = time.Now().Add(set.ConsistencyTimeout)
		}
		wait := time.Until(deadline)
		if wait <= 0 || s.life.killed() {
			if timer != nil {
				timer.Stop()
			}
			s.p.consistencyTimeouts.Add(1)
			return route.Decision{Node: snap.Primary, Reason: route.ReasonConsistency, EndTx: d.EndTx}
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-moved:
		case <-timer.C:
		case <-s.life.done():
		}
	}
}

// primaryPosition appends the primary's current position (what it has committed) to b, read
// over the session's connection to it.
func (s *session) primaryPosition(snap *topology.Snapshot, b []byte) ([]byte, error) {
	c, err := s.use(snap.Primary)
	if err != nil {
		return b, err
	}
	q := "SELECT @@global.gtid_binlog_pos"
	if s.flavor() == gtid.MySQL {
		q = "SELECT @@global.gtid_executed"
	}
	_ = c.NetConn().SetReadDeadline(time.Now().Add(s.p.connectTimeout()))
	rows, err := c.Query(q)
	_ = c.NetConn().SetReadDeadline(time.Time{})
	if err != nil {
		return b, err
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != 1 || rows.Values[0][0].Null {
		return b, errors.New("no position")
	}
	return append(b, rows.Values[0][0].S...), nil
}

// flavor is the GTID format of the session's nodes, from the primary's version.
func (s *session) flavor() gtid.Flavor {
	if v := s.p.server.Load().version; v != "" {
		return gtid.FlavorOf(v)
	}
	return gtid.MariaDB
}

// gtidText reports whether b is a GTID position as servers print them (digits, hex, '-', ':',
// ',', white space) and nothing else: it is spliced into the wait's SQL text.
func gtidText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F',
			c == '-', c == ':', c == ',', c == ' ', c == '\n', c == '\r', c == '\t':
		default:
			return false
		}
	}
	return true
}

// needsWait reports whether a statement decided as d must first wait, on its replica, for the
// read's position.
func (s *session) needsWait(d route.Decision, snap *topology.Snapshot) bool {
	if !s.rs.HasTarget || d.Node == snap.Primary {
		return false
	}
	switch d.Reason {
	case route.ReasonRead, route.ReasonReadOnlyTx:
		return true
	}
	return false // a hint's replica (FORCE_SLAVE asks for any), a transaction already checked
}

// awaitTarget asks replica connection c to reach s.target within timeout, and reports whether
// it did (its own round trip; pipelinedWait says when the wait goes with the read instead).
func (s *session) awaitTarget(c *nodeConn, timeout time.Duration) (bool, error) {
	stmt := s.waitStmt(c, timeout)
	// The node answers within the wait's own timeout; a node that stops answering altogether
	// must not hold the session.
	_ = c.NetConn().SetReadDeadline(time.Now().Add(timeout + s.p.connectTimeout()))
	defer c.NetConn().SetReadDeadline(time.Time{})
	if err := c.WriteQuery(stmt); err != nil {
		return false, err
	}
	if err := c.Flush(); err != nil {
		return false, err
	}
	reached, err := c.ReadScalarIs("0")
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return false, nil // refused (a malformed position): the primary answers instead
	}
	return reached, err
}

// waitStmt builds, in s.scratch, the statement that makes replica connection c wait up to
// timeout for s.target: MASTER_GTID_WAIT on MariaDB (0 reached, -1 timed out),
// WAIT_FOR_EXECUTED_GTID_SET on MySQL (0 reached, 1 timed out).
func (s *session) waitStmt(c *nodeConn, timeout time.Duration) []byte {
	s.scratch = s.scratch[:0]
	if gtid.FlavorOf(c.Handshake.ServerVersion) == gtid.MySQL {
		s.scratch = append(s.scratch, "SELECT WAIT_FOR_EXECUTED_GTID_SET('"...)
	} else {
		s.scratch = append(s.scratch, "SELECT MASTER_GTID_WAIT('"...)
	}
	for _, b := range s.target {
		if b != '\n' && b != '\r' && b != '\t' {
			s.scratch = append(s.scratch, b)
		}
	}
	s.scratch = append(s.scratch, "', "...)
	s.scratch = strconv.AppendFloat(s.scratch, timeout.Seconds(), 'f', 6, 64)
	return append(s.scratch, ')')
}

// pipelinedWait reports whether read r, which must wait for s.target on its replica, can be
// sent in the same round trip as the wait: the wait first, then r; when the wait times out, r's
// answer is read and dropped, and r runs on the primary. That needs r held whole (to send it
// again) and an answer sluice can read to its end unrelayed: not a cursor's, not a bulk one.
func (s *session) pipelinedWait(r *request) bool {
	if !r.held || r.bulk {
		return false
	}
	if r.st != nil {
		return len(s.cmd) > 5 && s.cmd[5]&0x0f == 0 && len(r.st.longData) == 0
	}
	return true
}

// awaitAnswer reads the answer to the wait sent ahead of the read (pipelinedWait) on bc. When
// the replica did not reach the position, the read's answer is read and dropped, and the read
// goes to the primary (errNotReached).
func (s *session) awaitAnswer(bc *backend.Conn) error {
	_ = bc.NetConn().SetReadDeadline(time.Now().Add(s.awaitDeadline + s.p.connectTimeout()))
	defer bc.NetConn().SetReadDeadline(time.Time{})
	reached, err := bc.ReadScalarIs("0")
	var se *mysql.SQLError
	if err != nil && !errors.As(err, &se) {
		return &relayError{err: err}
	}
	if reached {
		return nil
	}
	if err := bc.DiscardResults(); err != nil && !errors.As(err, &se) {
		return &relayError{err: err}
	}
	s.p.consistencyTimeouts.Add(1)
	return errNotReached
}

// trackGTIDs makes a primary connection report the GTID of each commit in its OK packets (the
// session level's target): MariaDB's last_gtid added to session_track_system_variables (unless
// the list has it, as the sandbox's servers do), MySQL's session_track_gtids=OWN_GTID. It
// records whether that worked (s.gtidTracked). Only for endpoints at the session level: other
// levels need no GTID per commit, and a client that tracks session state itself then sees the
// server's own list.
func (s *session) trackGTIDs(bc *backend.Conn) {
	if s.settings.current().Consistency != route.SessionConsistency {
		s.gtidTracked = false // this connection reports nothing; the level may come back later
		return
	}
	q := "SET SESSION session_track_system_variables = IF(@@session.session_track_system_variables = '*' OR " +
		"FIND_IN_SET('last_gtid', @@session.session_track_system_variables), @@session.session_track_system_variables, " +
		"CONCAT_WS(',', NULLIF(@@session.session_track_system_variables, ''), 'last_gtid'))"
	if gtid.FlavorOf(bc.Handshake.ServerVersion) == gtid.MySQL {
		q = "SET SESSION session_track_gtids = OWN_GTID"
	}
	if err := bc.Exec(q); err != nil {
		s.log.Warn("the primary cannot report the GTID of each commit: session-level reads go to the primary", "err", err)
		s.gtidTracked = false
		return
	}
	s.gtidTracked = true
}

// noteCommit follows, OK by OK, whether every commit of the session said its GTID, judging by
// what the server answered rather than by the statement's text (dynamic SQL such as EXECUTE
// IMMEDIATE CONCAT('SET SESSION session_tr', 'ack_system_variables = …') turns tracking off
// unseen). A commit that changed rows — an OK outside a transaction that counts affected rows,
// or the end of a transaction one of whose OKs did — and says no GTID leaves the session's
// last commit unknown: its reads at consistency session go to the primary until an OK says a
// GTID again (trackSessionState). Statements that change nothing (reads, SET, an UPDATE that
// matched no row) carry no GTID and change nothing here. The end of a transaction that changed
// rows but was rolled back also says none: the session then reads from the primary until its
// next commit, the safe side. status and affected are the OK's.
func (s *session) noteCommit(status uint16, affected uint64) {
	gtid := s.okGTID
	s.okGTID = false
	if gtid {
		s.txWrote, s.respGTID = false, true
	}
	if status&mysql.StatusInTrans != 0 {
		if affected > 0 {
			s.txWrote = true // its GTID comes with the commit
		}
		return
	}
	if !gtid && (affected > 0 || s.txWrote) {
		s.gtidUnknown = true
	}
	s.txWrote = false
}

// mentionsFold reports whether stmt contains word, ASCII case-insensitively (word is lower case).
func mentionsFold(stmt []byte, word string) bool {
	for i := 0; i+len(word) <= len(stmt); i++ {
		j := 0
		for ; j < len(word); j++ {
			c := stmt[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != word[j] {
				break
			}
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

// mayCommit reports whether a statement of c's kind can commit a transaction before it fails
// (or on its way to success): anything but a plain read and session bookkeeping.
func mayCommit(c *classify.Result) bool {
	switch c.Kind {
	case classify.Select, classify.Show, classify.Set, classify.Use, classify.Rollback:
		return c.Flags&(classify.SelectInto|classify.Sequence) != 0
	}
	return true
}

// mergeGTID returns the session's commits position after a commit that got GTID g: for MariaDB
// GTIDs (domain-server-seq), one entry per replication domain, g replacing the entry of its
// domain (a session's later commit in a domain has the higher sequence number) or added for a
// new domain, so that a read waits for every domain the session wrote in (replicas may apply
// domains out of order); for anything else (MySQL's OWN_GTID), g alone. last and scratch are
// the two buffers it alternates between (no allocation once they are grown); it returns the
// new position and the buffer now free.
func mergeGTID(last, scratch, g []byte) (pos, free []byte) {
	dash := -1
	for i, c := range g {
		if c == '-' {
			dash = i
			break
		}
		if c < '0' || c > '9' {
			break
		}
	}
	if dash <= 0 || len(last) == 0 {
		return append(last[:0], g...), scratch
	}
	domain := g[:dash+1] // "5-"
	out := scratch[:0]
	replaced := false
	for rest := last; len(rest) > 0; {
		entry := rest
		if i := bytes.IndexByte(rest, ','); i >= 0 {
			entry, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		if len(entry) >= len(domain) && string(entry[:len(domain)]) == string(domain) {
			out = append(out, g...)
			replaced = true
		} else {
			out = append(out, entry...)
		}
	}
	if !replaced {
		out = append(append(out, ','), g...)
	}
	return out, last
}
