package relay

import (
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// counter is an Observer that allocates nothing: it counts and keeps the last status.
type counter struct {
	n      int
	status uint16
}

func (c *counter) OK(_ *backend.Conn, ok mysql.OK, _ bool) { c.n, c.status = c.n+1, ok.Status }

// hotCases are the responses of the forwarding hot path.
func hotCases() []struct {
	name     string
	nodeCaps uint32
	opt      Options
	script   []byte
} {
	rows := func(n int, row []byte) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = row
		}
		return out
	}
	noTrack := caps &^ mysql.ClientSessionTrack
	ac := mysql.StatusAutocommit
	return []struct {
		name     string
		nodeCaps uint32
		opt      Options
		script   []byte
	}{
		{"OK", caps, Options{ClientCaps: caps}, pkt(1, okPacket(ac, 1))},
		{"text/1 row", caps, Options{ClientCaps: caps}, resultSet(1, true, ac, textRow)},
		{"text/100 rows", caps, Options{ClientCaps: caps}, resultSet(1, true, ac, rows(100, textRow)...)},
		{"binary/100 rows", caps, Options{ClientCaps: caps}, resultSet(1, true, ac, rows(100, binaryRow)...)},
		{"text/100 rows/classic EOF", classicCaps, Options{ClientCaps: caps}, resultSet(1, false, ac, rows(100, textRow)...)},
		{"OK with last_gtid", caps, Options{ClientCaps: caps}, pkt(1, okWithState(ac, sysvar("last_gtid", "0-1-42")))},
		{"OK with last_gtid/client without SESSION_TRACK", caps, Options{ClientCaps: noTrack}, pkt(1, okWithState(ac, sysvar("last_gtid", "0-1-42")))},
		{"text/1 row/transaction splitting", caps, Options{ClientCaps: caps, TxPending: true}, resultSet(1, true, ac, textRow)},
		{"multi-results", caps, Options{ClientCaps: caps}, append(pkt(1, okPacket(ac|mysql.StatusMoreResultsExists, 1)), resultSet(2, true, ac, textRow)...)},
	}
}

// BenchmarkResponse relays the hot path's responses over in-memory connections, with an
// Observer and the options the session passes.
func BenchmarkResponse(b *testing.B) {
	for _, tc := range hotCases() {
		b.Run(tc.name, func(b *testing.B) {
			m := newMemRelay(tc.nodeCaps)
			var obs counter
			opt := tc.opt
			opt.Observer = &obs
			b.SetBytes(int64(len(tc.script)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.relay(Statement, &opt, tc.script); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestResponseDoesNotAllocate: relaying a response allocates nothing, whatever its shape, with
// the session-state block stripped or the status patched, and with an Observer.
func TestResponseDoesNotAllocate(t *testing.T) {
	for _, tc := range hotCases() {
		m := newMemRelay(tc.nodeCaps)
		var obs counter
		opt := tc.opt
		opt.Observer = &obs
		if _, err := m.relay(Statement, &opt, tc.script); err != nil { // buffers grow once
			t.Fatalf("%s: %v", tc.name, err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := m.relay(Statement, &opt, tc.script); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per response, want 0", tc.name, allocs)
		}
		if obs.n == 0 {
			t.Errorf("%s: the observer saw nothing", tc.name)
		}
	}
}

// TestSendDoesNotAllocate: sending a held command allocates nothing.
func TestSendDoesNotAllocate(t *testing.T) {
	m := newMemRelay(caps)
	cmd := append([]byte{mysql.ComQuery}, "SELECT v FROM t WHERE id = 42"...)
	allocs := testing.AllocsPerRun(100, func() {
		if err := Send(m.dst, m.src, cmd); err != nil {
			t.Fatal(err)
		}
		_ = m.src.Flush()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per command, want 0", allocs)
	}
}
