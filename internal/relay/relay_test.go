package relay

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// TestResponseShapes relays every shape of response a node sends, in both protocols (text and
// binary rows) and both EOF styles, and checks that the client gets the node's bytes unchanged,
// that the relay stops exactly at the response's end (what follows stays unread), and what the
// Result and the Observer say.
func TestResponseShapes(t *testing.T) {
	more := mysql.StatusMoreResultsExists
	ac := mysql.StatusAutocommit
	for _, tc := range []struct {
		name     string
		kind     Kind
		nodeCaps uint32
		script   []byte
		status   uint16 // Result.Status (StatusSeen unless failed or single)
		failed   bool
		code     uint16
		closing  bool
		oks      int // Observer calls
	}{
		{name: "OK", kind: Statement, nodeCaps: caps, script: pkt(1, okPacket(ac, 3)), status: ac, oks: 1},
		{name: "ERR", kind: Statement, nodeCaps: caps, script: pkt(1, errPacket(1146, "Table 'test.nope' doesn't exist")), failed: true, code: 1146},
		{name: "ERR: connection killed", kind: Statement, nodeCaps: caps, script: pkt(1, errPacket(mysql.ErrConnectionKilled, "Connection was killed")), failed: true, code: mysql.ErrConnectionKilled, closing: true},
		{name: "ERR: shutdown", kind: Single, nodeCaps: caps, script: pkt(1, errPacket(mysql.ErrServerShutdown, "Server shutdown in progress")), failed: true, code: mysql.ErrServerShutdown, closing: true},
		{name: "text result, DEPRECATE_EOF", kind: Statement, nodeCaps: caps, script: resultSet(1, true, ac, textRow, textRow), status: ac, oks: 1},
		{name: "text result, classic EOF", kind: Statement, nodeCaps: classicCaps, script: resultSet(1, false, ac, textRow, textRow), status: ac, oks: 1},
		{name: "empty result, classic EOF", kind: Statement, nodeCaps: classicCaps, script: resultSet(1, false, ac), status: ac, oks: 1},
		{name: "binary result, DEPRECATE_EOF", kind: Statement, nodeCaps: caps, script: resultSet(1, true, ac, binaryRow, binaryRow, binaryRow), status: ac, oks: 1},
		{name: "binary result, classic EOF", kind: Statement, nodeCaps: classicCaps, script: resultSet(1, false, ac, binaryRow, binaryRow), status: ac, oks: 1},
		{name: "ERR in the rows", kind: Statement, nodeCaps: caps, script: pkt(1, []byte{1}, column, textRow, errPacket(1317, "Query execution was interrupted")), failed: true, code: 1317},
		{name: "ERR after the columns, classic EOF", kind: Statement, nodeCaps: classicCaps, script: pkt(1, []byte{1}, column, errPacket(1317, "interrupted")), failed: true, code: 1317},
		{name: "multi-results: OK, result set, OK", kind: Statement, nodeCaps: caps, script: append(append(pkt(1, okPacket(ac|more, 1)),
			resultSet(2, true, ac|more, textRow)...), pkt(6, okPacket(ac, 2))...), status: ac, oks: 3},
		{name: "multi-results, classic EOF", kind: Statement, nodeCaps: classicCaps, script: append(resultSet(1, false, ac|more, textRow),
			pkt(6, okPacket(ac, 0))...), status: ac, oks: 2},
		{name: "multi-results ending in ERR", kind: Statement, nodeCaps: caps, script: append(pkt(1, okPacket(ac|more, 1)),
			pkt(2, errPacket(1064, "syntax"))...), status: ac | more, failed: true, code: 1064, oks: 1},
		{name: "single: OK", kind: Single, nodeCaps: caps, script: pkt(1, okPacket(ac, 0)), status: ac, oks: 1},
		{name: "single: statistics string", kind: Single, nodeCaps: caps, script: pkt(1, []byte("Uptime: 10  Threads: 1")), oks: 0},
		{name: "single: OK with MORE_RESULTS ends anyway", kind: Single, nodeCaps: caps, script: pkt(1, okPacket(ac|more, 0)), status: ac | more, oks: 1},
		{name: "field list, classic EOF", kind: FieldList, nodeCaps: classicCaps, script: pkt(1, column, column, eof(ac)), status: ac, oks: 1},
		{name: "field list: a column definition starting with 0x00 is no OK", kind: FieldList, nodeCaps: caps, script: pkt(1, append([]byte{0}, column[1:]...), eof(ac)), status: ac, oks: 1},
		{name: "field list: ERR", kind: FieldList, nodeCaps: caps, script: pkt(1, errPacket(1146, "no table")), failed: true, code: 1146},
		{name: "rows (fetch), DEPRECATE_EOF", kind: Rows, nodeCaps: caps, script: pkt(1, binaryRow, binaryRow, endOK(ac|mysql.StatusCursorExists)), status: ac | mysql.StatusCursorExists, oks: 1},
		{name: "rows (fetch), classic EOF, last row", kind: Rows, nodeCaps: classicCaps, script: pkt(1, binaryRow, eof(ac|mysql.StatusLastRowSent)), status: ac | mysql.StatusLastRowSent, oks: 1},
		{name: "rows: ERR", kind: Rows, nodeCaps: caps, script: pkt(1, errPacket(1421, "no cursor")), failed: true, code: 1421},
		{name: "cursor opened: the EOF after the columns ends it", kind: Cursor, nodeCaps: classicCaps, script: pkt(1, []byte{1}, column, eof(ac|mysql.StatusCursorExists)), status: ac | mysql.StatusCursorExists, oks: 1},
		{name: "cursor asked, none opened: rows follow", kind: Cursor, nodeCaps: classicCaps, script: resultSet(1, false, ac, binaryRow), status: ac, oks: 1},
		{name: "CURSOR_EXISTS without a cursor asked: rows follow (a CALL)", kind: Statement, nodeCaps: classicCaps, script: pkt(1, []byte{1}, column,
			eof(ac|mysql.StatusCursorExists), textRow, eof(ac)), status: ac, oks: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(t, tc.nodeCaps)
			var rec recorder
			trailer := pkt(0, []byte("next"))
			res, got, _, err := p.run(tc.kind, &Options{ClientCaps: caps, Observer: &rec}, append(bytes.Clone(tc.script), trailer...))
			if err != nil {
				t.Fatalf("relay: %v", err)
			}
			if !bytes.Equal(got, tc.script) {
				t.Errorf("the client got\n% x\nthe node sent\n% x", got, tc.script)
			}
			if res.Failed != tc.failed || res.Code != tc.code || res.NodeClosing != tc.closing {
				t.Errorf("failed %v code %d closing %v, want %v %d %v", res.Failed, res.Code, res.NodeClosing, tc.failed, tc.code, tc.closing)
			}
			if res.Status != tc.status || res.StatusSeen != (tc.oks > 0) {
				t.Errorf("status %#x (seen %v), want %#x (seen %v)", res.Status, res.StatusSeen, tc.status, tc.oks > 0)
			}
			if !res.Wrote {
				t.Error("Result.Wrote is false")
			}
			if len(rec.oks) != tc.oks {
				t.Errorf("the observer saw %d OK/EOF packets, want %d: %+v", len(rec.oks), tc.oks, rec.oks)
			}
			// The relay stopped at the response's end: the next packet is still there, and
			// the sequence ids are past the response.
			n, seq, err := p.src.PeekHeader()
			if err != nil || n != 4 || seq != 0 {
				t.Errorf("after the response: next packet %d bytes, seq %d, %v; want the trailer", n, seq, err)
			}
		})
	}
}

