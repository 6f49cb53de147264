package proxy

import (
	"errors"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// errUnaskedInfile is a node's LOCAL INFILE request that sluice could not answer cleanly.
var errUnaskedInfile = errors.New("protocol violation: LOCAL INFILE request for a statement that is not LOAD DATA LOCAL")

// refuseInfile answers a node's LOCAL INFILE request (its packet, of payload length n, is next on
// bc) for a statement that is not a LOAD DATA LOCAL the client sent: a node that asks the
// client for a file it did not offer (a hostile or broken node, or one whose reading of the
// statement differs from sluice's) must never reach the client's files. The node gets the
// empty packet that sends no file; its answer to that is read and dropped; the client gets a
// clear error instead of a file request. The session goes on when the node's answer ends the
// response; when it does not (more results follow), the connection is out of step and dropped.
func (s *session) refuseInfile(bc *backend.Conn, n int) error {
	name := s.nodeOf(s.cur).Name
	s.log.Warn("node asked for a local file the client did not offer (LOCAL INFILE for a statement that is not LOAD DATA LOCAL): refused", "node", name)
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
		"sluice: node '%s' asked for a local file (LOCAL INFILE) for a statement that is not LOAD DATA LOCAL; no file was sent", name))
}
