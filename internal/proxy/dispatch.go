package proxy

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// One dispatch path for every statement a client sends, as text (COM_QUERY) or prepared
// (COM_STMT_EXECUTE, COM_STMT_BULK_EXECUTE):
//
//	route -> acquire the node connection -> sync session state -> deferred BEGIN ->
//	count active -> relay -> after-effects
//
// with a read that failed on a replica before any byte reached the client retried once on
// another replica, then on the primary (retry), and one function (fail) deciding what the
// client sees when it does not work out.

// request is one statement command on its way to a node.
type request struct {
	// class is held by value: the request's pointers (st) reach the heap, and a pointer here
	// would take the classification there with them, once per statement.
	class classify.Result
	stmt  []byte // the statement's text: FORCE_NODE's node name, after-effects
	// n is the command's payload length. When held, the command is in s.cmd and can be sent
	// again; otherwise it stays in the client's read buffer until it is sent (unread), and can
	// be sent only once.
	n      int
	held   bool
	unread bool
	st     *stmt // EXECUTE: the prepared statement
	bulk   bool  // COM_STMT_BULK_EXECUTE
	// kept: the last try used a connection the session already had (not one it opened for
	// it); renewed: a kept connection that failed was replaced once already.
	kept, renewed bool
	// redirected: the primary refused it as read-only once, and it went to the new one.
	redirected bool
	// await: before it runs on a replica, the replica must reach s.reads.target within waitFor (a
	// consistency level); otherwise it goes to the primary.
	await   bool
	waitFor time.Duration
}

// resendable reports whether the command can still be sent to another node.
func (r *request) resendable() bool { return r.held || r.unread }

// maxHeldStatement is the largest statement sluice holds whole to classify it; a larger one is
// routed by its head (hugeQuery).
const maxHeldStatement = 1 << 20

// query runs one COM_QUERY.
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
	return s.dispatch(&request{class: s.classify(stmt), stmt: stmt, n: n, held: true})
}

// hugeQuery routes and streams a statement too large to hold (over maxHeldStatement, or over
// one 16 MiB packet), of which sluice sees only the head (p: what the read buffer holds). What
// the rest says is unknown, so on a read-write endpoint it is routed as a statement sluice
// cannot classify: to the primary, opening a deferred transaction first, or where the session's
// transaction is; hints in the head count. A read-only endpoint has no primary to send it to
// and judges every statement by all of its text: it refuses the statement, unsent (a head
// that reads as one SELECT may hide anything behind an open comment or string).
func (s *session) hugeQuery(n int, p []byte) error {
	set := s.settings.current()
	if set.Mode == route.ReadOnly {
		return s.refuseCommand(n, mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
			"sluice: the read-only endpoint '%s' judges a statement by all of its text and holds at most %d bytes of it; this one is larger and was not run",
			s.ep.cfg.Name, maxHeldStatement))
	}
	s.cmd = append(s.cmd[:0], p...)
	defer s.releaseCmd()
	head := s.cmd[1:]
	c := s.classify(head)
	r := request{class: c, stmt: head, n: n, unread: true}
	if !isKill(&c) {
		r.class = classify.Result{Kind: classify.Unknown, Hint: c.Hint, NodeName: c.NodeName}
	}
	if err := s.dispatchWith(&r, set); err != nil || s.failed {
		return err
	}
	// What the rest of the statement did is unknown: when its head shows that it may leave
	// session state behind (a temporary table, a lock, a SET, a user variable...), the session
	// stays on the primary from now on.
	s.rs.LearnTruncated(&c)
	return nil
}

// releaseCmd lets go of a held statement's buffer when it was large, so that an idle session
// does not keep a megabyte.
func (s *session) releaseCmd() {
	if cap(s.cmd) > keepBuffer {
		s.cmd = nil
	}
}

// dispatch routes r, runs it, and learns from the outcome.
func (s *session) dispatch(r *request) error {
	return s.dispatchWith(r, s.settings.current())
}

