package proxy

import (
	"errors"
	"net"
	"strconv"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// KILL through sluice. Clients know sluice's connection ids (from the handshake), so
// `KILL [CONNECTION|QUERY] id` and COM_PROCESS_KILL name a sluice session; sluice kills that
// session's thread on its node. SHOW PROCESSLIST is forwarded and shows the node's threads.

// errKilled ends a session that killed its own connection.
var errKilled = errors.New("connection killed by its own KILL")

// killTarget is what a session exposes to another one that kills it.
type killTarget struct {
	home     bool // the session's home node (its state lives there)
	node     *topology.Node
	threadID uint32
	conn     net.Conn // sluice's connection to that thread, closed when the session is killed
}

func (p *Proxy) session(id uint32) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byID[id]
}

// killSession kills sluice session id's threads on its nodes (only the running statement's,
// when queryOnly), on behalf of a session whose node set is by: from by's own connection to
// the node where it has one (killing oneself: the node answers and closes; the session ends
// with it), else from a new connection as by's client. When every node took a KILL CONNECTION,
// the session killed is closed too. target is that session (nil: none has that id, err says so);
// failed is the node of err when it is not the node's refusal.
func (p *Proxy) killSession(id uint32, queryOnly bool, by *nodeSet) (target *session, failed int, err error) {
	target = p.session(id)
	var ts []killTarget
	if target != nil {
		ts = target.nodes.killTargets()
	}
	if len(ts) == 0 {
		return nil, -1, mysql.NewError(mysql.ErrNoSuchThread, "HY000", "Unknown thread id: %d", id)
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
				bc.Close()
			}
		}
		if e != nil && err == nil {
			err, failed = e, t.node.Index
		}
	}
	if err == nil && !queryOnly {
		target.kill()
	}
	return target, failed, err
}

// answerKill runs KILL for sluice session id on behalf of s and answers the client.
func (s *session) answerKill(id uint32, queryOnly bool) error {
	target, failed, err := s.p.killSession(id, queryOnly, &s.nodes)
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
