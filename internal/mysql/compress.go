package mysql

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"sync"
)

// The compressed protocol (CLIENT_COMPRESS with zlib) wraps the ordinary packet stream in
// frames, each with a 7-byte header:
//
//	3 bytes  payload length on the wire (little endian)
//	1 byte   frame sequence id
//	3 bytes  uncompressed length; 0 when the payload is stored as it is
//
// A compressed payload is one zlib stream. Frames cut the packet stream anywhere: a frame may
// hold many packets, and a packet (even its header) may span frames.
//
// Frame sequence ids are counted apart from the packets' own: a client starts every command at
// frame 0, and each side numbers its frames from one past the last frame it received. MySQL and
// MariaDB servers check the frame ids and ignore the ids of the packets inside; they reset the
// packet counter to the frame counter whenever they flush, so those inner ids do not follow the
// uncompressed rules (a response's first packet carries one past the last *frame* of the
// command). Clients ignore inner ids too.
//
// sluice compresses under its buffered reader and writer, so the packet code and the relay work
// on the uncompressed stream unchanged. Because the relay passes packets on byte for byte, and
// the far side may not be compressed, the reading side rewrites every inner sequence id to the
// value the uncompressed protocol gives it: a command's first packet gets 0, the first packet of
// the peer's reply gets one past the last packet sluice wrote, every other packet one past the
// one before.

// CompressRole says which end of the protocol a compressed Conn plays; the frame sequence ids
// differ between the two.
type CompressRole uint8

const (
	// CompressServer is a Conn facing a client (sluice's front end). Frames from the client
	// must carry the next frame id, or 0 for a new command, as a server checks; frames sluice
	// writes number on from the client's.
	CompressServer CompressRole = iota + 1
	// CompressClient is a Conn facing a server (sluice's connection to a node). Every command
	// written (a packet with sequence id 0) starts a new frame numbered 0; the server's frame
	// ids are not checked, as clients do not check them.
	CompressClient
)

func (r CompressRole) String() string {
	switch r {
	case CompressServer:
		return "server"
	case CompressClient:
		return "client"
	}
	return fmt.Sprintf("CompressRole(%d)", uint8(r))
}

// ErrCompressedFrame is returned (wrapped) when a compressed frame does not decode, or decodes
// to a length other than its header says. The connection cannot be used after it.
var ErrCompressedFrame = errors.New("mysql: malformed compressed frame")

const (
	frameHeader = 7
	// minCompressLength: shorter frames are stored, as MySQL's MIN_COMPRESS_LENGTH.
	minCompressLength = 50
	// maxWriteFrame bounds the uncompressed bytes of one written frame (the format allows up
	// to 16 MiB - 1; smaller frames bound the write buffer of a connection that sends a large
	// packet). Frames are normally one buffered write: at most the write buffer's size.
	maxWriteFrame = 1 << 20
	// keepBuffer: a read or write buffer grown past this for a large frame is dropped
	// afterwards, so a connection does not keep megabytes for one large packet.
	keepBuffer = 256 << 10
)

// Compression state is pooled, not kept per connection: a deflater holds about 1 MiB whatever
// the level and an inflater about 45 KiB, and each is needed only while one frame is written or
// read. (A pooled one still points at the buffers of the connection that used it last.)
var (
	inflaters sync.Pool                                              // io.ReadCloser from flate.NewReader
	deflaters [zlib.BestCompression - zlib.HuffmanOnly + 1]sync.Pool // *zlib.Writer, by level
)