// TestObserverOrder: every OK of a multi-statement goes by the Observer in order, with its
// own status, affected rows and session-state block; a classic EOF says so.
func TestObserverOrder(t *testing.T) {
	more := mysql.StatusMoreResultsExists
	gtid := okWithState(more, sysvar("last_gtid", "0-1-42"))
	gtid[1] = 1 // one row affected
	script := append(pkt(1, gtid), pkt(2, okWithState(0, schema("other")))...)
	p := newPipes(t, caps)
	var rec recorder
	res, _, _, err := p.run(Statement, &Options{ClientCaps: caps, Observer: &rec}, script)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.oks) != 2 {
		t.Fatalf("saw %d OKs, want 2", len(rec.oks))
	}
	if o := rec.oks[0]; o.affected != 1 || o.status&more == 0 || !bytes.Equal(o.state, sysvar("last_gtid", "0-1-42")) || o.classicEOF {
		t.Errorf("first OK seen as %+v", o)
	}
	if o := rec.oks[1]; o.status&more != 0 || !bytes.Equal(o.state, schema("other")) {
		t.Errorf("second OK seen as %+v", o)
	}
	if res.Status != mysql.StatusSessionStateChange {
		t.Errorf("final status %#x", res.Status)
	}

	p = newPipes(t, classicCaps)
	rec = recorder{}
	if _, _, _, err := p.run(Statement, &Options{ClientCaps: caps, Observer: &rec}, resultSet(1, false, mysql.StatusSessionStateChange, textRow)); err != nil {
		t.Fatal(err)
	}
	if len(rec.oks) != 1 || !rec.oks[0].classicEOF || rec.oks[0].status != mysql.StatusSessionStateChange {
		t.Errorf("a classic EOF seen as %+v", rec.oks)
	}
}

