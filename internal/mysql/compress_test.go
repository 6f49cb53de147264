package mysql

import (
	"bytes"
	"compress/zlib"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// The helpers below speak the compressed protocol with compress/zlib directly, not with the
// code under test, so the tests check the wire format against an independent encoder and
// decoder.

// zframe builds one frame: compressed with compress/zlib, or stored.
func zframe(seq byte, data []byte, compress bool) []byte {
	if !compress {
		n := len(data)
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq, 0, 0, 0}, data...)
	}
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	c, u := buf.Len(), len(data)
	return append([]byte{byte(c), byte(c >> 8), byte(c >> 16), seq, byte(u), byte(u >> 8), byte(u >> 16)}, buf.Bytes()...)
}

// wireFrame is one frame found on the wire.
type wireFrame struct {
	seq        byte
	clen, ulen int
	data       []byte // uncompressed
}

// readWireFrame reads and decodes one frame.
func readWireFrame(r io.Reader) (wireFrame, error) {
	var h [7]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return wireFrame{}, err
	}
	f := wireFrame{
		seq:  h[3],
		clen: int(h[0]) | int(h[1])<<8 | int(h[2])<<16,
		ulen: int(h[4]) | int(h[5])<<8 | int(h[6])<<16,
	}
	payload := make([]byte, f.clen)
	if _, err := io.ReadFull(r, payload); err != nil {
		return f, io.ErrUnexpectedEOF
	}
	if f.ulen == 0 {
		f.data = payload
		return f, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(payload))
	if err != nil {
		return f, err
	}
	if f.data, err = io.ReadAll(zr); err != nil {
		return f, err
	}
	if len(f.data) != f.ulen {
		return f, fmt.Errorf("frame inflates to %d bytes, header says %d", len(f.data), f.ulen)
	}
	return f, nil
}

// parseFrames decodes a whole captured compressed stream.
func parseFrames(t testing.TB, raw []byte) []wireFrame {
	t.Helper()
	r := bytes.NewReader(raw)
	var out []wireFrame
	for r.Len() > 0 {
		f, err := readWireFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		out = append(out, f)
	}
	return out
}

func frameSeqs(fs []wireFrame) []byte {
	var s []byte
	for _, f := range fs {
		s = append(s, f.seq)
	}
	return s
}

func joinFrames(fs []wireFrame) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, f.data...)
	}
	return b
}

// handPeer speaks the compressed protocol by hand over a socket, the way MySQL's own network
// layer does, for the tests that need a peer with MySQL's numbering.
type handPeer struct {
	nc   net.Conn
	buf  []byte // uncompressed bytes received, not yet taken as packets
	seqs []byte // ids of the frames received
}

// packet returns the next physical packet received.
func (h *handPeer) packet() (seq byte, payload []byte, err error) {
	for {
		if len(h.buf) >= 4 {
			n := int(h.buf[0]) | int(h.buf[1])<<8 | int(h.buf[2])<<16
			if len(h.buf) >= 4+n {
				seq, payload = h.buf[3], h.buf[4:4+n]
				h.buf = h.buf[4+n:]
				return seq, payload, nil
			}
		}
		f, err := readWireFrame(h.nc)
		if err != nil {
			return 0, nil, err
		}
		h.seqs = append(h.seqs, f.seq)
		h.buf = append(h.buf, f.data...)
	}
}

// recConn records what is written to a connection.
type recConn struct {
	net.Conn
	mu sync.Mutex
	wr []byte
}

func (r *recConn) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.wr = append(r.wr, p...)
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// take returns what was written since the last take.
func (r *recConn) take() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.wr
	r.wr = nil
	return b
}

// background runs fn in a goroutine; the returned function waits for it and reports its error.
// When fn fails, the test's connections (see bounded) are closed, so the test does not wait for
// a peer that has given up.
func background(t *testing.T, fn func() error) func() {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		err := fn()
		if err != nil {
			if v, ok := testConns.Load(t); ok {
				for _, c := range *v.(*[]net.Conn) {
					c.Close()
				}
			}
		}
		done <- err
	}()
	return func() {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatal("goroutine did not finish")
		}
	}
}

// testConns holds each test's connections, for background to close.
var testConns sync.Map // *testing.T → *[]net.Conn

// bounded puts a deadline on conns, so that a test whose other side failed ends instead of
// waiting forever, and registers them for background to close.
func bounded(t *testing.T, conns ...net.Conn) {
	for _, c := range conns {
		_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	}
	v, loaded := testConns.LoadOrStore(t, &conns)
	if loaded {
		p := v.(*[]net.Conn)
		*p = append(*p, conns...)
	} else {
		t.Cleanup(func() { testConns.Delete(t) })
	}
}

// compressedPair returns a client-role and a server-role Conn talking to each other, with what
// each writes recorded.
func compressedPair(t *testing.T, pair func(testing.TB) (net.Conn, net.Conn)) (cli, srv *Conn, cliRec, srvRec *recConn) {
	t.Helper()
	a, b := pair(t)
	bounded(t, a, b)
	cliRec, srvRec = &recConn{Conn: a}, &recConn{Conn: b}
	cli, srv = NewConn(cliRec, 0, 0), NewConn(srvRec, 0, 0)
	if err := cli.EnableCompression(CompressClient, zlib.BestSpeed); err != nil {
		t.Fatal(err)
	}
	if err := srv.EnableCompression(CompressServer, zlib.BestSpeed); err != nil {
		t.Fatal(err)
	}
	return cli, srv, cliRec, srvRec
}

func writePackets(c *Conn, seq uint8, payloads [][]byte) error {
	c.SetSeq(seq)
	for _, p := range payloads {
		if err := c.WritePacket(p); err != nil {
			return err
		}
	}
	return c.Flush()
}

