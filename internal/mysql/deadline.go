package mysql

import (
	"errors"
	"os"
	"time"
)

// The read deadline of a Conn, set through the Conn so that it can be left armed.
//
// A session bounds the wait for its client's next command with a read deadline (the idle
// probe, timeouts.idle) and, in the old way of doing it, cleared that deadline as soon as the
// command had arrived: two timer updates in the runtime per statement, about a percent of
// sluice's CPU under a point-select load. Instead the deadline can be left armed once the
// command is in (LoosenReadDeadline) and used again for the next wait when it still lies
// ahead. While it is loose it binds nothing: a read of the command's rest (a LOAD DATA
// file, a re-authentication, the next packet of a long command) that runs into it clears it
// and goes on, exactly as it would have without any deadline. Setting a deadline
// (SetReadDeadline) makes it bind again.
//
// The Conn knows only the deadlines set through it: whoever loosens a Conn's deadline must
// set every deadline of that connection's reads through SetReadDeadline, never on the
// net.Conn directly, or a bound set there would be taken for the loose one and cleared.

// readDeadline is a Conn's record of the read deadline it set.
type readDeadline struct {
	at    time.Time // the deadline set last through the Conn; zero: none
	loose bool      // at binds no read: one that reaches it clears it (LoosenReadDeadline)
}

// SetReadDeadline sets the read deadline of c's connection (zero: none), binding every read
// until it changes.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.rdl = readDeadline{at: t}
	return c.nc.SetReadDeadline(t)
}

// ReadDeadline returns the read deadline set last through c (SetReadDeadline), zero when none
// is (or when a read ran into a loose one, which cleared it).
func (c *Conn) ReadDeadline() time.Time { return c.rdl.at }

// LoosenReadDeadline leaves the read deadline set last armed on the socket, but binding no
// read any more: a read that reaches it before the next SetReadDeadline clears it and reads
// on as if none had been set. The caller may take it up again (SetReadDeadline with the same
// time costs a timer update; ReadDeadline says whether it still lies ahead).
//
// On a compressed connection, whose reads do not pass where a loose deadline is noticed, it
// clears the deadline instead.
func (c *Conn) LoosenReadDeadline() {
	switch {
	case c.rdl.at.IsZero():
	case c.cz != nil:
		_ = c.SetReadDeadline(time.Time{})
	default:
		c.rdl.loose = true
	}
}

// TightenReadDeadline makes a loose read deadline (LoosenReadDeadline) bind reads again,
// without touching the socket's.
func (c *Conn) TightenReadDeadline() { c.rdl.loose = false }

// passedLoose reports whether err is a read that ran into a loose deadline, and if so clears
// that deadline, so that the read can be tried again.
func (c *Conn) passedLoose(err error) bool {
	if !c.rdl.loose || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	c.rdl = readDeadline{}
	_ = c.nc.SetReadDeadline(time.Time{})
	return true
}
