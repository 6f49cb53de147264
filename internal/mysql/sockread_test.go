package mysql

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echo answers every packet it reads on nc with the same packet, without allocating.
func echo(nc net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := nc.Read(buf)
		if err != nil {
			return
		}
		if _, err := nc.Write(buf[:n]); err != nil {
			return
		}
	}
}

func TestFlushBeforeReadRoundTrip(t *testing.T) {
	cn, sn := tcpPair(t)
	go echo(sn)
	c := NewConn(cn, 0, 0)
	if c.sr.rc == nil {
		t.Fatal("a TCP connection has no raw access")
	}
	for i := 0; i < 100; i++ {
		want := bytes.Repeat([]byte{byte(i)}, 1+i*50)
		c.SetSeq(0)
		if err := c.WritePacket(want); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushBeforeRead(); err != nil {
			t.Fatal(err)
		}
		if !c.sr.flushFirst {
			t.Fatal("FlushBeforeRead flushed at once on a plain TCP connection")
		}
		c.SetSeq(0)
		got, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: got %d bytes, want %d", i, len(got), len(want))
		}
	}
}

// A response larger than the socket buffers: the flush inside the read's wait must not
// deadlock against a peer that only reads after it has written.
func TestFlushBeforeReadLarge(t *testing.T) {
	cn, sn := tcpPair(t)
	go echo(sn)
	c := NewConn(cn, 0, 0)
	want := bytes.Repeat([]byte("0123456789"), 3<<20/10) // 3 MiB
	if err := c.WritePacket(want); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushBeforeRead(); err != nil {
		t.Fatal(err)
	}
	c.SetSeq(0)
	got, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
}

