package proxy

import (
	"io"
	"net"
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

// resultSet builds a text result set of rows rows with one column, as a node sends it to a
// client that negotiated DEPRECATE_EOF and SESSION_TRACK.
func resultSet(rows int) []byte {
	col := []byte("\x03def\x04test\x01t\x01t\x01v\x01v\x0c\x21\x00\x0b\x00\x00\x00\xfd\x00\x00\x00\x00\x00")
	ps := [][]byte{{1}, col}
	for i := 0; i < rows; i++ {
		ps = append(ps, []byte("\x0bhello world"))
	}
	ps = append(ps, []byte{0xfe, 0, 0, 2, 0, 0, 0})
	return packets(1, ps...)
}

// benchForward measures one statement's round trip through a session: the client's command is
// classified, routed and relayed to the node, and the node's response relayed back, over
// in-memory connections.
func benchForward(b *testing.B, response []byte) {
	clientSide, proxyFront := net.Pipe()
	proxyBack, nodeSide := net.Pipe()
	defer clientSide.Close()
	defer nodeSide.Close()
	p, err := New(Options{Nodes: []Node{{Name: "primary", Address: "127.0.0.1:1", Role: "primary"}}})
	if err != nil {
		b.Fatal(err)
	}
	s := p.newSession(Endpoint{Name: "rw", Mode: "read-write", ReadWeights: map[string]int{"primary": 100}}, proxyFront)
	s.caps = frontCaps
	bc := &backend.Conn{Conn: mysql.NewConn(proxyBack, 0, 4<<10), Caps: frontCaps, Handshake: &mysql.Handshake{}}
	s.conns[0] = &nodeConn{Conn: bc, name: "primary"}
	s.home, s.cur, s.node, s.bc = 0, 0, &p.opts.Nodes[0], bc
	query := packets(0, append([]byte{mysql.ComQuery}, "SELECT v FROM t WHERE id = 42"...))

	// The node: read each command, answer with the canned response.
	go func() {
		buf := make([]byte, len(query))
		for {
			if _, err := io.ReadFull(nodeSide, buf); err != nil {
				return
			}
			if _, err := nodeSide.Write(response); err != nil {
				return
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
	got := make([]byte, len(response))
	b.ReportAllocs()
	b.SetBytes(int64(len(response)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := clientSide.Write(query); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(clientSide, got); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if string(got) != string(response) {
		b.Fatalf("response changed in transit")
	}
}

func BenchmarkForwardSmallResult(b *testing.B) { benchForward(b, resultSet(1)) }
func BenchmarkForward1000Rows(b *testing.B)    { benchForward(b, resultSet(1000)) }
func BenchmarkForwardOK(b *testing.B) {
	benchForward(b, packets(1, []byte{0, 1, 0, 2, 0, 0, 0}))
}
