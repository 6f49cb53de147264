package mysql

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// ErrPacketSequence is returned when a peer sends a packet with an unexpected sequence id.
var ErrPacketSequence = errors.New("mysql: packet out of sequence")

// ErrPacketTooLarge is returned when a logical packet exceeds the reader's limit.
var ErrPacketTooLarge = errors.New("mysql: packet larger than the allowed maximum")

// Conn is one end of a MySQL protocol connection: buffered packet IO with sequence ids.
//
// Ownership: the slice ReadPacket returns belongs to the Conn and is valid until the next read.
// Writes are buffered; nothing reaches the socket before Flush (or before the write buffer
// fills), so a whole response goes out in one system call where it fits.
//
// A Conn is used by one goroutine at a time.
type Conn struct {
	nc  net.Conn
	br  *bufio.Reader
	bw  *bufio.Writer
	seq uint8

	payload []byte // reused buffer for ReadPacket
	hdr     [4]byte
	whdr    [4]byte
	dw      sockWriter
	sr      sockReader
	rdl     readDeadline   // the read deadline set through the Conn (deadline.go)
	cw      countingWriter // under bw: counts what left the write buffer
	// received counts the bytes read from the connection (sockReader, or the compressed
	// layer's reads once compression is on): Received.
	received uint64

	// MaxPacket bounds the size of one logical packet ReadPacket assembles (0: 1 GiB).
	MaxPacket int

	// cz is the compressed-protocol layer under br and bw, once EnableCompression (compress.go)
	// has been called.
	cz *compressLayer

	// budget, when set (SetBudget), is charged for the payload buffer's capacity, held bytes.
	budget *Budget
	held   int

	// parked: br and bw are in the shared pools (park.go); rsize and wsize are their sizes.
	parked       bool
	rsize, wsize int
}

// SetWriteTimeout bounds every write to the socket (0: no bound).
func (c *Conn) SetWriteTimeout(d time.Duration) { c.dw.timeout = d }

// Buffer sizes. A session's client side mostly reads small commands and writes results; a
// backend side reads results and writes small commands.
const (
	DefaultReadBuffer  = 16 << 10
	DefaultWriteBuffer = 16 << 10
)

// NewConn wraps nc with read and write buffers of the given sizes (0 = default).
func NewConn(nc net.Conn, readBuf, writeBuf int) *Conn {
	if readBuf <= 0 {
		readBuf = DefaultReadBuffer
	}
	if writeBuf <= 0 {
		writeBuf = DefaultWriteBuffer
	}
	c := &Conn{nc: nc, rsize: readBuf, wsize: writeBuf}
	c.sr.init(c, nc)
	c.dw.init(nc)
	c.cw.w = &c.dw
	c.parked = true
	c.Unpark() // buffers from the shared pools (park.go): those of connections that parked
	return c
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n uint64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += uint64(n)
	return n, err
}

// Sent counts the bytes written to c so far, buffered or not: a caller compares two readings to
// tell whether anything at all was written in between (a response that has begun, even with
// part of a packet, cannot be replaced by another).
func (c *Conn) Sent() uint64 {
	if c.parked {
		return c.cw.n
	}
	return c.cw.n + uint64(c.bw.Buffered())
}

// Received counts the bytes read from c's connection so far (read ahead into the buffer
// included): with Sent, the traffic of a client connection (sluice_client_*_bytes_total).
func (c *Conn) Received() uint64 { return c.received }

// countingReader counts the bytes read through it into *n.
type countingReader struct {
	r io.Reader
	n *uint64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	*r.n += uint64(n)
	return n, err
}

// NetConn returns the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the underlying connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Seq returns the sequence id the next packet will carry.
func (c *Conn) Seq() uint8 { return c.seq }

// SetSeq sets the sequence id of the next packet (0 at the start of a command).
func (c *Conn) SetSeq(s uint8) { c.seq = s }

// Buffered reports how many bytes are waiting in the read buffer.
func (c *Conn) Buffered() int {
	if c.parked {
		return 0
	}
	return c.br.Buffered()
}

