package relay

import (
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// defaultStall is Options.Stall's default.
const defaultStall = 30 * time.Second

// asksLoadFile reports whether the node's LOCAL INFILE request (its packet, of payload length n,
// is next on src) names the file of the client's LOAD DATA LOCAL statement
// (Options.InfileName): a node must not turn the client's upload of one file into a read of
// another (/etc/passwd).
func (r *responder) asksLoadFile(n int) bool {
	if n < 2 || n >= mysql.MaxPacketPayload {
		return false
	}
	p, err := r.src.PeekPayload(n, n)
	if err != nil || len(p) < n {
		return false
	}
	// The node names the file as it read the literal: with backslash escapes undone, or, under
	// NO_BACKSLASH_ESCAPES, with backslashes as they are.
	return sameFileName(p[1:], r.opt.InfileName, true) || sameFileName(p[1:], r.opt.InfileName, false)
}

// sameFileName reports whether name is the string literal lit (its text between the quotes, as
// written) read with doubled quotes as one and, when escapes, backslash escapes undone.
func sameFileName(name, lit []byte, escapes bool) bool {
	i := 0
	for j := 0; j < len(lit); j++ {
		c := lit[j]
		switch {
		case escapes && c == '\\' && j+1 < len(lit):
			j++
			switch c = lit[j]; c {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'r':
				c = '\r'
			case '0':
				c = 0
			case 'b':
				c = '\b'
			case 'Z':
				c = 0x1a
			}
		case (c == '\'' || c == '"') && j+1 < len(lit) && lit[j+1] == c:
			j++
		}
		if i >= len(name) || name[i] != c {
			return false
		}
		i++
	}
	return i == len(name)
}

// localInfile handles LOAD DATA LOCAL INFILE: the node's file request (its packet, of payload
// length n, is next on src) goes to the client, and the client's file packets, up to the empty
// one that ends them, go to the node. The node's answer to the file follows as the rest of
// the response.
func (r *responder) localInfile(n int) error {
	src, dst := r.src, r.dst
	if err := src.CopyPacket(dst, n); err != nil {
		return FromNode(err)
	}
	if err := dst.Flush(); err != nil {
		return &Error{Client: true, Err: err}
	}
	stall := r.opt.Stall
	if stall <= 0 {
		stall = defaultStall
	}
	// Through dst (mysql.Conn.SetReadDeadline): the session may have left a loose deadline
	// there, which these replace.
	defer dst.SetReadDeadline(time.Time{})
	for {
		// Each packet of the file within the stall limit.
		_ = dst.SetReadDeadline(time.Now().Add(stall))
		m, _, err := dst.PeekHeader()
		if err != nil {
			return &Error{Client: true, Err: err}
		}
		if err := dst.CopyPacket(src.Conn, m); err != nil {
			return ToNode(err)
		}
		if m == 0 {
			break
		}
	}
	r.res.InfileSent = true
	if err := src.Flush(); err != nil {
		return &Error{Err: err}
	}
	return nil
}

// refuseInfile answers a node's LOCAL INFILE request (its packet, of payload length n, is next
// on src) for a statement that is not a LOAD DATA LOCAL the client sent, for another file than
// the statement's, or a second time in one response (and for a LOAD DATA LOCAL in a batch,
// whose file sluice does not follow): a node that asks the client for a file it did not offer
// (a hostile or broken node, or one whose reading of the statement differs from sluice's) must
// never reach the client's files. The node gets the empty packet that sends no file; its
// answer to that is read and dropped (an OK goes by the Observer); the client gets a clear
// error instead of a file request, and the response ends there. When the node's answer does
// not end its response (more results follow), the connection is out of step: a node error.
func (r *responder) refuseInfile(n int) error {
	src, dst := r.src, r.dst
	r.res.InfileRefused = true
	if r.opt.Log != nil {
		r.opt.Log.Warn("node asked for a local file the client's statement did not name (LOCAL INFILE): refused", "node", r.opt.Node)
	}
	_, seq, err := src.PeekHeader()
	if err != nil {
		return FromNode(err)
	}
	if n >= mysql.MaxPacketPayload {
		return FromNode(errUnaskedInfile)
	}
	if err := src.Discard(4 + n); err != nil {
		return FromNode(err)
	}
	src.SetSeq(seq + 1)
	if err := src.WritePacketFlush(nil); err != nil {
		return &Error{Err: err}
	}
	p, err := src.ReadPacket()
	if err != nil {
		return FromNode(err)
	}
	switch {
	case mysql.IsERR(p):
	case len(p) > 0 && p[0] == 0x00:
		ok, err := mysql.ParseOK(p, src.Caps)
		if err != nil || ok.Status&mysql.StatusMoreResultsExists != 0 {
			return FromNode(errUnaskedInfile)
		}
		r.res.Status, r.res.StatusSeen = ok.Status, true
		if o := r.opt.Observer; o != nil {
			o.OK(src, ok, false)
		}
	default:
		return FromNode(errUnaskedInfile)
	}
	r.res.Failed, r.res.Code = true, mysql.ErrUnknown
	b := mysql.AppendERR(dst.Scratch(), mysql.NewError(mysql.ErrUnknown, "HY000",
		"sluice: node '%s' asked for a local file (LOCAL INFILE) that the statement did not name as LOAD DATA LOCAL; no file was sent", r.opt.Node))
	dst.KeepScratch(b)
	if err := dst.WritePacketFlush(b); err != nil {
		return &Error{Client: true, Err: err}
	}
	return nil
}
