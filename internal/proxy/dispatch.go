package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
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
	// The try under way (set by send): redirect, the primary's read-only refusal may be
	// redirected (mayRedirect); infile, it is a LOAD DATA LOCAL the client sent, whose file a
	// node's LOCAL INFILE request may name (relay.Options).
	redirect, infile bool
	// await: before it runs on a replica, the replica must reach s.reads.target within waitFor (a
	// consistency level); otherwise it goes to the primary.
	await   bool
	waitFor time.Duration
	// flight is the node connection's flight, armed while the try under way may be
	// interrupted (its node found down before its answer arrived) and sent elsewhere
	// (inflight.go); nil otherwise. Set by send, ended by land.
	flight *relay.Flight
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
	defer releaseBuf(&s.cmd)
	s.client.SetSeq(1)
	stmt := s.cmd[1:]
	if cmd, ok := classify.IsProxyInternal(stmt); ok {
		return s.proxyCommand(cmd)
	}
	c := s.classify(stmt)
	if c.Flags&classify.ConnectionID != 0 {
		// SELECT CONNECTION_ID() alone is the session's sluice id, the one KILL takes
		// (kill.go), whichever node would run it.
		if name, ok := classify.SelectsConnectionID(stmt); ok {
			s.view.routed(-1, route.ReasonSessionFunction)
			b, err := writeIDResult(s.client, s.client.Scratch(), resultFormat{caps: s.login.caps, mcaps: s.login.mcaps, status: s.status}, stmt[name[0]:name[1]], s.id)
			keepScratch(s.client, b)
			return err
		}
	}
	return s.dispatch(&request{class: c, stmt: stmt, n: n, held: true}, s.settings.current())
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
		return s.refuse(&request{n: n, unread: true}, mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
			"sluice: the read-only endpoint '%s' judges a statement by all of its text and holds at most %d bytes of it; this one is larger and was not run",
			s.ep.cfg.Name, maxHeldStatement))
	}
	s.cmd = append(s.cmd[:0], p...)
	defer releaseBuf(&s.cmd)
	head := s.cmd[1:]
	c := s.classify(head)
	r := request{class: c, stmt: head, n: n, unread: true}
	if !isKill(&c) {
		r.class = classify.Result{Kind: classify.Unknown, Hint: c.Hint, NodeName: c.NodeName}
	}
	if err := s.dispatch(&r, set); err != nil || s.resp.Failed {
		return err
	}
	// What the rest of the statement did is unknown: when its head shows that it may leave
	// session state behind (a temporary table, a lock, a SET, a user variable...), the session
	// stays on the primary from now on.
	s.rs.LearnTruncated(&c)
	return nil
}

// releaseBuf lets go of a held statement's buffer when it was large, so that an idle session
// does not keep a megabyte.
func releaseBuf(b *[]byte) {
	if cap(*b) > keepBuffer {
		*b = nil
	}
}

