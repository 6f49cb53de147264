package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// A session over several nodes. The session keeps at most one connection per node, opened
// the first time a statement is routed there. Session state that must be the same on every node
// it uses (SET of session variables, SET NAMES, the schema, COM_SET_OPTION) is recorded and
// replayed on a connection before its next use; state that cannot be replayed (temporary
// tables, LOCK TABLES, GET_LOCK, a SET sluice cannot repeat) pins the session to the primary.

// nodeConn is one of the session's node connections. What session state it carries is the
// backend connection's own business (backend.Conn.Sync).
type nodeConn struct {
	*backend.Conn
	idx  int
	name string
	// released: the connection no longer counts in its node's Load.Conns (release).
	released atomic.Bool
	// dialect is how the node reads text (its greeting's version), when dialectKnown.
	dialect      classify.Dialect
	dialectKnown bool
}

// release takes the connection out of its node's count, once: when it is closed, or as soon
// as the idle watch sees it lost (a drain waits for that count to reach 0).
func (c *nodeConn) release(load *topology.Load) {
	if c.released.CompareAndSwap(false, true) {
		load.Conns.Add(-1)
	}
}

// errStateSync marks session state (a replayed statement, the schema) that a node refused:
// the session then stays on the primary, where its state is known to hold.
var errStateSync = errors.New("session state could not be replayed")

// errCapsMismatch: a node cannot lay out results as this client negotiated (MariaDB extended
// capabilities the primary offers and it lacks). The node is healthy: it is not reported
// failed, the statement goes elsewhere.
var errCapsMismatch = errors.New("the node does not offer the MariaDB capabilities the client negotiated with the primary")

// errNodeGone: the node left the topology (removed, its slot perhaps another node's since) while
// a connection to it was being opened. Like errCapsMismatch, it says nothing of any node's health.
var errNodeGone = errors.New("the node was removed while sluice connected to it")

// nodeFault reports whether err, from opening or using a node's connection, says the node
// failed (and should be reported to the topology): not when the node is healthy but cannot serve
// this client, or is gone.
func nodeFault(err error) bool {
	return !errors.Is(err, errCapsMismatch) && !errors.Is(err, errNodeGone)
}

// maxState bounds the replay list; past it the session is pinned to the primary.
const maxState = 64

// nodeOf returns node i of the current topology.
func (s *session) nodeOf(i int) *topology.Node { return s.p.topo.Snapshot().Nodes[i] }

// open dials node i for the session.
func (s *session) open(i int) (*nodeConn, error) {
	snap := s.p.topo.Snapshot()
	n := snap.Nodes[i]
	bc, err := s.dial(n, !snap.IsPrimary(i))
	if err != nil {
		return nil, err
	}
	// Counted first, then checked: a node added into a removed node's slot (Topology.AddNode)
	// either sees this connection counted, and takes another slot, or is seen here.
	snap.Load[i].Conns.Add(1)
	if cur := s.p.topo.Snapshot(); cur.Nodes[i] != n || cur.IsRemoved(i) {
		snap.Load[i].Conns.Add(-1)
		bc.Close()
		return nil, &backend.ConnectError{Addr: n.Address, Err: fmt.Errorf("%w: %s", errNodeGone, n.Name)}
	}
	c := &nodeConn{Conn: bc, idx: i, name: n.Name}
	s.reader.opened(c, n, s.login.charset)
	s.room(i)
	if s.conns[i] != nil {
		s.closeConn(i)
	}
	s.conns[i] = c
	s.updateKillTarget()
	return c, nil
}

// dial connects to node n as the session's user, with the client's capabilities. A connection
// to a node that is not the primary is read-only: a statement misrouted there fails instead of
// forking the data.
func (s *session) dial(n *topology.Node, readOnly bool) (*backend.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.p.connectTimeout())
	defer cancel()
	o := backend.Options{
		Address:      n.Address,
		Credentials:  s.login.creds,
		Database:     s.state.DB,
		Epoch:        s.state.Epoch,
		Charset:      s.login.charset,
		Capabilities: s.login.caps,
		Attrs:        s.login.attrs,

		MariaDBCapabilities: s.login.mcaps,
		ConnectTimeout:      s.p.connectTimeout(),
		WriteTimeout:        s.p.opts.WriteTimeout,
	}
	o.TLS, o.TLSRequired = s.p.backendTLS(n, s.login.tls)
	o.ServerPublicKey = s.p.opts.BackendPublicKey
	o.Compress = s.p.opts.BackendCompress
	o.ReadOnly = readOnly
	bc, err := backend.Dial(ctx, o)
	if err != nil {
		return nil, err
	}
	if !readOnly {
		s.reads.track(bc, s.settings.current().Consistency, s.log)
	}
	if bc.MariaDBCaps != s.login.mcaps {
		// The client reads column definitions with the extended metadata block or without
		// it; a node that lays them out the other way would garble every result.
		bc.Close()
		return nil, &backend.ConnectError{Addr: n.Address, Err: fmt.Errorf("%w: node %s lacks %#x", errCapsMismatch, n.Name, s.login.mcaps&^bc.MariaDBCaps)}
	}
	return bc, nil
}

