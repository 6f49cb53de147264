package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// Kind says what shape of response a command gets.
type Kind uint8

const (
	// Statement is the answer to COM_QUERY, COM_STMT_EXECUTE and COM_STMT_BULK_EXECUTE: OK,
	// ERR, a LOCAL INFILE request, or result sets, several of them while SERVER_MORE_RESULTS
	// says so.
	Statement Kind = iota
	// Single is exactly one packet: OK, ERR, EOF or a string (COM_PING, COM_STATISTICS,
	// COM_INIT_DB, COM_SET_OPTION, COM_RESET_CONNECTION, COM_STMT_RESET, ...).
	Single
	// FieldList is column definitions up to an EOF, or ERR (COM_FIELD_LIST).
	FieldList
	// Rows is rows up to EOF/OK, or ERR (COM_STMT_FETCH).
	Rows
	// Cursor is Statement for a COM_STMT_EXECUTE that asked for a cursor: an EOF after the
	// column definitions with SERVER_STATUS_CURSOR_EXISTS ends the response (rows come by
	// COM_STMT_FETCH). Anywhere else the flag means nothing for the response's shape: a CALL
	// whose procedure opened a cursor reports it too, and its rows follow as usual.
	Cursor
)

// Observer is told of every OK and EOF that ends a result or the response, in order, before it
// is written to the client: the session follows from them what the node says of its state
// (session-state block: schema, variables, the GTID of a commit; status flags: transaction,
// autocommit, sql_mode bits). It is called from the relay's goroutine, during Response.
type Observer interface {
	// OK is one such packet from src, decoded. A classic EOF (classicEOF) carries only the
	// status (and warnings). ok's slices alias src's read buffer: valid during the call only.
	OK(src *backend.Conn, ok mysql.OK, classicEOF bool)
}

// Options are what the relay needs to know of the client and of the command. They are read
// during the call only.
type Options struct {
	// ClientCaps are the capabilities negotiated with the client: without
	// CLIENT_SESSION_TRACK it never gets a session-state block.
	ClientCaps uint32
	// ReadTimeout bounds the wait for the node's answer (0: none).
	ReadTimeout time.Duration
	// TxPending: transaction splitting holds the client's BEGIN, so the client's transaction
	// is open while the node's is not: every status the client gets has
	// SERVER_STATUS_IN_TRANS, as the primary would have said.
	TxPending bool
	// Redirect: a read-only refusal as the answer's first packet, before anything reached the
	// client, is returned as *ReadOnlyError instead of relayed.
	Redirect bool
	// Infile: the command is a LOAD DATA LOCAL the client sent, of the file InfileName (the
	// string literal's text as the statement writes it, between its quotes). Only then, once,
	// and only for that file, does a node's LOCAL INFILE request reach the client.
	Infile     bool
	InfileName []byte
	// Stall bounds the wait for each packet of the client's file (0: 30 s): a client that stops
	// sending in the middle must not hold the node connection forever.
	Stall time.Duration
	// Node names the node in the client's error for a refused LOCAL INFILE request and in Log.
	Node string
	// Log, when set, is told of a refused LOCAL INFILE request.
	Log *slog.Logger
	// Observer, when set, is told of every OK and EOF (see Observer).
	Observer Observer
	// Flight, when set, is the armed flight of the command (see Flight): the answer is
	// claimed for the client when its first packet arrives, before any byte is written, and
	// an answer interrupted first ends with ErrInterrupted, nothing written.
	Flight *Flight
}

