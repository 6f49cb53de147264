package proxy

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// readTarget owns what a session's replica reads must see under its endpoint's consistency
// level (see consistency.go): the session's last commit as its OKs reported it, whether that is
// known at all, and the position the current statement's read must see. It learns from each OK
// the session relays (noteGTID, noteOK, stateHidden) and from each statement (learn); it
// decides, with route, where a read goes (decide), and builds the wait a replica runs first
// (waitStmt). It belongs to the session's goroutine; its I/O is over connections its caller
// gives it.
type readTarget struct {
	// target is the position the current statement's read must see (empty: none); pos its
	// parsed form, kept while the text is the same; failed: it could not be known, the read
	// goes to the primary.
	target []byte
	pos    gtid.Position
	failed bool
	// last is the GTID of the session's last commit, one entry per replication domain
	// (mergeGTID), as the node reported it in the OK packet (session tracking); empty before
	// its first. scratch is mergeGTID's other buffer.
	last, scratch []byte
	// tracked: the session's primary connection reports each commit's GTID (track).
	tracked bool
	// unknown: a commit's GTID was lost (its state change came in a classic EOF, its OK said
	// none), until the next one is reported: what the session wrote is known to be only on
	// the primary.
	unknown bool
	// txWrote: the transaction open on the session's node changed rows (an OK said so) and
	// its commit must say its GTID (noteOK); okGTID: the OK being read said one; respGTID: an
	// OK of the current response did.
	txWrote, okGTID, respGTID bool
	// awaiting: the command being sent goes after a wait for target in the same round trip
	// (pipelinable); its answer comes first, within awaitFor (takeAwait).
	awaiting bool
	awaitFor time.Duration
	// waitNode is the node the last wait was sent to and waitEpoch its epoch then
	// (topology.Positions.Epoch): where a "reached" answer is recorded (confirmed).
	waitNode  int
	waitEpoch uint64
	// flight is the wait this session leads on waitNode (topology.Positions.BeginFlight),
	// ended once its answer was read or the read given up (endFlight); nil when none.
	flight *topology.Flight
	// wait is the wait statement's text (waitStmt), its buffer reused.
	wait []byte
}

// readEnv is what deciding a read under a consistency level uses besides the session's routing
// state: the proxy (the nodes' known positions, the shared reading of the primary's position,
// the counters), the session's kill and its log.
type readEnv struct {
	p      *Proxy
	killed <-chan struct{}
	log    *slog.Logger
}

// decide routes c (its text stmt), a statement that may read on a replica (route.MayReadReplica)
// under set's consistency level: it finds the position the read must see, and who has it
// (rs.HasTarget, rs.Reached), and decides where it goes (decideAt). A read whose position cannot
// be known goes to the primary. It reports whether the statement must first wait, on the
// replica decided, for that position (route.NeedsWait). primary returns the session's
// connection to the primary, opened and in line with the session, for a global read's position
// (a parameter of its own, not in env: what env holds may reach the heap, a closure must not).
func (t *readTarget) decide(c *classify.Result, stmt []byte, rs *route.Session, set *route.Settings, snap *topology.Snapshot,
	env *readEnv, primary func() (*backend.Conn, error)) (route.Decision, bool) {
	var latest gtid.Position
	if set.Consistency == route.Latest {
		latest = env.p.latestPosition(snap) // no statement to the primary
	}
	rs.HasTarget, rs.Reached = t.find(set.Consistency, env.p.gtidFlavor(), latest, func(b []byte) ([]byte, error) {
		// A reading of the primary's position begun after this read arrived, shared with
		// the global reads that arrived with it; within connect_timeout.
		b, err := env.p.primaryPos.get(func(b []byte) ([]byte, error) {
			bc, err := primary()
			if err != nil {
				return b, err
			}
			return primaryPosition(bc, env.p.gtidFlavor(), env.p.connectTimeout(), b)
		}, env.killed, b, env.p.connectTimeout())
		if err != nil {
			env.log.Debug("reading the primary's position failed; the read goes to the primary", "err", err)
		}
		return b, err
	}), 0
	switch {
	case t.failed:
		d := route.Decide(c, stmt, rs, set, snap)
		if next, again := route.Retry(rs, set, snap, route.Failed{Decision: d, Cause: route.CauseNotReached}); again == route.Resend {
			d = next
		}
		return d, false
	case rs.HasTarget:
		d := t.decideAt(c, stmt, rs, set, snap, env)
		return d, route.NeedsWait(d, rs, snap)
	}
	return route.Decide(c, stmt, rs, set, snap), false
}