// dispatchWith is dispatch under the endpoint's settings set: one version of them for the whole
// statement.
func (s *session) dispatchWith(r *request, set *route.Settings) error {
	if isKill(&r.class) {
		if handled, err := s.killStatement(r); handled {
			return err
		}
	}
	var switchDeadline time.Time // a switchover's wait, for the whole statement (switchover)
route:
	for {
		snap := s.p.topo.Snapshot()
		if snap.Draining != 0 {
			s.leaveDraining(set, snap)
		}
		if snap.Nodes[s.home] != s.homeNode || snap.IsRemoved(s.home) {
			s.leaveRemovedHome(set, snap)
		}
		if s.movesPrimary(set, snap) {
			var handled bool
			var err error
			if snap, handled, err = s.switchover(r, set, snap, &switchDeadline); handled {
				return err
			}
		}
		if s.rs.HasTarget {
			s.rs.HasTarget, s.rs.Reached = false, 0 // the last statement's
		}
		r.await = false
		var d route.Decision
		if set.Consistency != route.Eventual && route.MayReadReplica(&r.class, &s.rs, set, snap) {
			// Perhaps a replica read under a consistency level: what must it see, and who
			// has it? (Decided once: a policy's pick moves its state.)
			primary := snap.Primary // a copy: the closure must not take snap to the heap
			d, r.await = s.reads.decide(&r.class, r.stmt, &s.rs, set, snap, &readEnv{p: s.p, killed: s.life.done(), log: s.log},
				func() (*backend.Conn, error) {
					c, err := s.use(primary)
					if err != nil {
						return nil, err
					}
					return c.Conn, nil
				})
			r.waitFor = set.ConsistencyTimeout
		} else {
			d = route.Decide(&r.class, r.stmt, &s.rs, set, snap)
		}
		if d.EndTx {
			s.endReplicaTx()
		}
		if d.Err != nil || d.Local {
			if err := s.skip(r); err != nil {
				return err
			}
			if d.Err != nil {
				s.failed = true
				return s.writeErr(d.Err)
			}
			return s.localTransaction(r, d)
		}
		tries := 0
		for {
			err := s.send(r, d, snap)
			if err == nil {
				return s.after(&r.class, r.stmt, d, set)
			}
			var ro *primaryReadOnly
			if errors.As(err, &ro) && s.confirmReadOnly(d.Node) {
				// The primary went read-only before the monitor saw it: the statement did
				// nothing; it waits for the new primary (switchover) and goes there, once.
				r.redirected = true
				switchDeadline = time.Now().Add(s.p.opts.SwitchoverTimeout)
				s.p.topo.PrimaryReadOnly(d.Node)
				continue route
			}
			next, again := s.retry(r, d, err, &tries, set)
			if !again {
				return s.fail(d.Node, err, r)
			}
			d, snap = next, s.p.topo.Snapshot()
		}
	}
}

// skip drops a command that will not be sent (refused, or answered by sluice) from the
// client's buffer, and readies the answer's sequence id.
func (s *session) skip(r *request) error {
	if r.unread {
		r.unread = false
		if err := discardCommand(s.client, r.n); err != nil {
			return err
		}
	}
	s.client.SetSeq(1)
	return nil
}

