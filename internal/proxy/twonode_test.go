package proxy

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Two-node sessions: a session of a two-node proxy (primary = node 0, replica1 = node 1, both at a
// closed port so that any dial fails at once) whose client and node connections are in-memory,
// driven one command at a time from the test's goroutine.

// brokenConn is a node connection that fails every write (the node went away).
type brokenConn struct{ memConn }

func (*brokenConn) Write([]byte) (int, error) { return 0, syscall.EPIPE }

type twoNodeSession struct {
	s                *session
	client           *memConn
	primary, replica net.Conn
}

func newTwoNodeSession(tb testing.TB, weights []int, primary, replica net.Conn) *twoNodeSession {
	tb.Helper()
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{
		{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary},
		{Name: "replica1", Address: "127.0.0.1:1", Role: topology.Replica},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := New(Options{
		Topology:       topo,
		ConnectTimeout: time.Second,
		Endpoints: []Endpoint{{Name: "rw", Listen: "127.0.0.1:0",
			Routing: route.Settings{Mode: route.ReadWrite, Weights: weights, Policy: &route.LeastActive{}}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	client := &memConn{}
	s := p.newSession(p.endpoints["rw"], client)
	s.login.caps = frontCaps
	var bcs []*backend.Conn
	for _, nc := range []net.Conn{primary, replica} {
		bcs = append(bcs, &backend.Conn{Conn: mysql.NewConn(nc, 0, 4<<10), Caps: frontCaps, Handshake: &mysql.Handshake{}})
	}
	s.nodes.plant(bcs...)
	return &twoNodeSession{s: s, client: client, primary: primary, replica: replica}
}

// addStmt registers a prepared statement (sluice id 1) as if PREPARE had run on the primary
// (node id 7) and, when onReplica, lazily on the replica too (node id 8).
func (r *twoNodeSession) addStmt(query string, params, columns uint16, onReplica bool) *stmt {
	st := &stmt{query: []byte(query), params: params, columns: columns}
	st.class = classify.Classify(st.query)
	st.id = r.s.stmts.newID()
	st.bind(r.s.nodes.at(0).Conn, 0, 7, 0)
	if onReplica {
		st.bind(r.s.nodes.at(1).Conn, 1, 8, 0)
	}
	r.s.stmts.add(st)
	return st
}

// command runs the client's next command as the session's loop does (which notes where the
// answer starts, for responseStarted).
func (r *twoNodeSession) command() (bool, error) {
	r.s.sentAt = r.s.client.Sent()
	return r.s.command()
}

// okPacket is a plain OK (autocommit) from a node, sequence id 1.
var okPacket = packets(1, []byte{0, 0, 0, 2, 0, 0, 0})

// errCode returns the error code of the first packet in out when it is an ERR, else 0.
func errCode(out []byte) uint16 {
	if len(out) < 7 || out[4] != 0xff {
		return 0
	}
	return uint16(out[5]) | uint16(out[6])<<8
}
