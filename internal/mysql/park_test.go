package mysql

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestPark: a parked connection holds no buffers, waits for its peer without reading (a
// deadline ends the wait), and once unparked reads what came, whole; it does not park with
// anything buffered either way; what it reports while parked (Sent, Buffered, Flush) is what
// it had.
func TestPark(t *testing.T) {
	a, b := tcpPair(t)
	c := NewConn(a, 0, 0)
	peer := NewConn(b, 0, 0)

	if err := c.WritePacket([]byte("unsent")); err != nil {
		t.Fatal(err)
	}
	if c.Park() {
		t.Fatal("parked with a write buffered")
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.ReadPacket(); err != nil {
		t.Fatal(err)
	}
	sent := c.Sent()
	before := Parks()
	if !c.Park() || !c.Parked() || c.br != nil || c.bw != nil || c.payload != nil {
		t.Fatal("not parked, or still holding buffers")
	}
	if c.Sent() != sent || c.Buffered() != 0 || c.Flush() != nil {
		t.Fatal("Sent, Buffered or Flush changed while parked")
	}
	if !c.Park() || Parks() != before+1 {
		t.Fatalf("Parks went from %d to %d over a park and a park of a parked Conn, want +1", before, Parks())
	}

	_ = a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if err := c.AwaitRead(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a wait past the deadline: %v", err)
	}
	_ = a.SetReadDeadline(time.Time{})

	peer.SetSeq(0)
	if err := peer.WritePacketFlush([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.AwaitRead(); err != nil {
		t.Fatal(err)
	}
	if err := c.AwaitRead(); err != nil { // it read nothing: still there
		t.Fatal(err)
	}
	c.Unpark()
	if c.Parked() || c.br == nil || c.bw == nil {
		t.Fatal("not unparked")
	}
	c.Unpark() // nothing
	c.SetSeq(0)
	if p, err := c.ReadPacket(); err != nil || string(p) != "hello" {
		t.Fatalf("after the wait: %q, %v", p, err)
	}

	// Read ahead: not parked.
	peer.SetSeq(0)
	if err := peer.WritePacketFlush([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PeekHeader(); err != nil {
		t.Fatal(err)
	}
	if c.Park() {
		t.Fatal("parked with a packet read ahead")
	}

	// The end of the stream ends a parked wait; the read then says so.
	c.SetSeq(0)
	if _, err := c.ReadPacket(); err != nil {
		t.Fatal(err)
	}
	if !c.Park() {
		t.Fatal("not parked")
	}
	b.Close()
	if err := c.AwaitRead(); err != nil {
		t.Fatal(err)
	}
	c.Unpark()
	if _, err := c.ReadPacket(); err == nil {
		t.Fatal("read after the peer closed")
	}
}