func readPackets(c *Conn, seq uint8, want [][]byte) error {
	c.SetSeq(seq)
	for i, w := range want {
		p, err := c.ReadPacket()
		if err != nil {
			return fmt.Errorf("packet %d: %w", i, err)
		}
		if !bytes.Equal(p, w) {
			return fmt.Errorf("packet %d: got %d bytes, want %d (equal prefix: %v)", i, len(p), len(w),
				bytes.HasPrefix(w, p) || bytes.HasPrefix(p, w))
		}
	}
	return nil
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestCompressedRoundTrip(t *testing.T) {
	many := make([][]byte, 200)
	for i := range many {
		many[i] = testPattern(30, byte(i))
	}
	cases := []struct {
		name     string
		payloads [][]byte
		check    func(t *testing.T, frames []wireFrame)
	}{
		{"small", [][]byte{[]byte("\x03SELECT 1"), {0x0e}}, func(t *testing.T, fs []wireFrame) {
			if len(fs) != 1 || fs[0].ulen != 0 {
				t.Errorf("small packets: want one stored frame, got %+v", fs)
			}
		}},
		{"compressible", [][]byte{testPattern(200<<10, 1)}, func(t *testing.T, fs []wireFrame) {
			for _, f := range fs {
				if f.ulen == 0 || f.clen >= f.ulen {
					t.Errorf("compressible data: frame clen %d ulen %d", f.clen, f.ulen)
				}
			}
		}},
		{"incompressible", [][]byte{randomBytes(100<<10, 2)}, func(t *testing.T, fs []wireFrame) {
			for _, f := range fs {
				if f.ulen != 0 {
					t.Errorf("random data: frame clen %d ulen %d, want stored", f.clen, f.ulen)
				}
			}
		}},
		{"many-in-one-frame", many, func(t *testing.T, fs []wireFrame) {
			if len(fs) != 1 || fs[0].ulen != 200*34 {
				t.Errorf("200 packets of 34 bytes: want one frame, got %d frames", len(fs))
			}
		}},
		{"20MiB", [][]byte{testPattern(20<<20, 3), []byte("after")}, nil},
		{"exactly-16MiB-1", [][]byte{testPattern(maxPacketPayload, 4)}, nil},
	}
	for _, tr := range transports {
		for _, tc := range cases {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				if testing.Short() && len(tc.payloads[0]) > 1<<20 {
					t.Skip("large packet")
				}
				cli, srv, cliRec, srvRec := compressedPair(t, tr.pair)
				for round := range 2 {
					// The client sends the packets as one command; the server reads them and
					// sends them back as its reply, which the client reads.
					wait := background(t, func() error { return writePackets(cli, 0, tc.payloads) })
					if err := readPackets(srv, 0, tc.payloads); err != nil {
						t.Fatalf("server read: %v", err)
					}
					wait()
					k := cli.Seq()
					wait = background(t, func() error { return writePackets(srv, srv.Seq(), tc.payloads) })
					if err := readPackets(cli, k, tc.payloads); err != nil {
						t.Fatalf("client read: %v", err)
					}
					wait()

					cf, sf := parseFrames(t, cliRec.take()), parseFrames(t, srvRec.take())
					if tc.check != nil {
						tc.check(t, cf)
						tc.check(t, sf)
					}
					// Client frames count from 0, the server's on from the client's.
					for i, f := range cf {
						if f.seq != byte(i) {
							t.Fatalf("round %d: client frame ids %v", round, frameSeqs(cf))
						}
					}
					for i, f := range sf {
						if f.seq != byte(len(cf)+i) {
							t.Fatalf("round %d: server frame ids %v after %d client frames", round, frameSeqs(sf), len(cf))
						}
					}
				}
			})
		}
	}
}

