package proxy

import (
	"errors"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// respKind says what shape of response a command gets.
type respKind uint8

const (
	respResult    respKind = iota // OK, ERR, LOCAL INFILE request, or result sets (COM_QUERY)
	respSingle                    // exactly one packet: OK, ERR, EOF or a string
	respFieldList                 // column definitions up to EOF, or ERR
	respRows                      // rows up to EOF/OK, or ERR (COM_STMT_FETCH)
	// respCursor is respResult for a COM_STMT_EXECUTE that asked for a cursor: an EOF after the
	// column definitions with SERVER_STATUS_CURSOR_EXISTS ends the response (rows come by
	// COM_STMT_FETCH). Anywhere else the flag means nothing for the response's shape: a CALL
	// whose procedure opened a cursor reports it too, and its rows follow as usual.
	respCursor
)

type relayState uint8

const (
	stFirst relayState = iota
	stColumns
	stColumnsEOF
	stRows
)

// relayError is a broken connection met while relaying: the client's (client set) or the
// node's. fail decides from it what the client sees.
type relayError struct {
	client bool
	err    error
	// partial: the node failed in the middle of the client's command, whose rest is still
	// unread in the client's buffer. answered: the node said why, and the client has its ERR.
	partial, answered bool
}

func (e *relayError) Error() string { return e.err.Error() }
func (e *relayError) Unwrap() error { return e.err }

// toNode classifies a failure of copying the client's command to a node, in its middle: a
// *mysql.WriteError is the node's side (partial), anything else the client's.
func toNode(err error) error {
	var we *mysql.WriteError
	if errors.As(err, &we) {
		return &relayError{err: we.Err, partial: true}
	}
	return &relayError{client: true, err: err}
}

// fromNode classifies a failure of copying a node's answer to the client: a *mysql.WriteError
// is the client's side, anything else the node's.
func fromNode(err error) error {
	var we *mysql.WriteError
	if errors.As(err, &we) {
		return &relayError{client: true, err: we.Err}
	}
	return &relayError{err: err}
}

// relayTimed relays under the configured read timeout.
func (s *session) relayTimed(bc *backend.Conn, kind respKind) error {
	if wait, ok := s.reads.takeAwait(); ok {
		// The wait for the read's position went first: its answer decides whether the read's
		// answer goes to the client or is dropped (the read then runs on the primary).
		if err := awaitAnswer(bc, wait+s.p.connectTimeout(), &s.p.consistencyTimeouts); err != nil {
			return err
		}
	}
	if t := s.p.opts.ReadTimeout; t > 0 {
		_ = bc.NetConn().SetReadDeadline(time.Now().Add(t))
		defer bc.NetConn().SetReadDeadline(time.Time{})
	}
	return s.relay(bc, kind)
}

// relay reads the node's response to one command and writes it to the client, packet by packet,
// without decoding rows, then flushes once. It records the final server status in s.status.
func (s *session) relay(bc *backend.Conn, kind respKind) error {
	s.failed = false
	s.reads.newResponse()
	state := stFirst
	if kind == respRows {
		state = stRows
	}
	var columns uint64
	continuation := false
	deprecateEOF := bc.Caps&mysql.ClientDeprecateEOF != 0
	for {
		n, _, err := bc.PeekHeader()
		if err != nil {
			return fromNode(err)
		}
		if continuation {
			continuation = n == mysql.MaxPacketPayload
			if err := bc.CopyPacket(s.client, n); err != nil {
				return fromNode(err)
			}
			continue
		}
		var first byte
		if n > 0 {
			p, err := bc.PeekPayload(n, 1)
			if err != nil {
				return fromNode(err)
			}
			first = p[0]
		}
		switch state {
		case stFirst:
			switch {
			case n == 0:
				return fromNode(errors.New("empty packet from node"))
			case first == 0xff:
				if err := s.readOnlyRefusal(bc, n); err != nil {
					return err
				}
				return s.copyErr(bc, n)
			case first == 0x00 && kind != respFieldList:
				more, err := s.relayOK(bc, n)
				if err != nil || !more || (kind != respResult && kind != respCursor) {
					return s.finish(err)
				}
				continue
			case kind == respSingle:
				return s.copyLast(bc, n)
			case kind == respFieldList:
				if first == 0xfe && n < mysql.MaxPacketPayload {
					_, err := s.relayOK(bc, n)
					return s.finish(err)
				}
				if err := bc.CopyPacket(s.client, n); err != nil {
					return fromNode(err)
				}
				continue
			case first == 0xfb:
				if !s.loadLocal || !s.asksLoadFile(bc, n) {
					return s.refuseInfile(bc, n)
				}
				s.loadLocal = false // one file per statement
				if err := s.relayLocalInfile(bc, n); err != nil {
					return err
				}
				continue
			}
			p, err := bc.PeekPayload(n, 9)
			if err != nil {
				return fromNode(err)
			}
			v, _, _, err := mysql.ReadLenEncInt(p)
			if err != nil {
				return fromNode(err)
			}
			columns = v
			state = stColumns
			continuation = n == mysql.MaxPacketPayload
			if err := bc.CopyPacket(s.client, n); err != nil {
				return fromNode(err)
			}
		case stColumns:
			continuation = n == mysql.MaxPacketPayload
			if err := bc.CopyPacket(s.client, n); err != nil {
				return fromNode(err)
			}
			columns--
			if columns == 0 {
				if deprecateEOF {
					state = stRows
				} else {
					state = stColumnsEOF
				}
			}
		case stColumnsEOF:
			if first == 0xff {
				return s.copyErr(bc, n)
			}
			if p, err := bc.PeekPayload(n, 5); kind == respCursor && err == nil && len(p) == 5 {
				if mysql.ParseEOF(p).Status&mysql.StatusCursorExists != 0 {
					// EXECUTE opened a cursor: rows come with COM_STMT_FETCH.
					_, err := s.relayOK(bc, n)
					return s.finish(err)
				}
			}
			if err := bc.CopyPacket(s.client, n); err != nil {
				return fromNode(err)
			}
			state = stRows
		case stRows:
			if first == 0xfe && n < mysql.MaxPacketPayload {
				more, err := s.relayOK(bc, n)
				if err != nil || !more {
					return s.finish(err)
				}
				state = stFirst
				continue
			}
			if first == 0xff && n < mysql.MaxPacketPayload {
				return s.copyErr(bc, n)
			}
			continuation = n == mysql.MaxPacketPayload
			if err := bc.CopyPacket(s.client, n); err != nil {
				return fromNode(err)
			}
		}
	}
}

// copyErr relays an ERR that ends a response. Some errors mean the node is closing the
// connection (KILL CONNECTION, shutdown, idle disconnect): the session then treats that
// connection as gone, as the server does: when it was the session's home, the client's
// connection is closed right after the error rather than failing its next statement; another
// node's is dropped, to be opened again when needed (session.loop).
func (s *session) copyErr(bc *backend.Conn, n int) error {
	s.failed = true
	if p, err := bc.PeekPayload(n, 3); err == nil && len(p) == 3 {
		switch uint16(p[1]) | uint16(p[2])<<8 {
		case mysql.ErrConnectionKilled, mysql.ErrServerShutdown, mysql.ErrClientInteractionTimeout, mysql.ErrAbortingConnection:
			s.nodeClosing = true
		}
	}
	return s.copyLast(bc, n)
}

// copyLast relays the last packet of a response (an ERR or a single-packet answer) and ends the
// response.
func (s *session) copyLast(bc *backend.Conn, n int) error {
	if err := bc.CopyPacket(s.client, n); err != nil {
		return fromNode(err)
	}
	return s.finish(nil)
}

// finish ends a response. The client gets it when the session next reads from the client (the
// next command), sent from inside that read's wait (mysql.Conn.FlushBeforeRead), or when the
// session closes: a response is the last thing a command writes.
func (s *session) finish(err error) error {
	if err != nil {
		return err
	}
	if err := s.client.FlushBeforeRead(); err != nil {
		return &relayError{client: true, err: err}
	}
	return nil
}

// errHugeOK: a node sent an OK packet of 16 MiB or more.
var errHugeOK = errors.New("protocol violation: an OK packet of 16 MiB or more from the node")

// relayOK relays an OK packet (header 0x00, or 0xfe as a result-set terminator) or a classic EOF,
// records the status, and reports whether more results follow. A node connection always has
// SESSION_TRACK; a client without it must not get the session-state block.
func (s *session) relayOK(bc *backend.Conn, n int) (more bool, err error) {
	if n >= mysql.MaxPacketPayload {
		// A server never sends an OK of 16 MiB or more: the node is out of step, and what it
		// announces (continuations up to 1 GiB) is not read into memory.
		return false, fromNode(errHugeOK)
	}
	_, seq, err := bc.PeekHeader()
	if err != nil {
		return false, fromNode(err)
	}
	p, err := bc.PeekPayload(n, n)
	if err != nil {
		return false, fromNode(err)
	}
	consumed := false
	if len(p) < n {
		// Larger than the read buffer: only a huge info string does that. Read it whole.
		if p, err = bc.ReadPacket(); err != nil {
			return false, fromNode(err)
		}
		consumed = true
	}
	classicEOF := p[0] == 0xfe && (bc.Caps&mysql.ClientDeprecateEOF == 0 || n < 7)
	var ok mysql.OK
	if classicEOF {
		ok.Status = mysql.ParseEOF(p).Status
		if ok.Status&mysql.StatusSessionStateChange != 0 {
			// The state changed (INSERT … RETURNING committed a GTID, say), but a classic
			// EOF has no room to say how: the session's last commit is no longer known.
			s.reads.stateHidden()
		}
	} else if ok, err = mysql.ParseOK(p, bc.Caps); err != nil {
		return false, fromNode(err)
	}
	s.status = ok.Status
	s.reader.observeStatus(ok.Status, s.conns, s.cur)
	if len(ok.SessionState) > 0 {
		s.trackSessionState(ok.SessionState)
	}
	s.reads.noteOK(ok.Status, ok.AffectedRows, !bc.ReadOnly()) // the primary's commits (a replica's commit nothing)
	more = ok.Status&mysql.StatusMoreResultsExists != 0
	if s.rs.TxPending && ok.Status&mysql.StatusInTrans == 0 {
		// Transaction splitting: the client's transaction is open (sluice holds its BEGIN)
		// while its reads run on a replica outside any: it is told so, as the primary would.
		// The bytes are patched where they lie, before they are copied.
		if i := statusAt(p, classicEOF); i > 0 {
			p[i] |= byte(mysql.StatusInTrans)
		}
	}
	// The client gets the server's bytes, unless it does not track session state and the node
	// sent a session-state block: then only that block and its flag are taken out.
	rewrite := !classicEOF && s.login.caps&mysql.ClientSessionTrack == 0 && bc.Caps&mysql.ClientSessionTrack != 0 &&
		ok.Status&mysql.StatusSessionStateChange != 0
	switch {
	case rewrite:
		if s.scratch, err = mysql.AppendOKWithoutSessionState(s.scratch[:0], p); err != nil {
			return false, fromNode(err)
		}
		if !consumed {
			if err := bc.Discard(4 + n); err != nil {
				return false, fromNode(err)
			}
			bc.SetSeq(seq + 1)
		}
		return more, s.writeClient(seq, s.scratch)
	case consumed:
		return more, s.writeClient(seq, p)
	default:
		if err := bc.CopyPacket(s.client, n); err != nil {
			return false, fromNode(err)
		}
		return more, nil
	}
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

func (s *session) writeClient(seq uint8, payload []byte) error {
	s.client.SetSeq(seq)
	if err := s.client.WritePacket(payload); err != nil {
		return &relayError{client: true, err: err}
	}
	return nil
}

// trackSessionState follows the changes the node reported that the session must remember.
func (s *session) trackSessionState(block []byte) {
	for len(block) > 0 {
		sc, rest, err := mysql.NextSessionChange(block)
		if err != nil {
			return
		}
		switch {
		case sc.Type == mysql.SessionTrackSchema && string(sc.Value) != s.state.DB:
			s.state.DB = string(sc.Value)
		case sc.Type == mysql.SessionTrackSystemVariables && string(sc.Name) == "character_set_client":
			s.reader.mode.trackedCharset(sc.Value)
		case sc.Type == mysql.SessionTrackGTIDs && len(sc.Value) > 0,
			sc.Type == mysql.SessionTrackSystemVariables && string(sc.Name) == "last_gtid" && len(sc.Value) > 0:
			// The GTID of the session's last commit (MariaDB's last_gtid, MySQL's OWN_GTID):
			// what a read of this session must find on a replica (consistency: session).
			s.reads.noteGTID(sc.Value)
		}
		block = rest
	}
}

// relayLocalInfile handles LOAD DATA LOCAL INFILE: the node's file request goes to the client,
// and the client's file packets, up to the empty one that ends them, go to the node.
func (s *session) relayLocalInfile(bc *backend.Conn, n int) error {
	if err := bc.CopyPacket(s.client, n); err != nil {
		return fromNode(err)
	}
	if err := s.client.Flush(); err != nil {
		return &relayError{client: true, err: err}
	}
	defer s.nc.SetReadDeadline(time.Time{})
	for {
		// Each packet of the file within the stall limit: a client that stops sending in the
		// middle must not hold the node connection forever.
		_ = s.nc.SetReadDeadline(time.Now().Add(s.watch.stallLimit()))
		m, _, err := s.client.PeekHeader()
		if err != nil {
			return &relayError{client: true, err: err}
		}
		if err := s.client.CopyPacket(bc.Conn, m); err != nil {
			return toNode(err)
		}
		if m == 0 {
			break
		}
	}
	if err := bc.Flush(); err != nil {
		return &relayError{err: err}
	}
	return nil
}