// TestTxPendingPatch: under transaction splitting every status the client gets says IN_TRANS
// (OK, the OK that ends rows, classic EOF), patched where it lies; the Result and the Observer
// see the node's own status.
func TestTxPendingPatch(t *testing.T) {
	ac := mysql.StatusAutocommit
	for _, tc := range []struct {
		name     string
		nodeCaps uint32
		script   []byte
		want     []byte
	}{
		{"OK", caps, pkt(1, okPacket(ac, 0)), pkt(1, okPacket(ac|mysql.StatusInTrans, 0))},
		{"OK with a GTID", caps, pkt(1, okWithState(ac, sysvar("last_gtid", "0-1-7"))), pkt(1, okWithState(ac|mysql.StatusInTrans, sysvar("last_gtid", "0-1-7")))},
		{"rows, DEPRECATE_EOF", caps, resultSet(1, true, ac, textRow), resultSet(1, true, ac|mysql.StatusInTrans, textRow)},
		{"rows, classic EOF", classicCaps, resultSet(1, false, ac, textRow), pkt(1, []byte{1}, column, eof(0), textRow, eof(ac|mysql.StatusInTrans))},
		{"already in a transaction", caps, pkt(1, okPacket(ac|mysql.StatusInTrans, 0)), pkt(1, okPacket(ac|mysql.StatusInTrans, 0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(t, tc.nodeCaps)
			var rec recorder
			res, got, _, err := p.run(Statement, &Options{ClientCaps: caps, TxPending: true, Observer: &rec}, tc.script)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("the client got\n% x\nwant\n% x", got, tc.want)
			}
			node := rec.oks[len(rec.oks)-1].status
			if res.Status != node || (tc.name != "already in a transaction" && node&mysql.StatusInTrans != 0) {
				t.Errorf("Result.Status %#x, observer %#x: want the node's own", res.Status, node)
			}
		})
	}
	// Without TxPending nothing is touched.
	p := newPipes(t, caps)
	_, got, _, err := p.run(Statement, &Options{ClientCaps: caps}, pkt(1, okPacket(ac, 0)))
	if err != nil || !bytes.Equal(got, pkt(1, okPacket(ac, 0))) {
		t.Errorf("without TxPending: % x, %v", got, err)
	}
}

// TestSessionStateStrip: a client without SESSION_TRACK gets the node's OK without the
// session-state block and its flag (the rest byte for byte, in place), also when the OK is
// larger than the node connection's read buffer; the Observer still sees the block.
func TestSessionStateStrip(t *testing.T) {
	noTrack := caps &^ mysql.ClientSessionTrack
	state := sysvar("last_gtid", "0-1-42")
	huge := mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusSessionStateChange, Info: bytes.Repeat([]byte("i"), 100<<10), SessionState: state}, caps)
	for _, tc := range []struct {
		name   string
		script []byte
		want   []byte
	}{
		{"OK", pkt(1, okWithState(mysql.StatusAutocommit, state)),
			pkt(1, mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, noTrack))},
		{"OK ending rows", pkt(1, []byte{1}, column, textRow, mysql.AppendOK(nil, mysql.OK{Header: 0xfe, Status: mysql.StatusSessionStateChange, SessionState: state}, caps)),
			pkt(1, []byte{1}, column, textRow, mysql.AppendOK(nil, mysql.OK{Header: 0xfe}, noTrack))},
		{"OK with a huge info string", pkt(1, huge),
			pkt(1, mysql.AppendOK(nil, mysql.OK{Info: bytes.Repeat([]byte("i"), 100<<10)}, noTrack))},
		{"OK without a block", pkt(1, okPacket(0, 1)), pkt(1, okPacket(0, 1))},
		{"multi-results, then the next packet's sequence", append(pkt(1, okWithState(mysql.StatusMoreResultsExists, state)), pkt(2, okPacket(0, 0))...),
			append(pkt(1, mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusMoreResultsExists}, noTrack)), pkt(2, okPacket(0, 0))...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(t, caps)
			var rec recorder
			_, got, _, err := p.run(Statement, &Options{ClientCaps: noTrack, Observer: &rec}, tc.script)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("the client got\n% .64x\nwant\n% .64x", got, tc.want)
			}
			if tc.name != "OK without a block" && !bytes.Equal(rec.oks[0].state, state) {
				t.Errorf("the observer saw block % x", rec.oks[0].state)
			}
		})
	}
	// A client with SESSION_TRACK gets the block, also in a huge OK.
	p := newPipes(t, caps)
	_, got, _, err := p.run(Statement, &Options{ClientCaps: caps}, pkt(1, huge))
	if err != nil || !bytes.Equal(got, pkt(1, huge)) {
		t.Errorf("a client with SESSION_TRACK: %d bytes, %v", len(got), err)
	}
}

