package proxy

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// packets frames payloads as consecutive packets with sequence ids from seq.
func packets(seq uint8, payloads ...[]byte) []byte {
	var out []byte
	for _, p := range payloads {
		out = append(out, byte(len(p)), byte(len(p)>>8), byte(len(p)>>16), seq)
		out = append(out, p...)
		seq++
	}
	return out
}

// benchColumn is the column definition of the canned results: `v`, VARCHAR(11), utf8mb4.
var benchColumn = []byte("\x03def\x04test\x01t\x01t\x01v\x01v\x0c\x21\x00\x0b\x00\x00\x00\xfd\x00\x00\x00\x00\x00")

// resultSet builds a text result set of rows rows with one column, as a node sends it to a
// client that negotiated DEPRECATE_EOF and SESSION_TRACK.
func resultSet(rows int) []byte {
	ps := [][]byte{{1}, benchColumn}
	for i := 0; i < rows; i++ {
		ps = append(ps, []byte("\x0bhello world"))
	}
	ps = append(ps, []byte{0xfe, 0, 0, 2, 0, 0, 0})
	return packets(1, ps...)
}

// binaryResultSet is resultSet in the binary protocol, the answer to COM_STMT_EXECUTE: each
// row is a 0x00 header, the NULL bitmap (one byte for one column) and the value.
func binaryResultSet(rows int) []byte {
	ps := [][]byte{{1}, benchColumn}
	for i := 0; i < rows; i++ {
		ps = append(ps, []byte("\x00\x00\x0bhello world"))
	}
	ps = append(ps, []byte{0xfe, 0, 0, 2, 0, 0, 0})
	return packets(1, ps...)
}

// The prepared statement of the execute benchmarks and tests. The node knows it by
// benchNodeStmtID; the client by the id sluice hands out, 1 for a session's first statement.
const benchNodeStmtID = 7

var (
	benchPrepareSQL = "SELECT v FROM t WHERE id = ?"
	// benchPrepare is the client's COM_STMT_PREPARE; the node receives it as it is.
	benchPrepare = packets(0, append([]byte{mysql.ComStmtPrepare}, benchPrepareSQL...))
	// benchPrepareOK is the node's answer: statement id, 1 column, 1 parameter, no warnings,
	// then one parameter and one column definition (no EOFs: DEPRECATE_EOF).
	benchPrepareOK = packets(1, []byte{0, benchNodeStmtID, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, benchColumn, benchColumn)
	// benchPrepareOKClient is what the client receives: the same with sluice's id, 1.
	benchPrepareOKClient = packets(1, []byte{0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, benchColumn, benchColumn)
)

// stmtExecute is COM_STMT_EXECUTE of statement id with one BIGINT parameter, its type sent
// along (new-params-bound 1), as go-sql-driver and most connectors send it on every execution.
func stmtExecute(id uint32) []byte {
	return packets(0, []byte{mysql.ComStmtExecute, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24),
		0,          // flags: no cursor
		1, 0, 0, 0, // iteration count
		0,       // NULL bitmap
		1,       // new-params-bound
		0x08, 0, // parameter type: BIGINT
		42, 0, 0, 0, 0, 0, 0, 0, // the value
	})
}

// stmtExecuteBound is stmtExecute relying on the types bound by an earlier execution
// (new-params-bound 0), as connectors that send types only once do.
func stmtExecuteBound(id uint32) []byte {
	return packets(0, []byte{mysql.ComStmtExecute, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24),
		0, 1, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0})
}

// exchange is one command of a scripted conversation: what the client sends, what the node
// receives for it, what the node answers and what the client receives. Nil node-side fields
// mean the same bytes as the client's side.
type exchange struct {
	request, nodeRequest   []byte
	response, nodeResponse []byte
}

func (e exchange) atNode() (req, resp []byte) {
	req, resp = e.nodeRequest, e.nodeResponse
	if req == nil {
		req = e.request
	}
	if resp == nil {
		resp = e.response
	}
	return req, resp
}

// textQuery is a COM_QUERY answered by response.
func textQuery(response []byte) exchange {
	return exchange{request: packets(0, append([]byte{mysql.ComQuery}, "SELECT v FROM t WHERE id = 42"...)), response: response}
}

// prepareExchange prepares benchPrepareSQL through the session.
var prepareExchange = exchange{request: benchPrepare, response: benchPrepareOKClient, nodeResponse: benchPrepareOK}