// EnableCompression switches c to the compressed protocol: every later read decompresses
// frames and every later write is sent in frames. Call it right after the last uncompressed
// packet of the handshake, the server's OK: on the server side after writing it (it is flushed
// here, uncompressed), on the client side after reading it. Nothing may be buffered unread.
//
// level is a compress/zlib level; zlib.BestSpeed costs much less CPU per frame than the higher
// levels, whose encoder clears about 640 KiB of tables for every frame.
func (c *Conn) EnableCompression(role CompressRole, level int) error {
	if c.cz != nil {
		return errors.New("mysql: compression is already enabled")
	}
	if role != CompressServer && role != CompressClient {
		return fmt.Errorf("mysql: invalid compression role %d", role)
	}
	if level < zlib.HuffmanOnly || level > zlib.BestCompression {
		return fmt.Errorf("mysql: invalid zlib compression level %d", level)
	}
	if n := c.br.Buffered(); n > 0 {
		return fmt.Errorf("mysql: %d uncompressed bytes buffered when compression starts", n)
	}
	if err := c.Flush(); err != nil {
		return err
	}
	z := &compressLayer{
		role:    role,
		level:   level,
		src:     &countingReader{r: c.nc, n: &c.received},
		dst:     &c.dw,
		raw:     make([]byte, c.br.Size()+frameHeader),
		rawSize: c.br.Size() + frameHeader,
		sum:     adler32.New(),
		rNext:   c.seq,
		wLast:   c.seq - 1,
		wOut:    c.seq - 1,
		// A client's first write is a command, a server's a reply to one.
		readPkt: role == CompressClient,
	}
	c.cz = z
	c.br.Reset(z)
	c.cw.w = z
	c.bw.Reset(&c.cw)
	return nil
}

// Compressed reports whether EnableCompression has been called.
func (c *Conn) Compressed() bool { return c.cz != nil }

// compressLayer sits between the Conn's buffers and the socket: the bufio.Reader reads the
// uncompressed stream from it, the bufio.Writer writes the uncompressed stream to it.
type compressLayer struct {
	role  CompressRole
	level int
	src   io.Reader // the socket
	dst   io.Writer // the socket, through the Conn's deadline writer

	// Frame sequence. fseq is the id of the next frame written, which is also the id the
	// peer's next frame should carry: one past the last frame either side sent.
	fseq       uint8
	rseq       uint8 // id of the last frame read
	readFrame  bool  // a frame has been read
	wroteFrame bool  // a frame was written since the last frame read

	// Socket bytes not yet decoded: raw[r:w]. A compressed frame is decoded only once all of
	// it is here, so that an error reading the socket (a deadline) leaves nothing half done.
	raw     []byte
	r, w    int
	rawSize int
	err     error // a malformed frame: the stream cannot be followed any further

	// The frame being delivered.
	left   int  // uncompressed bytes not yet delivered
	stored bool // the payload is not compressed
	zin    bytes.Reader
	infl   io.ReadCloser // while a compressed frame is open
	sum    hash.Hash32   // Adler-32 of the compressed frame's output
	one    [1]byte
	trail  [4]byte

	// Packets read (for renumbering).
	rHdr       [3]byte // length bytes of a header being read
	rHdrN      int     // how many of the header's bytes have been seen
	rLeft      int     // payload bytes of the current packet still to come
	rCont      bool    // the current packet is 16 MiB - 1 long: the next one continues it
	rNext      uint8   // the id the next packet gets, unless a new turn starts
	frameStart bool    // nothing of the current frame has been delivered yet
	frameCmd   bool    // the current frame starts a command (server role)
	pktCmd     bool    // the packet whose header is being read starts a command
	readPkt    bool    // a packet was read since the last one written

	// Packets written.
	plain    []byte // bytes written and not yet sent: an unfinished packet header at most
	wHdrN    int    // how many bytes of a header plain ends with
	wLeft    int    // payload bytes of the current packet still to come
	wCont    bool   // the current packet is 16 MiB - 1 long: the next one continues it
	wLast    uint8  // id of the last packet written, as the caller wrote it
	wOut     uint8  // id of the last packet written, as sent
	wrotePkt bool   // a packet was written since the last one read
	out      sink   // the frame being sent
}

// sink collects a frame for writing.
type sink struct{ b []byte }

func (s *sink) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

func (z *compressLayer) fail(format string, args ...any) error {
	z.err = fmt.Errorf("%w: "+format, append([]any{ErrCompressedFrame}, args...)...)
	z.infl = nil // its state is unknown: leave it to the garbage collector
	return z.err
}