// find sets the position the current read must see under level: the session's last commit
// (session), the primary's position read now (global, by global, which appends it to its
// argument), or latest, the latest position sluice knows was committed (latest:
// Proxy.latestPosition; zero when nothing is known). It reports whether the read has one;
// t.failed when it could not be known (the read then goes to the primary).
func (t *readTarget) find(level route.Consistency, flavor gtid.Flavor, latest gtid.Position, global func([]byte) ([]byte, error)) bool {
	t.failed = false
	t.target = t.target[:0]
	var err error
	switch level {
	case route.Eventual:
		return false
	case route.SessionConsistency:
		if !t.tracked || t.unknown {
			// The primary does not say which GTID each commit got: what this session wrote
			// is known to be only there.
			t.failed = true
			return false
		}
		if len(t.last) == 0 {
			return false // nothing committed yet: nothing to see
		}
		t.target = append(t.target, t.last...)
	case route.Global:
		if t.target, err = global(t.target); err != nil {
			t.failed = true
			return false
		}
	case route.Latest:
		if latest.IsZero() {
			// Neither a commit seen nor the primary's position reported yet (sluice just
			// started): what the primary has is not known, the read goes there.
			t.failed = true
			return false
		}
		if latest.String() == "" {
			return false // the primary has committed nothing: nothing to see
		}
		t.target = append(t.target, latest.String()...)
		t.pos = latest // parsed already: the comparison below finds the same text
	}
	if !gtidText(t.target) {
		t.failed = true
		return false
	}
	if string(t.target) != t.pos.String() {
		if t.pos, err = gtid.Parse(flavor, string(t.target)); err != nil {
			t.pos = gtid.Position{} // no node is known to have it
		}
	}
	return true
}

// reached returns the nodes of snap known to have applied the read's position (bit i: node i).
func (t *readTarget) reached(positions *topology.Positions, snap *topology.Snapshot) uint64 {
	var r uint64
	if positions == nil || t.pos.IsZero() {
		return 0
	}
	for i := range snap.Nodes {
		if i < 64 && (positions.Reached(i, t.pos) || positions.Visible(i, t.pos)) {
			r |= 1 << i
		}
	}
	return r
}

// decideAt routes c, a read that must see t.target: to a replica known to have it, preferred
// by route.Decide; when the one decided is not known to have it and its binlog stream runs
// (its position is real time), the read waits, woken by every move of a node's position, until
// one is (then it is decided again), or until set's consistency timeout, when it goes to the
// primary. A replica without a stream is asked to wait itself (awaitPosition).
func (t *readTarget) decideAt(c *classify.Result, stmt []byte, rs *route.Session, set *route.Settings, snap *topology.Snapshot, env *readEnv) route.Decision {
	positions := env.p.opts.Positions
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var deadline time.Time
	for {
		var moved <-chan struct{}
		if positions != nil {
			moved = positions.Changed() // before reading the positions: no move is missed
		}
		rs.Reached = t.reached(positions, snap)
		d := route.Decide(c, stmt, rs, set, snap)
		// Known to have it, or no stream to tell when it will: the read goes there, and waits on
		// the node itself (awaitPosition).
		if d.Err != nil || d.Local || d.Node == snap.Primary || !route.NeedsWait(d, rs, snap) ||
			(d.Node < 64 && rs.Reached&(1<<d.Node) != 0) || positions == nil || !positions.Streaming(d.Node) {
			return d
		}
		if deadline.IsZero() {
			env.p.consistencyWaits.Add(1)
			deadline = time.Now().Add(set.ConsistencyTimeout)
		}
		wait := time.Until(deadline)
		killed := false
		select {
		case <-env.killed:
			killed = true
		default:
		}
		if wait <= 0 || killed {
			env.p.consistencyTimeouts.Add(1)
			next, _ := route.Retry(rs, set, snap, route.Failed{Decision: d, Cause: route.CauseNotReached})
			return next
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-moved:
		case <-timer.C:
		case <-env.killed:
		}
	}
}