// send runs r on the node d chose: acquire its connection (opened and brought in line with the
// session), open a deferred transaction there, count the statement active, relay.
func (s *session) send(r *request, d route.Decision, snap *topology.Snapshot) error {
	r.kept = d.Node < len(s.conns) && s.conns[d.Node] != nil
	c, err := s.use(d.Node)
	if err != nil {
		return err
	}
	pipelined := false
	if r.await && route.NeedsWait(d, &s.rs, snap) {
		// On every replica this read is tried on (a retry after a failure goes elsewhere, or
		// on a new connection): the position must be there before the read runs. A command
		// held whole goes in the same round trip as the wait (pipelinable).
		pipelined = pipelinable(r, s.cmd)
		if !pipelined {
			reached, err := awaitPosition(c.Conn, s.reads.waitStmt(c.Handshake.ServerVersion, r.waitFor), r.waitFor, s.p.connectTimeout())
			if err != nil {
				return err
			}
			if !reached {
				s.p.consistencyTimeouts.Add(1)
				return errNotReached
			}
		}
	}
	var b *stmtBinding
	if r.st != nil {
		if b, err = s.stmts.bindOn(c.Conn, c.idx, c.name, r.st); err != nil {
			return err
		}
	}
	if s.rs.TxPending && snap.IsPrimary(d.Node) {
		// Transaction splitting: the transaction opens on the primary at its first write.
		if err := c.Exec(string(s.begin)); err != nil {
			return err
		}
		s.rs.TxPending = false
	}
	if pipelined {
		// Last before the read: what came before (a PREPARE there) had its own answer read.
		if err := c.WriteQuery(s.reads.waitStmt(c.Handshake.ServerVersion, r.waitFor)); err != nil {
			return &relayError{err: err}
		}
		s.reads.sentWait(r.waitFor)
		defer s.reads.takeAwait() // forgotten when the command failed before its answer was read
	}
	load := snap.Load[d.Node]
	load.Active.Add(1)
	defer load.Active.Add(-1)
	s.redirect = s.mayRedirect(r, d.Node, snap)
	// A LOAD DATA LOCAL the client sent, as text or prepared (MariaDB prepares it: the file
	// request then answers COM_STMT_EXECUTE; r.stmt is the prepared text, kept with it).
	if r.class.Kind == classify.LoadData && r.class.Flags&(classify.LoadLocal|classify.Multi) == classify.LoadLocal {
		s.loadLocal, s.loadName = true, r.stmt[r.class.Name[0]:r.class.Name[1]]
	}
	defer func() { s.redirect, s.loadLocal, s.loadName = false, false, nil }()
	switch {
	case r.st != nil:
		kind, err := s.stmts.sendExecute(s.client, c.Conn, b, r, s.cmd)
		if kind == respCursor {
			s.usedCursor.Store(true) // a drain leaves this session's idle connections alone
		}
		if err != nil {
			return err
		}
		return s.relayTimed(c.Conn, kind)
	case r.held:
		return s.sendPacket(c.Conn, s.cmd, respResult)
	default:
		r.unread = false
		return s.forward(r.n, respResult)
	}
}

// sendPacket sends a command of one packet, held whole (p), to bc and relays the answer.
func (s *session) sendPacket(bc *backend.Conn, p []byte, kind respKind) error {
	bc.SetSeq(0)
	if err := bc.WritePacket(p); err != nil {
		return &relayError{err: err}
	}
	// Sent from inside the wait for the answer (saves a read that would find nothing).
	if err := bc.FlushBeforeRead(); err != nil {
		return &relayError{err: err}
	}
	s.client.SetSeq(bc.Seq())
	return s.relayTimed(bc, kind)
}

// retry decides, with route.Retry, whether r goes elsewhere after it failed on the node d chose
// (err), and where: a statement whose prepared form differs on a replica, or whose session state
// a replica refused, goes to the primary; a read whose replica failed before any byte of its
// answer reached the client goes to another replica once, then to the primary.
func (s *session) retry(r *request, d route.Decision, err error, tries *int, set *route.Settings) (route.Decision, bool) {
	snap := s.p.topo.Snapshot()
	var re *relayError
	var se *mysql.SQLError // both on the heap (errors.As): only after a failure
	f := route.Failed{Decision: d, Cause: route.CauseNode}
	switch {
	case !r.resendable() || s.responseStarted() || s.life.killed():
		f.Cause = route.CauseFinal
	case errors.Is(err, errNotReached):
		f.Cause = route.CauseNotReached
	case errors.Is(err, errShapeDiffers):
		f.Cause = route.CauseShape
	case errors.Is(err, errStateSync):
		f.Cause = route.CauseStateSync
	case errors.As(err, &re) && re.client:
		f.Cause = route.CauseFinal
	}
	f.Renewable = r.kept && !r.renewed && !errors.As(err, &se) && nodeFault(err)
	next, what := route.Retry(&s.rs, set, snap, f)
	switch what {
	case route.Stop:
		return d, false
	case route.Renew:
		// A connection the session kept from before broke: try the node again, once, on a
		// new one.
		r.renewed = true
		s.drop(d.Node)
		return d, true
	case route.Elsewhere:
		// A replica that failed is taken out of routing; one that answered with an error (it
		// refused the connection: too many connections, access denied there), cannot serve
		// this client (errCapsMismatch) or was removed meanwhile (errNodeGone) is not down.
		if nodeFault(err) && !errors.As(err, &se) {
			s.p.topo.NodeFailed(d.Node, unwrapRelay(err))
		}
		s.drop(d.Node)
		*tries++
		return route.Reroute(&r.class, r.stmt, &s.rs, set, s.p.topo.Snapshot(), *tries), true
	}
	return next, true
}