// executeExchange executes the prepared statement; the node sees its own statement id, and the
// binary result set comes back unchanged.
func executeExchange(response []byte) exchange {
	return exchange{request: stmtExecute(1), nodeRequest: stmtExecute(benchNodeStmtID), response: response}
}

// benchSession builds a session of a one-node proxy (a primary) whose client and node
// connections are nc and node, as if the handshake had run.
func benchSession(tb testing.TB, client, node net.Conn) *session {
	tb.Helper()
	p := testProxy(tb, Options{})
	s := p.newSession(p.endpoints["rw"], client)
	s.login.caps = frontCaps
	bc := &backend.Conn{Conn: mysql.NewConn(node, 0, 4<<10), Caps: frontCaps, Handshake: &mysql.Handshake{}}
	s.conns[0] = &nodeConn{Conn: bc, name: "primary"}
	s.home, s.cur, s.node, s.bc = 0, 0, p.topo.Snapshot().Nodes[0], bc
	s.homeNode = s.node
	return s
}

// benchForward measures one statement's round trip through a session: the client's command is
// classified, routed and relayed to the node, and the node's response relayed back, over
// in-memory connections (net.Pipe), with the session and the node in goroutines of their own.
// The setup exchanges run first, unmeasured; then ex is repeated b.N times.
func benchForward(b *testing.B, ex exchange, setup ...exchange) {
	clientSide, proxyFront := net.Pipe()
	proxyBack, nodeSide := net.Pipe()
	defer clientSide.Close()
	defer nodeSide.Close()
	s := benchSession(b, proxyFront, proxyBack)

	// The node: read each command, check it, answer with the canned response. It allocates
	// nothing, so that -benchmem counts the session's allocations alone.
	var nodeGotWrong atomic.Bool
	script := append(setup[:len(setup):len(setup)], ex)
	go func() {
		var buf []byte
		for i := 0; ; {
			req, resp := script[i].atNode()
			if cap(buf) < len(req) {
				buf = make([]byte, len(req))
			}
			if _, err := io.ReadFull(nodeSide, buf[:len(req)]); err != nil {
				return
			}
			if !bytes.Equal(buf[:len(req)], req) {
				nodeGotWrong.Store(true)
			}
			if _, err := nodeSide.Write(resp); err != nil {
				return
			}
			if i < len(script)-1 {
				i++
			}
		}
	}()
	// The session: serve commands through the whole statement path (classify, route, forward).
	go func() {
		for {
			if _, err := s.command(); err != nil {
				return
			}
		}
	}()
	roundTrip := func(e exchange, got []byte) {
		if _, err := clientSide.Write(e.request); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(clientSide, got); err != nil {
			b.Fatal(err)
		}
	}
	for _, e := range setup {
		got := make([]byte, len(e.response))
		roundTrip(e, got)
		if !bytes.Equal(got, e.response) {
			b.Fatalf("setup: client got %x, want %x", got, e.response)
		}
	}
	got := make([]byte, len(ex.response))
	b.ReportAllocs()
	b.SetBytes(int64(len(ex.response)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		roundTrip(ex, got)
	}
	b.StopTimer()
	if !bytes.Equal(got, ex.response) {
		b.Fatalf("response changed in transit")
	}
	if nodeGotWrong.Load() {
		b.Fatalf("the node received a command other than the one scripted")
	}
}

func BenchmarkForwardSmallResult(b *testing.B) { benchForward(b, textQuery(resultSet(1))) }
func BenchmarkForward1000Rows(b *testing.B)    { benchForward(b, textQuery(resultSet(1000))) }
func BenchmarkForwardOK(b *testing.B) {
	benchForward(b, textQuery(packets(1, []byte{0, 1, 0, 2, 0, 0, 0})))
}

// BenchmarkForwardExecute is the binary protocol's statement path: COM_STMT_EXECUTE of a
// statement prepared through the session, its id mapped to the node's, answered by a binary
// result set of one row.
func BenchmarkForwardExecute(b *testing.B) {
	benchForward(b, executeExchange(binaryResultSet(1)), prepareExchange)
}

func BenchmarkForwardExecute1000Rows(b *testing.B) {
	benchForward(b, executeExchange(binaryResultSet(1000)), prepareExchange)
}