// Result is what the relay saw of one response, for the session to apply.
type Result struct {
	// Status is the server status of the last OK or EOF of the response (StatusSeen); the
	// value the client got may differ (Options.TxPending).
	Status     uint16
	StatusSeen bool
	// Warnings is the warning count of that same packet (the OK's warnings field, the
	// classic EOF's, the OK in the place of EOF under CLIENT_DEPRECATE_EOF): how many
	// conditions the response's last statement raised. 0 when none was seen (an ERR).
	Warnings uint16
	// InsertID: some OK of the response said a nonzero insert id (a statement of it generated
	// or was given an AUTO_INCREMENT value, or called LAST_INSERT_ID(expr)): the connection's
	// LAST_INSERT_ID() may have changed.
	InsertID bool
	// Failed: an ERR ended the response, the node's or sluice's (a refused LOCAL INFILE
	// request), with Code.
	Failed bool
	Code   uint16
	// NodeClosing: the node's ERR says it closes the connection (KILL CONNECTION, shutdown,
	// idle disconnect): the session treats that connection as gone, as the server does.
	NodeClosing bool
	// Wrote: some byte of the response was written to the client.
	Wrote bool
	// InfileRefused: the node asked for a file the statement did not offer, and was refused.
	// InfileSent: the client's file went to the node.
	InfileRefused, InfileSent bool
}

// Send writes a command held whole (p, one logical packet) to src with sequence id 0, to go out
// with src's next read (the answer's), and readies dst's sequence id for the answer.
func Send(dst *mysql.Conn, src *backend.Conn, p []byte) error {
	src.SetSeq(0)
	if err := src.WritePacket(p); err != nil {
		return &Error{Err: err}
	}
	// Sent from inside the wait for the answer (saves a read that would find nothing).
	if err := src.FlushBeforeRead(); err != nil {
		return &Error{Err: err}
	}
	dst.SetSeq(src.Seq())
	return nil
}

// Forward streams the client's command (n: its first packet's payload length; the packet and
// its continuations are next in dst's read buffer) to src, to go out with src's next read. A
// failure in the middle of the command is Partial: its rest is still unread.
//
// A server that refuses a command before reading all of it (a packet larger than its
// max_allowed_packet: error 1153) sends an ERR and closes the connection: the client gets that
// ERR, as directly, and the error is Answered.
func Forward(dst *mysql.Conn, src *backend.Conn, n int) error {
	for {
		if err := dst.CopyPacket(src.Conn, n); err != nil {
			var we *mysql.WriteError
			if errors.As(err, &we) {
				return refusedCommand(dst, src, we.Err)
			}
			return &Error{Client: true, Err: err}
		}
		if n < mysql.MaxPacketPayload {
			break
		}
		var err error
		if n, _, err = dst.PeekHeader(); err != nil {
			return &Error{Client: true, Err: err}
		}
	}
	if err := src.FlushBeforeRead(); err != nil {
		return &Error{Err: err}
	}
	return nil
}

// refusedCommand handles a write to the node that failed in the middle of a client's command:
// when the node said why (an ERR it sent before closing), the client gets it.
func refusedCommand(dst *mysql.Conn, src *backend.Conn, cause error) error {
	_ = src.NetConn().SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, seq, err := src.PeekHeader(); err == nil && n < 4096 {
		if p, err := src.PeekPayload(n, n); err == nil && mysql.IsERR(p) {
			dst.SetSeq(seq)
			_ = dst.WritePacketFlush(p)
			return &Error{Err: fmt.Errorf("node refused the command: %w", mysql.ParseERR(p)), Partial: true, Answered: true}
		}
	}
	return &Error{Err: cause, Partial: true}
}

// Finish ends a response the caller wrote itself. The client gets it when the session next
// reads from the client (the next command), sent from inside that read's wait
// (mysql.Conn.FlushBeforeRead), or when the session closes: a response is the last thing a
// command writes.
func Finish(dst *mysql.Conn) error {
	if err := dst.FlushBeforeRead(); err != nil {
		return &Error{Client: true, Err: err}
	}
	return nil
}

