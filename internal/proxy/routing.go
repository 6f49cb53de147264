package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// A session over several nodes. The session keeps at most one connection per node, opened
// the first time a statement is routed there. Session state that must be the same on every node
// it uses (SET of session variables, SET NAMES, the schema, COM_SET_OPTION) is recorded and
// replayed on a connection before its next use; state that cannot be replayed (temporary
// tables, LOCK TABLES, GET_LOCK, a SET sluice cannot repeat) pins the session to the primary.

// nodeConn is one of the session's node connections and how far it is in line with the session.
type nodeConn struct {
	*backend.Conn
	idx     int
	name    string
	applied int    // entries of session.state replayed here
	db      string // schema selected here
	options uint16 // COM_SET_OPTION value in force here
	lost    atomic.Bool
}

// routeInfo is one statement's route, for SHOW LAST ROUTE.
type routeInfo struct {
	valid  bool
	node   int
	reason route.Reason
}

// errStateSync marks a replayed session statement that a node refused: the session then
// stays on the primary, where its state is known to hold.
var errStateSync = errors.New("session state could not be replayed")

// maxState bounds the replay list; past it the session is pinned to the primary.
const maxState = 64

// open dials node i for the session.
func (s *session) open(i int) (*nodeConn, error) {
	n := &s.p.opts.Nodes[i]
	bc, err := s.dial(n)
	if err != nil {
		return nil, err
	}
	c := &nodeConn{Conn: bc, idx: i, name: n.Name, db: s.db, options: 0}
	s.p.rnodes[i].Conns.Add(1)
	if s.conns[i] != nil {
		s.closeConn(i)
	}
	s.conns[i] = c
	s.updateKillTarget()
	return c, nil
}

// use makes node i's connection current, opening it and bringing it in line with the session.
func (s *session) use(i int) (*nodeConn, error) {
	c := s.conns[i]
	if c == nil {
		var err error
		if c, err = s.open(i); err != nil {
			return nil, err
		}
	}
	if err := s.sync(c); err != nil {
		return nil, err
	}
	s.cur, s.node, s.bc = i, &s.p.opts.Nodes[i], c.Conn
	return c, nil
}

// sync replays on c what the session changed since c last ran a statement.
func (s *session) sync(c *nodeConn) error {
	if c.db != s.db && s.db != "" {
		s.scratch = append(append(s.scratch[:0], mysql.ComInitDB), s.db...)
		if err := c.Command(s.scratch); err != nil {
			return syncErr(err)
		}
		c.db = s.db
	}
	if c.options != s.options {
		if err := c.Command([]byte{mysql.ComSetOption, byte(s.options), byte(s.options >> 8)}); err != nil {
			return syncErr(err)
		}
		c.options = s.options
	}
	replayed := c.applied < len(s.state)
	for c.applied < len(s.state) {
		if err := c.Exec(string(s.state[c.applied])); err != nil {
			return syncErr(err)
		}
		c.applied++
	}
	if replayed {
		// What was replayed may have been SET SESSION TRANSACTION READ WRITE or tx_read_only=0,
		// right for the primary: the guard comes last.
		return s.guard(c)
	}
	return nil
}

// readOnlyGuard is the first and the last word of sluice on a replica connection: a statement
// misrouted there fails instead of forking the data.
const readOnlyGuard = "SET SESSION TRANSACTION READ ONLY"

// guard makes a replica connection read-only again (a primary connection is left alone).
func (s *session) guard(c *nodeConn) error {
	if s.p.opts.Nodes[c.idx].Role == "primary" {
		return nil
	}
	if err := c.Exec(readOnlyGuard); err != nil {
		return syncErr(err)
	}
	return nil
}

func syncErr(err error) error {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return errStateSync
	}
	return err
}

// drop closes node i's connection (after it failed).
func (s *session) drop(i int) {
	if s.conns[i] != nil {
		s.closeConn(i)
		s.updateKillTarget()
	}
}

// closeConn closes node i's connection and forgets it.
func (s *session) closeConn(i int) {
	s.conns[i].Close()
	s.conns[i] = nil
	s.p.rnodes[i].Conns.Add(-1)
}