// ReadPacket reads one logical packet (joining 16 MiB continuation packets) and checks its
// sequence id. The returned slice is valid until the next read on c.
func (c *Conn) ReadPacket() ([]byte, error) {
	c.payload = c.payload[:0]
	limit := c.MaxPacket
	if limit <= 0 {
		limit = defaultMaxPacketClient
	}
	for {
		n, seq, err := c.readHeader()
		if err != nil {
			if len(c.payload) > 0 {
				return nil, unexpectedEOF(err)
			}
			return nil, err
		}
		if seq != c.seq {
			return nil, fmt.Errorf("%w: got %d, want %d", ErrPacketSequence, seq, c.seq)
		}
		c.seq++
		if len(c.payload)+n > limit {
			return nil, ErrPacketTooLarge
		}
		if err := c.readPayload(n); err != nil {
			return nil, err
		}
		if n < maxPacketPayload {
			return c.payload, nil
		}
	}
}

// payloadChunk is the most readPayload adds to an empty payload buffer before the bytes to fill
// it have arrived (more when more is already in the read buffer).
const payloadChunk = 4 << 10

// readPayload appends n bytes of payload to c.payload. The buffer grows with what arrives, at
// most doubling (or to what the read buffer already holds), never by what a header claims: a
// peer that announces 16 MiB, or 64 KiB, and sends 10 bytes costs 4 KiB.
func (c *Conn) readPayload(n int) error {
	end := len(c.payload) + n
	for len(c.payload) < end {
		if len(c.payload) == cap(c.payload) {
			size := max(2*cap(c.payload), payloadChunk, len(c.payload)+c.br.Buffered())
			if size > end {
				size = end
			}
			if c.budget != nil {
				if !c.budget.take(size - c.held) {
					return ErrBudget
				}
				c.held = size
			}
			grown := make([]byte, len(c.payload), size)
			copy(grown, c.payload)
			c.payload = grown
		}
		upto := min(cap(c.payload), end)
		start := len(c.payload)
		c.payload = c.payload[:upto]
		if _, err := io.ReadFull(c.br, c.payload[start:]); err != nil {
			return unexpectedEOF(err)
		}
	}
	return nil
}

// ReleaseLarge drops the buffer ReadPacket reuses when a large packet grew it past limit, so
// that an idle connection does not keep it. The next ReadPacket allocates again.
func (c *Conn) ReleaseLarge(limit int) {
	if cap(c.payload) > limit {
		c.payload = nil
		if c.budget != nil {
			c.budget.give(c.held)
			c.held = 0
		}
	}
}

// ErrBudget is returned by ReadPacket when a packet would grow the buffer past what the Conn's
// Budget has left.
var ErrBudget = errors.New("mysql: the connections' shared read budget is spent")

// Budget bounds the bytes the packet buffers of a set of Conns hold together: connections whose
// peers are not trusted yet (not logged in), so that many of them cannot add up to more memory
// than the budget, whatever each is allowed on its own (MaxPacket). Safe for concurrent use.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Used is the bytes charged now.
func (b *Budget) Used() int64 { return b.used.Load() }

func (b *Budget) take(n int) bool {
	if n <= 0 {
		return true
	}
	if b.used.Add(int64(n)) > b.limit {
		b.used.Add(-int64(n))
		return false
	}
	return true
}

func (b *Budget) give(n int) {
	if n > 0 {
		b.used.Add(-int64(n))
	}
}

// Take charges n bytes held outside a Conn's packet buffer (a TLS handshake's) to b, unless
// that would pass its limit (false: nothing charged). Give them back with Give.
func (b *Budget) Take(n int) bool { return b.take(n) }

// Give returns n bytes charged with Take.
func (b *Budget) Give(n int) { b.give(n) }

// Budget returns the budget c's packet buffer is charged to, or nil.
func (c *Conn) Budget() *Budget { return c.budget }

// SetBudget charges c's packet buffer to b from now on (nil: to nothing), and gives what it held
// back to the budget it had. It returns that budget.
func (c *Conn) SetBudget(b *Budget) *Budget {
	old := c.budget
	if old != nil {
		old.give(c.held)
	}
	c.budget, c.held = b, 0
	if b != nil && cap(c.payload) > 0 {
		// The buffer it has now: charged, even past the limit (it is already allocated).
		c.held = cap(c.payload)
		b.used.Add(int64(c.held))
	}
	return old
}

