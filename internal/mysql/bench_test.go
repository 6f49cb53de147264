package mysql

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchColumnDef builds a ColumnDefinition41 payload.
func benchColumnDef(name string, typ byte) []byte {
	var b []byte
	for _, s := range []string{"def", "sbtest", "sbtest1", "sbtest1", name, name} {
		b = AppendLenEncString(b, []byte(s))
	}
	b = append(b, 0x0c)
	b = appendUint16(b, 45)  // charset
	b = appendUint32(b, 480) // column length
	b = append(b, typ)
	b = appendUint16(b, 0) // flags
	return append(b, 0, 0, 0)
}

// benchResultStream builds the packets of a text result set the way a server sends it under
// CLIENT_DEPRECATE_EOF: column count, four column definitions, rows rows of sysbench-like data
// (about 190 bytes each), then the OK packet with the 0xfe header. Sequence ids start at 1.
func benchResultStream(rows int) []byte {
	var stream []byte
	seq := byte(1)
	add := func(p []byte) {
		stream = append(stream, rawPacket(seq, p)...)
		seq++
	}
	add([]byte{4})
	add(benchColumnDef("id", 3))
	add(benchColumnDef("k", 3))
	add(benchColumnDef("c", 254))
	add(benchColumnDef("pad", 254))
	c := strings.Repeat("83868641912-28773972837-", 5)[:119]
	pad := strings.Repeat("67847967377-", 5)[:59]
	var row []byte
	for i := range rows {
		row = row[:0]
		row = AppendLenEncString(row, fmt.Appendf(nil, "%d", i+1))
		row = AppendLenEncString(row, fmt.Appendf(nil, "%d", 4993+i%1000))
		row = AppendLenEncString(row, []byte(c))
		row = AppendLenEncString(row, []byte(pad))
		add(row)
	}
	add(AppendOK(nil, OK{Header: iEOF, Status: StatusAutocommit}, ClientProtocol41|ClientDeprecateEOF))
	return stream
}

// benchRelay relays every packet of stream from src to dst per iteration, as the proxy relays a
// response: PeekHeader, CopyPacket, one Flush at the end.
func benchRelay(b *testing.B, stream []byte) {
	in := &memConn{rd: stream}
	out := &memConn{discard: true}
	src := NewConn(in, 0, 0)
	dst := NewConn(out, 0, 0)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		in.refill(stream)
		for {
			n, _, err := src.PeekHeader()
			if err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			if err := src.CopyPacket(dst, n); err != nil {
				b.Fatal(err)
			}
		}
		if err := dst.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if out.written%len(stream) != 0 {
		b.Fatalf("relayed %d bytes, not a multiple of %d", out.written, len(stream))
	}
}

func BenchmarkCopyPacket(b *testing.B) {
	b.Run("50B", func(b *testing.B) {
		benchRelay(b, rawPacket(0, testPattern(50, 0)))
	})
	b.Run("1000rows", func(b *testing.B) {
		benchRelay(b, benchResultStream(1000))
	})
	b.Run("4MiB", func(b *testing.B) {
		benchRelay(b, rawPacket(0, testPattern(4<<20, 0)))
	})
}

func BenchmarkReadPacket(b *testing.B) {
	for _, bc := range []struct {
		name   string
		stream []byte
		seq    uint8
	}{
		{"50B", rawPacket(0, testPattern(50, 0)), 0},
		{"1000rows", benchResultStream(1000), 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := &memConn{rd: bc.stream}
			c := NewConn(in, 0, 0)
			b.SetBytes(int64(len(bc.stream)))
			b.ReportAllocs()
			for b.Loop() {
				in.refill(bc.stream)
				c.SetSeq(bc.seq)
				for {
					if _, err := c.ReadPacket(); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
			}
		})
	}
}

func BenchmarkWritePacket(b *testing.B) {
	out := &memConn{discard: true}
	c := NewConn(out, 0, 0)
	row := testPattern(190, 0)
	b.SetBytes(int64(1000 * (4 + len(row))))
	b.ReportAllocs()
	for b.Loop() {
		for range 1000 {
			if err := c.WritePacket(row); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseOK(b *testing.B) {
	caps := ClientProtocol41 | ClientSessionTrack
	for _, bc := range []struct {
		name string
		p    []byte
	}{
		{"plain", AppendOK(nil, OK{AffectedRows: 1, Status: StatusAutocommit}, caps)},
		{"session-state", mariaDBOKPacket()},
		{"session-state-mysql8-gtid", mysql8GTIDOKPacket()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var sink uint16
			for b.Loop() {
				ok, err := ParseOK(bc.p, caps)
				if err != nil {
					b.Fatal(err)
				}
				for block := ok.SessionState; len(block) > 0; {
					var sc SessionChange
					if sc, block, err = NextSessionChange(block); err != nil {
						b.Fatal(err)
					}
					sink += uint16(len(sc.Value))
				}
				sink += ok.Status
			}
			_ = sink
		})
	}
}

func BenchmarkAppendOK(b *testing.B) {
	caps := ClientProtocol41 | ClientSessionTrack
	ok, err := ParseOK(mariaDBOKPacket(), caps)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendOK(buf[:0], ok, caps)
	}
}
