package mysql

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// memConn is an in-memory net.Conn: Read returns rd (at most chunk bytes per call when chunk > 0)
// and then io.EOF; Write appends to wr, or only counts when discard is set. It does not allocate
// on Read, nor on Write when discard is set, so the relay benchmarks measure the Conn alone.
type memConn struct {
	rd       []byte
	off      int
	chunk    int
	wr       []byte
	discard  bool
	written  int
	writeErr error
	dlErr    error // returned by SetWriteDeadline
	closed   bool
}

func (m *memConn) Read(p []byte) (int, error) {
	if m.off >= len(m.rd) {
		return 0, io.EOF
	}
	if m.chunk > 0 && len(p) > m.chunk {
		p = p[:m.chunk]
	}
	n := copy(p, m.rd[m.off:])
	m.off += n
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	if m.writeErr != nil {
		return 0, m.writeErr
	}
	m.written += len(p)
	if !m.discard {
		m.wr = append(m.wr, p...)
	}
	return len(p), nil
}

// refill makes the whole of rd readable again.
func (m *memConn) refill(rd []byte) { m.rd, m.off = rd, 0 }

func (m *memConn) Close() error                     { m.closed = true; return nil }
func (m *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return m.dlErr }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// testPattern returns n bytes of a pattern with period 251 (prime, so not a divisor of the
// 16 MiB - 1 split size): a chunk joined at the wrong offset does not compare equal.
func testPattern(n int, salt byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251) + salt
	}
	return b
}