// ReadPacketInto reads one logical packet as ReadPacket does, into dst's storage (grown as the
// bytes arrive) instead of the Conn's own buffer, and returns it. For a caller that keeps the
// packet past the next read.
func (c *Conn) ReadPacketInto(dst []byte) ([]byte, error) {
	own, budget := c.payload, c.budget
	c.payload, c.budget = dst[:0], nil // dst is the caller's: not charged to the budget
	p, err := c.ReadPacket()
	c.payload, c.budget = own, budget
	return p, err
}

func (c *Conn) readHeader() (n int, seq uint8, err error) {
	if _, err := io.ReadFull(c.br, c.hdr[:]); err != nil {
		return 0, 0, err
	}
	return int(c.hdr[0]) | int(c.hdr[1])<<8 | int(c.hdr[2])<<16, c.hdr[3], nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// PeekHeader returns the payload length and sequence id of the next physical packet without
// consuming it.
func (c *Conn) PeekHeader() (n int, seq uint8, err error) {
	h, err := c.br.Peek(4)
	if err != nil {
		if len(h) > 0 {
			return 0, 0, unexpectedEOF(err)
		}
		return 0, 0, err
	}
	return int(h[0]) | int(h[1])<<8 | int(h[2])<<16, h[3], nil
}

// PeekPayload returns up to max bytes of the next physical packet's payload (the header must
// have been peeked already) without consuming anything. max is capped by the read buffer size.
func (c *Conn) PeekPayload(n, max int) ([]byte, error) {
	if n > max {
		n = max
	}
	if n < 0 {
		n = 0
	}
	if lim := c.br.Size() - 4; n > lim {
		n = lim
	}
	b, err := c.br.Peek(4 + n)
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	return b[4:], nil
}

// Discard drops n bytes from the read side.
func (c *Conn) Discard(n int) error {
	_, err := c.br.Discard(n)
	return unexpectedEOF(err)
}

// CopyPacket relays one physical packet of payload length n (header included) from c to dst
// byte for byte, without allocating. It sets both sides' next sequence ids past the packet.
func (c *Conn) CopyPacket(dst *Conn, n int) error {
	seq := uint8(0)
	if h, err := c.br.Peek(4); err == nil {
		seq = h[3]
	}
	if err := c.CopyN(dst, 4+n); err != nil {
		return err
	}
	c.seq = seq + 1
	dst.seq = seq + 1
	return nil
}

// WriteError marks an error that happened writing to the destination side of a relay, so a
// caller can tell which peer broke.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "write: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// WritePacket writes payload as one logical packet (splitting it into 16 MiB physical packets)
// into the write buffer.
func (c *Conn) WritePacket(payload []byte) error {
	for {
		n := len(payload)
		if n > maxPacketPayload {
			n = maxPacketPayload
		}
		c.whdr = [4]byte{byte(n), byte(n >> 8), byte(n >> 16), c.seq}
		c.seq++
		if _, err := c.bw.Write(c.whdr[:]); err != nil {
			return err
		}
		if _, err := c.bw.Write(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		if n < maxPacketPayload {
			return nil
		}
	}
}

// WriteRaw writes bytes (headers included) into the write buffer as they are.
func (c *Conn) WriteRaw(b []byte) error {
	_, err := c.bw.Write(b)
	return err
}

// Flush sends what is buffered.
func (c *Conn) Flush() error {
	if c.parked || c.bw.Buffered() == 0 {
		return nil
	}
	return c.bw.Flush()
}

// WritePacketFlush writes one packet and flushes.
func (c *Conn) WritePacketFlush(payload []byte) error {
	if err := c.WritePacket(payload); err != nil {
		return err
	}
	return c.Flush()
}

// Scratch returns the Conn's reusable buffer, emptied, for building a packet to write. It is
// the same buffer ReadPacket fills: do not hold a read packet across a call to Scratch.
func (c *Conn) Scratch() []byte { return c.payload[:0] }

// KeepScratch stores a grown scratch buffer so its capacity is reused.
func (c *Conn) KeepScratch(b []byte) { c.payload = b[:0] }
