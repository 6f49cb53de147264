package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/proxyproto"
	"github.com/sluicedb/sluice/internal/relay"
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
	// flight is armed while a read that may run elsewhere waits for its answer here: a
	// watcher that learns the node is down interrupts it (inflight.go).
	flight relay.Flight
	// pub is the kill targets of a node set that holds this connection alone, as last
	// published (nodeSet.publish): never changed once published.
	pub *targetSet
	// used: the session sent something on it (nodeSet.use: a statement, a prepare, a replay).
	// One it never used goes back to the pool without a reset (backend.Conn.Rest).
	used bool
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
	return !errors.Is(err, errCapsMismatch) && !errors.Is(err, errNodeGone) && !errors.Is(err, errPoolWaitEnded)
}

// maxState bounds the replay list; past it the session is pinned to the primary.
const maxState = 64

// nodeOf returns node i of the current topology.
func (p *Proxy) nodeOf(i int) *topology.Node { return p.topo.Snapshot().Nodes[i] }

// dialNode connects to node n as the client of login l (read at each dial: COM_CHANGE_USER
// changes it), with the client's capabilities,
// starting at session state st (its schema and epoch). A connection to a node that is not the
// primary is read-only: a statement misrouted there fails instead of forking the data. A
// read-write connection is handed to primary (GTID tracking) before it is checked.
func (p *Proxy) dialNode(l *login, n *topology.Node, readOnly bool, st *backend.State, primary func(*backend.Conn)) (*backend.Conn, error) {
	return p.dialNodeCtx(context.Background(), l, n, readOnly, st, primary)
}

// dialNodeCtx is dialNode, ended early when ctx ends (the pool's top-up at shutdown).
func (p *Proxy) dialNodeCtx(ctx context.Context, l *login, n *topology.Node, readOnly bool, st *backend.State, primary func(*backend.Conn)) (*backend.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.connectTimeout())
	defer cancel()
	o := backend.Options{
		Address:      n.Address,
		Credentials:  l.creds,
		Database:     st.DB,
		Epoch:        st.Epoch,
		Charset:      l.charset,
		Capabilities: l.caps,
		Attrs:        l.attrs,

		MariaDBCapabilities: l.mcaps,
		ConnectTimeout:      p.connectTimeout(),
		WriteTimeout:        p.opts.WriteTimeout,
	}
	o.TLS, o.TLSRequired = p.backendTLS(n, l.tls)
	o.ServerPublicKey = p.opts.BackendPublicKey
	o.Compress = p.opts.BackendCompress
	o.ReadOnly = readOnly
	if n.ProxyProtocol != proxyproto.Off {
		// Once per TCP connection: the pool hands the connection only to sessions from the
		// same client address (poolVariant).
		o.ProxyHeader = proxyproto.Append(nil, n.ProxyProtocol, l.from, l.to)
	}
	bc, err := backend.Dial(ctx, o)
	if err != nil {
		return nil, err
	}
	if !readOnly && primary != nil {
		primary(bc)
	}
	p.remember(l, n, readOnly) // what the pool's top-up dials as (minidle.go)
	if bc.MariaDBCaps != l.mcaps {
		// The client reads column definitions with the extended metadata block or without
		// it; a node that lays them out the other way would garble every result.
		bc.Quit()
		return nil, &backend.ConnectError{Addr: n.Address, Err: fmt.Errorf("%w: node %s lacks %#x", errCapsMismatch, n.Name, l.mcaps&^bc.MariaDBCaps)}
	}
	return bc, nil
}

// addrPort is a's address and port when a is a TCP address (invalid otherwise: a pipe in
// tests), IPv4-mapped addresses unmapped.
func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// proxiedClient is the client address node n is told of on l's connections (PROXY
// protocol): part of a pooled connection's variant. The zero Addr when n is told nothing.
func proxiedClient(l *login, n *topology.Node) netip.Addr {
	if n.ProxyProtocol == proxyproto.Off {
		return netip.Addr{}
	}
	return l.from.Addr()
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
		c, err := s.nodes.openHome(home)
		if err == nil {
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
				_ = writeErr(s.client, se)
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
		_ = writeErr(s.client, mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: cannot connect to a node for endpoint %q: %v", s.ep.cfg.Name, lastErr))
	}
	return lastErr
}