// connectNode opens the session's home connection (the primary on a read-write endpoint, a
// replica chosen by the endpoint's policy on a read-only one) and, when report is set, tells
// the client why it could not.
func (s *session) connectNode(report bool) error {
	set := s.settings.current()
	snap := s.p.topo.Snapshot()
	var lastErr error
	for attempt := 0; attempt < len(snap.Nodes); attempt++ {
		home := snap.Primary
		if set.Mode == route.ReadOnly {
			if home = route.BindReplica(&s.rs, set, snap); home < 0 {
				break
			}
			s.rs.Bound = home
		}
		c, err := s.open(home)
		if err == nil {
			s.home, s.cur, s.node, s.bc = home, home, snap.Nodes[home], c.Conn
			s.homeNode = s.node
			s.updateKillTarget() // open published it before its home was known
			s.status = c.Status
			if snap.IsPrimary(home) {
				s.p.learnServer(c.Handshake)
			}
			return nil
		}
		lastErr = err
		var se *mysql.SQLError
		if errors.As(err, &se) {
			// The node itself refused (unknown database, access denied there, too many
			// connections): the client sees that error as the node worded it.
			if report {
				_ = s.writeErr(se)
			}
			return err
		}
		if nodeFault(err) {
			s.p.topo.NodeFailed(home, err)
		}
		if set.Mode != route.ReadOnly {
			break
		}
		snap = s.p.topo.Snapshot()
	}
	if lastErr == nil {
		lastErr = errors.New("no replica is up and within the endpoint's max_replica_lag")
	}
	if report {
		_ = s.writeErr(mysql.NewError(mysql.CRConnHostError, "HY000", "sluice: cannot connect to a node for endpoint %q: %v", s.ep.cfg.Name, lastErr))
	}
	return lastErr
}

// use makes node i's connection current, opening it and bringing it in line with the session.
func (s *session) use(i int) (*nodeConn, error) {
	s.room(i)
	c := s.conns[i]
	if c == nil {
		var err error
		if c, err = s.open(i); err != nil {
			return nil, err
		}
	}
	c, err := s.sync(c)
	if err != nil {
		return nil, err
	}
	s.cur, s.node, s.bc = i, s.nodeOf(i), c.Conn
	return c, nil
}

// room makes room in the session's connection table for node i (added to the topology
// since the session began).
func (s *session) room(i int) {
	if i >= len(s.conns) {
		s.conns = append(s.conns, make([]*nodeConn, i+1-len(s.conns))...)
	}
}

// sync brings c in line with the session's state (only what differs is sent). A connection that
// carries state the session has since reset is replaced by a fresh one.
func (s *session) sync(c *nodeConn) (*nodeConn, error) {
	err := c.Sync(&s.state)
	if err == nil {
		return c, nil // before errors.As, whose target would be allocated on every statement
	}
	if errors.Is(err, backend.ErrDiverged) {
		s.drop(c.idx)
		if c, err = s.open(c.idx); err != nil {
			return nil, err
		}
		err = c.Sync(&s.state)
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return nil, errStateSync
	}
	return c, err
}

// drop closes node i's connection (after it failed).
func (s *session) drop(i int) {
	if i < len(s.conns) && s.conns[i] != nil {
		s.closeConn(i)
		s.updateKillTarget()
	}
}

// closeConn closes node i's connection and forgets it, and everything that pointed at it: the
// current connection falls back to the home node's, prepared statements lose their binding and
// cursor there.
func (s *session) closeConn(i int) {
	c := s.conns[i]
	c.Close()
	s.conns[i] = nil
	c.release(s.p.topo.Snapshot().Load[i])
	if s.bc == c.Conn {
		s.cur, s.node, s.bc = s.home, s.nodeOf(s.home), nil
		if h := s.conns[s.home]; h != nil {
			s.bc = h.Conn
		}
	}
	s.stmts.unbind(c.Conn)
}

// closeConns closes every node connection of the session.
func (s *session) closeConns() {
	for i, c := range s.conns {
		if c != nil {
			s.closeConn(i)
		}
	}
	s.bc = nil
	s.killTarget.Store(nil)
}