// Response reads src's answer to the command just sent and writes it to dst, packet by packet,
// without decoding rows, then flushes once (Finish). opt may be nil (no options). The Result
// is valid with an error too: it says what was seen before the failure.
func Response(dst *mysql.Conn, src *backend.Conn, kind Kind, opt *Options) (Result, error) {
	r := responder{dst: dst, src: src, start: dst.Sent()}
	if opt != nil {
		// A copy: the responder's fields reach the heap's view (the Observer gets src), and
		// a pointer among them would take the caller's Options there, once per response.
		r.opt = *opt
	}
	r.infile = r.opt.Infile
	if t := r.opt.ReadTimeout; t > 0 {
		_ = src.NetConn().SetReadDeadline(time.Now().Add(t))
		defer src.NetConn().SetReadDeadline(time.Time{})
	}
	var err error
	if r.opt.Flight != nil {
		err = r.claim()
	}
	if err == nil {
		err = r.relay(kind)
	}
	r.res.Wrote = dst.Sent() != r.start
	return r.res, err
}

// claim waits for the answer's first packet and takes the answer for the client (Flight.claim).
func (r *responder) claim() error {
	if _, _, err := r.src.PeekHeader(); err != nil {
		return FromNode(err)
	}
	if !r.opt.Flight.claim() {
		return &Error{Err: ErrInterrupted}
	}
	return nil
}

// responder is one Response under way. It lives on Response's stack.
type responder struct {
	dst   *mysql.Conn
	src   *backend.Conn
	opt   Options
	res   Result
	start uint64 // dst.Sent() when the response began
	// infile: a LOCAL INFILE request may still reach the client (one per response).
	infile bool
}

// state is where in a result the relay is.
type state uint8

const (
	atFirst      state = iota // the first packet of a result (or of the response)
	atColumns                 // column definitions
	atColumnsEOF              // the classic EOF after the column definitions
	atRows                    // rows, up to the EOF/OK that ends them
)

func (r *responder) relay(kind Kind) error {
	src, dst := r.src, r.dst
	st := atFirst
	if kind == Rows {
		st = atRows
	}
	var columns uint64
	continuation := false
	deprecateEOF := src.Caps&mysql.ClientDeprecateEOF != 0
	for {
		n, _, err := src.PeekHeader()
		if err != nil {
			return FromNode(err)
		}
		if continuation {
			continuation = n == mysql.MaxPacketPayload
			if err := src.CopyPacket(dst, n); err != nil {
				return FromNode(err)
			}
			continue
		}
		var first byte
		if n > 0 {
			p, err := src.PeekPayload(n, 1)
			if err != nil {
				return FromNode(err)
			}
			first = p[0]
		}
		switch st {
		case atFirst:
			switch {
			case n == 0:
				return FromNode(errEmptyPacket)
			case first == 0xff:
				if err := r.readOnlyRefusal(n); err != nil {
					return err
				}
				return r.copyErr(n)
			case first == 0x00 && kind != FieldList:
				more, err := r.relayOK(n)
				if err != nil || !more || (kind != Statement && kind != Cursor) {
					return r.finish(err)
				}
				continue
			case kind == Single:
				return r.copyLast(n)
			case kind == FieldList:
				if first == 0xfe && n < mysql.MaxPacketPayload {
					_, err := r.relayOK(n)
					return r.finish(err)
				}
				if err := src.CopyPacket(dst, n); err != nil {
					return FromNode(err)
				}
				continue
			case first == 0xfb:
				if !r.infile || !r.asksLoadFile(n) {
					return r.refuseInfile(n)
				}
				r.infile = false // one file per statement
				if err := r.localInfile(n); err != nil {
					return err
				}
				continue
			}
			p, err := src.PeekPayload(n, 9)
			if err != nil {
				return FromNode(err)
			}
			v, _, _, err := mysql.ReadLenEncInt(p)
			if err != nil {
				return FromNode(err)
			}
			columns = v
			st = atColumns
			continuation = n == mysql.MaxPacketPayload
			if err := src.CopyPacket(dst, n); err != nil {
				return FromNode(err)
			}
		case atColumns:
			continuation = n == mysql.MaxPacketPayload
			if err := src.CopyPacket(dst, n); err != nil {
				return FromNode(err)
			}
			columns--
			if columns == 0 {
				if deprecateEOF {
					st = atRows
				} else {
					st = atColumnsEOF
				}
			}
		case atColumnsEOF:
			if first == 0xff {
				return r.copyErr(n)
			}
			if p, err := src.PeekPayload(n, 5); kind == Cursor && err == nil && len(p) == 5 {
				if mysql.ParseEOF(p).Status&mysql.StatusCursorExists != 0 {
					// EXECUTE opened a cursor: rows come with COM_STMT_FETCH.
					_, err := r.relayOK(n)
					return r.finish(err)
				}
			}
			if err := src.CopyPacket(dst, n); err != nil {
				return FromNode(err)
			}
			st = atRows
		case atRows:
			if first == 0xfe && n < mysql.MaxPacketPayload {
				more, err := r.relayOK(n)
				if err != nil || !more {
					return r.finish(err)
				}
				st = atFirst
				continue
			}
			if first == 0xff && n < mysql.MaxPacketPayload {
				return r.copyErr(n)
			}
			continuation = n == mysql.MaxPacketPayload
			if err := src.CopyPacket(dst, n); err != nil {
				return FromNode(err)
			}
		}
	}
}