// homeCommand runs a command that belongs to the session's home node (COM_PING,
// COM_INIT_DB, COM_FIELD_LIST, ...).
func (s *session) homeCommand(n int, kind respKind) error {
	c, err := s.use(s.home)
	if err != nil {
		if derr := s.discardCommand(n); derr != nil {
			return derr
		}
		s.client.SetSeq(1)
		return s.useFailed(s.home, err)
	}
	if err := s.forward(n, kind); err != nil {
		return err
	}
	c.db, c.options = s.db, s.options
	return nil
}

// useFailed answers a command whose node could not be used.
func (s *session) useFailed(i int, err error) error {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return s.writeErr(se)
	}
	if errors.Is(err, errStateSync) {
		return s.writeErr(mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: node %s refused this session's state", s.p.opts.Nodes[i].Name))
	}
	s.node = &s.p.opts.Nodes[i]
	return s.nodeLost(err)
}

// query runs one COM_QUERY: classify, route, forward, and learn from the outcome.
func (s *session) query(n int) error {
	p, err := s.client.PeekPayload(n, n)
	if err != nil {
		return err
	}
	switch {
	case n >= mysql.MaxPacketPayload || n > maxHeldStatement:
		// Too large to hold: routed by its head, streamed.
		return s.hugeQuery(n, p)
	case len(p) < n:
		// Larger than the read buffer: held whole, so that it is classified whole (a trailing
		// FOR UPDATE or INTO counts) and routed like any statement.
		s.client.SetSeq(0)
		if s.cmd, err = s.client.ReadPacketInto(s.cmd); err != nil {
			return err
		}
	default:
		s.cmd = append(s.cmd[:0], p...)
		if err := s.client.Discard(4 + n); err != nil {
			return err
		}
	}
	defer s.releaseCmd()
	s.client.SetSeq(1)
	stmt := s.cmd[1:]
	if cmd, ok := classify.IsProxyInternal(stmt); ok {
		return s.proxyCommand(cmd)
	}
	c := classify.Classify(stmt)
	snap := s.p.snapshot()
	d := route.Decide(&c, stmt, &s.rs, s.rep, snap)
	if d.Err != nil {
		s.failed = true
		return s.writeErr(d.Err)
	}
	if d.Local {
		return s.localTransaction(&c, d)
	}
	retryable := d.Reason == route.ReasonRead
	tried := 0
	for {
		err := s.runOn(d.Node, snap)
		if err == nil {
			return s.after(&c, stmt, d)
		}
		if errors.Is(err, errStateSync) && d.Node != snap.Primary {
			// A replica refused the session's state: stay on the primary from now on.
			s.rs.Pins |= route.PinSet
			d = route.Decision{Node: snap.Primary, Reason: route.ReasonPinned}
			continue
		}
		var re *relayError
		clientBroke := errors.As(err, &re) && re.client
		if clientBroke || !retryable || s.responseStarted() || s.killed() {
			return s.lost(d.Node, err)
		}
		// Nothing reached the client yet: take the node out and try the read elsewhere, once,
		// then on the primary.
		if !errors.Is(err, errCapsMismatch) {
			s.p.markDown(d.Node, err)
		}
		s.drop(d.Node)
		tried++
		snap = s.p.snapshot()
		if tried == 1 {
			d = route.Decide(&c, stmt, &s.rs, s.rep, snap)
			if d.Err == nil && !d.Local && d.Node != snap.Primary {
				continue
			}
		}
		if d.Node == snap.Primary && tried > 1 {
			return s.lost(d.Node, err)
		}
		d = route.Decision{Node: snap.Primary, Reason: route.ReasonFallback}
		if s.rep.Mode == route.ReadOnly {
			return s.lost(d.Node, err)
		}
	}
}