// pingTimesOut leaves a "ping" packet to FlushBeforeRead on a TCP connection, reads under
// the read deadline given, and checks that the read timed out and the peer got the packet.
func pingTimesOut(t *testing.T, deadline time.Time) (c *Conn, cn, sn net.Conn) {
	t.Helper()
	cn, sn = tcpPair(t)
	c = NewConn(cn, 0, 0)
	if err := c.WritePacket([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushBeforeRead(); err != nil {
		t.Fatal(err)
	}
	_ = cn.SetReadDeadline(deadline)
	if _, _, err := c.PeekHeader(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("PeekHeader: %v, want a deadline error", err)
	}
	_ = sn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 8)
	if _, err := io.ReadFull(sn, got); err != nil || string(got[4:]) != "ping" {
		t.Fatalf("the peer got %q, %v; want the buffered ping", got, err)
	}
	return c, cn, sn
}

// A read whose deadline has passed still sends what FlushBeforeRead left in the buffer.
func TestFlushBeforeReadDeadlinePassed(t *testing.T) {
	pingTimesOut(t, time.Unix(1, 0))
}

// A deadline that expires during the wait: the packet went out, the read times out.
func TestFlushBeforeReadTimeout(t *testing.T) {
	c, cn, sn := pingTimesOut(t, time.Now().Add(50*time.Millisecond))
	// The connection stays usable: the next read (no deadline) gets the answer.
	_ = cn.SetReadDeadline(time.Time{})
	go func() { _, _ = sn.Write([]byte{1, 0, 0, 0, 'x'}) }()
	c.SetSeq(0)
	if p, err := c.ReadPacket(); err != nil || string(p) != "x" {
		t.Fatalf("ReadPacket = %q, %v", p, err)
	}
}

// The peer closing: the read reports EOF (after the buffered packet was sent or failed).
func TestFlushBeforeReadPeerClosed(t *testing.T) {
	cn, sn := tcpPair(t)
	c := NewConn(cn, 0, 0)
	go func() {
		buf := make([]byte, 8)
		_, _ = io.ReadFull(sn, buf)
		sn.Close()
	}()
	if err := c.WritePacket([]byte("quit")); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushBeforeRead(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PeekHeader(); err != io.EOF {
		t.Fatalf("PeekHeader after the peer closed: %v, want EOF", err)
	}
}

// Where waiting first does not apply, FlushBeforeRead is Flush.
func TestFlushBeforeReadFallsBackToFlush(t *testing.T) {
	t.Run("not TCP", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		c := NewConn(a, 0, 0)
		got := make(chan []byte, 1)
		go func() {
			buf := make([]byte, 8)
			_, _ = io.ReadFull(b, buf)
			got <- buf
		}()
		if err := c.WritePacket([]byte("pipe")); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushBeforeRead(); err != nil {
			t.Fatal(err)
		}
		if c.bw.Buffered() != 0 || c.sr.flushFirst {
			t.Fatal("FlushBeforeRead kept the bytes on a net.Pipe")
		}
		if b := <-got; string(b[4:]) != "pipe" {
			t.Fatalf("peer got %q", b)
		}
	})
	t.Run("read buffer not empty", func(t *testing.T) {
		cn, sn := tcpPair(t)
		c := NewConn(cn, 0, 0)
		if _, err := sn.Write([]byte{1, 0, 0, 0, 'a', 1, 0, 0, 1, 'b'}); err != nil {
			t.Fatal(err)
		}
		if p, err := c.ReadPacket(); err != nil || string(p) != "a" {
			t.Fatalf("ReadPacket = %q, %v", p, err)
		}
		if c.Buffered() == 0 {
			t.Skip("the second packet was not read ahead")
		}
		if err := c.WritePacket([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushBeforeRead(); err != nil {
			t.Fatal(err)
		}
		if c.bw.Buffered() != 0 || c.sr.flushFirst {
			t.Fatal("FlushBeforeRead kept the bytes while the next packet was already buffered")
		}
	})
}

// The statement path's round trip with FlushBeforeRead allocates nothing.
func TestFlushBeforeReadAllocs(t *testing.T) {
	cn, sn := tcpPair(t)
	go echo(sn)
	c := NewConn(cn, 0, 0)
	payload := []byte("SELECT 1")
	round := func() {
		c.SetSeq(0)
		if err := c.WritePacket(payload); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushBeforeRead(); err != nil {
			t.Fatal(err)
		}
		c.SetSeq(0)
		if _, err := c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
	}
	round()
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Fatalf("%.1f allocations per round trip, want 0", n)
	}
}

func BenchmarkTCPRoundTrip(b *testing.B) {
	for _, mode := range []string{"Flush", "FlushBeforeRead"} {
		b.Run(mode, func(b *testing.B) {
			cn, sn := tcpPair(b)
			go echo(sn)
			c := NewConn(cn, 0, 0)
			payload := []byte("SELECT 1")
			b.ReportAllocs()
			for b.Loop() {
				c.SetSeq(0)
				if err := c.WritePacket(payload); err != nil {
					b.Fatal(err)
				}
				var err error
				if mode == "Flush" {
					err = c.Flush()
				} else {
					err = c.FlushBeforeRead()
				}
				if err != nil {
					b.Fatal(err)
				}
				c.SetSeq(0)
				if _, err := c.ReadPacket(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// On a TCP socket the Conn writes with raw system calls: a peer that stops reading must still
// be bounded by the write timeout.
func TestRawWriteTimeout(t *testing.T) {
	cn, _ := tcpPair(t) // nobody reads the far end
	c := NewConn(cn, 0, 0)
	if c.dw.rc == nil {
		t.Fatal("a TCP connection has no raw access")
	}
	c.SetWriteTimeout(50 * time.Millisecond)
	start := time.Now()
	var err error
	for i := 0; i < 64 && err == nil; i++ { // up to 64 MiB, far beyond the socket buffers
		if err = c.WritePacket(testPattern(1<<20, byte(i))); err == nil {
			err = c.Flush()
		}
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("writing to a peer that does not read: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the write timed out after %v", d)
	}
}

// A peer that went away: writes fail with the socket's error, reads with EOF or a reset.
func TestRawWritePeerGone(t *testing.T) {
	cn, sn := tcpPair(t)
	c := NewConn(cn, 0, 0)
	sn.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		if err = c.WritePacket(testPattern(64<<10, byte(i))); err == nil {
			err = c.Flush()
		}
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("writing to a closed peer: %v, want EPIPE or ECONNRESET", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("error %T %v is not a write *net.OpError", err, err)
	}
	if _, err := c.ReadPacket(); err == nil {
		t.Fatal("reading from a closed peer succeeded")
	}
}

// Closing the connection from another goroutine ends a read waiting in the poller.
func TestRawReadClosedWhileWaiting(t *testing.T) {
	cn, _ := tcpPair(t)
	c := NewConn(cn, 0, 0)
	go func() {
		time.Sleep(50 * time.Millisecond)
		cn.Close()
	}()
	if _, err := c.ReadPacket(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadPacket on a connection closed meanwhile: %v, want net.ErrClosed", err)
	}
}

// A write that had to wait armed the write deadline; once done, the deadline must not linger
// and fail a later write after the connection was idle for longer than the timeout.
func TestRawWriteDeadlineDoesNotLinger(t *testing.T) {
	cn, sn := tcpPair(t)
	// Small socket buffers, so that the first write has to wait for the reader.
	_ = cn.(*net.TCPConn).SetWriteBuffer(32 << 10)
	_ = sn.(*net.TCPConn).SetReadBuffer(32 << 10)
	go func() {
		time.Sleep(50 * time.Millisecond) // let the first write fill the socket buffers
		_, _ = io.Copy(io.Discard, sn)
	}()
	c := NewConn(cn, 0, 0)
	c.SetWriteTimeout(200 * time.Millisecond)
	big := testPattern(8<<20, 1)
	if err := c.WritePacket(big); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // idle past the timeout
	if err := c.WritePacket(big); err != nil {
		t.Fatalf("write after an idle spell: %v", err)
	}
	if err := c.Flush(); err != nil {
		t.Fatalf("flush after an idle spell: %v", err)
	}
}

// TestFlushBeforeReadPipelinedPeer: a client that sends its next command before it has read the
// answer to the previous one (Connector/J sends its first queries back to back). The command
// reaches the socket while nothing waits on it; the next read must still see it, with the answer
// flushed first. Without SetPeerPipelines the read's setup dropped that readiness notice and the
// wait slept until the peer's next packet: a hang.
func TestFlushBeforeReadPipelinedPeer(t *testing.T) {
	cn, sn := tcpPair(t)
	s := NewConn(sn, 0, 0)
	s.SetPeerPipelines()
	peer := NewConn(cn, 0, 0)
	for round := range 20 {
		peer.SetSeq(0)
		if err := peer.WritePacketFlush([]byte("first")); err != nil {
			t.Fatal(err)
		}
		s.SetSeq(0)
		if p, err := s.ReadPacket(); err != nil || string(p) != "first" {
			t.Fatalf("round %d: first = %q, %v", round, p, err)
		}
		// The second command arrives before the answer to the first is sent, and the poller
		// has seen it by the time the next read starts.
		peer.SetSeq(0)
		if err := peer.WritePacketFlush([]byte("second")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		s.SetSeq(1)
		if err := s.WritePacket([]byte("answer")); err != nil {
			t.Fatal(err)
		}
		if err := s.FlushBeforeRead(); err != nil {
			t.Fatal(err)
		}
		_ = sn.SetReadDeadline(time.Now().Add(2 * time.Second))
		s.SetSeq(0)
		p, err := s.ReadPacket()
		if err != nil {
			t.Fatalf("round %d: the pipelined command was not read: %v", round, err)
		}
		if string(p) != "second" {
			t.Fatalf("round %d: got %q", round, p)
		}
		_ = sn.SetReadDeadline(time.Time{})
		if p, err := peer.ReadPacket(); err != nil || string(p) != "answer" {
			t.Fatalf("round %d: answer = %q, %v", round, p, err)
		}
		// Answer the second too, in line for the next round.
		s.SetSeq(1)
		if err := s.WritePacketFlush([]byte("answer2")); err != nil {
			t.Fatal(err)
		}
		peer.SetSeq(1)
		if p, err := peer.ReadPacket(); err != nil || string(p) != "answer2" {
			t.Fatalf("round %d: answer2 = %q, %v", round, p, err)
		}
	}
}
