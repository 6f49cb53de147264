package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/sluicedb/sluice/internal/relay"
	"github.com/sluicedb/sluice/internal/topology"
)

// Reads in flight on a node that is found down. A node that hangs (stopped, a disk stall, a
// partition without a reset) keeps its TCP connections open and answers nothing: a read sent
// there waits until the node comes back or timeouts.read ends it. Once the monitor (or a
// session's failure) marks the node down, new reads go elsewhere; those already waiting there
// are woken here and run elsewhere too, when that is safe:
//
//   - the session arms its node connection's relay.Flight for a try that route.Interruptible
//     allows (a plain read on a replica), held whole (it can be sent again), with no
//     transaction open on that connection: a kept connection before it is brought in line
//     with the session's state, a new one once open, so that every wait on the node until the
//     answer's first packet is covered (the state's replay, the statement's PREPARE there, a
//     consistency wait, the answer); and it looks at the topology once armed (nodeSet.arm);
//   - WatchDown follows the topology's snapshots; for every node that goes from up to down it
//     interrupts the armed flights of the sessions' connections to that node (their kill
//     targets, published when a connection opens or closes: no per-statement registration)
//     and closes those connections, which ends the session's wait at once;
//   - relay.Response claims the answer for the client when its first packet arrives, before
//     it writes any byte: an answer that began to arrive is never interrupted (it keeps
//     today's rule: a node that fails in its middle ends the client's connection), and an
//     interrupted one wrote nothing;
//   - the session sees its try interrupted (request.land: errNodeDown) and route.Retry sends
//     the read elsewhere (route.CauseDown); the interrupted connection, in an unknown state,
//     was closed and is dropped, never reused.
//
// Per statement this costs three uncontended atomic operations on the connection's Flight
// (arm, claim, disarm) and one snapshot load, for the reads that may be interrupted only.

// errNodeDown marks a try interrupted because its node was found down before any byte of its
// answer arrived (or found down as the try was about to be sent): the read goes elsewhere.
var errNodeDown = errors.New("the node was found down while the read waited for its answer")

// WatchDown interrupts the reads waiting on a node when the topology marks it down (see
// above), until ctx ends. The composition root runs it beside the proxy; without it, a read on
// a hung node waits until the node answers or timeouts.read passes.
func (p *Proxy) WatchDown(ctx context.Context) {
	prev := p.topo.Snapshot()
	// Nodes down already when it starts: a read armed on one of them (decided just before)
	// would otherwise wait for a change that came before the watch.
	for i, n := range prev.Nodes {
		if !prev.Up[i] {
			p.interruptReads(n)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-prev.Changed():
		}
		next := p.topo.Snapshot()
		for i, n := range next.Nodes {
			// A slot whose node changed (removed, then another added there) is not a node
			// found down; one that was down in prev was swept then.
			if i < len(prev.Up) && prev.Nodes[i] == n && prev.Up[i] && !next.Up[i] {
				if k := p.interruptReads(n); k > 0 {
					p.log.Warn("node found down: the reads waiting on it run on other nodes", "node", n.Name, "reads", k)
				}
			}
		}
		prev = next
	}
}

// interruptReads interrupts every armed flight on the sessions' connections to node n, closes
// those connections, and returns how many it interrupted. Safe from any goroutine.
func (p *Proxy) interruptReads(n *topology.Node) int {
	var conns []net.Conn
	p.mu.Lock()
	for s := range p.sessions {
		for _, t := range s.nodes.killTargets() {
			if t.node == n && t.flight != nil && t.flight.Interrupt() {
				conns = append(conns, t.conn)
			}
		}
	}
	p.mu.Unlock()
	// Closed outside the lock: closing a TLS connection writes to the hung node.
	for _, c := range conns {
		closeSocket(c)
	}
	return len(conns)
}

// closeSocket closes nc's socket at once: a TLS connection's close_notify is not sent (the
// node is hung; the write could wait for its socket buffer), the connection underneath is
// closed, which ends the session's read there as well.
func closeSocket(nc net.Conn) {
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = u.NetConn()
	}
	_ = nc.Close()
}

// arm arms c's flight for an interruptible try (route.Interruptible) about to be sent on it,
// and reports false, disarmed, when c's node is down already: the try was decided on a
// snapshot from before, and WatchDown's sweep of that node may have passed before the flight
// was armed. Armed first, then looked: either this look sees the node down, or the sweep,
// which follows the snapshot's publication, sees the flight armed.
func (ns *nodeSet) arm(c *nodeConn) bool {
	c.flight.Arm()
	if snap := ns.topo.Snapshot(); c.idx < len(snap.Up) && snap.Up[c.idx] {
		return true
	}
	c.flight.Disarm()
	return false
}

// land ends the flight r armed for its try (r.flight set) once the try ended with err: an
// interrupted try failed with errNodeDown, whatever it returned. (An interrupted try always
// fails: its answer was not claimed, and its connection was closed.)
func (r *request) land(err error) error {
	f := r.flight
	r.flight = nil
	if f.Disarm() && err != nil {
		return &relay.Error{Err: fmt.Errorf("%w: %w", errNodeDown, unwrapRelay(err))}
	}
	return err
}
