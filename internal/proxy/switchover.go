package proxy

import (
	"errors"
	"time"

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
//     to another replica the same way; so is one bound to a replica unfit for the endpoint's
//     reads for any other reason (route.Unfit: down, draining, removed, errant or broken,
//     detached, past max_replica_lag), where nothing holds it (rebind; bind.go in route says
//     what happens when no replica is fit).

// movesPrimary reports whether the session must look at the switchover before routing: a
// switchover under way, or a home that is no longer where it belongs (on a read-only endpoint:
// a node unfit for the endpoint's reads, route.Unfit, the primary included). One comparison
// on the hot path (Unfit is computed once per snapshot and endpoint).
func (ns *nodeSet) movesPrimary(set *route.Settings, snap *topology.Snapshot) bool {
	if set.Mode == route.ReadOnly {
		return ns.homeIdx < topology.MaxNodes && route.Unfit(set, snap)&(1<<ns.homeIdx) != 0
	}
	return snap.Switching || ns.homeIdx != snap.Primary
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
			if snap, ok = awaitPrimary(s.p.topo, snap, *deadline, s.life.done()); !ok {
				return snap, true, s.refuse(r, mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
					"The MariaDB server is running with the --read-only option so it cannot execute this statement (sluice: no writable primary: %s no longer takes writes and no node that may replace it took them within monitor.switchover_timeout, %s)",
					snap.Nodes[snap.Primary].Name, s.p.opts.SwitchoverTimeout))
			}
		}
	}
	if set.Mode == route.ReadOnly {
		if s.nodes.mayRebind(&s.rs) {
			s.nodes.rebind(&s.rs, set, snap)
		}
		return snap, false, nil
	}
	old := s.nodes.home()
	if old == snap.Primary {
		return snap, false, nil
	}
	switch {
	case s.nodes.inTxOn(old, &s.rs) || (s.rs.InTx && s.rs.TxNode == snap.Primary):
		// A transaction on the old primary, or a read-only one on the replica just promoted
		// (whose connection, opened read-only, cannot be the primary's): it is rolled back
		// there (its connection is closed), and the client is told so, unless it asked to
		// roll back anyway. The session then belongs to the new primary (followPrimary: with
		// autocommit off, that is replayed there).
		s.log.Warn("the primary changed during a transaction: rolled back", "from", s.p.nodeOf(old).Name, "to", snap.Nodes[snap.Primary].Name)
		s.rs.InTx, s.rs.TxNode, s.rs.TxPending, s.rs.LastNode = false, -1, false, -1
		s.begin = s.begin[:0]
		if err := s.nodes.followPrimary(&s.rs, snap); err != nil {
			return snap, true, s.fail(snap.Primary, err, r)
		}
		s.status &^= mysql.StatusInTrans
		if r.class.Kind == classify.Rollback {
			if err := r.skip(s.client); err != nil {
				return snap, true, err
			}
			return snap, true, writeOK(s.client, s.status, s.login.caps)
		}
		return snap, true, s.refuse(r, mysql.NewError(mysql.ErrLockDeadlock, "40001",
			"sluice: the primary changed (switchover) while this transaction was open; it was rolled back: retry the transaction"))
	case s.rs.Pins != 0:
		s.log.Warn("the primary changed and this session's state (temporary tables, locks) cannot follow it: closing the session",
			"from", s.p.nodeOf(old).Name, "to", snap.Nodes[snap.Primary].Name)
		_ = s.refuse(r, mysql.NewError(mysql.ErrConnectionKilled, "70100",
			"sluice: the primary changed; this connection's temporary tables or locks stayed on the old one, so it is closed: reconnect"))
		return snap, true, errors.New("the primary changed under a pinned session")
	}
	if err := s.nodes.followPrimary(&s.rs, snap); err != nil {
		return snap, true, s.fail(snap.Primary, err, r)
	}
	return snap, false, nil
}

// followPrimary moves a session that holds nothing on its home node (no transaction, no pinned
// state) to the primary of snap, at once: its connection there is opened with the session
// state, autocommit included (sessions that run with autocommit off, as PyMySQL's do, must not
// come out of a switchover in autocommit).
func (ns *nodeSet) followPrimary(rs *route.Session, snap *topology.Snapshot) error {
	ns.moveHome(snap.Primary)
	rs.LastNode = -1
	if rs.Autocommit {
		return nil // opened at first use
	}
	c, err := ns.use(snap.Primary)
	if err == nil {
		err = c.Exec("SET autocommit=0")
	}
	if err != nil {
		ns.drop(snap.Primary)
	}
	return err
}

