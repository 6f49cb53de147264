package proxy

import (
	"errors"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Following the primary through a switchover. The topology names the primary from what the
// monitor sees (topology.ChoosePrimary); a session follows it between statements:
//
//   - While no node takes writes (Snapshot.Switching: the old primary went read-only, the new
//     one is not promoted yet), a statement for the primary waits for a snapshot with a new
//     primary, up to monitor.switchover_timeout, then fails with the read-only error the
//     server would have given ("no writable primary"). Only a node that replicated when the
//     switchover began may become the new primary (topology.ChoosePrimary): a replica detached
//     before, writable, is never given the writes; a primary writable again takes them back.
//   - A write the primary refuses as read-only, before the monitor saw the switchover, is not
//     shown to the client when it was an autocommit statement that can be sent again: the
//     topology is told, and the statement waits and goes to the new primary. (A read-only
//     refusal means the statement did nothing.)
//   - At its next statement, a session whose home is the old primary moves to the new one: its
//     old connection is closed, and the new one gets the session's state replayed
//     (backend.Conn.Sync) at first use. A transaction open on the old primary cannot move: it
//     is rolled back there and the client gets a clear error (never a half-commit). A session
//     with state that cannot be replayed (temporary tables, locks) cannot move either: it
//     ends with an error, as a server that went away would end it.
//   - On a read-only endpoint, a session bound to the replica that became the primary is bound
//     to another replica the same way.

// primaryReadOnly is the primary's refusal of a statement because it is read-only; see
// session.readOnlyRefusal.
type primaryReadOnly struct{ se *mysql.SQLError }

func (e *primaryReadOnly) Error() string { return e.se.Error() }
func (e *primaryReadOnly) Unwrap() error { return e.se }

// movesPrimary reports whether the session must look at the switchover before routing: a
// switchover under way, or a home that is no longer where it belongs. One comparison on the
// hot path.
func (s *session) movesPrimary(set *route.Settings, snap *topology.Snapshot) bool {
	if set.Mode == route.ReadOnly {
		return s.home == snap.Primary || s.faultyHome(snap)
	}
	return snap.Switching || s.home != snap.Primary
}

// faultyHome reports whether the session's home is a replica the monitor found errant or
// broken: a read-only endpoint's session leaves it as it would leave a node that went down.
func (s *session) faultyHome(snap *topology.Snapshot) bool {
	return s.home < len(snap.State) && snap.State[s.home].Faulty()
}

// switchover waits, when r needs the primary and none takes writes, for the new one (until
// *deadline, set on first use), then moves the session's home to where it belongs. handled:
// r was answered (an error), or the session ends (err).
func (s *session) switchover(r *request, set *route.Settings, snap *topology.Snapshot, deadline *time.Time) (_ *topology.Snapshot, handled bool, err error) {
	if snap.Switching && set.Mode != route.ReadOnly {
		if d := route.Decide(&r.class, r.stmt, &s.rs, set, snap); d.Err == nil && !d.Local && d.Node == snap.Primary {
			if deadline.IsZero() {
				*deadline = time.Now().Add(s.p.opts.SwitchoverTimeout)
			}
			var ok bool
			if snap, ok = s.awaitPrimary(snap, *deadline); !ok {
				return snap, true, s.refuse(r, mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
					"The MariaDB server is running with the --read-only option so it cannot execute this statement (sluice: no writable primary: %s no longer takes writes and no node that may replace it took them within monitor.switchover_timeout, %s)",
					snap.Nodes[snap.Primary].Name, s.p.opts.SwitchoverTimeout))
			}
		}
	}
	if set.Mode == route.ReadOnly {
		if (s.home == snap.Primary || s.faultyHome(snap)) && s.movable() {
			s.rebind(set, snap)
		}
		return snap, false, nil
	}
	if s.home == snap.Primary {
		return snap, false, nil
	}
	old := s.home
	switch {
	case s.inTxOn(old) || (s.rs.InTx && s.rs.TxNode == snap.Primary):
		// A transaction on the old primary, or a read-only one on the replica just promoted
		// (whose connection, opened read-only, cannot be the primary's).
		return snap, true, s.abortOldTx(r, snap)
	case s.rs.Pins != 0:
		s.log.Warn("the primary changed and this session's state (temporary tables, locks) cannot follow it: closing the session",
			"from", s.nodeOf(old).Name, "to", snap.Nodes[snap.Primary].Name)
		_ = s.refuse(r, mysql.NewError(mysql.ErrConnectionKilled, "70100",
			"sluice: the primary changed; this connection's temporary tables or locks stayed on the old one, so it is closed: reconnect"))
		return snap, true, errors.New("the primary changed under a pinned session")
	}
	if err := s.followPrimary(snap); err != nil {
		return snap, true, s.fail(snap.Primary, err, r)
	}
	return snap, false, nil
}

