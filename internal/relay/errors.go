package relay

import (
	"errors"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Error is a broken connection met while sending a command or relaying its answer: the client's
// (Client set) or the node's. The session's failure mapping decides from it what the client
// sees: a broken client connection ends the session; a node's is retried elsewhere, answered
// with an error, or ends the session, depending on how far the command got.
type Error struct {
	Client bool
	Err    error
	// Partial: the node failed in the middle of the client's command, whose rest is still
	// unread in the client's buffer. Answered: the node said why, and the client has its ERR.
	Partial, Answered bool
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ToNode classifies a failure of copying the client's command to a node, in its middle: a
// *mysql.WriteError is the node's side (Partial), anything else the client's.
func ToNode(err error) error {
	var we *mysql.WriteError
	if errors.As(err, &we) {
		return &Error{Err: we.Err, Partial: true}
	}
	return &Error{Client: true, Err: err}
}

// FromNode classifies a failure of copying a node's answer to the client: a *mysql.WriteError
// is the client's side, anything else the node's.
func FromNode(err error) error {
	var we *mysql.WriteError
	if errors.As(err, &we) {
		return &Error{Client: true, Err: we.Err}
	}
	return &Error{Err: err}
}

// ReadOnlyError is the primary's refusal of a statement because it is read-only (ERR 1290 that
// says so), met as the first packet of the answer while Options.Redirect was set and nothing had
// reached the client. The ERR was read and dropped: the statement did nothing, and the client
// has nothing of it. The caller decides whether the primary is read-only indeed (an application
// can raise the same error) and sends the statement to the new primary.
type ReadOnlyError struct{ SQL *mysql.SQLError }

func (e *ReadOnlyError) Error() string { return e.SQL.Error() }
func (e *ReadOnlyError) Unwrap() error { return e.SQL }

// errHugeOK: a node sent an OK packet of 16 MiB or more.
var errHugeOK = errors.New("protocol violation: an OK packet of 16 MiB or more from the node")

// errUnaskedInfile is a node's LOCAL INFILE request that sluice could not answer cleanly.
var errUnaskedInfile = errors.New("protocol violation: LOCAL INFILE request for a file the statement did not name")

// errEmptyPacket: a response that begins with an empty packet, which no server sends.
var errEmptyPacket = errors.New("empty packet from node")