// Read delivers the uncompressed stream, at most one frame's bytes at a time.
func (z *compressLayer) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for z.left == 0 {
		if err := z.nextFrame(); err != nil {
			return 0, err
		}
	}
	var n int
	var err error
	if z.stored {
		n, err = z.readStored(p)
	} else {
		n, err = z.inflate(p)
	}
	z.renumber(p[:n])
	return n, err
}

// nextFrame reads the next frame's header and, for a compressed frame, the whole payload.
func (z *compressLayer) nextFrame() error {
	if err := z.fill(frameHeader); err != nil {
		if err == io.EOF && z.w > z.r {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	h := z.raw[z.r : z.r+frameHeader]
	clen := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	seq := h[3]
	ulen := int(h[4]) | int(h[5])<<8 | int(h[6])<<16
	if z.role == CompressServer && seq != z.fseq && seq != 0 {
		z.err = fmt.Errorf("%w: compressed frame %d, want %d", ErrPacketSequence, seq, z.fseq)
		return z.err
	}
	if ulen == 0 {
		z.r += frameHeader
		z.stored = true
		z.left = clen
	} else {
		// zlib: 2 bytes of header, at least 1 of deflate data, 4 of checksum.
		if clen < 7 {
			return z.fail("%d compressed bytes cannot hold %d bytes", clen, ulen)
		}
		if err := z.fill(frameHeader + clen); err != nil {
			return unexpectedEOF(err)
		}
		start := z.r + frameHeader
		z.r = start + clen
		z.zin.Reset(z.raw[start:z.r])
		if err := z.openInflate(); err != nil {
			return err
		}
		z.stored = false
		z.left = ulen
	}
	// A frame numbered 0 starts a command unless it is the frame after 255 of a client that
	// is still sending (a long LOCAL INFILE upload).
	z.frameCmd = z.role == CompressServer && seq == 0 &&
		(!z.readFrame || z.wroteFrame || z.rseq != 255)
	z.frameStart = true
	z.rseq = seq
	z.readFrame = true
	z.wroteFrame = false
	z.fseq = seq + 1
	return nil
}

// openInflate checks the zlib header of the frame in zin and readies an inflater for it.
func (z *compressLayer) openInflate() error {
	cmf, _ := z.zin.ReadByte()
	flg, _ := z.zin.ReadByte()
	if cmf&0x0f != 8 || cmf>>4 > 7 || (uint16(cmf)<<8|uint16(flg))%31 != 0 {
		return z.fail("bad zlib header %02x %02x", cmf, flg)
	}
	if flg&0x20 != 0 {
		return z.fail("zlib stream needs a preset dictionary")
	}
	if v := inflaters.Get(); v != nil {
		z.infl = v.(io.ReadCloser)
		if err := z.infl.(flate.Resetter).Reset(&z.zin, nil); err != nil {
			return z.fail("%v", err)
		}
	} else {
		z.infl = flate.NewReader(&z.zin)
	}
	z.sum.Reset()
	return nil
}

// inflate delivers bytes of the open compressed frame.
func (z *compressLayer) inflate(p []byte) (int, error) {
	if len(p) > z.left {
		p = p[:z.left]
	}
	n, err := z.infl.Read(p)
	_, _ = z.sum.Write(p[:n])
	z.left -= n
	switch {
	case err == io.EOF:
		if z.left > 0 {
			return 0, z.fail("frame inflates to %d bytes fewer than its header says", z.left)
		}
	case err != nil:
		return 0, z.fail("%v", err)
	}
	if z.left == 0 {
		if err := z.closeInflate(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// closeInflate checks that the frame's zlib stream ends where its header says, with the right
// checksum and nothing after it.
func (z *compressLayer) closeInflate() error {
	n, err := z.infl.Read(z.one[:])
	if n > 0 {
		return z.fail("frame inflates to more bytes than its header says")
	}
	if err != io.EOF {
		if err == nil {
			err = io.ErrNoProgress
		}
		return z.fail("%v", err)
	}
	if _, err := io.ReadFull(&z.zin, z.trail[:]); err != nil {
		return z.fail("zlib checksum missing")
	}
	if z.zin.Len() != 0 {
		return z.fail("%d bytes after the zlib stream", z.zin.Len())
	}
	if binary.BigEndian.Uint32(z.trail[:]) != z.sum.Sum32() {
		return z.fail("zlib checksum mismatch")
	}
	inflaters.Put(z.infl)
	z.infl = nil
	if len(z.raw) > keepBuffer && z.w-z.r <= z.rawSize {
		small := make([]byte, z.rawSize)
		z.w = copy(small, z.raw[z.r:z.w])
		z.r = 0
		z.raw = small
	}
	return nil
}

// readStored delivers bytes of a stored frame, straight from the socket for large reads.
func (z *compressLayer) readStored(p []byte) (int, error) {
	if len(p) > z.left {
		p = p[:z.left]
	}
	if z.r == z.w {
		if len(p) >= len(z.raw) {
			n, err := z.src.Read(p)
			z.left -= n
			return n, unexpectedEOF(err)
		}
		if err := z.fill(1); err != nil {
			return 0, unexpectedEOF(err)
		}
	}
	n := copy(p, z.raw[z.r:z.w])
	z.r += n
	z.left -= n
	return n, nil
}

// fill reads from the socket until raw holds need bytes from r, growing raw toward need only
// as the bytes arrive (so a header claiming 16 MiB costs nothing until 16 MiB are sent).
func (z *compressLayer) fill(need int) error {
	for empty := 0; z.w-z.r < need; {
		if len(z.raw)-z.r < need {
			if z.r > 0 {
				copy(z.raw, z.raw[z.r:z.w])
				z.w -= z.r
				z.r = 0
			}
			if z.w == len(z.raw) {
				grown := make([]byte, min(need, 2*len(z.raw)))
				copy(grown, z.raw[:z.w])
				z.raw = grown
			}
		}
		n, err := z.src.Read(z.raw[z.w:])
		z.w += n
		if z.w-z.r >= need {
			return nil
		}
		if err != nil {
			return err
		}
		if n > 0 {
			empty = 0
		} else if empty++; empty >= 100 {
			return io.ErrNoProgress
		}
	}
	return nil
}

// renumber follows the packet headers in b, the next bytes delivered, and gives each packet the
// sequence id the uncompressed protocol would: 0 for a command (a packet at the start of a
// frame numbered 0, server role), one past the last packet written for the first packet of a
// reply, one past the packet before otherwise.
func (z *compressLayer) renumber(b []byte) {
	if len(b) == 0 {
		return
	}
	atStart := z.frameStart && z.rLeft == 0 && z.rHdrN == 0
	z.frameStart = false
	for len(b) > 0 {
		if z.rLeft > 0 {
			k := min(z.rLeft, len(b))
			z.rLeft -= k
			b = b[k:]
			atStart = false
			continue
		}
		if z.rHdrN == 0 {
			z.pktCmd = atStart && z.frameCmd && !z.rCont
		}
		atStart = false
		if z.rHdrN < 3 {
			z.rHdr[z.rHdrN] = b[0]
			z.rHdrN++
			b = b[1:]
			continue
		}
		n := int(z.rHdr[0]) | int(z.rHdr[1])<<8 | int(z.rHdr[2])<<16
		var seq uint8
		switch {
		case z.rCont:
			seq = z.rNext
		case z.pktCmd:
			seq = 0
		case z.wrotePkt:
			seq = z.wLast + 1
		default:
			seq = z.rNext
		}
		b[0] = seq
		b = b[1:]
		z.rNext = seq + 1
		z.rCont = n == maxPacketPayload
		z.rLeft = n
		z.rHdrN = 0
		z.wrotePkt = false
		z.readPkt = true
	}
}

// Write sends p, the next bytes of the uncompressed stream, as one or more frames (one, unless
// p is larger than maxWriteFrame or holds a command after other packets). The bytes are copied
// into the Conn's own frame buffer, where packet ids are renumbered as MySQL numbers them; the
// 1 to 3 bytes of a packet header that p ends inside of stay there until the rest of the header
// comes, since only a whole header tells whether a new frame must start with it.
func (z *compressLayer) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		k := min(len(p), maxWriteFrame-len(z.plain))
		from := len(z.plain)
		z.plain = append(z.plain, p[:k]...)
		p = p[k:]
		if err := z.sendPlain(from); err != nil {
			return 0, err
		}
	}
	if cap(z.plain) > keepBuffer {
		z.plain = append(make([]byte, 0, 64), z.plain...)
	}
	if cap(z.out.b) > keepBuffer {
		z.out.b = nil
	}
	return total, nil
}

// sendPlain follows the packet headers in plain[i:] (plain[:i] was followed before), renumbers
// them and sends plain in frames, keeping back only an unfinished header.
//
// The ids written are MySQL's: the first packet after reading carries the frame counter (one
// past the last frame read), the next ones count on from it; a client's command starts at 0.
// Peers ignore them (go-sql-driver logs a mismatch), but that is what they see from MySQL.
// wLast keeps the id the caller wrote, which the reply is numbered from.
func (z *compressLayer) sendPlain(i int) error {
	b := z.plain
	start := 0
	hdrAt := i - z.wHdrN // plain starts with the unfinished header, if any
	for i < len(b) {
		if z.wLeft > 0 {
			k := min(z.wLeft, len(b)-i)
			z.wLeft -= k
			i += k
			continue
		}
		if z.wHdrN == 0 {
			hdrAt = i
		}
		z.wHdrN++
		i++
		if z.wHdrN < 4 {
			continue
		}
		z.wHdrN = 0
		n := int(b[hdrAt]) | int(b[hdrAt+1])<<8 | int(b[hdrAt+2])<<16
		seq := b[hdrAt+3]
		var out uint8
		switch {
		case z.wCont:
			out = z.wOut + 1
		// Id 0 after 255 with nothing read in between is the counter wrapping in a long
		// upload, not a new command.
		case z.role == CompressClient && seq == 0 && (z.wLast != 255 || z.readPkt):
			if hdrAt > start {
				if err := z.frame(b[start:hdrAt]); err != nil {
					return err
				}
				start = hdrAt
			}
			z.fseq = 0
			out = 0
		case z.readPkt:
			out = z.fseq
		default:
			out = z.wOut + 1
		}
		b[hdrAt+3] = out
		z.wOut = out
		z.wLast = seq
		z.wCont = n == maxPacketPayload
		z.wLeft = n
		z.wrotePkt = true
		z.readPkt = false
	}
	end := len(b) - z.wHdrN
	if end > start {
		if err := z.frame(b[start:end]); err != nil {
			return err
		}
	}
	z.plain = append(b[:0], b[end:]...)
	return nil
}

// frame sends data as one frame, compressed if that makes it smaller.
func (z *compressLayer) frame(data []byte) error {
	n := len(data)
	z.out.b = append(z.out.b[:0], 0, 0, 0, z.fseq, 0, 0, 0)
	ulen := 0
	if n >= minCompressLength {
		zw := getDeflater(z.level, &z.out)
		_, _ = zw.Write(data)
		err := zw.Close() // writes to a sink: cannot fail
		deflaters[z.level-zlib.HuffmanOnly].Put(zw)
		if err == nil && len(z.out.b)-frameHeader < n {
			ulen = n
		}
	}
	if ulen == 0 {
		z.out.b = append(z.out.b[:frameHeader], data...)
	}
	out := z.out.b
	clen := len(out) - frameHeader
	out[0], out[1], out[2] = byte(clen), byte(clen>>8), byte(clen>>16)
	out[4], out[5], out[6] = byte(ulen), byte(ulen>>8), byte(ulen>>16)
	z.fseq++
	z.wroteFrame = true
	_, err := z.dst.Write(out)
	return err
}

func getDeflater(level int, w io.Writer) *zlib.Writer {
	if v := deflaters[level-zlib.HuffmanOnly].Get(); v != nil {
		zw := v.(*zlib.Writer)
		zw.Reset(w)
		return zw
	}
	zw, err := zlib.NewWriterLevel(w, level)
	if err != nil {
		panic(err) // the level was checked by EnableCompression
	}
	return zw
}