func unwrapRelay(err error) error {
	var re *relayError
	if errors.As(err, &re) {
		return re.err
	}
	return err
}

// fail decides what the client sees after a command failed on node i, and whether the session
// goes on (nil) or ends (an error). It is the one place that decides:
//   - the client's own connection broke: the session ends;
//   - the node answered with an error (it refused a deferred BEGIN, the statement's session
//     state, the statement's prepared form): the client gets that error, the session goes on;
//   - the node's connection broke or timed out: a node other than the session's home is
//     reported to the topology; the client gets error 2013 and the session goes on only when
//     nothing of the answer reached the client, the command was read whole, and the node held
//     neither the session's home state nor its transaction; otherwise its connection is closed,
//     as when a server dies under a client (nodeLost).
//
// r is the failed command (nil for one that was read whole): one still in the client's buffer
// is dropped before an error packet is written.
func (s *session) fail(i int, err error, r *request) error {
	partial, answered := false, false
	var re *relayError
	if errors.As(err, &re) {
		if re.client {
			return err
		}
		partial, answered, err = re.partial, re.answered, re.err
	}
	var se *mysql.SQLError
	switch {
	case partial:
	case errors.Is(err, errShapeDiffers):
		se = errNeedReprepare
	case errors.Is(err, errStateSync):
		se = mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: node %s refused this session's state", s.nodeOf(i).Name)
	case errors.As(err, &se):
	}
	if se != nil {
		return s.refuse(r, se)
	}
	s.node = s.nodeOf(i)
	s.drop(i)
	if s.life.killed() {
		return err // sluice closed it (shutdown, KILL): the node is fine
	}
	if answered {
		// The node refused the command in its middle and said why: the client has the node's
		// error; the rest of the command is unread, and the session ends, as directly.
		return err
	}
	if i != s.home && nodeFault(err) {
		s.p.topo.NodeFailed(i, err)
	}
	if i == s.home || partial || s.responseStarted() || (s.rs.InTx && s.rs.TxNode == i) {
		// The session's state or transaction lived there, part of the command is still
		// unread, or part of the answer reached the client: no error packet can stand for it.
		return s.nodeLost(err)
	}
	// Another node's connection broke before it answered: the client gets the error, and the
	// session, whose state lives on its home node, goes on.
	return s.refuse(r, mysql.NewError(mysql.CRServerLost, "HY000", "Lost connection to backend server '%s' during query", s.node.Name))
}

// refuseCommand answers a command (n: its payload length, still in the client's buffer) with an
// error packet. The session goes on.
func (s *session) refuseCommand(n int, se *mysql.SQLError) error {
	return s.refuse(&request{n: n, unread: true}, se)
}

// refuse answers the command r (nil: one read whole) with an error packet: what is left of it in
// the client's buffer is dropped first. The session goes on.
func (s *session) refuse(r *request, se *mysql.SQLError) error {
	if r != nil {
		if err := s.skip(r); err != nil {
			return err
		}
	} else {
		s.client.SetSeq(1)
	}
	s.failed = true
	return s.writeErr(se)
}

// nodeLost ends the session after the connection to a node broke where no error packet can
// tell the client: the client's connection is closed without a reply, exactly as when a server
// dies under a client, so its driver sees a broken connection (and its pool discards it) rather
// than a server error on a connection that looks healthy.
func (s *session) nodeLost(cause error) error {
	if errors.Is(cause, os.ErrDeadlineExceeded) {
		s.log.Warn("node did not answer within timeouts.read; closing the session", "node", s.node.Name, "timeout", s.p.opts.ReadTimeout)
	} else {
		s.log.Warn("lost connection to node", "node", s.node.Name, "err", cause)
	}
	return fmt.Errorf("node %s: %w", s.node.Name, cause)
}