// runOn sends the kept command (s.cmd) to node i and relays the answer.
func (s *session) runOn(i int, snap *route.Snapshot) error {
	c, err := s.use(i)
	if err != nil {
		return err
	}
	if s.rs.TxPending && i == snap.Primary {
		// Transaction splitting: the transaction opens on the primary at its first write.
		if err := c.Exec(string(s.begin)); err != nil {
			var se *mysql.SQLError
			if errors.As(err, &se) {
				s.failed = true
				return s.writeErr(se)
			}
			return err
		}
		s.rs.TxPending = false
	}
	rn := s.p.rnodes[i]
	rn.Active.Add(1)
	defer rn.Active.Add(-1)
	c.SetSeq(0)
	if err := c.WritePacket(s.cmd); err != nil {
		return &relayError{err: err}
	}
	// Sent from inside the wait for the answer (saves a read that would find nothing).
	if err := c.FlushBeforeRead(); err != nil {
		return &relayError{err: err}
	}
	s.client.SetSeq(1)
	return s.relayTimed(c.Conn, respResult)
}

// lost reports a node failure to the client (nodeLost) for node i.
func (s *session) lost(i int, err error) error {
	var re *relayError
	if errors.As(err, &re) {
		if re.client {
			return err
		}
		err = re.err
	}
	if errors.Is(err, errStateSync) {
		return s.useFailed(i, err)
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return s.writeErr(se)
	}
	s.node = &s.p.opts.Nodes[i]
	s.drop(i)
	if i == s.home {
		return s.nodeLost(err)
	}
	if s.killed() {
		return err // sluice closed it (shutdown, KILL): the node is fine
	}
	s.p.markDown(i, err)
	if s.responseStarted() {
		// Part of the node's answer already reached the client: no error packet can follow
		// it. The client's connection closes, as when a server dies mid-answer.
		return s.nodeLost(err)
	}
	// Another node's connection broke mid-statement: the client gets the error, and the
	// session, whose state lives on its home node, goes on.
	_ = s.writeErr(mysql.NewError(mysql.CRServerLost, "HY000", "Lost connection to backend server '%s' during query", s.p.opts.Nodes[i].Name))
	return nil
}

// maxHeldStatement is the largest statement sluice holds whole to classify it; a larger one is
// routed by its head (hugeQuery).
const maxHeldStatement = 1 << 20

// releaseCmd lets go of a held statement's buffer when it was large, so that an idle session
// does not keep a megabyte.
func (s *session) releaseCmd() {
	if cap(s.cmd) > keepBuffer {
		s.cmd = nil
	}
}

// hugeQuery routes and streams a statement too large to hold (over maxHeldStatement, or over
// one 16 MiB packet), of which sluice sees only the head (p: what the read buffer holds). What
// the rest says is unknown, so it is routed as a statement sluice cannot classify: to the
// primary, opening a deferred transaction first, or where the session's transaction is; hints
// in the head count. On a read-only endpoint a SELECT (one statement, as far as the head
// shows) goes to the bound replica, whose connection is read-only; anything else is refused.
func (s *session) hugeQuery(n int, p []byte) error {
	s.cmd = append(s.cmd[:0], p...)
	head := s.cmd[1:]
	c := classify.Classify(head)
	if !(s.rep.Mode == route.ReadOnly && c.Kind == classify.Select && c.Flags&classify.Multi == 0) {
		c = classify.Result{Kind: classify.Unknown, Hint: c.Hint, NodeName: c.NodeName}
	}
	snap := s.p.snapshot()
	d := route.Decide(&c, head, &s.rs, s.rep, snap)
	if d.Err != nil || d.Local {
		if err := s.discardCommand(n); err != nil {
			return err
		}
		s.client.SetSeq(1)
		s.failed = true
		if d.Err == nil {
			d.Err = mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: statement too large to classify")
		}
		return s.writeErr(d.Err)
	}
	conn, err := s.use(d.Node)
	if err == nil && s.rs.TxPending && d.Node == snap.Primary {
		if err = conn.Exec(string(s.begin)); err == nil {
			s.rs.TxPending = false
		}
	}
	if err != nil {
		if derr := s.discardCommand(n); derr != nil {
			return derr
		}
		s.client.SetSeq(1)
		return s.lost(d.Node, err)
	}
	rn := s.p.rnodes[d.Node]
	rn.Active.Add(1)
	err = s.forward(n, respResult)
	rn.Active.Add(-1)
	if err != nil {
		return err
	}
	return s.after(&c, head, d)
}

