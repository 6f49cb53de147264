package mysql

import "testing"

// TestReceivedCounts: Received counts every byte read from the connection, over a plain socket
// (raw reads), a pipe, and compressed frames (the wire's bytes, not the inflated ones); it
// matches what the peer's Sent counts.
func TestReceivedCounts(t *testing.T) {
	payloads := [][]byte{[]byte("\x03SELECT 1"), testPattern(100000, 7), {}}
	wire := uint64(0)
	for _, p := range payloads {
		wire += 4 + uint64(len(p))
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.pair(t)
			bounded(t, a, b)
			cli, srv := NewConn(a, 0, 0), NewConn(b, 0, 0)
			wait := background(t, func() error { return writePackets(cli, 0, payloads) })
			if err := readPackets(srv, 0, payloads); err != nil {
				t.Fatal(err)
			}
			wait()
			if srv.Received() != wire || cli.Sent() != wire {
				t.Errorf("received %d, sent %d; want %d", srv.Received(), cli.Sent(), wire)
			}
		})
		t.Run(tr.name+"/compressed", func(t *testing.T) {
			cli, srv, cliRec, _ := compressedPair(t, tr.pair)
			wait := background(t, func() error { return writePackets(cli, 0, payloads) })
			if err := readPackets(srv, 0, payloads); err != nil {
				t.Fatal(err)
			}
			wait()
			if got, want := srv.Received(), uint64(len(cliRec.take())); got != want || want >= wire {
				t.Errorf("received %d compressed bytes, the client wrote %d (uncompressed %d)", got, want, wire)
			}
		})
	}
}