// readOnlyRefusal reads an ERR (payload length n, first packet of a result) when it is the
// primary's read-only refusal, Options.Redirect is set and nothing reached the client: the
// client does not get it, the caller gets a *ReadOnlyError.
func (r *responder) readOnlyRefusal(n int) error {
	if !r.opt.Redirect || r.dst.Sent() != r.start || n > 1024 {
		return nil
	}
	p, err := r.src.PeekPayload(n, n)
	if err != nil || len(p) < 3 || uint16(p[1])|uint16(p[2])<<8 != mysql.ErrOptionPreventsStm {
		return nil
	}
	se := mysql.ParseERR(p)
	if !strings.Contains(se.Message, "read-only") && !strings.Contains(se.Message, "read_only") {
		return nil // another option (--secure-file-priv, ...): the statement itself is refused
	}
	if err := r.src.Discard(4 + n); err != nil {
		return FromNode(err)
	}
	return &ReadOnlyError{SQL: se}
}

// copyErr relays an ERR that ends a response, and notes its code. Some errors mean the node
// is closing the connection (KILL CONNECTION, shutdown, idle disconnect): NodeClosing.
func (r *responder) copyErr(n int) error {
	r.res.Failed, r.res.Warnings = true, 0 // an OK before it (a batch's) is not the last word
	if p, err := r.src.PeekPayload(n, 3); err == nil && len(p) == 3 {
		r.res.Code = uint16(p[1]) | uint16(p[2])<<8
		switch r.res.Code {
		case mysql.ErrConnectionKilled, mysql.ErrServerShutdown, mysql.ErrClientInteractionTimeout, mysql.ErrAbortingConnection:
			r.res.NodeClosing = true
		}
	}
	return r.copyLast(n)
}

// copyLast relays the last packet of a response (an ERR or a single-packet answer) and ends
// the response.
func (r *responder) copyLast(n int) error {
	if err := r.src.CopyPacket(r.dst, n); err != nil {
		return FromNode(err)
	}
	return r.finish(nil)
}

// finish ends the response (Finish), unless it failed.
func (r *responder) finish(err error) error {
	if err != nil {
		return err
	}
	return Finish(r.dst)
}