// waitStmt builds the statement that makes a replica (its greeting's version) wait up to
// timeout for t.target: MASTER_GTID_WAIT on MariaDB (0 reached, -1 timed out),
// WAIT_FOR_EXECUTED_GTID_SET on MySQL (0 reached, 1 timed out). The text is valid until the
// next call.
func (t *readTarget) waitStmt(version string, timeout time.Duration) []byte {
	t.wait = t.wait[:0]
	if gtid.FlavorOf(version) == gtid.MySQL {
		t.wait = append(t.wait, "SELECT WAIT_FOR_EXECUTED_GTID_SET('"...)
	} else {
		t.wait = append(t.wait, "SELECT MASTER_GTID_WAIT('"...)
	}
	for _, b := range t.target {
		if b != '\n' && b != '\r' && b != '\t' {
			t.wait = append(t.wait, b)
		}
	}
	t.wait = append(t.wait, "', "...)
	t.wait = strconv.AppendFloat(t.wait, timeout.Seconds(), 'f', 6, 64)
	return append(t.wait, ')')
}

// seenOn reports whether node was seen to make the read's position visible already (a wait
// there, any session's, answered "reached": topology.Positions.Visible): the read then needs no
// wait of its own. Lock-free, no allocation.
func (t *readTarget) seenOn(positions *topology.Positions, node int) bool {
	return positions != nil && !t.pos.IsZero() && positions.Visible(node, t.pos)
}

// waitingOn notes that a wait for the read's position is about to be sent to node: its
// "reached" answer is recorded there (confirmed), unless the node's positions are forgotten
// meanwhile.
func (t *readTarget) waitingOn(positions *topology.Positions, node int) {
	t.waitNode, t.waitEpoch = node, 0
	if positions != nil {
		t.waitEpoch = positions.Epoch(node)
	}
}

// confirmed records that the wait sent (waitingOn) answered "reached": the node has made the
// read's position visible, and later reads of no more than it skip their wait (seenOn). The
// reads that followed the wait (joinWait) wake.
func (t *readTarget) confirmed(positions *topology.Positions) {
	if positions != nil && !t.pos.IsZero() {
		positions.Confirm(t.waitNode, t.waitEpoch, t.pos)
	}
	t.endFlight(positions)
}

// joinWait is called when a read must see its position on node, which no wait there was seen
// to confirm yet: when another session's wait for as much is in flight there, the read
// follows it (waits for its answer, within bound, or until killed) instead of sending one of
// its own, so that a replica is asked once per new position even when many reads arrive
// together. It reports whether the read must still send its wait (it leads one, or the one it
// followed did not confirm the position), and how long that wait may take (what is left of
// bound); the wait's answer is recorded there (waitingOn).
func (t *readTarget) joinWait(positions *topology.Positions, node int, bound time.Duration, killed <-chan struct{}) (bool, time.Duration) {
	t.waitingOn(positions, node)
	if positions == nil || t.pos.IsZero() {
		return true, bound
	}
	f, lead := positions.BeginFlight(node, t.pos)
	if lead {
		t.flight = f
		return true, bound
	}
	start := time.Now()
	timer := time.NewTimer(bound)
	select {
	case <-f.Done():
	case <-timer.C:
	case <-killed:
	}
	timer.Stop()
	if t.seenOn(positions, node) {
		return false, 0
	}
	t.waitingOn(positions, node) // its epoch may have moved meanwhile
	return true, max(bound-time.Since(start), 0)
}

// endFlight ends the wait this session leads (joinWait), if any: the reads following it wake
// and look whether it confirmed their position.
func (t *readTarget) endFlight(positions *topology.Positions) {
	if t.flight != nil {
		positions.EndFlight(t.waitNode, t.flight)
		t.flight = nil
	}
}

// sentWait records that the command being sent follows a wait for t.target in the same round
// trip: its answer, due within timeout, comes first (takeAwait).
func (t *readTarget) sentWait(timeout time.Duration) { t.awaiting, t.awaitFor = true, timeout }

// takeAwait reports, once, whether the response about to be read starts with the answer to a
// wait sent ahead of the command (sentWait), and that wait's timeout.
func (t *readTarget) takeAwait() (time.Duration, bool) {
	if !t.awaiting {
		return 0, false
	}
	t.awaiting = false
	return t.awaitFor, true
}