// forward streams the client's command (n: its first packet's payload length, still in the
// client's buffer) to the session's current node and relays the response. A failure is
// returned for fail to map; one in the middle of the command is partial (the rest of it is
// still unread: the session cannot go on).
func (s *session) forward(n int, kind respKind) error {
	bc := s.bc
	for {
		if err := s.client.CopyPacket(bc.Conn, n); err != nil {
			var we *mysql.WriteError
			if errors.As(err, &we) {
				return s.nodeRefused(bc, we.Err)
			}
			return &relayError{client: true, err: err}
		}
		if n < mysql.MaxPacketPayload {
			break
		}
		var err error
		if n, _, err = s.client.PeekHeader(); err != nil {
			return &relayError{client: true, err: err}
		}
	}
	if err := bc.FlushBeforeRead(); err != nil {
		return &relayError{err: err}
	}
	return s.relayTimed(bc, kind)
}

// nodeRefused handles a write to the node that failed in the middle of a client's command. A
// server that refuses a command before reading all of it (a packet larger than its
// max_allowed_packet: error 1153) sends an ERR and closes the connection: the client gets that
// ERR, as directly, before its connection is closed. Otherwise the node's connection failed.
func (s *session) nodeRefused(bc *backend.Conn, cause error) error {
	_ = bc.NetConn().SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, seq, err := bc.PeekHeader(); err == nil && n < 4096 {
		if p, err := bc.PeekPayload(n, n); err == nil && mysql.IsERR(p) {
			s.client.SetSeq(seq)
			if err := s.client.WritePacketFlush(p); err == nil {
				s.log.Info("node refused the command and closed the connection", "node", s.node.Name, "err", mysql.ParseERR(p))
			}
			return &relayError{err: fmt.Errorf("node %s refused the command: %w", s.node.Name, mysql.ParseERR(p)), partial: true, answered: true}
		}
	}
	return &relayError{err: cause, partial: true}
}

// homeCommand runs a command that belongs to the session's home node (COM_PING,
// COM_INIT_DB, COM_FIELD_LIST, ...).
func (s *session) homeCommand(n int, kind respKind) error {
	c, err := s.use(s.home)
	if err != nil {
		return s.fail(s.home, err, &request{n: n, unread: true})
	}
	if err := s.forward(n, kind); err != nil {
		return s.fail(s.home, err, nil)
	}
	c.Adopt(&s.state)
	return nil
}

// endReplicaTx ends the read-only transaction the session holds on a replica, as the server
// would end it implicitly (a new transaction, SET autocommit): route.Decision.EndTx.
func (s *session) endReplicaTx() {
	i := s.rs.TxNode
	s.rs.InTx, s.rs.TxNode = false, -1
	if i < 0 || i >= len(s.conns) || s.conns[i] == nil {
		return
	}
	if err := s.conns[i].Exec("COMMIT"); err != nil {
		// It did not end there: the connection, whatever it holds, is not used again.
		s.log.Debug("ending a replica's read-only transaction failed; closing that connection", "node", s.conns[i].name, "err", err)
		if i != s.home {
			s.drop(i)
		}
	}
}

// localTransaction answers a BEGIN that transaction splitting defers, or the COMMIT/ROLLBACK of
// a transaction that never reached a node.
func (s *session) localTransaction(r *request, d route.Decision) error {
	s.view.routed(-1, d.Reason)
	status := s.status &^ (mysql.StatusInTrans | mysql.StatusMoreResultsExists)
	if r.class.Kind == classify.Begin {
		s.begin = append(s.begin[:0], r.stmt...)
		s.rs.TxPending = true
		status |= mysql.StatusInTrans
	} else {
		s.begin = s.begin[:0]
		s.rs.TxPending = false
	}
	s.status = status
	return s.writeOKPacket(status)
}
