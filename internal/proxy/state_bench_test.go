package proxy

import (
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// The session-state check: what the session does per statement to keep its node connections
// in line with it. Both run in the benchmark's goroutine over in-memory connections.

// BenchmarkSessionSync is use()'s check of a node connection already in line with the session
// (schema, COM_SET_OPTION, replayed SETs): the common case, before every statement.
func BenchmarkSessionSync(b *testing.B) {
	m, c := inLineSession(b)
	s := m.s
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.sync(c); err != nil {
			b.Fatal(err)
		}
	}
	if len(m.node.out) != 0 {
		b.Fatalf("sync sent %x to a node already in line", m.node.out)
	}
}

// BenchmarkRelayOK relays the OK that ends a response, following its session-state block
// (trackSessionState) and re-encoding it for a client without SESSION_TRACK. The schema
// entries show the cost of a schema in the block: the session keeps a copy of the name.
func BenchmarkRelayOK(b *testing.B) {
	noTrack := frontCaps &^ mysql.ClientSessionTrack
	cases := []struct {
		name string
		caps uint32
		oks  [][]byte // relayed in turn
	}{
		{"plain", frontCaps, [][]byte{{0, 1, 0, 2, 0, 0, 0}}},
		{"last_gtid", frontCaps, [][]byte{stateOKs[0].p}},
		{"system-variables", frontCaps, [][]byte{stateOKs[1].p}},
		{"last_gtid/client-without-session-track", noTrack, [][]byte{stateOKs[0].p}},
		{"schema-unchanged", frontCaps, [][]byte{okWithState(0, trackSchema, schemaChange("sbtest"))}},
		{"schema-change", frontCaps, [][]byte{
			okWithState(0, trackSchema, schemaChange("sbtest")),
			okWithState(0, trackSchema, schemaChange("other")),
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			m := newMemSession(b)
			s := m.s
			s.login.caps, s.state.DB = bc.caps, "sbtest"
			pkts := make([][]byte, len(bc.oks))
			for i, p := range bc.oks {
				pkts[i] = packets(1, p)
			}
			node := s.bc
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				m.client.load(nil)
				m.node.load(pkts[i%len(pkts)])
				i++
				n, _, err := node.PeekHeader()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.relayOK(node, n); err != nil {
					b.Fatal(err)
				}
				if err := s.client.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			if len(m.client.out) == 0 {
				b.Fatal("nothing relayed")
			}
		})
	}
}

// inLineSession is an in-memory session with a schema and two replayed SETs, and its node
// connection already in line with them.
func inLineSession(tb testing.TB) (*memSession, *nodeConn) {
	m := newMemSession(tb)
	s := m.s
	s.state.DB = "sbtest"
	s.state.Stmts = [][]byte{[]byte("SET NAMES utf8mb4"), []byte("SET SESSION sql_mode = 'ANSI'")}
	c := s.conns[0]
	c.Adopt(&s.state)
	return m, c
}
