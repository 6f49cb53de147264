package relay

import (
	"errors"
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// FuzzResponse relays a random node byte stream under every kind and option: the relay never
// panics, ends (the stream is finite), reports failures as *Error or *ReadOnlyError, and writes
// to the client no more than the node sent plus sluice's own error packet.
func FuzzResponse(f *testing.F) {
	ac := mysql.StatusAutocommit
	for _, seed := range [][]byte{
		pkt(1, okPacket(ac, 1)),
		pkt(1, errPacket(1146, "no table")),
		resultSet(1, true, ac, textRow, binaryRow),
		resultSet(1, false, ac|mysql.StatusMoreResultsExists, textRow),
		append(pkt(1, okPacket(ac|mysql.StatusMoreResultsExists, 1)), pkt(2, okWithState(ac, sysvar("last_gtid", "0-1-42"), schema("db")))...),
		pkt(1, append([]byte{0xfb}, "data.csv"...)),
		pkt(1, []byte{1}, column, eof(ac|mysql.StatusCursorExists)),
		pkt(1, errPacket(mysql.ErrOptionPreventsStm, "running with the --read-only option")),
		{0xff, 0xff, 0xff, 1, 0},
	} {
		for kind := range Cursor + 1 {
			f.Add(seed, uint8(kind), uint8(0))
		}
		f.Add(seed, uint8(Statement), uint8(0xff))
	}
	f.Fuzz(func(t *testing.T, stream []byte, kind, flags uint8) {
		nodeCaps := caps
		if flags&1 != 0 {
			nodeCaps = classicCaps
		}
		m := newMemRelay(nodeCaps)
		m.client.in = pkt(2, []byte("1,a\n"), nil) // a client's file, should the request reach it
		opt := Options{
			ClientCaps: caps,
			TxPending:  flags&2 != 0,
			Redirect:   flags&4 != 0,
			Infile:     flags&8 != 0,
			InfileName: []byte("data.csv"),
			Node:       "node",
			Observer:   &counter{},
		}
		if flags&16 != 0 {
			opt.ClientCaps &^= mysql.ClientSessionTrack
		}
		m.node.in = stream
		m.src.SetSeq(1)
		_, err := Response(m.dst, m.src, Kind(kind%uint8(Cursor+1)), &opt)
		_ = m.dst.Flush()
		var re *Error
		var ro *ReadOnlyError
		if err != nil && !errors.As(err, &re) && !errors.As(err, &ro) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if limit := len(stream) + 512; m.client.n > limit {
			t.Fatalf("the client got %d bytes of a %d-byte stream", m.client.n, len(stream))
		}
	})
}