// followPrimary moves a session that holds nothing on its home node (no transaction, no pinned
// state) to the primary of snap, at once: its connection there is opened with the session's
// state, autocommit included (sessions that run with autocommit off, as PyMySQL's do, must not
// come out of a switchover in autocommit).
func (s *session) followPrimary(snap *topology.Snapshot) error {
	s.moveHome(snap.Primary)
	s.rs.LastNode = -1
	if s.rs.Autocommit {
		return nil // opened at first use
	}
	c, err := s.use(snap.Primary)
	if err == nil {
		err = c.Exec("SET autocommit=0")
	}
	if err != nil {
		s.drop(snap.Primary)
	}
	return err
}

// followBetween moves the session to where it belongs before a command that is not a
// statement (COM_PING, COM_INIT_DB, COM_STMT_PREPARE, ...), when it holds nothing where it is;
// a session that does waits for its next statement (switchover), which says why it cannot.
func (s *session) followBetween() error {
	snap := s.p.topo.Snapshot()
	set := s.settings.current()
	if snap.Draining != 0 {
		s.leaveDraining(set, snap)
	}
	if snap.Nodes[s.home] != s.homeNode || snap.IsRemoved(s.home) {
		s.leaveRemovedHome(set, snap)
	}
	if !s.movesPrimary(set, snap) || !s.movable() || (s.rs.InTx && s.rs.TxNode == snap.Primary) {
		return nil
	}
	if set.Mode == route.ReadOnly {
		s.rebind(set, snap)
		return nil
	}
	if s.home == snap.Primary {
		return nil // switching: the command itself does not write
	}
	return s.followPrimary(snap)
}

// awaitPrimary waits until a snapshot has a primary that takes writes, or deadline; ok reports
// which.
func (s *session) awaitPrimary(snap *topology.Snapshot, deadline time.Time) (_ *topology.Snapshot, ok bool) {
	for snap.Switching {
		wait := time.Until(deadline)
		if wait <= 0 || s.life.killed() {
			return snap, false
		}
		t := time.NewTimer(wait)
		select {
		case <-snap.Changed():
		case <-t.C:
		case <-s.life.done():
		}
		t.Stop()
		snap = s.p.topo.Snapshot()
	}
	return snap, true
}

// movable reports whether the session holds nothing on its home node that another node could
// not be given: no transaction, no pinned state.
func (s *session) movable() bool { return !s.inTxOn(s.home) && s.rs.Pins == 0 }

// inTxOn reports whether a transaction is open on node i's connection.
func (s *session) inTxOn(i int) bool {
	if s.rs.InTx && s.rs.TxNode == i {
		return true
	}
	return i < len(s.conns) && s.conns[i] != nil && s.conns[i].Status&mysql.StatusInTrans != 0
}

// moveHome makes node i the session's home; the old home's connection is closed (whatever it
// holds, the server drops), and i's is opened at first use, with the session's state. A
// connection the session had to i as a replica is closed too when i is now the primary: it
// was opened read-only.
func (s *session) moveHome(i int) {
	s.room(i) // i may be a node added since the session began
	old := s.home
	s.log.Info("moving the session", "from", s.homeNode.Name, "to", s.nodeOf(i).Name)
	s.home, s.homeNode = i, s.nodeOf(i)
	s.drop(old)
	if s.p.topo.Snapshot().IsPrimary(i) {
		s.drop(i)
	}
	if s.cur == old {
		s.cur, s.node, s.bc = i, s.nodeOf(i), nil
		if c := s.conns[i]; c != nil {
			s.bc = c.Conn
		}
	}
}

// rebind moves a read-only endpoint's session to a replica the endpoint's policy picks: off a
// node that became the primary, is being drained, or was removed (none: it stays, its
// connection still read-only).
func (s *session) rebind(set *route.Settings, snap *topology.Snapshot) {
	// The same slot is a move too when another node holds it now (its node was removed).
	if i := route.BindReplica(&s.rs, set, snap); i >= 0 && (i != s.home || snap.Nodes[i] != s.homeNode) {
		s.rs.Bound = i
		s.moveHome(i)
	}
}