// rawPacket frames payload as one physical packet (payload must be below 16 MiB).
func rawPacket(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// physical is one physical packet found in a stream.
type physical struct {
	n   int
	seq byte
}

// splitPhysical lists the physical packets of a well-formed stream.
func splitPhysical(t testing.TB, stream []byte) []physical {
	t.Helper()
	var out []physical
	for len(stream) > 0 {
		if len(stream) < 4 {
			t.Fatalf("stream ends inside a header: % x", stream)
		}
		n := int(stream[0]) | int(stream[1])<<8 | int(stream[2])<<16
		if len(stream) < 4+n {
			t.Fatalf("stream ends inside a packet of %d bytes", n)
		}
		out = append(out, physical{n, stream[3]})
		stream = stream[4+n:]
	}
	return out
}

// pipePair returns both ends of a synchronous in-memory pipe, closed at cleanup.
func pipePair(t testing.TB) (net.Conn, net.Conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// tcpPair returns both ends of a loopback TCP connection, closed at cleanup.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		a.Close()
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

var transports = []struct {
	name string
	pair func(testing.TB) (net.Conn, net.Conn)
}{
	{"pipe", pipePair},
	{"tcp", tcpPair},
}

// knownBug fails a test whose check once failed because of a bug that has since been fixed.
// green while the test keeps running (and passing) once the bug is fixed.
func knownBug(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("regression: "+format, args...)
}

func TestWritePacketWireFormat(t *testing.T) {
	m := &memConn{}
	c := NewConn(m, 0, 0)
	c.SetSeq(5)
	if err := c.WritePacket([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if err := c.WritePacket(nil); err != nil {
		t.Fatal(err)
	}
	if m.written != 0 {
		t.Fatalf("%d bytes reached the socket before Flush", m.written)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	want := []byte{3, 0, 0, 5, 'a', 'b', 'c', 0, 0, 0, 6}
	if !bytes.Equal(m.wr, want) {
		t.Fatalf("wire = % x, want % x", m.wr, want)
	}
	if c.Seq() != 7 {
		t.Fatalf("Seq = %d, want 7", c.Seq())
	}
	// Flush with nothing buffered does not touch the socket.
	m.writeErr = errors.New("must not be called")
	if err := c.Flush(); err != nil {
		t.Fatalf("empty Flush: %v", err)
	}
}

func TestWriteRawAndWritePacketFlush(t *testing.T) {
	m := &memConn{}
	c := NewConn(m, 0, 0)
	if err := c.WriteRaw([]byte{1, 0, 0, 9, 'x'}); err != nil {
		t.Fatal(err)
	}
	if c.Seq() != 0 {
		t.Fatalf("WriteRaw changed Seq to %d", c.Seq())
	}
	if err := c.WritePacketFlush([]byte("yz")); err != nil {
		t.Fatal(err)
	}
	want := []byte{1, 0, 0, 9, 'x', 2, 0, 0, 0, 'y', 'z'}
	if !bytes.Equal(m.wr, want) {
		t.Fatalf("wire = % x, want % x", m.wr, want)
	}
}

func TestReadWritePacketRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 250, 251, 4095, DefaultReadBuffer - 4, DefaultReadBuffer, DefaultReadBuffer + 1, 100_000, 1 << 20}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.pair(t)
			w, r := NewConn(a, 0, 0), NewConn(b, 0, 0)
			errc := make(chan error, 1)
			go func() {
				for i, n := range sizes {
					if err := w.WritePacket(testPattern(n, byte(i))); err != nil {
						errc <- err
						return
					}
				}
				errc <- w.Flush()
			}()
			for i, n := range sizes {
				p, err := r.ReadPacket()
				if err != nil {
					t.Fatalf("packet %d (%d bytes): %v", i, n, err)
				}
				if !bytes.Equal(p, testPattern(n, byte(i))) {
					t.Fatalf("packet %d (%d bytes): payload differs", i, n)
				}
				if r.Seq() != uint8(i+1) {
					t.Fatalf("after packet %d: Seq = %d, want %d", i, r.Seq(), i+1)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSequenceWraps(t *testing.T) {
	m := &memConn{}
	w := NewConn(m, 0, 0)
	w.SetSeq(255)
	for _, s := range []string{"a", "b"} {
		if err := w.WritePacket([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := splitPhysical(t, m.wr); got[0].seq != 255 || got[1].seq != 0 {
		t.Fatalf("sequence ids = %v, want 255 then 0", got)
	}
	r := NewConn(&memConn{rd: m.wr}, 0, 0)
	r.SetSeq(255)
	for _, s := range []string{"a", "b"} {
		p, err := r.ReadPacket()
		if err != nil || string(p) != s {
			t.Fatalf("ReadPacket = %q, %v; want %q", p, err, s)
		}
	}
	if r.Seq() != 1 {
		t.Fatalf("Seq = %d, want 1", r.Seq())
	}
}

func TestReadPacketSequenceMismatch(t *testing.T) {
	stream := append(rawPacket(0, []byte("ok")), rawPacket(2, []byte("skipped one"))...)
	c := NewConn(&memConn{rd: stream}, 0, 0)
	if p, err := c.ReadPacket(); err != nil || string(p) != "ok" {
		t.Fatalf("first packet: %q, %v", p, err)
	}
	_, err := c.ReadPacket()
	if !errors.Is(err, ErrPacketSequence) {
		t.Fatalf("err = %v, want ErrPacketSequence", err)
	}
	if !strings.Contains(err.Error(), "got 2, want 1") {
		t.Errorf("error %q does not name both sequence ids", err)
	}
	if c.Seq() != 1 {
		t.Errorf("Seq after a mismatch = %d, want it unchanged (1)", c.Seq())
	}

	// A command starting mid-sequence is refused too.
	c = NewConn(&memConn{rd: rawPacket(1, []byte{ComPing})}, 0, 0)
	if _, err := c.ReadPacket(); !errors.Is(err, ErrPacketSequence) {
		t.Fatalf("err = %v, want ErrPacketSequence", err)
	}
}

func TestReadPacketContinuationSequenceMismatch(t *testing.T) {
	full := testPattern(maxPacketPayload, 0)
	stream := append(rawPacket(0, full), rawPacket(5, []byte("tail"))...)
	c := NewConn(&memConn{rd: stream}, 0, 0)
	if _, err := c.ReadPacket(); !errors.Is(err, ErrPacketSequence) {
		t.Fatalf("err = %v, want ErrPacketSequence for a bad continuation id", err)
	}
}

// TestLargePackets checks the 16 MiB split: a payload of exactly 0xFFFFFF bytes is followed by
// an empty packet, and longer ones are cut into 0xFFFFFF-byte pieces with sequence ids
// incrementing; ReadPacket joins them back.
func TestLargePackets(t *testing.T) {
	const max = maxPacketPayload
	for _, tc := range []struct {
		name  string
		size  int
		start uint8
		want  []int // physical payload lengths
	}{
		{"exactly-max", max, 0, []int{max, 0}},
		{"max+1", max + 1, 3, []int{max, 1}},
		{"2max", 2 * max, 7, []int{max, max, 0}},
		{"2max+10", 2*max + 10, 254, []int{max, max, 10}},
		{"max-1", max - 1, 0, []int{max - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := testPattern(tc.size, 1)
			m := &memConn{}
			w := NewConn(m, 0, 0)
			w.SetSeq(tc.start)
			if err := w.WritePacketFlush(payload); err != nil {
				t.Fatal(err)
			}
			phys := splitPhysical(t, m.wr)
			if len(phys) != len(tc.want) {
				t.Fatalf("%d physical packets, want %d: %v", len(phys), len(tc.want), phys)
			}
			for i, p := range phys {
				if p.n != tc.want[i] || p.seq != tc.start+uint8(i) {
					t.Fatalf("physical packet %d = {n:%d seq:%d}, want {n:%d seq:%d}",
						i, p.n, p.seq, tc.want[i], tc.start+uint8(i))
				}
			}
			if w.Seq() != tc.start+uint8(len(phys)) {
				t.Fatalf("writer Seq = %d, want %d", w.Seq(), tc.start+uint8(len(phys)))
			}

			// The reader joins them, and then reads the next packet normally.
			next := uint8(tc.start + uint8(len(phys)))
			r := NewConn(&memConn{rd: append(m.wr, rawPacket(next, []byte("next"))...)}, 0, 0)
			r.SetSeq(tc.start)
			got, err := r.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("joined payload differs (len %d, want %d)", len(got), len(payload))
			}
			if r.Seq() != next {
				t.Fatalf("reader Seq = %d, want %d", r.Seq(), next)
			}
			if got, err := r.ReadPacket(); err != nil || string(got) != "next" {
				t.Fatalf("packet after the large one: %q, %v", got, err)
			}
		})
	}
}

func TestLargePacketOverPipe(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			a, b := tr.pair(t)
			w, r := NewConn(a, 0, 0), NewConn(b, 0, 0)
			payload := testPattern(2*maxPacketPayload+10, 9)
			errc := make(chan error, 1)
			go func() { errc <- w.WritePacketFlush(payload) }()
			got, err := r.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatal("payload differs")
			}
			if r.Seq() != 3 {
				t.Fatalf("Seq = %d, want 3", r.Seq())
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadPacketMaxPacket(t *testing.T) {
	c := NewConn(&memConn{rd: rawPacket(0, make([]byte, 100))}, 0, 0)
	c.MaxPacket = 100
	if p, err := c.ReadPacket(); err != nil || len(p) != 100 {
		t.Fatalf("100 bytes at MaxPacket 100: len %d, %v", len(p), err)
	}

	c = NewConn(&memConn{rd: rawPacket(0, make([]byte, 101))}, 0, 0)
	c.MaxPacket = 100
	if _, err := c.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("101 bytes at MaxPacket 100: err = %v, want ErrPacketTooLarge", err)
	}

	// Only a header claiming 16 MiB: refused before the payload is awaited or allocated.
	c = NewConn(&memConn{rd: []byte{0xff, 0xff, 0xff, 0}}, 0, 0)
	c.MaxPacket = 1 << 20
	if _, err := c.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("16 MiB header at MaxPacket 1 MiB: err = %v, want ErrPacketTooLarge", err)
	}
	if cap(c.Scratch()) > 1<<20 {
		t.Errorf("buffer grew to %d bytes for a refused packet", cap(c.Scratch()))
	}

	// The limit applies to the joined logical packet, not to each piece.
	m := &memConn{}
	w := NewConn(m, 0, 0)
	if err := w.WritePacketFlush(make([]byte, maxPacketPayload+10)); err != nil {
		t.Fatal(err)
	}
	c = NewConn(&memConn{rd: m.wr}, 0, 0)
	c.MaxPacket = maxPacketPayload + 5
	if _, err := c.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("joined packet over the limit: err = %v, want ErrPacketTooLarge", err)
	}
	c = NewConn(&memConn{rd: m.wr}, 0, 0)
	c.MaxPacket = maxPacketPayload + 10
	if p, err := c.ReadPacket(); err != nil || len(p) != maxPacketPayload+10 {
		t.Fatalf("joined packet at the limit: len %d, %v", len(p), err)
	}
}

func TestReadPacketTruncated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []byte
		want   error
	}{
		{"empty", nil, io.EOF},
		{"partial-header", []byte{5, 0}, io.ErrUnexpectedEOF},
		{"header-only", []byte{5, 0, 0, 0}, io.ErrUnexpectedEOF},
		{"partial-payload", []byte{5, 0, 0, 0, 'a', 'b'}, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(&memConn{rd: tc.stream}, 0, 0)
			if _, err := c.ReadPacket(); err != tc.want {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}

	// The same over a pipe whose writer goes away.
	a, b := pipePair(t)
	go func() {
		a.Write([]byte{10, 0, 0, 0, 'x'})
		a.Close()
	}()
	if _, err := NewConn(b, 0, 0).ReadPacket(); err != io.ErrUnexpectedEOF {
		t.Fatalf("pipe: err = %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestReadPacketTruncatedContinuation: a 0xFFFFFF-byte piece promises another packet, so a
// stream that ends right after it is truncated, not cleanly closed.
func TestReadPacketTruncatedContinuation(t *testing.T) {
	stream := rawPacket(0, make([]byte, maxPacketPayload))
	c := NewConn(&memConn{rd: stream}, 0, 0)
	_, err := c.ReadPacket()
	if err == io.EOF {
		knownBug(t, "packet.go:82-84 ReadPacket returns io.EOF, not io.ErrUnexpectedEOF, when the stream ends after a 0xFFFFFF-byte piece (inside a logical packet)")
	}
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestPeekHeaderAndPayload(t *testing.T) {
	payload := testPattern(1000, 3)
	stream := append(rawPacket(7, payload), rawPacket(8, []byte{0xfe, 0, 0, 2, 0})...)
	c := NewConn(&memConn{rd: stream}, 64, 0)

	n, seq, err := c.PeekHeader()
	if err != nil || n != 1000 || seq != 7 {
		t.Fatalf("PeekHeader = %d, %d, %v; want 1000, 7", n, seq, err)
	}
	if n2, seq2, _ := c.PeekHeader(); n2 != n || seq2 != seq {
		t.Fatal("a second PeekHeader disagrees: the first consumed something")
	}
	if p, err := c.PeekPayload(n, 1); err != nil || !bytes.Equal(p, payload[:1]) {
		t.Fatalf("PeekPayload(n, 1) = % x, %v", p, err)
	}
	if p, err := c.PeekPayload(n, 9); err != nil || !bytes.Equal(p, payload[:9]) {
		t.Fatalf("PeekPayload(n, 9) = % x, %v", p, err)
	}
	// Capped by the read buffer (64 bytes, less the header).
	p, err := c.PeekPayload(n, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 60 || !bytes.Equal(p, payload[:60]) {
		t.Fatalf("PeekPayload(n, n) returned %d bytes, want the first 60", len(p))
	}
	// Nothing was consumed: the whole packet still reads.
	c.SetSeq(7)
	got, err := c.ReadPacket()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("ReadPacket after peeking: len %d, %v", len(got), err)
	}

	// A short packet: max larger than n gives n bytes.
	n, _, _ = c.PeekHeader()
	if p, err := c.PeekPayload(n, 100); err != nil || len(p) != 5 || p[0] != 0xfe {
		t.Fatalf("PeekPayload(5, 100) = % x, %v", p, err)
	}
	if err := c.Discard(4 + n); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PeekHeader(); err != io.EOF {
		t.Fatalf("PeekHeader at the end = %v, want io.EOF", err)
	}
	if err := c.Discard(1); err != io.ErrUnexpectedEOF {
		t.Fatalf("Discard past the end = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestPeekPayloadTruncated(t *testing.T) {
	c := NewConn(&memConn{rd: []byte{10, 0, 0, 0, 'a', 'b'}}, 0, 0)
	n, _, err := c.PeekHeader()
	if err != nil || n != 10 {
		t.Fatalf("PeekHeader = %d, %v", n, err)
	}
	if _, err := c.PeekPayload(n, n); err != io.ErrUnexpectedEOF {
		t.Fatalf("PeekPayload on a truncated packet = %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestPeekHeaderTruncated: a stream that ends inside a header is truncated, as ReadPacket says.
func TestPeekHeaderTruncated(t *testing.T) {
	c := NewConn(&memConn{rd: []byte{10, 0}}, 0, 0)
	_, _, err := c.PeekHeader()
	if err == io.EOF {
		knownBug(t, "packet.go:126-128 PeekHeader returns io.EOF (not io.ErrUnexpectedEOF) when the stream ends inside a header; ReadPacket returns io.ErrUnexpectedEOF for the same stream")
	}
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

// relayAll relays every physical packet of src to dst with PeekHeader/CopyPacket, checking the
// sequence ids both sides are left with, until src ends.
func relayAll(t *testing.T, src, dst *Conn) int {
	t.Helper()
	count := 0
	for {
		n, seq, err := src.PeekHeader()
		if err == io.EOF {
			return count
		}
		if err != nil {
			t.Fatalf("PeekHeader: %v", err)
		}
		src.SetSeq(seq + 100) // CopyPacket must set both, whatever they were
		dst.SetSeq(seq + 50)
		if err := src.CopyPacket(dst, n); err != nil {
			t.Fatalf("CopyPacket(%d bytes): %v", n, err)
		}
		if src.Seq() != seq+1 || dst.Seq() != seq+1 {
			t.Fatalf("after relaying seq %d: src.Seq = %d, dst.Seq = %d, want %d", seq, src.Seq(), dst.Seq(), seq+1)
		}
		count++
	}
}

func TestCopyPacketByteForByte(t *testing.T) {
	big := testPattern(4<<20+17, 5) // much bigger than both buffers
	var stream []byte
	stream = append(stream, rawPacket(0, []byte{ComQuery})...)
	stream = append(stream, rawPacket(1, testPattern(50, 1))...)
	stream = append(stream, rawPacket(2, nil)...)
	stream = append(stream, rawPacket(3, big)...)
	stream = append(stream, rawPacket(4, testPattern(DefaultReadBuffer-4, 2))...) // fills the buffer exactly
	stream = append(stream, rawPacket(5, testPattern(DefaultReadBuffer, 3))...)
	stream = append(stream, rawPacket(200, []byte{0xfe, 0, 0, 2, 0})...)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			srcFar, srcNear := tr.pair(t)
			dstNear, dstFar := tr.pair(t)
			go func() {
				srcFar.Write(stream)
				srcFar.Close()
			}()
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(dstFar)
				got <- b
			}()
			src := NewConn(srcNear, 0, 0)
			dst := NewConn(dstNear, 0, 4096)
			if n := relayAll(t, src, dst); n != 7 {
				t.Fatalf("relayed %d packets, want 7", n)
			}
			if err := dst.Flush(); err != nil {
				t.Fatal(err)
			}
			dstNear.Close()
			if b := <-got; !bytes.Equal(b, stream) {
				t.Fatalf("relayed %d bytes, differing from the %d sent", len(b), len(stream))
			}
		})
	}
}

func TestCopyPacketSmallBuffersShortReads(t *testing.T) {
	var stream []byte
	for i := range 40 {
		stream = append(stream, rawPacket(byte(i), testPattern(i*37%300, byte(i)))...)
	}
	for _, chunk := range []int{1, 3, 7, 16, 1000} {
		m := &memConn{}
		src := NewConn(&memConn{rd: stream, chunk: chunk}, 16, 0)
		dst := NewConn(m, 0, 16)
		relayAll(t, src, dst)
		if err := dst.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.wr, stream) {
			t.Fatalf("read chunk %d: relayed stream differs", chunk)
		}
	}
}

// TestCopyPacketLogicalLarge relays a 0xFFFFFF+1 logical packet piece by piece and reads it back
// as one logical packet on the far side, followed by a reply in the same sequence.
func TestCopyPacketLogicalLarge(t *testing.T) {
	payload := testPattern(maxPacketPayload+1, 4)
	m := &memConn{}
	w := NewConn(m, 0, 0)
	if err := w.WritePacketFlush(payload); err != nil {
		t.Fatal(err)
	}
	srcFar, srcNear := pipePair(t)
	dstNear, dstFar := pipePair(t)
	go func() {
		srcFar.Write(m.wr)
		srcFar.Close()
	}()
	type result struct {
		p   []byte
		seq uint8
		err error
	}
	done := make(chan result, 1)
	go func() {
		r := NewConn(dstFar, 0, 0)
		p, err := r.ReadPacket()
		done <- result{p, r.Seq(), err}
	}()
	src, dst := NewConn(srcNear, 0, 0), NewConn(dstNear, 0, 0)
	if n := relayAll(t, src, dst); n != 2 {
		t.Fatalf("relayed %d physical packets, want 2", n)
	}
	if err := dst.Flush(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || !bytes.Equal(res.p, payload) || res.seq != 2 {
		t.Fatalf("far side read len %d, seq %d, %v", len(res.p), res.seq, res.err)
	}
}

func TestCopyPacketWriteError(t *testing.T) {
	stream := rawPacket(0, testPattern(256<<10, 0))
	dstNear, dstFar := pipePair(t)
	dstFar.Close()
	src := NewConn(&memConn{rd: stream}, 0, 0)
	dst := NewConn(dstNear, 0, 0)
	n, _, err := src.PeekHeader()
	if err != nil {
		t.Fatal(err)
	}
	err = src.CopyPacket(dst, n)
	var we *WriteError
	if !errors.As(err, &we) {
		t.Fatalf("err = %v (%T), want a *WriteError", err, err)
	}
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("WriteError wraps %v, want io.ErrClosedPipe", we.Err)
	}
	if !strings.HasPrefix(err.Error(), "write: ") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestCopyPacketWriteErrorFromConn(t *testing.T) {
	boom := errors.New("boom")
	src := NewConn(&memConn{rd: rawPacket(0, make([]byte, 100_000))}, 0, 0)
	dst := NewConn(&memConn{writeErr: boom}, 0, 0)
	n, _, _ := src.PeekHeader()
	err := src.CopyPacket(dst, n)
	var we *WriteError
	if !errors.As(err, &we) || we.Err != boom {
		t.Fatalf("err = %v, want a *WriteError wrapping boom", err)
	}
}

func TestCopyPacketReadError(t *testing.T) {
	// The source promises 100000 bytes and delivers 10: that is the source's fault, not the
	// destination's, so it is not a WriteError.
	src := NewConn(&memConn{rd: append([]byte{0xa0, 0x86, 0x01, 0}, make([]byte, 10)...)}, 0, 0)
	dst := NewConn(&memConn{discard: true}, 0, 0)
	n, _, _ := src.PeekHeader()
	err := src.CopyPacket(dst, n)
	var we *WriteError
	if err != io.ErrUnexpectedEOF || errors.As(err, &we) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF (not a WriteError)", err)
	}
}

func TestWriteErrors(t *testing.T) {
	boom := errors.New("boom")
	c := NewConn(&memConn{writeErr: boom}, 0, 0)
	if err := c.WritePacket(make([]byte, 64<<10)); err != boom {
		t.Fatalf("WritePacket of 64 KiB to a failing socket = %v, want boom", err)
	}
	c = NewConn(&memConn{writeErr: boom}, 0, 0)
	if err := c.WritePacketFlush([]byte("x")); err != boom {
		t.Fatalf("WritePacketFlush = %v, want boom", err)
	}
	// A full buffer fails on the header too.
	c = NewConn(&memConn{writeErr: boom}, 0, 16)
	if err := c.WriteRaw(make([]byte, 14)); err != nil {
		t.Fatal(err)
	}
	if err := c.WritePacket([]byte("y")); err != boom {
		t.Fatalf("WritePacket into a full buffer = %v, want boom", err)
	}
	if err := c.WritePacketFlush([]byte("z")); err != boom {
		t.Fatalf("WritePacketFlush after a failure = %v, want boom", err)
	}
	// A deadline that cannot be set fails the Flush before anything is written.
	m := &memConn{dlErr: boom}
	c = NewConn(m, 0, 0)
	c.SetWriteTimeout(time.Second)
	if err := c.WritePacketFlush([]byte("w")); err != boom || m.written != 0 {
		t.Fatalf("Flush with a failing SetWriteDeadline = %v (%d bytes written)", err, m.written)
	}
}

func TestWriteTimeoutBoundsFlush(t *testing.T) {
	near, _ := pipePair(t) // nobody reads the far end
	c := NewConn(near, 0, 0)
	c.SetWriteTimeout(20 * time.Millisecond)
	if err := c.WritePacket([]byte("stuck")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := c.Flush()
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Flush = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Flush took %v", d)
	}
}

// TestWriteTimeoutStaleDeadline: a write that does not fit the write buffer reaches the socket
// from inside WritePacket or CopyPacket (bufio flushes on its own). It must not run under the
// deadline an earlier Flush left behind, long expired on a connection that was idle.
func TestWriteTimeoutStaleDeadline(t *testing.T) {
	for _, via := range []string{"WritePacket", "CopyPacket"} {
		t.Run(via, func(t *testing.T) {
			near, far := pipePair(t)
			go io.Copy(io.Discard, far)
			c := NewConn(near, 0, 0)
			c.SetWriteTimeout(30 * time.Millisecond)
			if err := c.WritePacketFlush([]byte("greeting")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // idle for longer than WriteTimeout
			big := testPattern(64<<10, 0)
			var err error
			if via == "WritePacket" {
				err = c.WritePacket(big)
			} else {
				src := NewConn(&memConn{rd: rawPacket(1, big)}, 0, 0)
				n, _, _ := src.PeekHeader()
				err = src.CopyPacket(c, n)
			}
			if err == nil {
				err = c.Flush()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				where := map[string]string{"WritePacket": "packet.go:206-211", "CopyPacket": "packet.go:176"}[via]
				knownBug(t, "packet.go:226-236 only Flush sets the write deadline; the flush bufio.Writer does on its own inside %s (%s) runs under the stale deadline the previous Flush left: after 100ms idle with a 30ms write timeout, writing 64 KiB fails with %v", via, where, err)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConnAccessors(t *testing.T) {
	m := &memConn{rd: rawPacket(0, []byte("hello"))}
	c := NewConn(m, 0, 0)
	if c.NetConn() != net.Conn(m) {
		t.Fatal("NetConn is not the wrapped connection")
	}
	if c.Buffered() != 0 {
		t.Fatalf("Buffered before any read = %d", c.Buffered())
	}
	if _, _, err := c.PeekHeader(); err != nil {
		t.Fatal(err)
	}
	if c.Buffered() != 9 {
		t.Fatalf("Buffered after PeekHeader = %d, want 9", c.Buffered())
	}
	if err := c.Close(); err != nil || !m.closed {
		t.Fatalf("Close = %v, closed = %v", err, m.closed)
	}
	small := NewConn(m, 100, 200)
	if small.br.Size() != 100 || small.bw.Size() != 200 {
		t.Fatalf("buffer sizes = %d, %d", small.br.Size(), small.bw.Size())
	}
	def := NewConn(m, -1, 0)
	if def.br.Size() != DefaultReadBuffer || def.bw.Size() != DefaultWriteBuffer {
		t.Fatalf("default buffer sizes = %d, %d", def.br.Size(), def.bw.Size())
	}
}

func TestScratch(t *testing.T) {
	c := NewConn(&memConn{rd: rawPacket(0, make([]byte, 500))}, 0, 0)
	if _, err := c.ReadPacket(); err != nil {
		t.Fatal(err)
	}
	s := c.Scratch()
	if len(s) != 0 || cap(s) < 500 {
		t.Fatalf("Scratch len %d cap %d, want empty with the read buffer's capacity", len(s), cap(s))
	}
	s = append(s, make([]byte, 5000)...)
	c.KeepScratch(s)
	if s2 := c.Scratch(); len(s2) != 0 || cap(s2) < 5000 {
		t.Fatalf("after KeepScratch: len %d cap %d", len(s2), cap(s2))
	}
}

// TestPacketPathDoesNotAllocate guards the hot path: reading and relaying packets, once the
// buffers are warm, allocates nothing.
func TestPacketPathDoesNotAllocate(t *testing.T) {
	stream := benchResultStream(100)
	src := &memConn{rd: stream}
	dstConn := &memConn{discard: true}
	r := NewConn(src, 0, 0)
	dst := NewConn(dstConn, 0, 0)

	relay := func() {
		src.refill(stream)
		for {
			n, _, err := r.PeekHeader()
			if err != nil {
				break
			}
			if err := r.CopyPacket(dst, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := dst.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(20, relay); a != 0 {
		t.Errorf("relaying a result set: %v allocs, want 0", a)
	}
	if dstConn.written != 21*len(stream) {
		t.Fatalf("relayed %d bytes, want %d", dstConn.written, 21*len(stream))
	}

	read := func() {
		src.refill(stream)
		r.SetSeq(1)
		for {
			if _, err := r.ReadPacket(); err != nil {
				if err != io.EOF {
					t.Fatal(err)
				}
				break
			}
		}
	}
	if a := testing.AllocsPerRun(20, read); a != 0 {
		t.Errorf("reading a result set: %v allocs, want 0", a)
	}
}

// TestWritePacketDoesNotAllocate: the package promises no allocation for reading and relaying;
// writing is not promised, but the proxy writes OKs, ERRs and rewritten packets on the hot path.
func TestWritePacketDoesNotAllocate(t *testing.T) {
	dst := NewConn(&memConn{discard: true}, 0, 0)
	payload := testPattern(200, 0)
	write := func() {
		dst.SetSeq(0)
		for range 10 {
			if err := dst.WritePacket(payload); err != nil {
				t.Fatal(err)
			}
		}
		if err := dst.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(20, write); a != 0 {
		t.Fatalf("WritePacket allocates: %v allocs for 10 packets", a)
	}
}

func ExampleConn_CopyPacket() {
	src := NewConn(&memConn{rd: rawPacket(3, []byte("row"))}, 0, 0)
	out := &memConn{}
	dst := NewConn(out, 0, 0)
	n, seq, _ := src.PeekHeader()
	_ = src.CopyPacket(dst, n)
	_ = dst.Flush()
	fmt.Printf("%d %d % x %d\n", n, seq, out.wr, dst.Seq())
	// Output: 3 3 03 00 00 03 72 6f 77 4
}

// TestReadPacketGrowsWithWhatArrives: a header that claims 16 MiB followed by a few bytes costs
// what arrived, not what was claimed (before this, ReadPacket allocated the claimed size at
// once: one pre-login header per connection made sluice allocate 16 MiB each).
func TestReadPacketGrowsWithWhatArrives(t *testing.T) {
	for _, claimed := range []int{maxPacketPayload - 1, 1 << 20} {
		a, b := tcpPair(t)
		c := NewConn(a, 0, 0)
		go func() {
			_, _ = b.Write([]byte{byte(claimed), byte(claimed >> 8), byte(claimed >> 16), 0})
			_, _ = b.Write(make([]byte, 100))
			b.Close()
		}()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := c.ReadPacket()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("claimed %d: err = %v, want unexpected EOF", claimed, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
			t.Errorf("claimed %d, sent 100 bytes: allocated %d bytes", claimed, got)
		}
	}
	// A packet that does arrive whole is read whole, whatever its size.
	a, b := tcpPair(t)
	c := NewConn(a, 0, 0)
	want := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16)
	go func() {
		w := NewConn(b, 0, 0)
		_ = w.WritePacketFlush(want)
	}()
	got, err := c.ReadPacket()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("3 MiB packet: %d bytes, %v", len(got), err)
	}
}
