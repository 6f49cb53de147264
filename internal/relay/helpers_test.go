package relay

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// Capabilities of the scripted connections: what sluice negotiates with a modern client, and
// what its node connections always have (SESSION_TRACK).
const (
	caps        = mysql.ClientProtocol41 | mysql.ClientSessionTrack | mysql.ClientDeprecateEOF
	classicCaps = mysql.ClientProtocol41 | mysql.ClientSessionTrack // a node connection without DEPRECATE_EOF
)

// pkt frames payloads as consecutive packets with sequence ids from seq.
func pkt(seq uint8, payloads ...[]byte) []byte {
	var out []byte
	for _, p := range payloads {
		out = append(out, byte(len(p)), byte(len(p)>>8), byte(len(p)>>16), seq)
		out = append(out, p...)
		seq++
	}
	return out
}

// column is a column definition (its bytes are never decoded by the relay).
var column = []byte("\x03def\x04test\x01t\x01t\x01v\x01v\x0c\x21\x00\x0b\x00\x00\x00\xfd\x00\x00\x00\x00\x00")

// textRow and binaryRow are one row of the one-column result, in each protocol: the binary
// row starts with its 0x00 header, which the relay must not take for an OK.
var (
	textRow   = []byte("\x0bhello world")
	binaryRow = []byte("\x00\x00\x0bhello world")
)

func okPacket(status uint16, affected uint64) []byte {
	return mysql.AppendOK(nil, mysql.OK{AffectedRows: affected, Status: status}, caps)
}

// endOK is the OK (header 0xfe) that ends a result set under DEPRECATE_EOF.
func endOK(status uint16) []byte {
	return mysql.AppendOK(nil, mysql.OK{Header: 0xfe, Status: status}, caps)
}

func eof(status uint16) []byte { return mysql.AppendEOF(nil, 0, status) }

func errPacket(code uint16, msg string) []byte {
	return mysql.AppendERR(nil, mysql.NewError(code, "HY000", "%s", msg))
}

// okWithState is an OK with a session-state block of the given changes.
func okWithState(status uint16, changes ...[]byte) []byte {
	var block []byte
	for _, c := range changes {
		block = append(block, c...)
	}
	return mysql.AppendOK(nil, mysql.OK{Status: status | mysql.StatusSessionStateChange, SessionState: block}, caps)
}

func sysvar(name, value string) []byte {
	data := mysql.AppendLenEncString(nil, []byte(name))
	data = mysql.AppendLenEncString(data, []byte(value))
	return mysql.AppendLenEncString([]byte{mysql.SessionTrackSystemVariables}, data)
}

func schema(db string) []byte {
	return mysql.AppendLenEncString([]byte{mysql.SessionTrackSchema}, mysql.AppendLenEncString(nil, []byte(db)))
}

// resultSet is a one-column result set of rows (payloads), as a node with DEPRECATE_EOF
// (deprecate) or without sends it, ending with status.
func resultSet(seq uint8, deprecate bool, status uint16, rows ...[]byte) []byte {
	ps := [][]byte{{1}, column}
	if !deprecate {
		ps = append(ps, eof(0))
	}
	ps = append(ps, rows...)
	if deprecate {
		ps = append(ps, endOK(status))
	} else {
		ps = append(ps, eof(status))
	}
	return pkt(seq, ps...)
}

// seen is one call of the recording Observer.
type seen struct {
	status     uint16
	affected   uint64
	state      []byte
	classicEOF bool
	readOnly   bool
}

// recorder is an Observer that records what it is told.
type recorder struct{ oks []seen }

func (r *recorder) OK(src *backend.Conn, ok mysql.OK, classicEOF bool) {
	r.oks = append(r.oks, seen{ok.Status, ok.AffectedRows, bytes.Clone(ok.SessionState), classicEOF, src.ReadOnly()})
}

// pipes is one relay's two connections over net.Pipe: dst (the client's, sluice's end) and src
// (the node's, sluice's end), with the test's ends client and node.
type pipes struct {
	dst    *mysql.Conn
	src    *backend.Conn
	client net.Conn
	node   net.Conn
}

func newPipes(t *testing.T, nodeCaps uint32) *pipes {
	t.Helper()
	client, front := net.Pipe()
	back, node := net.Pipe()
	t.Cleanup(func() { client.Close(); front.Close(); back.Close(); node.Close() })
	for _, c := range []net.Conn{client, front, back, node} {
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	}
	return &pipes{
		dst:    mysql.NewConn(front, 0, 0),
		src:    &backend.Conn{Conn: mysql.NewConn(back, 0, 0), Caps: nodeCaps, Handshake: &mysql.Handshake{}},
		client: client,
		node:   node,
	}
}

// run relays one response: the node sends script (then reads whatever sluice writes to it,
// returned as toNode), the client reads everything the relay writes (returned as got) until
// the relay's end closes.
func (p *pipes) run(kind Kind, opt *Options, script []byte) (res Result, got, toNode []byte, err error) {
	return p.runWith(kind, opt, func(node net.Conn) {
		_, _ = node.Write(script)
	}, nil)
}

// runWith is run with scripted peers: node plays the node (whatever it leaves unread is read
// after it returns, as toNode), client (nil: none) writes to sluice as the client while the
// client's side is read.
func (p *pipes) runWith(kind Kind, opt *Options, node func(net.Conn), client func(net.Conn)) (res Result, got, toNode []byte, err error) {
	nodeDone := make(chan []byte, 1)
	go func() {
		node(p.node)
		b, _ := io.ReadAll(p.node)
		nodeDone <- b
	}()
	clientDone := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(p.client)
		clientDone <- b
	}()
	if client != nil {
		go client(p.client)
	}
	p.src.SetSeq(1) // as after a command of one packet
	res, err = Response(p.dst, p.src, kind, opt)
	_ = p.dst.Flush()
	p.dst.NetConn().Close()
	p.src.NetConn().Close()
	return res, <-clientDone, <-nodeDone, err
}

// memConn is an in-memory net.Conn for benchmarks and the fuzz test: reads come from in, writes
// are counted (and kept when keep is set).
type memConn struct {
	in   []byte
	off  int
	out  []byte
	keep bool
	n    int
}

func (m *memConn) Read(p []byte) (int, error) {
	if m.off >= len(m.in) {
		return 0, io.EOF
	}
	n := copy(p, m.in[m.off:])
	m.off += n
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	m.n += len(p)
	if m.keep {
		m.out = append(m.out, p...)
	}
	return len(p), nil
}

func (m *memConn) load(in []byte) { m.in, m.off, m.out, m.n = in, 0, m.out[:0], 0 }

func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// memRelay is a relay over in-memory connections.
type memRelay struct {
	client, node *memConn
	dst          *mysql.Conn
	src          *backend.Conn
}

func newMemRelay(nodeCaps uint32) *memRelay {
	m := &memRelay{client: &memConn{}, node: &memConn{}}
	m.dst = mysql.NewConn(m.client, 0, 0)
	m.src = &backend.Conn{Conn: mysql.NewConn(m.node, 0, 4<<10), Caps: nodeCaps, Handshake: &mysql.Handshake{}}
	return m
}

// relay relays the node's response in (a fresh read buffer's worth of it at a time).
func (m *memRelay) relay(kind Kind, opt *Options, in []byte) (Result, error) {
	m.node.load(in)
	m.client.load(nil)
	m.src.SetSeq(1)
	res, err := Response(m.dst, m.src, kind, opt)
	if err == nil {
		err = m.dst.Flush()
	}
	return res, err
}