// TestCompressedFrameSequence follows the frame ids of a LOCAL INFILE exchange, where the
// client goes on sending after the server's reply, and of the next command.
func TestCompressedFrameSequence(t *testing.T) {
	cli, srv, cliRec, srvRec := compressedPair(t, pipePair)
	data := [][]byte{testPattern(100, 1), testPattern(200, 2), {}}
	wait := background(t, func() error {
		if err := writePackets(srv, 0, nil); err != nil {
			return err
		}
		if err := readPackets(srv, 0, [][]byte{[]byte("\x03LOAD DATA LOCAL INFILE 'f'")}); err != nil {
			return err
		}
		if err := writePackets(srv, 1, [][]byte{[]byte("\xfbf")}); err != nil {
			return err
		}
		if err := readPackets(srv, 2, data); err != nil {
			return err
		}
		if err := writePackets(srv, 5, [][]byte{{0, 3, 0, 2, 0, 0, 0}}); err != nil {
			return err
		}
		if err := readPackets(srv, 0, [][]byte{{0x0e}}); err != nil {
			return err
		}
		return writePackets(srv, 1, [][]byte{{0, 0, 0, 2, 0, 0, 0}})
	})
	if err := writePackets(cli, 0, [][]byte{[]byte("\x03LOAD DATA LOCAL INFILE 'f'")}); err != nil {
		t.Fatal(err)
	}
	if err := readPackets(cli, 1, [][]byte{[]byte("\xfbf")}); err != nil {
		t.Fatal(err)
	}
	for i, d := range data { // one frame per packet
		if err := writePackets(cli, uint8(2+i), [][]byte{d}); err != nil {
			t.Fatal(err)
		}
	}
	if err := readPackets(cli, 5, [][]byte{{0, 3, 0, 2, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := writePackets(cli, 0, [][]byte{{0x0e}}); err != nil {
		t.Fatal(err)
	}
	if err := readPackets(cli, 1, [][]byte{{0, 0, 0, 2, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	wait()
	if got, want := frameSeqs(parseFrames(t, cliRec.take())), []byte{0, 2, 3, 4, 0}; !bytes.Equal(got, want) {
		t.Errorf("client frame ids %v, want %v", got, want)
	}
	if got, want := frameSeqs(parseFrames(t, srvRec.take())), []byte{1, 5, 1}; !bytes.Equal(got, want) {
		t.Errorf("server frame ids %v, want %v", got, want)
	}
}

// TestCompressedFrameSequenceWraps sends more than 256 frames in one command and in one upload:
// frame id 0 after 255 continues the command, and the packet ids (which wrap elsewhere) stay
// right.
func TestCompressedFrameSequenceWraps(t *testing.T) {
	cli, srv, cliRec, _ := compressedPair(t, pipePair)
	big := append([]byte{ComQuery}, testPattern(5<<20, 9)...) // about 320 frames of 16 KiB
	upload := make([][]byte, 600)
	for i := range upload {
		upload[i] = testPattern(20+i%7, byte(i))
	}
	upload[len(upload)-1] = nil
	wait := background(t, func() error {
		if err := readPackets(srv, 0, [][]byte{big}); err != nil {
			return fmt.Errorf("big command: %w", err)
		}
		if err := writePackets(srv, 1, [][]byte{[]byte("\xfbf")}); err != nil {
			return err
		}
		if err := readPackets(srv, 2, upload); err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		if err := writePackets(srv, srv.Seq(), [][]byte{{0, 0, 0, 2, 0, 0, 0}}); err != nil {
			return err
		}
		if err := readPackets(srv, 0, [][]byte{{0x0e}}); err != nil {
			return fmt.Errorf("next command: %w", err)
		}
		return writePackets(srv, 1, [][]byte{{0, 0, 0, 2, 0, 0, 0}})
	})
	// The command goes through the write buffer in 16 KiB pieces, as the relay writes it.
	cli.SetSeq(0)
	hdr := []byte{byte(len(big)), byte(len(big) >> 8), byte(len(big) >> 16), 0}
	if err := cli.WriteRaw(hdr); err != nil {
		t.Fatal(err)
	}
	for b := big; len(b) > 0; {
		k := min(len(b), 16<<10)
		if err := cli.WriteRaw(b[:k]); err != nil {
			t.Fatal(err)
		}
		b = b[k:]
	}
	if err := cli.Flush(); err != nil {
		t.Fatal(err)
	}
	cli.SetSeq(1)
	if err := readPackets(cli, 1, [][]byte{[]byte("\xfbf")}); err != nil {
		t.Fatal(err)
	}
	// The first frame of the upload holds two packets, so packet and frame ids wrap apart.
	if err := writePackets(cli, 2, upload[:2]); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < len(upload); i++ {
		if err := writePackets(cli, uint8(2+i), upload[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := readPackets(cli, uint8(2+len(upload)), [][]byte{{0, 0, 0, 2, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	if err := writePackets(cli, 0, [][]byte{{0x0e}}); err != nil {
		t.Fatal(err)
	}
	if err := readPackets(cli, 1, [][]byte{{0, 0, 0, 2, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	wait()
	seqs := frameSeqs(parseFrames(t, cliRec.take()))
	if len(seqs) < 256+len(upload) {
		t.Fatalf("only %d client frames", len(seqs))
	}
	for i := 1; i < len(seqs)-1; i++ {
		if seqs[i] != seqs[i-1]+1 && seqs[i] != seqs[i-1]+2 { // +2: the server's frame between
			t.Fatalf("client frame ids jump at %d: %v", i, seqs[max(0, i-3):i+2])
		}
	}
	if seqs[len(seqs)-1] != 0 {
		t.Errorf("next command starts at frame %d", seqs[len(seqs)-1])
	}
}

// TestCompressedMySQLNumbering talks to a peer that numbers packets inside frames as MySQL does
// (from the frame counter), and checks that the Conn sees the uncompressed protocol's ids.
func TestCompressedMySQLNumbering(t *testing.T) {
	t.Run("client", func(t *testing.T) {
		a, b := pipePair(t)
		bounded(t, a, b)
		c := NewConn(a, 0, 0)
		if err := c.EnableCompression(CompressClient, zlib.BestSpeed); err != nil {
			t.Fatal(err)
		}
		peer := &handPeer{nc: b}
		query := append([]byte{ComQuery}, testPattern(100<<10, 1)...)
		wait := background(t, func() error { return writePackets(c, 0, [][]byte{query}) })
		seq, p, err := peer.packet()
		if err != nil || seq != 0 || !bytes.Equal(p, query) {
			t.Fatalf("server got seq %d, %d bytes, %v", seq, len(p), err)
		}
		wait()
		if len(peer.seqs) < 2 || peer.seqs[0] != 0 {
			t.Fatalf("command frames %v: want several from 0", peer.seqs)
		}
		// MySQL's reply: packet ids continue from the frame counter, one past the last frame.
		next := peer.seqs[len(peer.seqs)-1] + 1
		var reply []byte
		result := [][]byte{{1}, benchColumnDef("a", 3), AppendLenEncString(nil, []byte("1")), {0xfe, 0, 0, 2, 0, 0, 0}}
		for i, r := range result {
			reply = append(reply, rawPacket(next+byte(i), r)...)
		}
		wait = background(t, func() error {
			_, err := b.Write(zframe(next, reply, true))
			return err
		})
		if _, seq, err := c.PeekHeader(); err != nil || seq != 1 {
			t.Fatalf("PeekHeader: seq %d, %v; want 1", seq, err)
		}
		if err := readPackets(c, 1, result); err != nil {
			t.Fatal(err)
		}
		wait()
	})
	t.Run("server", func(t *testing.T) {
		a, b := pipePair(t)
		bounded(t, a, b)
		c := NewConn(a, 0, 0)
		if err := c.EnableCompression(CompressServer, zlib.BestSpeed); err != nil {
			t.Fatal(err)
		}
		// A command whose packet id is not 0 still starts a command: its frame is 0.
		wait := background(t, func() error {
			_, err := b.Write(zframe(0, rawPacket(7, []byte("\x03SELECT 1")), false))
			return err
		})
		if err := readPackets(c, 0, [][]byte{[]byte("\x03SELECT 1")}); err != nil {
			t.Fatal(err)
		}
		wait()
		// A command in three frames; the reply's packet id is MySQL's: the frame counter.
		query := rawPacket(0, append([]byte{ComQuery}, testPattern(3000, 4)...))
		wait = background(t, func() error {
			for i, part := range [][]byte{query[:1000], query[1000:2000], query[2000:]} {
				if _, err := b.Write(zframe(byte(i), part, i == 1)); err != nil {
					return err
				}
			}
			return nil
		})
		if err := readPackets(c, 0, [][]byte{query[4:]}); err != nil {
			t.Fatal(err)
		}
		wait()
		wait = background(t, func() error { return writePackets(c, 1, [][]byte{{0, 0, 0, 2, 0, 0, 0}, {0xfe, 0, 0, 2, 0}}) })
		peer := &handPeer{nc: b}
		for i := range 2 {
			seq, _, err := peer.packet()
			if err != nil || seq != byte(3+i) || len(peer.seqs) != 1 || peer.seqs[0] != 3 {
				t.Fatalf("reply packet %d: id %d in frames %v, %v; want id %d in frame 3", i, seq, peer.seqs, err, 3+i)
			}
		}
		wait()
		// A frame out of order is refused, as a server refuses it.
		wait = background(t, func() error {
			_, err := b.Write(zframe(5, rawPacket(1, []byte("x")), false))
			return err
		})
		c.SetSeq(1)
		if _, err := c.ReadPacket(); !errors.Is(err, ErrPacketSequence) {
			t.Fatalf("frame 5 when 1 is due: %v", err)
		}
		wait()
	})
}

// TestCompressedProxyRelay runs the proxy's relay (PeekHeader, CopyPacket, one Flush per
// response) between a client and a node with compression on either side or both.
func TestCompressedProxyRelay(t *testing.T) {
	rows := benchResultStream(1000)
	var rowPayloads [][]byte
	for s := rows; len(s) > 0; {
		n := int(s[0]) | int(s[1])<<8 | int(s[2])<<16
		rowPayloads = append(rowPayloads, s[4:4+n])
		s = s[4+n:]
	}
	big := append([]byte{ComQuery}, testPattern(20<<20, 5)...)
	for _, tc := range []struct {
		name        string
		front, back bool
	}{{"client-side", true, false}, {"node-side", false, true}, {"both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("20 MiB packets")
			}
			appNC, frontNC := pipePair(t)
			backNC, nodeNC := tcpPair(t)
			bounded(t, appNC, frontNC, backNC, nodeNC)
			app, front := NewConn(appNC, 0, 0), NewConn(frontNC, 0, 0)
			back, node := NewConn(backNC, 0, 4<<10), NewConn(nodeNC, 0, 0)
			enable := func(c *Conn, role CompressRole) {
				if err := c.EnableCompression(role, zlib.BestSpeed); err != nil {
					t.Fatal(err)
				}
			}
			if tc.front {
				enable(app, CompressClient)
				enable(front, CompressServer)
			}
			if tc.back {
				enable(back, CompressClient)
				enable(node, CompressServer)
			}
			// relay copies one command (with its continuations) and then physical packets
			// of the response, as the proxy does.
			relay := func(physical int) error {
				for {
					n, _, err := front.PeekHeader()
					if err != nil {
						return err
					}
					if err := front.CopyPacket(back, n); err != nil {
						return err
					}
					if n < maxPacketPayload {
						break
					}
				}
				if err := back.Flush(); err != nil {
					return err
				}
				for range physical {
					n, _, err := back.PeekHeader()
					if err != nil {
						return err
					}
					if err := back.CopyPacket(front, n); err != nil {
						return err
					}
				}
				return front.Flush()
			}
			waitProxy := background(t, func() error {
				if err := relay(len(rowPayloads)); err != nil {
					return fmt.Errorf("proxy, rows: %w", err)
				}
				if err := relay(2); err != nil {
					return fmt.Errorf("proxy, big: %w", err)
				}
				return nil
			})
			waitNode := background(t, func() error {
				if err := readPackets(node, 0, [][]byte{[]byte("\x03rows")}); err != nil {
					return fmt.Errorf("node: %w", err)
				}
				if err := node.WriteRaw(rows); err != nil {
					return err
				}
				if err := node.Flush(); err != nil {
					return err
				}
				if err := readPackets(node, 0, [][]byte{big}); err != nil {
					return fmt.Errorf("node: %w", err)
				}
				return writePackets(node, node.Seq(), [][]byte{big[1:]})
			})
			if err := writePackets(app, 0, [][]byte{[]byte("\x03rows")}); err != nil {
				t.Fatal(err)
			}
			if err := readPackets(app, 1, rowPayloads); err != nil {
				t.Fatalf("rows: %v", err)
			}
			if err := writePackets(app, 0, [][]byte{big}); err != nil {
				t.Fatal(err)
			}
			if err := readPackets(app, 2, [][]byte{big[1:]}); err != nil {
				t.Fatalf("big: %v", err)
			}
			waitProxy()
			waitNode()
		})
	}
}

// TestCompressedCommandHeaderSplit writes a second command right after a first, with the
// second's header cut by the write buffer: a client still starts its frames at 0.
func TestCompressedCommandHeaderSplit(t *testing.T) {
	for _, tc := range []struct {
		role   CompressRole
		want   []byte // frame ids
		second byte   // packet id the second packet is sent with
	}{{CompressClient, []byte{0, 0}, 0}, {CompressServer, []byte{0, 1}, 1}} {
		t.Run(tc.role.String(), func(t *testing.T) {
			out := &memConn{}
			c := NewConn(out, 0, 16)
			if err := c.EnableCompression(tc.role, zlib.BestSpeed); err != nil {
				t.Fatal(err)
			}
			first, second := testPattern(10, 1), testPattern(5, 2)
			c.SetSeq(0)
			if err := c.WritePacket(first); err != nil { // 14 bytes buffered
				t.Fatal(err)
			}
			c.SetSeq(0)
			if err := c.WritePacketFlush(second); err != nil { // its header straddles the flush
				t.Fatal(err)
			}
			fs := parseFrames(t, out.wr)
			if got := frameSeqs(fs); !bytes.Equal(got, tc.want) {
				t.Fatalf("frame ids %v, want %v", got, tc.want)
			}
			if want := append(rawPacket(0, first), rawPacket(tc.second, second)...); !bytes.Equal(joinFrames(fs), want) {
				t.Fatalf("stream % x, want % x", joinFrames(fs), want)
			}
			if !bytes.Equal(fs[0].data, rawPacket(0, first)) {
				t.Fatalf("first frame % x holds more than the first command", fs[0].data)
			}
		})
	}
}

func TestEnableCompression(t *testing.T) {
	out := &memConn{rd: rawPacket(1, []byte("x"))}
	c := NewConn(out, 0, 0)
	if err := c.EnableCompression(CompressRole(9), zlib.BestSpeed); err == nil {
		t.Error("role 9 accepted")
	}
	if err := c.EnableCompression(CompressServer, 10); err == nil {
		t.Error("level 10 accepted")
	}
	if _, _, err := c.PeekHeader(); err != nil {
		t.Fatal(err)
	}
	if err := c.EnableCompression(CompressServer, zlib.BestSpeed); err == nil {
		t.Error("enabled with unread bytes buffered")
	}
	if err := c.Discard(5); err != nil {
		t.Fatal(err)
	}
	// The OK before compression starts goes out as it is.
	ok := AppendOK(nil, OK{Status: StatusAutocommit}, ClientProtocol41)
	c.SetSeq(2)
	if err := c.WritePacket(ok); err != nil {
		t.Fatal(err)
	}
	if err := c.EnableCompression(CompressServer, zlib.BestSpeed); err != nil {
		t.Fatal(err)
	}
	if !c.Compressed() {
		t.Error("Compressed() = false")
	}
	if !bytes.Equal(out.wr, rawPacket(2, ok)) {
		t.Fatalf("OK on the wire % x", out.wr)
	}
	if err := c.EnableCompression(CompressServer, zlib.BestSpeed); err == nil {
		t.Error("enabled twice")
	}
	out.wr = nil
	if err := c.WritePacketFlush([]byte{0x0e}); err != nil {
		t.Fatal(err)
	}
	if fs := parseFrames(t, out.wr); len(fs) != 1 || !bytes.Equal(fs[0].data, rawPacket(3, []byte{0x0e})) {
		t.Fatalf("after enabling: % x", out.wr)
	}
}

func TestCompressedReadErrors(t *testing.T) {
	pkt := rawPacket(0, testPattern(300, 1))
	good := zframe(0, pkt, true)
	withHeader := func(f []byte, clen, ulen int) []byte {
		f = bytes.Clone(f)
		f[0], f[1], f[2] = byte(clen), byte(clen>>8), byte(clen>>16)
		f[4], f[5], f[6] = byte(ulen), byte(ulen>>8), byte(ulen>>16)
		return f
	}
	flip := func(f []byte, i int) []byte {
		f = bytes.Clone(f)
		f[i] ^= 0x55
		return f
	}
	cases := []struct {
		name   string
		stream []byte
		want   error
	}{
		{"ulen-too-large", withHeader(good, len(good)-7, len(pkt)+1), ErrCompressedFrame},
		{"ulen-too-small", withHeader(good, len(good)-7, len(pkt)-1), ErrCompressedFrame},
		{"bad-checksum", flip(good, len(good)-1), ErrCompressedFrame},
		{"corrupt-deflate", flip(good, 10), ErrCompressedFrame},
		{"bad-zlib-header", flip(good, 7), ErrCompressedFrame},
		{"preset-dictionary", append(withHeader(good, len(good)-7+4, len(pkt))[:8:8], append([]byte{0xbb, 0, 0, 0, 0}, good[9:]...)...), ErrCompressedFrame},
		{"trailing-bytes", append(withHeader(good, len(good)-7+3, len(pkt)), 1, 2, 3), ErrCompressedFrame},
		{"tiny-compressed", []byte{2, 0, 0, 0, 5, 0, 0, 0x78, 0x9c}, ErrCompressedFrame},
		{"truncated-header", good[:5], io.ErrUnexpectedEOF},
		{"truncated-payload", good[:len(good)-3], io.ErrUnexpectedEOF},
		{"truncated-stored", zframe(0, pkt, false)[:100], io.ErrUnexpectedEOF},
		{"truncated-packet", zframe(0, pkt[:100], false), io.ErrUnexpectedEOF},
		{"hostile-length", []byte{0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0x78, 0x9c}, io.ErrUnexpectedEOF},
		{"frame-out-of-order", append(bytes.Clone(good), zframe(3, pkt, false)...), ErrPacketSequence},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(&memConn{rd: tc.stream}, 0, 0)
			if err := c.EnableCompression(CompressServer, zlib.BestSpeed); err != nil {
				t.Fatal(err)
			}
			var err error
			for i := 0; err == nil; i++ {
				c.SetSeq(0)
				_, err = c.ReadPacket()
				if i > 10 {
					t.Fatal("no error")
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// The error sticks (for malformed frames) and nothing panics on further use.
			if _, _, err2 := c.PeekHeader(); err2 == nil {
				t.Fatalf("PeekHeader after %v succeeded", err)
			}
			if cap(c.cz.raw) > 64<<10 {
				t.Fatalf("read buffer grew to %d bytes", cap(c.cz.raw))
			}
		})
	}
}

// TestCompressedHostileLengthMemory sends a header that announces 16 MiB and then a trickle:
// the reader's memory follows the bytes that arrive, not the header.
func TestCompressedHostileLengthMemory(t *testing.T) {
	stream := append([]byte{0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff}, make([]byte, 100<<10)...)
	c := NewConn(&memConn{rd: stream, chunk: 4096}, 0, 0)
	if err := c.EnableCompression(CompressClient, zlib.BestSpeed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PeekHeader(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("PeekHeader: %v", err)
	}
	if n := cap(c.cz.raw); n > 256<<10 {
		t.Fatalf("read buffer %d bytes for 100 KiB received", n)
	}
}

// TestCompressedReadResumesAfterTimeout: a read deadline that expires inside a frame (as the
// proxy's idle probe does) loses nothing; the next read carries on.
func TestCompressedReadResumesAfterTimeout(t *testing.T) {
	for _, compress := range []bool{true, false} {
		t.Run(fmt.Sprint("compressed=", compress), func(t *testing.T) {
			a, b := pipePair(t)
			c := NewConn(a, 0, 0)
			if err := c.EnableCompression(CompressServer, zlib.BestSpeed); err != nil {
				t.Fatal(err)
			}
			payload := testPattern(5000, 3)
			frame := zframe(0, rawPacket(0, payload), compress)
			cuts := []int{3, 9, len(frame) / 2}
			if !compress {
				// A stored frame streams its payload: a timeout inside it is a timeout inside
				// a packet, which ReadPacket does not resume.
				cuts = []int{3}
			}
			for _, cut := range cuts {
				wait := background(t, func() error {
					_, err := b.Write(frame[:cut])
					return err
				})
				_ = a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				if _, err := c.ReadPacket(); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("cut at %d: %v, want a timeout", cut, err)
				}
				wait()
				_ = a.SetReadDeadline(time.Time{})
				wait = background(t, func() error {
					_, err := b.Write(frame[cut:])
					return err
				})
				c.SetSeq(0)
				p, err := c.ReadPacket()
				if err != nil || !bytes.Equal(p, payload) {
					t.Fatalf("cut at %d: %d bytes, %v", cut, len(p), err)
				}
				wait()
			}
		})
	}
}

// TestCompressedGoSQLDriver runs go-sql-driver/mysql with compress=true against a server built
// on this package: queries, a 20 MiB query and result, and a 5 MiB LOCAL INFILE upload.
func TestCompressedGoSQLDriver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	upload := []byte(strings.Repeat("1,alpha,2024-01-01\n", 5<<20/19))
	gotUpload := make(chan []byte, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer nc.Close()
				if err := compressTestServe(nc, gotUpload); err != nil && !errors.Is(err, io.EOF) {
					t.Errorf("fake server: %v", err)
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})

	cfg, err := gomysql.ParseDSN("app@tcp(" + ln.Addr().String() + ")/?compress=true")
	if err != nil {
		t.Fatal(err)
	}
	var logged driverLog
	cfg.Logger = &logged
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 20*time.Second, 20*time.Second, 20*time.Second
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d, %v", one, err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if !testing.Short() {
		r := rand.New(rand.NewPCG(7, 7))
		var sb strings.Builder
		for range 20 << 20 {
			sb.WriteByte(byte('a' + r.IntN(26)))
		}
		big := sb.String()
		var echoed string
		if err := db.QueryRowContext(ctx, "SELECT '"+big+"'").Scan(&echoed); err != nil {
			t.Fatalf("20 MiB query: %v", err)
		}
		if echoed != big {
			t.Fatalf("20 MiB echo: got %d bytes", len(echoed))
		}
	}
	gomysql.RegisterReaderHandler("compress", func() io.Reader { return bytes.NewReader(upload) })
	defer gomysql.DeregisterReaderHandler("compress")
	res, err := db.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::compress' INTO TABLE t")
	if err != nil {
		t.Fatalf("LOAD DATA LOCAL INFILE: %v", err)
	}
	if n, _ := res.RowsAffected(); n != int64(len(upload)) {
		t.Fatalf("upload: server got %d bytes, want %d", n, len(upload))
	}
	if got := <-gotUpload; !bytes.Equal(got, upload) {
		t.Fatal("upload arrived changed")
	}
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 after the upload: %d, %v", one, err)
	}
	if msgs := logged.messages(); len(msgs) > 0 {
		t.Errorf("driver logged: %q", msgs)
	}
}

// driverLog collects what go-sql-driver logs (it logs sequence-id mismatches it tolerates).
type driverLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *driverLog) Print(v ...any) {
	l.mu.Lock()
	l.msgs = append(l.msgs, fmt.Sprint(v...))
	l.mu.Unlock()
}

func (l *driverLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.msgs
}

// compressTestServe is a tiny server: handshake offering CLIENT_COMPRESS, OK, then compressed
// commands until COM_QUIT.
func compressTestServe(nc net.Conn, uploads chan<- []byte) error {
	if err := nc.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		return err
	}
	c := NewConn(nc, 0, 0)
	caps := ClientLongPassword | ClientLongFlag | ClientProtocol41 | ClientTransactions |
		ClientSecureConnection | ClientPluginAuth | ClientPluginAuthLenencClientData |
		ClientCompress | ClientDeprecateEOF | ClientLocalFiles | ClientMultiResults
	nonce := []byte("abcdefghijklmnopqrst")
	hs := &Handshake{ServerVersion: "8.0.36-sluice-compress-test", ConnectionID: 1, Nonce: nonce,
		Capabilities: caps, Charset: 255, Status: StatusAutocommit, AuthPlugin: AuthNativePassword}
	if err := c.WritePacketFlush(AppendHandshake(nil, hs)); err != nil {
		return err
	}
	p, err := c.ReadPacket()
	if err != nil {
		return err
	}
	resp, err := ParseHandshakeResponse(p)
	if err != nil {
		return err
	}
	if resp.Capabilities&ClientCompress == 0 {
		return errors.New("client did not ask for compression")
	}
	caps &= resp.Capabilities
	if err := c.WritePacket(AppendOK(nil, OK{Status: StatusAutocommit}, caps)); err != nil {
		return err
	}
	if err := c.EnableCompression(CompressServer, zlib.DefaultCompression); err != nil {
		return err
	}
	ok := func(affected uint64) error {
		return c.WritePacketFlush(AppendOK(nil, OK{AffectedRows: affected, Status: StatusAutocommit}, caps))
	}
	for {
		c.SetSeq(0)
		p, err := c.ReadPacket()
		if err != nil {
			return err
		}
		switch {
		case len(p) == 1 && p[0] == ComQuit:
			return nil
		case len(p) == 1 && p[0] == ComPing:
			err = ok(0)
		case p[0] == ComQuery && string(p[1:]) == "SELECT 1":
			err = compressTestResult(c, caps, "1", []byte("1"))
		case p[0] == ComQuery && bytes.HasPrefix(p[1:], []byte("SELECT '")):
			err = compressTestResult(c, caps, "v", p[9:len(p)-1])
		case p[0] == ComQuery && bytes.HasPrefix(p[1:], []byte("LOAD DATA LOCAL INFILE 'Reader::compress'")):
			if err := c.WritePacketFlush([]byte("\xfbReader::compress")); err != nil {
				return err
			}
			var got []byte
			for {
				d, err := c.ReadPacket()
				if err != nil {
					return fmt.Errorf("upload: %w", err)
				}
				if len(d) == 0 {
					break
				}
				got = append(got, d...)
			}
			uploads <- got
			err = ok(uint64(len(got)))
		default:
			return fmt.Errorf("unexpected command % x", p[:min(len(p), 40)])
		}
		if err != nil {
			return err
		}
	}
}

// compressTestResult sends a one-column, one-row text result set.
func compressTestResult(c *Conn, caps uint32, name string, value []byte) error {
	deprecateEOF := caps&ClientDeprecateEOF != 0
	packets := [][]byte{{1}, benchColumnDef(name, 253)}
	if !deprecateEOF {
		packets = append(packets, AppendEOF(nil, 0, StatusAutocommit))
	}
	packets = append(packets, AppendLenEncString(nil, value))
	if deprecateEOF {
		packets = append(packets, AppendOK(nil, OK{Header: iEOF, Status: StatusAutocommit}, caps))
	} else {
		packets = append(packets, AppendEOF(nil, 0, StatusAutocommit))
	}
	for _, p := range packets {
		if err := c.WritePacket(p); err != nil {
			return err
		}
	}
	return c.Flush()
}

// TestCompressedRelayDoesNotAllocate checks the steady state of a compressed relay: frames are
// read and written with pooled zlib state and reused buffers. (compress/flate's inflater itself
// allocates link tables for every block with dynamic Huffman codes longer than 9 bits, so the
// reading side is measured on frames of stored deflate blocks.)
func TestCompressedRelayDoesNotAllocate(t *testing.T) {
	if raceBuild() {
		t.Skip("sync.Pool drops items at random under -race")
	}
	stream := benchResultStream(100)
	cmd := []byte("\x03SELECT * FROM sbtest1 LIMIT 100")
	measure := func(name string, in *memConn, rd []byte, srcRole, dstRole CompressRole) {
		t.Helper()
		out := &memConn{discard: true}
		src, dst := NewConn(in, 0, 0), NewConn(out, 0, 0)
		if srcRole != 0 {
			if err := src.EnableCompression(srcRole, zlib.BestSpeed); err != nil {
				t.Fatal(err)
			}
		}
		if dstRole != 0 {
			if err := dst.EnableCompression(dstRole, zlib.BestSpeed); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(50, func() {
			in.refill(rd)
			src.SetSeq(0)
			if err := src.WritePacketFlush(cmd); err != nil {
				t.Fatal(err)
			}
			relayStream(t, src, dst)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per relayed response", name, allocs)
		}
	}
	measure("compressing", &memConn{discard: true}, stream, 0, CompressServer)

	// The same stream in 16 KiB frames of stored deflate blocks.
	var framed []byte
	for i, rest := 0, stream; len(rest) > 0; i++ {
		k := min(len(rest), 16<<10)
		var buf bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&buf, zlib.NoCompression)
		_, _ = zw.Write(rest[:k])
		_ = zw.Close()
		c := buf.Len()
		framed = append(framed, byte(c), byte(c>>8), byte(c>>16), byte(i+1), byte(k), byte(k>>8), byte(k>>16))
		framed = append(framed, buf.Bytes()...)
		rest = rest[k:]
	}
	measure("decompressing", &memConn{discard: true}, framed, CompressClient, 0)
	measure("both", &memConn{discard: true}, framed, CompressClient, CompressServer)
}

// raceBuild reports whether the test binary was built with -race.
func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// compressedStream frames stream as a compressed server sends it.
func compressedStream(t testing.TB, stream []byte) []byte {
	framed := &memConn{}
	srv := NewConn(framed, 0, 0)
	if err := srv.EnableCompression(CompressServer, zlib.BestSpeed); err != nil {
		t.Fatal(err)
	}
	if err := srv.WriteRaw(stream); err != nil {
		t.Fatal(err)
	}
	if err := srv.Flush(); err != nil {
		t.Fatal(err)
	}
	return framed.wr
}

func relayStream(t testing.TB, src, dst *Conn) {
	for {
		n, _, err := src.PeekHeader()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		if err := src.CopyPacket(dst, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.Flush(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkCompressedRelay(b *testing.B) {
	stream := benchResultStream(1000)
	framed := compressedStream(b, stream)
	b.Logf("1000-row result: %d bytes, %d compressed", len(stream), len(framed))
	cmd := []byte("\x03SELECT * FROM sbtest1 LIMIT 1000")
	for _, bc := range []struct {
		name      string
		node, cli bool // compressed sides
		level     int
	}{
		{"1000rows/node-compressed", true, false, zlib.BestSpeed},
		{"1000rows/client-compressed", false, true, zlib.BestSpeed},
		{"1000rows/both", true, true, zlib.BestSpeed},
		{"1000rows/client-compressed-level6", false, true, zlib.DefaultCompression},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rd := stream
			if bc.node {
				rd = framed
			}
			in := &memConn{rd: rd, discard: true}
			out := &memConn{discard: true}
			src, dst := NewConn(in, 0, 0), NewConn(out, 0, 0)
			if bc.node {
				if err := src.EnableCompression(CompressClient, bc.level); err != nil {
					b.Fatal(err)
				}
			}
			if bc.cli {
				if err := dst.EnableCompression(CompressServer, bc.level); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				in.refill(rd)
				src.SetSeq(0)
				if err := src.WritePacketFlush(cmd); err != nil {
					b.Fatal(err)
				}
				relayStream(b, src, dst)
			}
		})
	}
}

func FuzzCompressedRead(f *testing.F) {
	pkts := append(rawPacket(0, []byte("\x03SELECT 1")), rawPacket(1, testPattern(300, 2))...)
	f.Add(zframe(0, pkts, false), true, uint8(0))
	f.Add(zframe(0, pkts, true), false, uint8(3))
	f.Add(append(zframe(0, pkts[:20], true), zframe(1, pkts[20:], false)...), true, uint8(7))
	f.Add([]byte{0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0x78, 0x9c, 1, 2, 3}, false, uint8(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, true, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, server bool, chunk uint8) {
		in := &memConn{rd: data, chunk: int(chunk % 32)}
		c := NewConn(in, 64, 0)
		c.MaxPacket = 1 << 16
		role := CompressClient
		if server {
			role = CompressServer
		}
		if err := c.EnableCompression(role, zlib.BestSpeed); err != nil {
			t.Fatal(err)
		}
		for {
			_, seq, err := c.PeekHeader()
			if err != nil {
				break
			}
			c.SetSeq(seq)
			if _, err := c.ReadPacket(); err != nil {
				break
			}
		}
		if n := cap(c.cz.raw); n > max(c.cz.rawSize, 2*len(data)) {
			t.Fatalf("read buffer of %d bytes for %d bytes of input", n, len(data))
		}
	})
}

// FuzzCompressedRoundTrip writes commands as a client (script: packet sizes, where commands
// start, where the writer flushes; a small write buffer cuts everything anywhere) and reads
// them back as a server.
func FuzzCompressedRoundTrip(f *testing.F) {
	f.Add([]byte{0x00, 0x41, 0x82, 0x03, 0x10}, uint8(0), uint8(0))
	f.Add([]byte{0xfc, 0xfd, 0xfe, 0x02, 0xf8, 0x01, 0x00, 0x00}, uint8(13), uint8(5))
	f.Add([]byte{0x04, 0x08, 0x0c, 0x10, 0x14, 0x18, 0x1c, 0x20}, uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, script []byte, wbuf, chunk uint8) {
		out := &memConn{}
		w := NewConn(out, 0, 16+int(wbuf))
		if err := w.EnableCompression(CompressClient, zlib.BestSpeed); err != nil {
			t.Fatal(err)
		}
		type packet struct {
			payload []byte
			command bool // starts a command
		}
		var want []packet
		perCommand := 0
		for i, op := range script {
			size := int(op>>2) * (1 + i%5)
			switch op & 3 {
			case 0, 1: // a packet: op 0 starts a command (and the first packet always does)
				if op&3 == 0 || len(want) == 0 || perCommand >= 8 {
					w.SetSeq(0)
					perCommand = 0
				}
				p := testPattern(size, byte(i))
				if err := w.WritePacket(p); err != nil {
					t.Fatal(err)
				}
				want = append(want, packet{p, w.Seq() == 1})
				perCommand++
			case 2:
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			case 3: // a packet of the same command, handed to the writer 3 bytes at a time
				if len(want) == 0 || perCommand >= 8 {
					continue
				}
				p := testPattern(size, byte(i))
				raw := rawPacket(w.Seq(), p)
				for len(raw) > 0 {
					k := min(3, len(raw))
					if err := w.WriteRaw(raw[:k]); err != nil {
						t.Fatal(err)
					}
					raw = raw[k:]
				}
				w.SetSeq(w.Seq() + 1)
				want = append(want, packet{p, false})
				perCommand++
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		frames := parseFrames(t, out.wr)
		var stream []byte
		for i, fr := range frames {
			if i > 0 && fr.seq != frames[i-1].seq+1 && fr.seq != 0 {
				t.Fatalf("frame ids %v", frameSeqs(frames))
			}
			stream = append(stream, fr.data...)
		}
		var wantStream []byte
		seq := uint8(0)
		for _, p := range want {
			if p.command {
				seq = 0
			}
			wantStream = append(wantStream, rawPacket(seq, p.payload)...)
			seq++
		}
		if !bytes.Equal(stream, wantStream) {
			t.Fatalf("uncompressed stream differs")
		}
		r := NewConn(&memConn{rd: out.wr, chunk: int(chunk % 40)}, 16+int(chunk), 0)
		if err := r.EnableCompression(CompressServer, zlib.BestSpeed); err != nil {
			t.Fatal(err)
		}
		for i, p := range want {
			if p.command {
				r.SetSeq(0)
			}
			got, err := r.ReadPacket()
			if err != nil {
				t.Fatalf("packet %d: %v (frames %v)", i, err, frameSeqs(frames))
			}
			if !bytes.Equal(got, p.payload) {
				t.Fatalf("packet %d differs", i)
			}
		}
		if _, _, err := r.PeekHeader(); err != io.EOF {
			t.Fatalf("after the last packet: %v", err)
		}
	})
}

// TestCompressedSeedFiles checks that the committed seeds for FuzzCompressedRead decode to what
// they were written to hold.
func TestCompressedSeedFiles(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string // payloads; "?" matches any
		err  error    // after them
	}{
		{"mysql_result_compressed", []string{"\x01", "?", "\x011", "\xfe\x00\x00\x02\x00\x00\x00"}, io.EOF},
		{"command_stored", []string{"\x03SELECT 1"}, io.EOF},
		{"packet_across_frames", []string{strings.Repeat("sluice ", 60)}, io.EOF},
		{"continuation_header", nil, io.ErrUnexpectedEOF},
		{"bad_checksum", nil, ErrCompressedFrame},
		{"hostile_length", nil, io.ErrUnexpectedEOF},
		{"empty_frames_then_out_of_order", []string{"\x0e"}, ErrPacketSequence},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzCompressedRead", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(data), "\n")
			if len(lines) < 4 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
				t.Fatal("not a fuzz corpus file")
			}
			stream, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
			if err != nil {
				t.Fatal(err)
			}
			role := CompressClient
			if lines[2] == "bool(true)" {
				role = CompressServer
			}
			c := NewConn(&memConn{rd: []byte(stream)}, 0, 0)
			if err := c.EnableCompression(role, zlib.BestSpeed); err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				_, seq, err := c.PeekHeader()
				if err == nil {
					c.SetSeq(seq)
					var p []byte
					if p, err = c.ReadPacket(); err == nil {
						if i >= len(tc.want) || (tc.want[i] != "?" && string(p) != tc.want[i]) {
							t.Fatalf("packet %d: %q", i, p)
						}
						continue
					}
				}
				if i != len(tc.want) || !errors.Is(err, tc.err) {
					t.Fatalf("after %d packets: %v, want %d packets then %v", i, err, len(tc.want), tc.err)
				}
				return
			}
		})
	}
}