// relayOK relays an OK packet (header 0x00, or 0xfe as a result-set terminator) or a classic
// EOF, tells the Observer, and reports whether more results follow. A node connection always
// has SESSION_TRACK; a client without it must not get the session-state block.
func (r *responder) relayOK(n int) (more bool, err error) {
	src, dst := r.src, r.dst
	if n >= mysql.MaxPacketPayload {
		// A server never sends an OK of 16 MiB or more: the node is out of step, and what it
		// announces (continuations up to 1 GiB) is not read into memory.
		return false, FromNode(errHugeOK)
	}
	_, seq, err := src.PeekHeader()
	if err != nil {
		return false, FromNode(err)
	}
	p, err := src.PeekPayload(n, n)
	if err != nil {
		return false, FromNode(err)
	}
	consumed := false
	if len(p) < n {
		// Larger than the read buffer: only a huge info string does that. Read it whole.
		if p, err = src.ReadPacket(); err != nil {
			return false, FromNode(err)
		}
		consumed = true
	}
	classicEOF := p[0] == 0xfe && (src.Caps&mysql.ClientDeprecateEOF == 0 || n < 7)
	var ok mysql.OK
	if classicEOF {
		ok.Header = p[0]
		e := mysql.ParseEOF(p)
		ok.Status, ok.Warnings = e.Status, e.Warnings
	} else if ok, err = mysql.ParseOK(p, src.Caps); err != nil {
		return false, FromNode(err)
	}
	r.res.Status, r.res.StatusSeen, r.res.Warnings = ok.Status, true, ok.Warnings
	if ok.LastInsertID != 0 {
		r.res.InsertID = true
	}
	if o := r.opt.Observer; o != nil {
		o.OK(src, ok, classicEOF)
	}
	more = ok.Status&mysql.StatusMoreResultsExists != 0
	if r.opt.TxPending && ok.Status&mysql.StatusInTrans == 0 {
		// Transaction splitting: the client's transaction is open (sluice holds its BEGIN)
		// while its reads run on a replica outside any: it is told so, as the primary would.
		// The bytes are patched where they lie, before they are copied.
		if i := statusAt(p, classicEOF); i > 0 {
			p[i] |= byte(mysql.StatusInTrans)
		}
	}
	// The client gets the server's bytes, unless it does not track session state and the node
	// sent a session-state block: then only that block and its flag are taken out.
	// A client that tracks it is not shown the variables the node reports only because sluice
	// asked it for every one (backend.Conn.TrackAllVars, pool_mode transaction).
	stateChanged := !classicEOF && src.Caps&mysql.ClientSessionTrack != 0 && ok.Status&mysql.StatusSessionStateChange != 0
	rewrite := stateChanged && r.opt.ClientCaps&mysql.ClientSessionTrack == 0
	var hidden []byte
	hid := false
	if stateChanged && !rewrite {
		src.NoteReported(ok.SessionState)
		if hidden, hid, err = mysql.AppendOKHidingVars(dst.Scratch(), p, src.HidesVar); err != nil {
			return false, FromNode(err)
		}
		rewrite = hid
	}
	switch {
	case rewrite:
		b := hidden
		if !hid {
			if b, err = mysql.AppendOKWithoutSessionState(dst.Scratch(), p); err != nil {
				return false, FromNode(err)
			}
		}
		dst.KeepScratch(b)
		if !consumed {
			if err := src.Discard(4 + n); err != nil {
				return false, FromNode(err)
			}
			src.SetSeq(seq + 1)
		}
		return more, r.write(seq, b)
	case consumed:
		return more, r.write(seq, p)
	default:
		if err := src.CopyPacket(dst, n); err != nil {
			return false, FromNode(err)
		}
		return more, nil
	}
}

// write writes a packet the relay built or read whole to the client, with sequence id seq.
func (r *responder) write(seq uint8, payload []byte) error {
	r.dst.SetSeq(seq)
	if err := r.dst.WritePacket(payload); err != nil {
		return &Error{Client: true, Err: err}
	}
	return nil
}

// statusAt returns where the server status flags are in p, an OK packet (header 0x00, or 0xfe
// ending a result set) or a classic EOF, or -1 when p is too short to hold them.
func statusAt(p []byte, classicEOF bool) int {
	if classicEOF {
		if len(p) >= 5 {
			return 3 // 0xfe, warnings (2), status (2)
		}
		return -1
	}
	i := 1
	for range 2 { // affected rows, last insert id
		if i >= len(p) {
			return -1
		}
		_, n, _, err := mysql.ReadLenEncInt(p[i:])
		if err != nil {
			return -1
		}
		i += n
	}
	if i+2 > len(p) {
		return -1
	}
	return i
}