// dispatch routes r, runs it, and learns from the outcome, under the endpoint's settings set:
// one version of them for the whole statement.
func (s *session) dispatch(r *request, set *route.Settings) error {
	if isKill(&r.class) {
		if handled, err := s.killStatement(r); handled {
			return err
		}
	}
	if sh := &s.nodes.share; sh.linger && !keepsLinger(&r.class) {
		// pool_mode transaction: the last statement's ROW_COUNT()/FOUND_ROWS() held its
		// connection for this one, which does not read them.
		sh.linger = false
		s.p.lendBetween(&s.nodes, &s.login, s.ep.pool.Load(), &s.rs, &s.stmts)
	}
	var switchDeadline time.Time // a switchover's wait, for the whole statement (switchover)
route:
	for {
		snap := s.p.topo.Snapshot()
		s.nodes.leave(&s.rs, set, snap)
		if s.nodes.movesPrimary(set, snap) {
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
					c, err := s.nodes.use(primary)
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
			if err := r.skip(s.client); err != nil {
				return err
			}
			if d.Err != nil {
				s.resp.Failed, s.resp.Code = true, d.Err.Code
				return writeErr(s.client, d.Err)
			}
			return s.localTransaction(r, d)
		}
		tries := 0
		for {
			err := s.send(r, d, snap)
			if r.flight != nil {
				err = r.land(err)
			}
			if err == nil {
				return s.after(&r.class, r.stmt, d, set)
			}
			var ro *relay.ReadOnlyError
			if errors.As(err, &ro) && confirmReadOnly(s.nodes.at(d.Node), s.life.done()) {
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
// client's buffer c, and readies the answer's sequence id.
func (r *request) skip(c *mysql.Conn) error {
	if r.unread {
		r.unread = false
		if err := discardCommand(c, r.n); err != nil {
			return err
		}
	}
	c.SetSeq(1)
	return nil
}

// send runs r on the node d chose: acquire its connection (opened and brought in line with the
// session), open a deferred transaction there, count the statement active, relay.
func (s *session) send(r *request, d route.Decision, snap *topology.Snapshot) error {
	kept := s.nodes.at(d.Node)
	r.kept = kept != nil
	// A read that may run elsewhere: the watcher may cut its waits on the node short (the
	// session state's replay, the statement's PREPARE there, a consistency wait, its answer
	// until the first packet) when the node is found down (inflight.go). Armed on a kept
	// connection before it is brought in line, on a new one once it is open.
	interruptible := r.held && route.Interruptible(d, snap) && !s.nodes.inTxOn(d.Node, &s.rs)
	if interruptible && kept != nil {
		if !s.nodes.arm(kept) {
			return &relay.Error{Err: errNodeDown}
		}
		r.flight = &kept.flight
	}
	c, err := s.nodes.use(d.Node)
	if err != nil {
		return err
	}
	if err := s.nodes.share.before(&r.class, r.stmt, c.dialect, c.Conn, snap.IsPrimary(d.Node) || s.settings.current().Mode == route.ReadOnly, s.rs.Autocommit); err != nil {
		return err
	}
	if interruptible && c != kept {
		if r.flight != nil && r.flight.Disarm() {
			// Replaced meanwhile (ErrDiverged), and the node found down while it was.
			return &relay.Error{Err: errNodeDown}
		}
		if r.flight = nil; !s.nodes.arm(c) {
			return &relay.Error{Err: errNodeDown}
		}
		r.flight = &c.flight
	}
	pipelined := false
	// Whether this try waits, and for how long: r's own fields stay as they are, for a retry
	// on another node.
	await, waitFor := r.await && route.NeedsWait(d, &s.rs, snap) && !s.reads.seenOn(s.p.opts.Positions, d.Node), r.waitFor
	if await {
		// Another session's wait for as much in flight there is followed, not repeated.
		await, waitFor = s.reads.joinWait(s.p.opts.Positions, d.Node, waitFor, s.life.done())
		defer s.reads.endFlight(s.p.opts.Positions) // led and never answered: the followers wake
	}
	if await {
		// On every replica this read is tried on (a retry after a failure goes elsewhere, or
		// on a new connection): the position must be there before the read runs. A command
		// held whole goes in the same round trip as the wait (pipelinable).
		pipelined = pipelinable(r, s.cmd)
		if !pipelined {
			reached, err := awaitPosition(c.Conn, s.reads.waitStmt(c.Handshake.ServerVersion, waitFor), waitFor, s.p.connectTimeout())
			if err != nil {
				return err
			}
			if !reached {
				s.p.consistencyTimeouts.Add(1)
				return errNotReached
			}
			s.reads.confirmed(s.p.opts.Positions)
		}
	}
	var b *stmtBinding
	if r.st != nil {
		if b, err = s.stmts.bindOn(c.Conn, c.idx, c.name, stmtContext(c.Conn, s.nodes.state()), r.st); err != nil {
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
		if err := c.WriteQuery(s.reads.waitStmt(c.Handshake.ServerVersion, waitFor)); err != nil {
			return &relay.Error{Err: err}
		}
		s.reads.sentWait(waitFor)
		defer s.reads.takeAwait() // forgotten when the command failed before its answer was read
	}
	load := snap.Load[d.Node]
	load.Active.Add(1)
	defer load.Active.Add(-1)
	r.redirect = mayRedirect(r, &s.rs, s.nodes.inTxOn(d.Node, &s.rs), d.Node, snap)
	// A LOAD DATA LOCAL the client sent, as text or prepared (MariaDB prepares it: the file
	// request then answers COM_STMT_EXECUTE; r.stmt is the prepared text, kept with it).
	r.infile = r.class.Kind == classify.LoadData && r.class.Flags&(classify.LoadLocal|classify.Multi) == classify.LoadLocal
	kind := relay.Statement
	switch {
	case r.st != nil:
		var err error
		kind, err = s.stmts.sendExecute(s.client, c.Conn, b, r, s.cmd)
		if kind == relay.Cursor {
			s.nodes.noteCursor() // a drain leaves this session's idle connections alone
		}
		if err != nil {
			return err
		}
	case r.held:
		if err := relay.Send(s.client, c.Conn, s.cmd); err != nil {
			return err
		}
	default:
		r.unread = false
		if err := relay.Forward(s.client, c.Conn, r.n); err != nil {
			return err
		}
	}
	return s.respond(c.Conn, kind, r)
}

// respond relays bc's answer to the command just sent to it (relay.Send, relay.Forward, or a
// statement command streamed with its id rewritten), after the answer to a wait pipelined
// ahead of it (pipelinedWait), and applies what the relay saw. r is the statement whose try
// it is (nil for another command): it says whether the primary's read-only refusal may be
// redirected and which file a LOCAL INFILE request may name.
func (s *session) respond(bc *backend.Conn, kind relay.Kind, r *request) error {
	if wait, ok := s.reads.takeAwait(); ok {
		// The wait for the read's position went first: its answer decides whether the read's
		// answer goes to the client or is dropped (the read then runs on the primary).
		if err := awaitAnswer(bc, wait+s.p.connectTimeout(), &s.p.consistencyTimeouts); err != nil {
			return err
		}
		s.reads.confirmed(s.p.opts.Positions)
	}
	opt := relay.Options{
		ClientCaps:  s.login.caps,
		ReadTimeout: s.p.opts.ReadTimeout,
		TxPending:   s.rs.TxPending,
		Stall:       s.watch.stallLimit(),
		Log:         s.log,
		Observer:    s,
	}
	if n := s.nodes.node(); n != nil {
		opt.Node = n.Name
	}
	if r != nil {
		opt.Flight = r.flight
		opt.Redirect = r.redirect && !s.responseStarted()
		if r.infile {
			opt.Infile, opt.InfileName = true, r.stmt[r.class.Name[0]:r.class.Name[1]]
		}
	}
	s.reads.newResponse()
	s.nodes.share.varsReported = false // what this answer reports (OK), for share.learn
	res, err := relay.Response(s.client, bc, kind, &opt)
	if res.StatusSeen {
		s.status = res.Status
	}
	closing := s.resp.NodeClosing
	s.resp = res
	s.resp.NodeClosing = res.NodeClosing || closing // kept until the command ends (loop)
	return err
}

// retry decides, with route.Retry, whether r goes elsewhere after it failed on the node d chose
// (err), and where: a statement whose prepared form differs on a replica, or whose session state
// a replica refused, goes to the primary; a read whose replica failed before any byte of its
// answer reached the client goes to another replica once, then to the primary.
func (s *session) retry(r *request, d route.Decision, err error, tries *int, set *route.Settings) (route.Decision, bool) {
	snap := s.p.topo.Snapshot()
	var re *relay.Error
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
	case errors.As(err, &re) && re.Client:
		f.Cause = route.CauseFinal
	case errors.Is(err, errNodeDown):
		f.Cause = route.CauseDown
	}
	// A kept connection that broke may have been closed idle: renewed once. One that timed
	// out (timeouts.read) says the node did not answer: a new connection there would wait too.
	f.Renewable = r.kept && !r.renewed && !errors.As(err, &se) && nodeFault(err) && !errors.Is(err, os.ErrDeadlineExceeded)
	next, what := route.Retry(&s.rs, set, snap, f)
	switch what {
	case route.Stop:
		return d, false
	case route.Renew:
		// A connection the session kept from before broke: try the node again, once, on a
		// new one.
		r.renewed = true
		s.nodes.drop(d.Node)
		return d, true
	case route.Elsewhere:
		// A replica that failed is taken out of routing; one that answered with an error (it
		// refused the connection: too many connections, access denied there), cannot serve
		// this client (errCapsMismatch) or was removed meanwhile (errNodeGone) is not down.
		// One found down (CauseDown) the topology knows of already: a new report would only
		// put off its return.
		if f.Cause != route.CauseDown && nodeFault(err) && !errors.As(err, &se) {
			s.p.topo.NodeFailed(d.Node, unwrapRelay(err))
		}
		s.nodes.drop(d.Node)
		*tries++
		return route.Reroute(&r.class, r.stmt, &s.rs, set, s.p.topo.Snapshot(), *tries), true
	}
	return next, true
}

func unwrapRelay(err error) error {
	var re *relay.Error
	if errors.As(err, &re) {
		return re.Err
	}
	return err
}

// fail decides what the client sees after a command failed on node i, and whether the session
// goes on (nil) or ends (an error). It is the one place that decides:
//   - the client's own connection broke: the session ends;
//   - the node answered with an error (it refused a deferred BEGIN, the statement's session
//     state, the statement's prepared form): the client gets that error, the session goes on;
//   - the node's connection broke or timed out: a node other than the session's home is
//     reported to the topology; the client gets error 1927 (errNodeLostInQuery) and the
//     session goes on only when nothing of the answer reached the client, the command was read
//     whole, and the node held neither the session's home state nor its transaction;
//     otherwise its connection is closed, as when a server dies under a client (nodeLost).
//
// r is the failed command (nil for one that was read whole): one still in the client's buffer
// is dropped before an error packet is written.
func (s *session) fail(i int, err error, r *request) error {
	partial, answered := false, false
	var re *relay.Error
	if errors.As(err, &re) {
		if re.Client {
			return err
		}
		partial, answered, err = re.Partial, re.Answered, re.Err
	}
	var se *mysql.SQLError
	switch {
	case partial:
	case errors.Is(err, errShapeDiffers):
		se = errNeedReprepare
	case errors.Is(err, errStateSync):
		se = mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: node %s refused this session's state", s.p.nodeOf(i).Name)
	case errors.As(err, &se):
	}
	if se != nil {
		return s.refuse(r, se)
	}
	s.nodes.dropFailed(i)
	if s.life.killed() {
		return err // sluice closed it (shutdown, KILL): the node is fine
	}
	if answered {
		// The node refused the command in its middle and said why: the client has the node's
		// error; the rest of the command is unread, and the session ends, as directly.
		s.log.Info("node refused the command and closed the connection", "node", s.p.nodeOf(i).Name, "err", err)
		return fmt.Errorf("node %s: %w", s.p.nodeOf(i).Name, err)
	}
	if i != s.nodes.home() && nodeFault(err) {
		s.p.topo.NodeFailed(i, err)
	}
	if i == s.nodes.home() || partial || s.responseStarted() || (s.rs.InTx && s.rs.TxNode == i) {
		// The session's state or transaction lived there, part of the command is still
		// unread, or part of the answer reached the client: no error packet can stand for it.
		return nodeLost(s.log, s.p.nodeOf(i).Name, s.p.opts.ReadTimeout, err)
	}
	// Another node's connection broke before it answered: the client gets the error, and the
	// session, whose state lives on its home node, goes on.
	// (Node i's name: the session's current node is still the last one that answered when
	// the write to i is what failed.)
	return s.refuse(r, errNodeLostInQuery(s.p.nodeOf(i).Name))
}

// errNodeLostInQuery is the error for a statement whose node connection broke before it
// answered, on a node other than the session's home: 1927 ER_CONNECTION_KILLED with the
// server's own SQLSTATE 70100, as MariaDB answers a statement whose connection was killed. Not
// 2013: that is the client library's own code, which
// libmariadb refuses in an ERR packet; and not an 08 state, which drivers take for a broken
// client connection, while this one goes on.
func errNodeLostInQuery(node string) *mysql.SQLError {
	return mysql.NewError(mysql.ErrConnectionKilled, "70100", "Lost connection to backend server '%s' during query", node)
}

// refuse answers the command r (nil: one read whole) with an error packet: what is left of it in
// the client's buffer is dropped first. The session goes on.
func (s *session) refuse(r *request, se *mysql.SQLError) error {
	if r != nil {
		if err := r.skip(s.client); err != nil {
			return err
		}
	} else {
		s.client.SetSeq(1)
	}
	s.resp.Failed, s.resp.Code = true, se.Code
	return writeErr(s.client, se)
}

// nodeLost ends the session after the connection to a node broke where no error packet can
// tell the client: the client's connection is closed without a reply, exactly as when a server
// dies under a client, so its driver sees a broken connection (and its pool discards it) rather
// than a server error on a connection that looks healthy.
func nodeLost(log *slog.Logger, node string, readTimeout time.Duration, cause error) error {
	if errors.Is(cause, os.ErrDeadlineExceeded) {
		log.Warn("node did not answer within timeouts.read; closing the session", "node", node, "timeout", readTimeout)
	} else {
		log.Warn("lost connection to node", "node", node, "err", cause)
	}
	return fmt.Errorf("node %s: %w", node, cause)
}

// homeCommand runs a command that belongs to the session's home node (COM_PING,
// COM_INIT_DB, COM_FIELD_LIST, ...).
func (s *session) homeCommand(n int, kind relay.Kind) error {
	c, err := s.nodes.use(s.nodes.home())
	if err != nil {
		return s.fail(s.nodes.home(), err, &request{n: n, unread: true})
	}
	if err := relay.Forward(s.client, c.Conn, n); err != nil {
		return s.fail(s.nodes.home(), err, nil)
	}
	if err := s.respond(c.Conn, kind, nil); err != nil {
		return s.fail(s.nodes.home(), err, nil)
	}
	c.Adopt(s.nodes.state())
	return nil
}

// endReplicaTx ends the read-only transaction the session holds on a replica, as the server
// would end it implicitly (a new transaction, SET autocommit): route.Decision.EndTx.
func (s *session) endReplicaTx() {
	i := s.rs.TxNode
	s.rs.InTx, s.rs.TxNode = false, -1
	c := s.nodes.at(i)
	if c == nil {
		return
	}
	if err := c.Exec("COMMIT"); err != nil {
		// It did not end there: the connection, whatever it holds, is not used again.
		s.log.Debug("ending a replica's read-only transaction failed; closing that connection", "node", c.name, "err", err)
		if i != s.nodes.home() {
			s.nodes.drop(i)
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
	return writeOK(s.client, status, s.login.caps)
}