// TestReadOnlyRefusal: with Redirect, the primary's read-only refusal as the first packet is
// not relayed: *ReadOnlyError, nothing written, the ERR consumed. Without Redirect, for another
// 1290 (secure-file-priv), or after part of the answer went out, the client gets the ERR.
func TestReadOnlyRefusal(t *testing.T) {
	readOnly := errPacket(mysql.ErrOptionPreventsStm, "The MariaDB server is running with the --read-only option so it cannot execute this statement")
	secure := errPacket(mysql.ErrOptionPreventsStm, "The MariaDB server is running with the --secure-file-priv option so it cannot execute this statement")

	p := newPipes(t, caps)
	res, got, _, err := p.runWith(Statement, &Options{Redirect: true}, func(node net.Conn) {
		_, _ = node.Write(append(pkt(1, readOnly), pkt(0, []byte("next"))...))
	}, nil)
	var ro *ReadOnlyError
	if !errors.As(err, &ro) || ro.SQL.Code != mysql.ErrOptionPreventsStm || !strings.Contains(ro.SQL.Message, "--read-only") {
		t.Fatalf("err %v, want *ReadOnlyError", err)
	}
	if len(got) != 0 || res.Wrote || res.Failed {
		t.Errorf("the client got % x (Wrote %v, Failed %v)", got, res.Wrote, res.Failed)
	}
	if n, seq, err := p.src.PeekHeader(); err != nil || n != 4 || seq != 0 {
		t.Errorf("the refusal was not consumed: next %d, %d, %v", n, seq, err)
	}

	for _, tc := range []struct {
		name   string
		opt    Options
		script []byte
	}{
		{"no redirect", Options{}, pkt(1, readOnly)},
		{"another option", Options{Redirect: true}, pkt(1, secure)},
		{"after a result", Options{Redirect: true}, append(pkt(1, okPacket(mysql.StatusMoreResultsExists, 0)), pkt(2, readOnly)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(t, caps)
			res, got, _, err := p.run(Statement, &tc.opt, tc.script)
			if err != nil || !bytes.Equal(got, tc.script) || !res.Failed || res.Code != mysql.ErrOptionPreventsStm {
				t.Errorf("err %v, failed %v, client got % x", err, res.Failed, got)
			}
		})
	}
}