// follow moves the session to where it belongs before a command that is not a statement
// (COM_PING, COM_INIT_DB, COM_STMT_PREPARE, ...), when it holds nothing where it is; a session
// that does waits for its next statement (session.switchover), which says why it cannot.
func (ns *nodeSet) follow(rs *route.Session, set *route.Settings, snap *topology.Snapshot) error {
	ns.leave(rs, set, snap)
	if !ns.movesPrimary(set, snap) || !ns.movable(rs) || (rs.InTx && rs.TxNode == snap.Primary) {
		return nil
	}
	if set.Mode == route.ReadOnly {
		if ns.mayRebind(rs) {
			ns.rebind(rs, set, snap)
		}
		return nil
	}
	if ns.homeIdx == snap.Primary {
		return nil // switching: the command itself does not write
	}
	return ns.followPrimary(rs, snap)
}

// awaitPrimary waits until a snapshot of topo has a primary that takes writes, or deadline, or
// stop is closed; ok reports which.
func awaitPrimary(topo Topology, snap *topology.Snapshot, deadline time.Time, stop <-chan struct{}) (_ *topology.Snapshot, ok bool) {
	for snap.Switching {
		wait := time.Until(deadline)
		if wait <= 0 {
			return snap, false
		}
		t := time.NewTimer(wait)
		select {
		case <-snap.Changed():
		case <-t.C:
		case <-stop:
			t.Stop()
			return snap, false
		}
		t.Stop()
		snap = topo.Snapshot()
	}
	return snap, true
}

// movable reports whether the session holds nothing on its home node that another node could
// not be given: no transaction, no pinned state.
func (ns *nodeSet) movable(rs *route.Session) bool { return !ns.inTxOn(ns.homeIdx, rs) && rs.Pins == 0 }

// mayRebind reports whether a read-only endpoint's session may leave its home now: it holds
// nothing there (movable) and no cursor is open on its connection there (a COM_STMT_FETCH
// still reads from it).
func (ns *nodeSet) mayRebind(rs *route.Session) bool {
	if !ns.movable(rs) {
		return false
	}
	c := ns.conns[ns.homeIdx]
	return c == nil || !ns.cursorOn(c)
}

// rebind moves a read-only endpoint's session to a replica the endpoint's policy picks: off a
// node unfit for its reads (route.Unfit: the primary now, down, draining, removed, errant,
// lagging...). With none fit it stays (its connection there still read-only), and tries again
// at its next statement. The caller checked mayRebind.
func (ns *nodeSet) rebind(rs *route.Session, set *route.Settings, snap *topology.Snapshot) {
	// The same slot is a move too when another node holds it now (its node was removed).
	if i := route.BindReplica(rs, set, snap); i >= 0 && (i != ns.homeIdx || snap.Nodes[i] != ns.homeNode) {
		rs.Bound = i
		ns.moveHome(i)
	}
}

// mayRedirect reports whether a read-only refusal from node i of statement r can be kept from
// the client and r sent to the new primary: i is the primary, the monitor runs (it will name
// the new one), r is held whole (a streamed one is gone once sent), was not redirected before,
// is one plain statement that a refusal leaves undone (INSERT, UPDATE, DELETE, REPLACE, DDL:
// not a CALL, an EXECUTE of SQL text, a batch, anything unclassified, whose earlier parts may
// have run), and no transaction is open (rs's, or inTx: one on i's connection).
func mayRedirect(r *request, rs *route.Session, inTx bool, i int, snap *topology.Snapshot) bool {
	switch r.class.Kind {
	case classify.Insert, classify.Update, classify.Delete, classify.Replace, classify.DDL:
	default:
		return false
	}
	return r.class.Flags&classify.Multi == 0 && !r.redirected && r.held && snap.IsPrimary(i) &&
		snap.State[i] != nil && !rs.TxPending && rs.Autocommit && !inTx
}

// confirmReadOnly asks the node over c, the connection that got a read-only refusal (nil: none
// any more), whether it is read-only indeed: a refusal can also be raised by the application
// (SIGNAL ... MYSQL_ERRNO = 1290 in a trigger), which must not start a switchover for every
// client. MariaDB enforces read_only before @@global.read_only reads 1 (SET GLOBAL read_only=1
// first refuses the writers it held, then sets the variable): the question is asked again for
// up to confirmReadOnlyFor before the answer counts as no, or until stop is closed.
func confirmReadOnly(c *nodeConn, stop <-chan struct{}) bool {
	if c == nil {
		return false
	}
	deadline := time.Now().Add(confirmReadOnlyFor)
	for {
		rows, err := c.Query("SELECT @@global.read_only")
		if err != nil || len(rows.Values) != 1 || len(rows.Values[0]) != 1 {
			return false
		}
		if rows.Values[0][0].S == "1" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-stop:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// confirmReadOnlyFor bounds confirmReadOnly's wait for the variable to follow the refusal.
const confirmReadOnlyFor = 200 * time.Millisecond
