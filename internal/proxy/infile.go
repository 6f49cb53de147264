package proxy

import (
	"errors"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// errUnaskedInfile is a node's LOCAL INFILE request that sluice could not answer cleanly.
var errUnaskedInfile = errors.New("protocol violation: LOCAL INFILE request for a file the statement did not name")

// asksLoadFile reports whether the node's LOCAL INFILE request (its packet, of payload length n,
// is next on bc) names the file of the client's LOAD DATA LOCAL statement, s.loadName: a node
// must not turn the client's upload of one file into a read of another (/etc/passwd).
func (s *session) asksLoadFile(bc *backend.Conn, n int) bool {
	if n < 2 || n >= mysql.MaxPacketPayload {
		return false
	}
	p, err := bc.PeekPayload(n, n)
	if err != nil || len(p) < n {
		return false
	}
	// The node names the file as it read the literal: with backslash escapes undone, or, under
	// NO_BACKSLASH_ESCAPES, with backslashes as they are.
	return sameFileName(p[1:], s.loadName, true) || sameFileName(p[1:], s.loadName, false)
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

// refuseInfile answers a node's LOCAL INFILE request (its packet, of payload length n, is next on
// bc) for a statement that is not a LOAD DATA LOCAL the client sent, for another file than the
// statement's, or a second time in one statement (and for a LOAD DATA LOCAL in a batch, whose
// file sluice does not follow): a node that asks the
// client for a file it did not offer (a hostile or broken node, or one whose reading of the
// statement differs from sluice's) must never reach the client's files. The node gets the
// empty packet that sends no file; its answer to that is read and dropped; the client gets a
// clear error instead of a file request. The session goes on when the node's answer ends the
// response; when it does not (more results follow), the connection is out of step and dropped.
func (s *session) refuseInfile(bc *backend.Conn, n int) error {
	name := s.p.nodeOf(s.nodes.cur()).Name
	s.log.Warn("node asked for a local file the client's statement did not name (LOCAL INFILE): refused", "node", name)
	_, seq, err := bc.PeekHeader()
	if err != nil {
		return fromNode(err)
	}
	if n >= mysql.MaxPacketPayload {
		return fromNode(errUnaskedInfile)
	}
	if err := bc.Discard(4 + n); err != nil {
		return fromNode(err)
	}
	bc.SetSeq(seq + 1)
	if err := bc.WritePacketFlush(nil); err != nil {
		return &relayError{err: err}
	}
	p, err := bc.ReadPacket()
	if err != nil {
		return fromNode(err)
	}
	switch {
	case mysql.IsERR(p):
	case len(p) > 0 && p[0] == 0x00:
		ok, err := mysql.ParseOK(p, bc.Caps)
		if err != nil || ok.Status&mysql.StatusMoreResultsExists != 0 {
			return fromNode(errUnaskedInfile)
		}
		s.status = ok.Status
		if len(ok.SessionState) > 0 {
			s.trackSessionState(ok.SessionState)
		}
	default:
		return fromNode(errUnaskedInfile)
	}
	s.failed = true
	return s.writeErr(mysql.NewError(mysql.ErrUnknown, "HY000",
		"sluice: node '%s' asked for a local file (LOCAL INFILE) that the statement did not name as LOAD DATA LOCAL; no file was sent", name))
}