// TestLocalInfile: a LOCAL INFILE request reaches the client only for a LOAD DATA LOCAL of the
// file the node names, once; the client's file goes to the node byte for byte; anything else
// is refused: the node gets the empty packet, the client an ERR and never the request.
func TestLocalInfile(t *testing.T) {
	request := append([]byte{0xfb}, "data.csv"...)
	file := pkt(2, []byte("1,a\n2,b\n"), []byte("3,c\n"), nil)

	t.Run("allowed", func(t *testing.T) {
		p := newPipes(t, caps)
		var rec recorder
		nodeGot := make(chan []byte, 1)
		res, got, _, err := p.runWith(Statement, &Options{ClientCaps: caps, Infile: true, InfileName: []byte("data.csv"), Observer: &rec}, func(node net.Conn) {
			_, _ = node.Write(pkt(1, request))
			c := mysql.NewConn(node, 0, 0)
			var b []byte
			for {
				n, seq, err := c.PeekHeader()
				if err != nil {
					break
				}
				p, err := c.PeekPayload(n, n)
				if err != nil {
					break
				}
				b = append(b, pkt(seq, p)...)
				_ = c.Discard(4 + n)
				if n == 0 {
					break
				}
			}
			nodeGot <- b
			_, _ = node.Write(pkt(5, okPacket(0, 3)))
		}, func(client net.Conn) {
			_, _ = client.Write(file)
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := append(pkt(1, request), pkt(5, okPacket(0, 3))...); !bytes.Equal(got, want) {
			t.Errorf("the client got\n% x\nwant\n% x", got, want)
		}
		if b := <-nodeGot; !bytes.Equal(b, file) {
			t.Errorf("the node got the file as\n% x\nwant\n% x", b, file)
		}
		if !res.InfileSent || res.InfileRefused || res.Failed || len(rec.oks) != 1 || rec.oks[0].affected != 3 {
			t.Errorf("result %+v, observer %+v", res, rec.oks)
		}
	})

	// refused has the node send before (packets with sequence ids from 1), then the request
	// (name) with sequence id seq, and answer the empty packet with an OK.
	refused := func(t *testing.T, opt Options, wantBefore []byte, seq uint8, name string) {
		t.Helper()
		p := newPipes(t, caps)
		var rec recorder
		opt.ClientCaps, opt.Observer, opt.Node = caps, &rec, "primary"
		res, got, toNode, err := p.runWith(Statement, &opt, func(node net.Conn) {
			_, _ = node.Write(append(bytes.Clone(wantBefore), pkt(seq, append([]byte{0xfb}, name...))...))
			var empty [4]byte
			if _, err := io.ReadFull(node, empty[:]); err != nil || empty != [4]byte{0, 0, 0, seq + 1} {
				t.Errorf("the node got % x, want the empty packet", empty)
				return
			}
			_, _ = node.Write(pkt(seq+2, okPacket(0, 0)))
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(got, []byte("data.csv")) || bytes.Contains(got, []byte("/etc/passwd")) {
			t.Errorf("the client saw the file request: % x", got)
		}
		if !bytes.HasPrefix(got, wantBefore) {
			t.Errorf("the client got % x, want it to begin with % x", got, wantBefore)
		}
		errp := got[len(wantBefore)+4:]
		if !mysql.IsERR(errp) || mysql.ParseERR(errp).Code != mysql.ErrUnknown || !strings.Contains(mysql.ParseERR(errp).Message, "'primary'") {
			t.Errorf("the client's error: % x", errp)
		}
		if !res.Failed || res.Code != mysql.ErrUnknown || !res.InfileRefused || res.InfileSent {
			t.Errorf("result %+v", res)
		}
		if len(toNode) != 0 {
			t.Errorf("the node got more than the empty packet: % x", toNode)
		}
		if len(rec.oks) == 0 || rec.oks[len(rec.oks)-1].status != 0 {
			t.Errorf("the node's OK to the empty file was not observed: %+v", rec.oks)
		}
	}
	t.Run("not a LOAD DATA LOCAL", func(t *testing.T) {
		refused(t, Options{}, nil, 1, "/etc/passwd")
	})
	t.Run("another file", func(t *testing.T) {
		refused(t, Options{Infile: true, InfileName: []byte("data.csv")}, nil, 1, "/etc/passwd")
	})
	t.Run("an empty name", func(t *testing.T) {
		refused(t, Options{Infile: true, InfileName: []byte("")}, nil, 1, "")
	})
	t.Run("a batch's request after a result", func(t *testing.T) {
		refused(t, Options{}, pkt(1, okPacket(mysql.StatusMoreResultsExists, 0)), 2, "data.csv")
	})
	t.Run("a second request in one response", func(t *testing.T) {
		p := newPipes(t, caps)
		res, got, _, err := p.runWith(Statement, &Options{ClientCaps: caps, Infile: true, InfileName: []byte("data.csv")}, func(node net.Conn) {
			_, _ = node.Write(pkt(1, request))
			c := mysql.NewConn(node, 0, 0)
			if n, _, err := c.PeekHeader(); err != nil || n != 0 { // the client's empty file
				return
			}
			_ = c.Discard(4)
			_, _ = node.Write(pkt(3, okPacket(mysql.StatusMoreResultsExists, 0)))
			_, _ = node.Write(pkt(4, request))
			if n, seq, err := c.PeekHeader(); err != nil || n != 0 || seq != 5 {
				return
			}
			_, _ = node.Write(pkt(6, okPacket(0, 0)))
		}, func(client net.Conn) {
			_, _ = client.Write(pkt(2, nil))
		})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(got, []byte("data.csv")) != 1 || !res.InfileSent || !res.InfileRefused || !res.Failed {
			t.Errorf("result %+v; the client got % x", res, got)
		}
	})

	t.Run("out of step after the refusal", func(t *testing.T) {
		p := newPipes(t, caps)
		_, got, _, err := p.runWith(Statement, &Options{ClientCaps: caps}, func(node net.Conn) {
			_, _ = node.Write(pkt(1, request))
			var empty [4]byte
			_, _ = io.ReadFull(node, empty[:])
			_, _ = node.Write(pkt(3, okPacket(mysql.StatusMoreResultsExists, 0)))
		}, nil)
		var re *Error
		if !errors.As(err, &re) || re.Client {
			t.Errorf("err %v, want the node's", err)
		}
		if bytes.Contains(got, []byte("data.csv")) {
			t.Errorf("the client saw the request: % x", got)
		}
	})

	t.Run("the client stalls in its file", func(t *testing.T) {
		p := newPipes(t, caps)
		start := time.Now()
		_, _, _, err := p.runWith(Statement, &Options{ClientCaps: caps, Infile: true, InfileName: []byte("data.csv"), Stall: 100 * time.Millisecond}, func(node net.Conn) {
			_, _ = node.Write(pkt(1, request))
		}, func(client net.Conn) {
			_, _ = client.Write([]byte{10, 0, 0, 2, '1'}) // part of a packet, then nothing
		})
		var re *Error
		if !errors.As(err, &re) || !re.Client || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("err %v, want the client's deadline", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

// TestContinuationPackets: rows of 16 MiB and more (a full packet, then continuations), also
// one whose first byte is 0xfe or 0xff, are relayed byte for byte and not taken for an EOF or
// an ERR.
func TestContinuationPackets(t *testing.T) {
	big := func(first byte, n int) []byte {
		b := bytes.Repeat([]byte{'x'}, n)
		b[0] = first
		return b
	}
	// A logical row of 16 MiB + 10 bytes: one full physical packet and a continuation.
	split := func(seq uint8, row []byte) []byte {
		out := pkt(seq, row[:mysql.MaxPacketPayload])
		return append(out, pkt(seq+1, row[mysql.MaxPacketPayload:])...)
	}
	var script []byte
	script = append(script, pkt(1, []byte{1}, column)...)
	script = append(script, split(3, big(0xfe, mysql.MaxPacketPayload+10))...)
	script = append(script, split(5, big(0xff, mysql.MaxPacketPayload+10))...)
	script = append(script, split(7, big(0x00, mysql.MaxPacketPayload))...) // exactly 16 MiB-1: an empty continuation
	script = append(script, pkt(9, endOK(0))...)
	p := newPipes(t, caps)
	res, got, _, err := p.run(Statement, &Options{ClientCaps: caps}, script)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, script) {
		t.Errorf("the client got %d bytes, the node sent %d (differing)", len(got), len(script))
	}
	if !res.StatusSeen || res.Failed {
		t.Errorf("result %+v", res)
	}
}

// TestHugeOK: an OK of 16 MiB or more is out of step: a node error, and the node's flood is
// not read into memory.
func TestHugeOK(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		head []byte // packets before the OK, with sequence ids from 1
		seq  uint8  // the OK's
	}{
		{"first packet", Statement, nil, 1},
		{"single", Single, nil, 1},
		{"after a result", Statement, pkt(1, okPacket(mysql.StatusMoreResultsExists, 0)), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(t, caps)
			wrote := 0
			_, _, _, err := p.runWith(tc.kind, &Options{ClientCaps: caps}, func(node net.Conn) {
				_, _ = node.Write(tc.head)
				seq := tc.seq
				chunk := make([]byte, 1<<20) // an OK header (0x00), then zeros
				for i := 0; i < 8 && wrote < 64<<20; i++ {
					if _, err := node.Write([]byte{0xff, 0xff, 0xff, seq}); err != nil {
						return
					}
					seq++
					for left := mysql.MaxPacketPayload; left > 0; {
						n, err := node.Write(chunk[:min(left, len(chunk))])
						wrote += n
						left -= n
						if err != nil {
							return
						}
					}
				}
			}, nil)
			var re *Error
			if !errors.As(err, &re) || re.Client || !errors.Is(err, errHugeOK) {
				t.Errorf("err %v, want errHugeOK from the node", err)
			}
			if wrote > 1<<20 {
				t.Errorf("the relay read %d KiB of the OK", wrote>>10)
			}
		})
	}
}

// TestBrokenNode: a node whose answer ends early or is malformed gives a node error (never the
// client's, never a panic).
func TestBrokenNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   Kind
		script []byte
	}{
		{"nothing", Statement, nil},
		{"half a header", Statement, []byte{7, 0}},
		{"half a packet", Statement, []byte{7, 0, 0, 1, 0, 0}},
		{"an empty first packet", Statement, pkt(1, nil)},
		{"a column count cut short", Statement, pkt(1, []byte{0xfc, 1})},
		{"an OK cut short", Statement, pkt(1, []byte{0, 0xfc})},
		{"rows, then nothing", Statement, pkt(1, []byte{1}, column, textRow)},
		{"rows cut short", Rows, append(pkt(1, textRow), 20, 0, 0, 2, 'x')},
		{"an OK ending rows cut short", Statement, pkt(1, []byte{1}, column, []byte{0xfe, 0xfc, 0xff, 0, 0, 0, 0, 0})},
		{"continuation missing", Statement, append(pkt(1, []byte{1}, column), 0xff, 0xff, 0xff, 3, 'x')},
		{"a LOCAL INFILE request of 16 MiB", Statement, append(pkt(1), append([]byte{0xff, 0xff, 0xff, 1, 0xfb}, bytes.Repeat([]byte{'a'}, 100)...)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(t, caps)
			_, _, _, err := p.runWith(tc.kind, &Options{ClientCaps: caps}, func(node net.Conn) {
				_, _ = node.Write(tc.script)
				node.Close() // the node's connection ends there
			}, nil)
			var re *Error
			if !errors.As(err, &re) || re.Client {
				t.Errorf("err %v, want a node error", err)
			}
		})
	}
}

// TestBrokenClient: a client that went away while the answer is relayed is the client's error.
func TestBrokenClient(t *testing.T) {
	p := newPipes(t, caps)
	p.client.Close()
	go func() { _, _ = p.node.Write(resultSet(1, true, 0, textRow)) }()
	p.src.SetSeq(1)
	_, err := Response(p.dst, p.src, Statement, &Options{ClientCaps: caps})
	var re *Error
	if !errors.As(err, &re) || !re.Client {
		t.Errorf("err %v, want the client's", err)
	}
}

// TestReadTimeout: a node that does not answer within ReadTimeout is a node error.
func TestReadTimeout(t *testing.T) {
	p := newPipes(t, caps)
	p.src.SetSeq(1)
	start := time.Now()
	_, err := Response(p.dst, p.src, Statement, &Options{ReadTimeout: 50 * time.Millisecond})
	var re *Error
	if !errors.As(err, &re) || re.Client || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("err %v, want the node's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestSendAndForward: a held command goes out with sequence id 0 and readies the client's
// sequence id; a streamed one (16 MiB and a continuation) goes byte for byte. A node that
// refuses the command in its middle and says why: the client gets its ERR, the error is
// Partial and Answered.
func TestSendAndForward(t *testing.T) {
	t.Run("send", func(t *testing.T) {
		p := newPipes(t, caps)
		cmd := append([]byte{mysql.ComQuery}, "SELECT 1"...)
		done := make(chan []byte, 1)
		go func() {
			b := make([]byte, 4+len(cmd))
			_, _ = io.ReadFull(p.node, b)
			done <- b
		}()
		if err := Send(p.dst, p.src, cmd); err != nil {
			t.Fatal(err)
		}
		if b := <-done; !bytes.Equal(b, pkt(0, cmd)) {
			t.Errorf("the node got % x", b)
		}
		if p.dst.Seq() != 1 {
			t.Errorf("client's sequence id %d, want 1", p.dst.Seq())
		}
	})
	t.Run("forward", func(t *testing.T) {
		p := newPipes(t, caps)
		big := bytes.Repeat([]byte{'q'}, mysql.MaxPacketPayload+5)
		big[0] = mysql.ComQuery
		stream := append(pkt(0, big[:mysql.MaxPacketPayload]), pkt(1, big[mysql.MaxPacketPayload:])...)
		go func() { _, _ = p.client.Write(stream) }()
		done := make(chan []byte, 1)
		go func() {
			b := make([]byte, len(stream))
			_, _ = io.ReadFull(p.node, b)
			done <- b
		}()
		n, _, err := p.dst.PeekHeader()
		if err != nil {
			t.Fatal(err)
		}
		if err := Forward(p.dst, p.src, n); err != nil {
			t.Fatal(err)
		}
		_ = p.src.Flush()
		if b := <-done; !bytes.Equal(b, stream) {
			t.Error("the node got other bytes than the client sent")
		}
		if p.dst.Seq() != 2 || p.src.Seq() != 2 {
			t.Errorf("sequence ids %d, %d; want 2", p.dst.Seq(), p.src.Seq())
		}
	})
	// The node takes 64 KiB of a 2 MiB command, then its side refuses writes (as a server that
	// closed the connection after its ERR), with (refused) or without (gone) an ERR to read.
	for _, refused := range []bool{true, false} {
		name := "the node goes away in the middle"
		if refused {
			name = "refused in the middle"
		}
		t.Run(name, func(t *testing.T) {
			p := newPipes(t, caps)
			p.src.Conn = mysql.NewConn(&refusingWrites{Conn: p.src.NetConn(), left: 64 << 10}, 0, 0)
			big := bytes.Repeat([]byte{'q'}, 2<<20)
			big[0] = mysql.ComQuery
			go func() { _, _ = p.client.Write(pkt(0, big)) }()
			tooLarge := errPacket(1153, "Got a packet bigger than 'max_allowed_packet' bytes")
			if refused {
				go func() { _, _ = p.node.Write(pkt(1, tooLarge)) }()
			}
			got := make(chan []byte, 1)
			go func() {
				c := mysql.NewConn(p.client, 0, 0)
				c.SetSeq(1)
				b, _ := c.ReadPacket()
				got <- bytes.Clone(b)
			}()
			n, _, _ := p.dst.PeekHeader()
			err := Forward(p.dst, p.src, n)
			var re *Error
			if !errors.As(err, &re) || re.Client || !re.Partial || re.Answered != refused {
				t.Fatalf("err %#v, want a Partial node error, Answered %v", err, refused)
			}
			if !refused {
				return
			}
			var se *mysql.SQLError
			if !errors.As(err, &se) || se.Code != 1153 {
				t.Errorf("err %v does not carry the node's error", err)
			}
			if b := <-got; !bytes.Equal(b, tooLarge) {
				t.Errorf("the client got % x", b)
			}
		})
	}
	t.Run("the client goes away in the middle", func(t *testing.T) {
		p := newPipes(t, caps)
		go func() {
			_, _ = p.client.Write([]byte{0xff, 0xff, 0xff, 0, mysql.ComQuery, 'S'})
			p.client.Close()
		}()
		go func() { _, _ = io.Copy(io.Discard, p.node) }()
		n, _, _ := p.dst.PeekHeader()
		err := Forward(p.dst, p.src, n)
		var re *Error
		if !errors.As(err, &re) || !re.Client {
			t.Errorf("err %v, want the client's", err)
		}
	})
}

// TestErrorClassification: ToNode and FromNode tell whose side broke from mysql.WriteError.
func TestErrorClassification(t *testing.T) {
	w := &mysql.WriteError{Err: io.ErrClosedPipe}
	var re *Error
	if err := ToNode(w); !errors.As(err, &re) || re.Client || !re.Partial || !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("ToNode(write error) = %#v", err)
	}
	if err := ToNode(io.EOF); !errors.As(err, &re) || !re.Client || re.Partial {
		t.Errorf("ToNode(read error) = %#v", err)
	}
	if err := FromNode(w); !errors.As(err, &re) || !re.Client {
		t.Errorf("FromNode(write error) = %#v", err)
	}
	if err := FromNode(io.EOF); !errors.As(err, &re) || re.Client || re.Error() != io.EOF.Error() {
		t.Errorf("FromNode(read error) = %#v", err)
	}
}

// refusingWrites is a node connection that takes left bytes, then refuses writes.
type refusingWrites struct {
	net.Conn
	left int
}

func (r *refusingWrites) Write(p []byte) (int, error) {
	if len(p) > r.left {
		n := r.left
		r.left = 0
		return n, io.ErrClosedPipe
	}
	r.left -= len(p)
	return len(p), nil
}