// track makes primary connection bc report the GTID of each commit in its OK packets, for an
// endpoint at level session (the session's own target) or latest (every commit's GTID goes
// into the proxy's known position, knownCommits) (see trackGTIDs), and records whether that
// worked (t.tracked).
// g is the proxy's knowledge of the nodes' global lists.
func (t *readTarget) track(bc *backend.Conn, level route.Consistency, g *globalTracking, log *slog.Logger) {
	if level != route.SessionConsistency && level != route.Latest {
		t.tracked = false // this connection reports nothing; the level may come back later
		return
	}
	if bc.TracksGTIDs {
		t.tracked = true // a pooled connection that a session before this one made report them
		return
	}
	if err := trackGTIDs(bc, g); err != nil {
		log.Warn("the primary cannot report the GTID of each commit: session-level reads go to the primary; latest-level reads see its commits once the primary's stream delivers them", "err", err)
		t.tracked = false
		return
	}
	t.tracked = true
}

// newResponse starts the response to a command: none of its OKs said a GTID yet.
func (t *readTarget) newResponse() { t.respGTID = false }

// noteGTID follows a session-state change of an OK that said the GTID of a commit (MariaDB's
// last_gtid, MySQL's OWN_GTID): what a read of this session must find on a replica
// (consistency: session). noteOK follows, for the same OK.
func (t *readTarget) noteGTID(g []byte) {
	if len(g) == 0 {
		return
	}
	t.last, t.scratch = mergeGTID(t.last, t.scratch, g)
	t.unknown, t.okGTID = false, true
}

// stateHidden follows a classic EOF whose status says the session state changed (INSERT …
// RETURNING committed a GTID, say): an EOF has no room to say how, so the session's last
// commit is no longer known.
func (t *readTarget) stateHidden() { t.unknown = true }

// noteOK follows, OK by OK, whether every commit of the session said its GTID, judging by what
// the server answered rather than by the statement's text (dynamic SQL such as EXECUTE
// IMMEDIATE CONCAT('SET SESSION session_tr', 'ack_system_variables = …') turns tracking off
// unseen). A commit that changed rows — an OK outside a transaction that counts affected rows,
// or the end of a transaction one of whose OKs did — and says no GTID leaves the session's last
// commit unknown: its reads at consistency session go to the primary until an OK says a GTID
// again (noteGTID). Statements that change nothing (reads, SET, an UPDATE that matched no row)
// carry no GTID and change nothing here. The end of a transaction that changed rows but was
// rolled back also says none: the session then reads from the primary until its next commit,
// the safe side. status and affected are the OK's, which came from the primary when primary
// (a replica's OKs commit nothing). Call it after noteGTID for the OK's session-state block.
func (t *readTarget) noteOK(status uint16, affected uint64, primary bool) {
	if !t.tracked || !primary {
		return
	}
	said := t.okGTID
	t.okGTID = false
	if said {
		t.txWrote, t.respGTID = false, true
	}
	if status&mysql.StatusInTrans != 0 {
		if affected > 0 {
			t.txWrote = true // its GTID comes with the commit
		}
		return
	}
	if !said && (affected > 0 || t.txWrote) {
		t.unknown = true
	}
	t.txWrote = false
}

// learn follows statement c (its text stmt), which ran on the primary when onPrimary, ended
// with an ERR when failed, and left the server status status: whether what the session
// committed is still known by its GTIDs.
func (t *readTarget) learn(c *classify.Result, stmt []byte, failed, onPrimary bool, status uint16) {
	if t.tracked && (c.Kind == classify.Set || c.Kind == classify.Prepare || c.Flags&classify.SetStatement != 0) &&
		mentionsFold(stmt, "session_track") {
		// The client set the tracked variables itself (or prepared that): commits may no
		// longer say their GTID. What it wrote is known to be on the primary only until an
		// OK says a GTID again (which it will if the client kept last_gtid tracked).
		t.unknown = true
	}
	if t.tracked && !failed && !t.respGTID && commitsUnseen(c) && onPrimary {
		// A statement that may commit without counting rows in its OK (a DDL, a procedure, a
		// dynamic statement) said no GTID: what it did is known to be only on the primary;
		// inside a transaction, the transaction's commit must say one (noteOK).
		if status&mysql.StatusInTrans != 0 {
			t.txWrote = true
		} else {
			t.unknown = true
		}
	}
	if failed && onPrimary && mayCommit(c) {
		// The primary answered with an error, but a statement that can commit may have done
		// so first (a DDL's implicit commit, a procedure's earlier statements), and an ERR
		// carries no GTID: what the session wrote is known to be only on the primary.
		t.unknown = true
	}
}
