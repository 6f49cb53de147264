package mysql

import (
	"bytes"
	"io"
	"testing"
)

// Allocation guards for the parts of the package the proxy runs on every statement beyond the
// plain read, relay and write of packets (TestPacketPathDoesNotAllocate,
// TestWritePacketDoesNotAllocate): peeking and rewriting a command, packets past 16 MiB, and
// the OK codec with session state. Everything runs in the test's goroutine over memConns,
// so testing.AllocsPerRun counts exactly the Conn's allocations.

// TestCommandPathDoesNotAllocate is what the proxy does with a client's command: peek the
// header and payload, then either consume it (COM_QUERY, kept and sent on) or rewrite its first
// bytes and stream the rest (COM_STMT_EXECUTE with the node's statement id), and answer with a
// packet of its own.
func TestCommandPathDoesNotAllocate(t *testing.T) {
	query := rawPacket(0, append([]byte{ComQuery}, "SELECT c FROM sbtest1 WHERE id=42"...))
	execute := rawPacket(0, []byte{ComStmtExecute, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 8, 0, 42, 0, 0, 0, 0, 0, 0, 0})
	in := &memConn{}
	out := &memConn{wr: make([]byte, 0, 1024)}
	client := NewConn(in, 0, 0)
	node := NewConn(out, 0, 0)
	hdr := make([]byte, 0, 9)
	ok := AppendOK(nil, OK{Status: StatusAutocommit}, ClientProtocol41|ClientSessionTrack)

	run := func() {
		out.wr = out.wr[:0]
		in.refill(query)
		n, _, err := client.PeekHeader()
		if err != nil {
			t.Fatal(err)
		}
		p, err := client.PeekPayload(n, n)
		if err != nil || len(p) != n {
			t.Fatalf("PeekPayload: %d bytes, %v", len(p), err)
		}
		node.SetSeq(0)
		if err := node.WritePacket(p); err != nil {
			t.Fatal(err)
		}
		if err := client.Discard(4 + n); err != nil {
			t.Fatal(err)
		}

		in.refill(execute)
		if n, _, err = client.PeekHeader(); err != nil {
			t.Fatal(err)
		}
		p, err = client.PeekPayload(n, 10)
		if err != nil || len(p) != 10 {
			t.Fatalf("PeekPayload: %d bytes, %v", len(p), err)
		}
		if err := client.Discard(9); err != nil {
			t.Fatal(err)
		}
		hdr = append(hdr[:0], byte(n), byte(n>>8), byte(n>>16), 0, ComStmtExecute, 7, 0, 0, 0)
		if err := node.WriteRaw(hdr); err != nil {
			t.Fatal(err)
		}
		if err := client.CopyN(node, n-5); err != nil {
			t.Fatal(err)
		}
		if err := node.Flush(); err != nil {
			t.Fatal(err)
		}
		client.SetSeq(1)
		if err := client.WritePacketFlush(ok); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Errorf("command path: %v allocs per command, want 0", a)
	}
	want := append(append([]byte(nil), query...), execute...)
	want[len(query)+5] = 7 // the rewritten statement id
	if !bytes.Equal(out.wr, want) {
		t.Fatalf("node got %x, want %x", out.wr, want)
	}
}

// TestLargePacketDoesNotAllocate relays and reads a logical packet longer than 16 MiB (two
// physical packets); once the read buffer has grown, neither allocates.
func TestLargePacketDoesNotAllocate(t *testing.T) {
	payload := testPattern(maxPacketPayload+1000, 3)
	framed := &memConn{}
	w := NewConn(framed, 0, 0)
	if err := w.WritePacketFlush(payload); err != nil {
		t.Fatal(err)
	}
	stream := framed.wr
	in := &memConn{}
	out := &memConn{discard: true}
	r := NewConn(in, 0, 0)
	dst := NewConn(out, 0, 0)
	relay := func() {
		in.refill(stream)
		for {
			n, _, err := r.PeekHeader()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := r.CopyPacket(dst, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := dst.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(2, relay); a != 0 {
		t.Errorf("relaying a %d-byte packet: %v allocs, want 0", len(payload), a)
	}
	if out.written != 3*len(stream) {
		t.Fatalf("relayed %d bytes, want %d", out.written, 3*len(stream))
	}
	read := func() {
		in.refill(stream)
		r.SetSeq(0)
		p, err := r.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != len(payload) {
			t.Fatalf("read %d bytes, want %d", len(p), len(payload))
		}
	}
	if a := testing.AllocsPerRun(2, read); a != 0 {
		t.Errorf("reading a %d-byte packet: %v allocs, want 0", len(payload), a)
	}
}

// TestOKCodecDoesNotAllocate: the proxy decodes the OK (or result-set terminator) that ends
// every response, walks its session-state block, and re-encodes it for clients without
// SESSION_TRACK.
func TestOKCodecDoesNotAllocate(t *testing.T) {
	caps := ClientProtocol41 | ClientSessionTrack | ClientDeprecateEOF
	oks := [][]byte{
		AppendOK(nil, OK{AffectedRows: 1, Status: StatusAutocommit}, caps),
		AppendOK(nil, OK{Header: iEOF, Status: StatusAutocommit}, caps),
		mariaDBOKPacket(),
		mysql8GTIDOKPacket(),
	}
	eof := AppendEOF(nil, 0, StatusAutocommit)
	buf := make([]byte, 0, 256)
	var changes int
	run := func() {
		for _, p := range oks {
			ok, err := ParseOK(p, caps)
			if err != nil {
				t.Fatal(err)
			}
			for block := ok.SessionState; len(block) > 0; {
				var sc SessionChange
				if sc, block, err = NextSessionChange(block); err != nil {
					t.Fatal(err)
				}
				changes += len(sc.Value)
			}
			buf = AppendOK(buf[:0], ok, ClientProtocol41)
			if _, err := TerminatorStatus(p, caps); err != nil {
				t.Fatal(err)
			}
		}
		if ParseEOF(eof).Status != StatusAutocommit {
			t.Fatal("EOF status")
		}
	}
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Errorf("OK codec: %v allocs per pass, want 0", a)
	}
	if changes == 0 {
		t.Fatal("no session-state change decoded")
	}
}