// localTransaction answers a BEGIN that transaction splitting defers, or the COMMIT/ROLLBACK of
// a transaction that never reached a node.
func (s *session) localTransaction(c *classify.Result, d route.Decision) error {
	s.prev, s.last = s.last, routeInfo{valid: true, node: -1, reason: d.Reason}
	status := s.status &^ (mysql.StatusInTrans | mysql.StatusMoreResultsExists)
	if c.Kind == classify.Begin {
		s.begin = append(s.begin[:0], s.cmd[1:]...)
		s.rs.TxPending = true
		status |= mysql.StatusInTrans
	} else {
		s.begin = s.begin[:0]
		s.rs.TxPending = false
	}
	s.status = status
	return s.writeOKPacket(status)
}

// afterStatus follows the transaction state the node reported.
func (s *session) afterStatus() {
	if s.status&mysql.StatusInTrans != 0 {
		s.rs.InTx, s.rs.TxNode, s.rs.TxPending = true, s.cur, false
	} else {
		s.rs.InTx, s.rs.TxNode = false, -1
	}
	if s.cur == s.p.snapshot().Primary || s.rep.Mode == route.ReadOnly {
		s.rs.Autocommit = s.status&mysql.StatusAutocommit != 0
	}
	if c := s.conns[s.cur]; c != nil {
		c.db = s.db
	}
}

