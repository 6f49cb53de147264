package proxy

import (
	"errors"
	"net"
	"strconv"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
	"github.com/sluicedb/sluice/internal/topology"
)

// KILL through sluice. Clients know sluice's connection ids (from the handshake, and from
// SELECT CONNECTION_ID(), which sluice answers with the same id), so `KILL [CONNECTION|QUERY]
// id` and COM_PROCESS_KILL name a sluice session, never a node thread: sluice ids and the
// nodes' thread ids share one number space, so a KILL cannot take both. sluice kills that
// session's threads on its nodes. As on the server, a session may be killed by its own user, or
// by a user the server lets kill other users' threads (CONNECTION ADMIN or SUPER): sluice lets
// the same user through, and asks the nodes for any other (the KILL runs as the killer, on the
// target's threads; the node's refusal is reworded with the sluice id). SHOW PROCESSLIST is
// forwarded and shows the primary's threads, with their thread ids.

// errKillDenied is the server's ER_KILL_DENIED_ERROR.
const errKillDenied = 1095

// killDenied is the server's refusal to kill session id of another user, under sluice's id.
func killDenied(id uint32) *mysql.SQLError {
	return mysql.NewError(errKillDenied, "HY000", "You are not owner of thread %d", id)
}

// errKilled ends a session that killed its own connection.
var errKilled = errors.New("connection killed by its own KILL")

// killTarget is what a session exposes to another one that kills it.
type killTarget struct {
	home     bool // the session's home node (its state lives there)
	node     *topology.Node
	threadID uint32
	conn     net.Conn // sluice's connection to that thread, closed when the session is killed
	// compressed: conn carries the compressed protocol (a COM_QUIT written straight to it is
	// framed: backend.WriteQuit).
	compressed bool
	// flight is that connection's: armed while a read that may run elsewhere waits there
	// (interrupted, and conn closed, when the node is found down: inflight.go).
	flight *relay.Flight
}

func (p *Proxy) session(id uint32) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byID[id]
}

// killSession kills sluice session id's threads on its nodes (only the running statement's,
// when queryOnly), on behalf of user byUser's session whose node set is by: from by's own
// connection to the node where it has one (killing oneself: the node answers and closes; the
// session ends with it), else from a new connection as by's client. When every node took a
// KILL CONNECTION, the session killed is closed too. target is that session (nil: none has that
// id, or it has not logged in: err says so); failed is the node of err when it is not the node's
// refusal.
//
// Who may: the session's own user always; another user only where the nodes let it (its KILL
// runs as itself, and the server refuses it without CONNECTION ADMIN or SUPER): the first
// refusal (1095, worded with the node's thread id) stops the KILL and is answered with id. A
// session of another user that holds no node thread cannot be asked about: it is refused.
func (p *Proxy) killSession(id uint32, queryOnly bool, by *nodeSet, byUser string) (target *session, failed int, err error) {
	target = p.session(id)
	var info *sessionInfo
	if target != nil {
		info = target.view.info.Load()
	}
	if info == nil {
		return nil, -1, mysql.NewError(mysql.ErrNoSuchThread, "HY000", "Unknown thread id: %d", id)
	}
	// The targets are acted on under the target's killMu: its connections cannot be lent to
	// another session (pool_mode session) until the KILLs below have reached their threads.
	target.nodes.killMu.RLock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			target.nodes.killMu.RUnlock()
		}
	}
	defer unlock()
	ts := target.nodes.killTargets()
	own := info.user == byUser
	if len(ts) == 0 {
		unlock() // kill takes it again
		if !own {
			return target, -1, killDenied(id)
		}
		if !queryOnly {
			target.kill() // nothing runs on a node: the session itself is all there is
		}
		return target, -1, nil
	}
	failed = -1
	for _, t := range ts {
		stmt := "KILL CONNECTION " + strconv.FormatUint(uint64(t.threadID), 10)
		if queryOnly {
			stmt = "KILL QUERY " + strconv.FormatUint(uint64(t.threadID), 10)
		}
		var e error
		if c := by.at(t.node.Index); c != nil {
			e = c.Exec(stmt)
		} else {
			var bc *backend.Conn
			if bc, e = by.dialSpare(t.node); e == nil {
				e = bc.Exec(stmt)
				bc.Quit()
			}
		}
		if se := (*mysql.SQLError)(nil); !own && errors.As(e, &se) && se.Code == errKillDenied {
			return target, -1, killDenied(id) // the node's words name its thread, not the session
		}
		if e != nil && err == nil {
			err, failed = e, t.node.Index
		}
	}
	unlock()
	if err == nil && !queryOnly {
		target.kill()
	}
	return target, failed, err
}

// answerKill runs KILL for sluice session id on behalf of s and answers the client.
func (s *session) answerKill(id uint32, queryOnly bool) error {
	user := ""
	if s.login.user != nil {
		user = s.login.user.Name
	}
	target, failed, err := s.p.killSession(id, queryOnly, &s.nodes, user)
	if err != nil {
		var se *mysql.SQLError
		if errors.As(err, &se) {
			if target == s && !queryOnly {
				_ = writeErr(s.client, se)
				return errKilled
			}
			return writeErr(s.client, se)
		}
		return s.fail(failed, err, nil)
	}
	if target == s && !queryOnly {
		return errKilled
	}
	return writeOK(s.client, s.status, s.login.caps)
}

// processKill handles COM_PROCESS_KILL (a 4-byte connection id).
func (s *session) processKill(n int) error {
	p, err := s.client.PeekPayload(n, 5)
	if err != nil {
		return err
	}
	if len(p) < 5 {
		return s.refuse(&request{n: n, unread: true}, errMalformed())
	}
	id := getUint32(p[1:])
	if err := discardCommand(s.client, n); err != nil {
		return err
	}
	s.client.SetSeq(1)
	return s.answerKill(id, false)
}

// killStatement answers a KILL statement (one the classifier gives kind Kill, alone, in a batch,
// or prepared by SQL PREPARE). Clients know sluice's connection ids, not the nodes' thread ids:
// KILL [CONNECTION | QUERY] id kills sluice session id (on its nodes); KILL USER goes to the
// primary as it is. Any other form would name a thread id on the node, where that number is
// another client's thread: it is refused, and so is a KILL too large to hold.
func (s *session) killStatement(r *request) (handled bool, err error) {
	if r.held || r.st != nil {
		if r.class.Flags&classify.Multi == 0 && r.class.Kind == classify.Kill {
			if id, queryOnly, ok := classify.ParseKill(r.stmt); ok {
				if err := r.skip(s.client); err != nil {
					return true, err
				}
				return true, s.answerKill(uint32(id), queryOnly)
			}
			if classify.KillsUser(r.stmt) {
				return false, nil
			}
		}
	}
	return true, s.refuse(r, mysql.NewError(mysql.ErrUnknown, "HY000",
		"sluice: KILL takes a sluice connection id as a number, alone in its statement: KILL [CONNECTION | QUERY] <id>"))
}

// isKill reports whether c holds a KILL: the statement, one of a batch, or the text of an SQL
// PREPARE.
func isKill(c *classify.Result) bool {
	return c.Kind == classify.Kill || c.Kinds&(classify.KindSet(1)<<classify.Kill) != 0 ||
		(c.Kind == classify.Prepare && c.Inner == classify.Kill)
}