// abortOldTx ends the transaction the session had open across the switchover (on the old
// primary, or read-only on the replica promoted): it is rolled back there (its connection is
// closed), and the client is told so, unless it asked to roll back anyway. The session then
// belongs to the new primary (followPrimary: with autocommit off, that is replayed there).
func (s *session) abortOldTx(r *request, snap *topology.Snapshot) error {
	s.log.Warn("the primary changed during a transaction: rolled back", "from", s.nodeOf(s.home).Name, "to", snap.Nodes[snap.Primary].Name)
	s.rs.InTx, s.rs.TxNode, s.rs.TxPending, s.rs.LastNode = false, -1, false, -1
	s.begin = s.begin[:0]
	if err := s.followPrimary(snap); err != nil {
		return s.fail(snap.Primary, err, r)
	}
	s.status &^= mysql.StatusInTrans
	if r.class.Kind == classify.Rollback {
		if err := s.skip(r); err != nil {
			return err
		}
		return s.writeOKPacket(s.status)
	}
	return s.refuse(r, mysql.NewError(mysql.ErrLockDeadlock, "40001",
		"sluice: the primary changed (switchover) while this transaction was open; it was rolled back: retry the transaction"))
}

// mayRedirect reports whether a read-only refusal from node i of statement r can be kept from
// the client and r sent to the new primary: i is the primary, the monitor runs (it will name
// the new one), r is held whole (a streamed one is gone once sent), was not redirected before,
// is one plain statement that a refusal leaves undone (INSERT, UPDATE, DELETE, REPLACE, DDL:
// not a CALL, an EXECUTE of SQL text, a batch, anything unclassified, whose earlier parts may
// have run), and no transaction is open (the statement is all there is to redo).
func (s *session) mayRedirect(r *request, i int, snap *topology.Snapshot) bool {
	switch r.class.Kind {
	case classify.Insert, classify.Update, classify.Delete, classify.Replace, classify.DDL:
	default:
		return false
	}
	return r.class.Flags&classify.Multi == 0 && !r.redirected && r.held && snap.IsPrimary(i) &&
		snap.State[i] != nil && !s.rs.TxPending && s.rs.Autocommit && !s.inTxOn(i)
}

// confirmReadOnly asks node i, over the session's connection that got a read-only refusal,
// whether it is read-only indeed: a refusal can also be raised by the application (SIGNAL
// ... MYSQL_ERRNO = 1290 in a trigger), which must not start a switchover for every client.
// MariaDB enforces read_only before @@global.read_only reads 1 (SET GLOBAL read_only=1 first
// refuses the writers it held, then sets the variable): the question is asked again for up to
// confirmReadOnlyFor before the answer counts as no.
func (s *session) confirmReadOnly(i int) bool {
	deadline := time.Now().Add(confirmReadOnlyFor)
	for {
		if i >= len(s.conns) || s.conns[i] == nil {
			return false
		}
		rows, err := s.conns[i].Query("SELECT @@global.read_only")
		if err != nil || len(rows.Values) != 1 || len(rows.Values[0]) != 1 {
			return false
		}
		if rows.Values[0][0].S == "1" {
			return true
		}
		if time.Now().After(deadline) || s.life.killed() {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// confirmReadOnlyFor bounds confirmReadOnly's wait for the variable to follow the refusal.
const confirmReadOnlyFor = 200 * time.Millisecond

// readOnlyRefusal reads an ERR (payload length n, first packet of the answer, nothing sent to
// the client yet) when it is the primary's read-only refusal and the statement may go
// elsewhere (s.redirect): the client does not get it, the caller gets a *primaryReadOnly.
func (s *session) readOnlyRefusal(bc *backend.Conn, n int) error {
	if !s.redirect || s.responseStarted() || n > 1024 {
		return nil
	}
	p, err := bc.PeekPayload(n, n)
	if err != nil || len(p) < 3 || uint16(p[1])|uint16(p[2])<<8 != mysql.ErrOptionPreventsStm {
		return nil
	}
	se := mysql.ParseERR(p)
	if !strings.Contains(se.Message, "read-only") && !strings.Contains(se.Message, "read_only") {
		return nil // another option (--secure-file-priv, ...): the statement itself is refused
	}
	if err := bc.Discard(4 + n); err != nil {
		return fromNode(err)
	}
	return &primaryReadOnly{se: se}
}