// after learns from a statement that ran on s.cur: transaction state, pins, session state.
// A statement that may have made a replica connection read-write (a SET SESSION TRANSACTION
// READ WRITE inside a read-only transaction on a replica) is followed by the guard there; when
// that fails the session ends.
func (s *session) after(c *classify.Result, stmt []byte, d route.Decision) error {
	s.prev, s.last = s.last, routeInfo{valid: true, node: d.Node, reason: d.Reason}
	s.rs.LastNode = d.Node
	s.afterStatus()
	if s.failed {
		return nil
	}
	if c.Flags&classify.SetReadWrite != 0 && d.Node >= 0 {
		if conn := s.conns[d.Node]; conn != nil {
			if err := s.guard(conn); err != nil {
				// The client has its answer already; a replica that cannot be made
				// read-only again must not serve this session: it ends.
				return fmt.Errorf("node %s: restoring the read-only guard: %w", conn.name, err)
			}
		}
	}
	switch c.Kind {
	case classify.Set:
		s.recordSet(c, stmt)
	case classify.DDL:
		if c.Flags&classify.TempTable != 0 {
			if firstWordIs(stmt, "CREATE") {
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
		if containsFold(stmt, "RELEASE_ALL_LOCKS") {
			s.userLocks = 0
		} else if s.userLocks > 0 {
			s.userLocks--
		}
	}
	s.pin(route.PinGetLock, s.userLocks > 0)
	if c.Flags&classify.Multi != 0 && (s.rep.StrictMulti || multiLeavesState(c, stmt)) {
		s.pin(route.PinMulti, true)
	}
	return nil
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
	case c.Flags&(classify.UserVar|classify.UserVarAssign|classify.Multi|classify.SetAutocommit) != 0,
		c.Flags&replayable == 0, bytes.IndexByte(stmt, '(') >= 0, len(s.state) >= maxState:
		// User variables live where they were set; expressions may not give the same value
		// elsewhere: keep the session on the primary.
		s.pin(route.PinSet, true)
		return
	}
	s.state = append(s.state, append([]byte(nil), stmt...))
	if cur := s.conns[s.cur]; cur != nil {
		cur.applied = len(s.state)
	}
}

// resetState forgets the session state (COM_RESET_CONNECTION, COM_CHANGE_USER): other nodes'
// connections are closed and will be opened clean when needed.
func (s *session) resetState() {
	clear(s.stmts)
	s.kept = 0
	s.state = s.state[:0]
	s.begin = s.begin[:0]
	s.tempTables, s.userLocks = 0, 0
	bound := s.rs.Bound
	s.rs = route.NewSession()
	s.rs.Bound = bound
	for i, c := range s.conns {
		if c != nil && i != s.home {
			s.closeConn(i)
		}
	}
	if c := s.conns[s.home]; c != nil {
		c.applied = 0
	}
	s.updateKillTarget()
}

// multiLeavesState is the default rule for multi-statement batches: they run on the primary,
// and pin the session there when any statement in them may leave session state behind.
func multiLeavesState(c *classify.Result, stmt []byte) bool {
	switch c.Kind {
	case classify.Select, classify.Insert, classify.Update, classify.Delete, classify.Replace:
	default:
		return true
	}
	for _, w := range []string{"SET", "USE", "TEMPORARY", "LOCK", "PREPARE", "BEGIN", "START", "@", "AUTOCOMMIT", "XA"} {
		if containsFold(stmt, w) {
			return true
		}
	}
	return false
}

func containsFold(s []byte, upper string) bool {
	n := len(upper)
	for i := 0; i+n <= len(s); i++ {
		if eqFold(s[i:i+n], upper) {
			return true
		}
	}
	return false
}

// firstWordIs reports whether the statement's first word (after blanks and comments) is w.
func firstWordIs(stmt []byte, w string) bool {
	i := 0
	for i < len(stmt) {
		switch {
		case stmt[i] == ' ' || stmt[i] == '\t' || stmt[i] == '\n' || stmt[i] == '\r':
			i++
		case i+1 < len(stmt) && stmt[i] == '/' && stmt[i+1] == '*':
			end := bytes.Index(stmt[i+2:], []byte("*/"))
			if end < 0 {
				return false
			}
			i += end + 4
		default:
			return len(stmt)-i >= len(w) && eqFold(stmt[i:i+len(w)], w)
		}
	}
	return false
}

// proxyCommand answers /*PROXY_INTERNAL*/ statements.
func (s *session) proxyCommand(cmd classify.ProxyCommand) error {
	r := s.last
	node, role, reason := "", "", ""
	if r.valid {
		reason = r.reason.String()
		if r.node >= 0 {
			node, role = s.p.opts.Nodes[r.node].Name, s.p.opts.Nodes[r.node].Role
		} else {
			node, role = "sluice", "proxy"
		}
	}
	return s.writeResult([]string{"node", "role", "reason"}, [][]string{{node, role, reason}})
}

// writeResult sends a text result set of string columns built by sluice itself.
func (s *session) writeResult(cols []string, rows [][]string) error {
	b := s.scratch[:0]
	b = mysql.AppendLenEncInt(b, uint64(len(cols)))
	if err := s.client.WritePacket(b); err != nil {
		return err
	}
	for _, name := range cols {
		b = b[:0]
		b = mysql.AppendLenEncString(b, []byte("def"))
		b = mysql.AppendLenEncString(b, nil) // schema
		b = mysql.AppendLenEncString(b, nil) // table
		b = mysql.AppendLenEncString(b, nil) // org_table
		b = mysql.AppendLenEncString(b, []byte(name))
		b = mysql.AppendLenEncString(b, []byte(name))
		if s.mcaps&mysql.MariaDBClientExtendedMetadata != 0 {
			b = append(b, 0) // no extended type information
		}
		b = append(b, 0x0c, 45, 0, 0, 1, 0, 0, 0xfd, 0, 0, 0x27, 0, 0) // utf8mb4, length 256, VAR_STRING, decimals 39
		if err := s.client.WritePacket(b); err != nil {
			return err
		}
	}
	status := s.status &^ mysql.StatusMoreResultsExists
	if s.caps&mysql.ClientDeprecateEOF == 0 {
		if err := s.client.WritePacket(mysql.AppendEOF(b[:0], 0, status)); err != nil {
			return err
		}
	}
	for _, row := range rows {
		b = b[:0]
		for _, v := range row {
			b = mysql.AppendLenEncString(b, []byte(v))
		}
		if err := s.client.WritePacket(b); err != nil {
			return err
		}
	}
	if s.caps&mysql.ClientDeprecateEOF == 0 {
		b = mysql.AppendEOF(b[:0], 0, status)
	} else {
		b = mysql.AppendOK(b[:0], mysql.OK{Header: 0xfe, Status: status}, s.caps)
	}
	s.scratch = b
	if err := s.client.WritePacket(b); err != nil {
		return err
	}
	return s.client.Flush()
}
