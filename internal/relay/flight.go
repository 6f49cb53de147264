package relay

import (
	"errors"
	"sync/atomic"
)

// Flight is the answer to one command on its way from a node, as far as another goroutine may
// cut it short: until the answer's first packet arrives, a watcher that learns the node is down
// may take the answer from the session (Interrupt), and then closes the node's connection;
// once the first packet arrived, the answer belongs to the client and nothing interrupts it
// (part of it may have reached the client, which no retry can take back).
//
// Exactly one of the two wins, whatever the timing: Response claims the answer (armed ->
// streaming) before it writes a byte to the client, and Interrupt takes it (armed ->
// interrupted) only while nobody claimed it. So an interrupted answer never wrote anything to
// the client, and a claimed one is never interrupted.
//
// The session's goroutine calls Arm before it sends the command and Disarm once the command
// ended (answered or failed); Response calls claim; any goroutine may call Interrupt. A Flight
// lives with its node connection and is reused by each of its commands; its zero value is idle.
type Flight struct{ state atomic.Uint32 }

const (
	flightIdle        uint32 = iota // no interruptible command under way
	flightArmed                     // sent (or about to be), no byte of the answer seen yet
	flightStreaming                 // the answer's first packet arrived: it goes to the client
	flightInterrupted               // taken by Interrupt before the answer arrived
)

// Arm marks a command about to be sent on the flight's connection as one that may be
// interrupted until its answer arrives.
func (f *Flight) Arm() { f.state.Store(flightArmed) }

// Disarm ends the command's flight and reports whether it was interrupted (then its
// connection was closed, or is being closed, by the interrupter: it must not be used again).
func (f *Flight) Disarm() (interrupted bool) { return f.state.Swap(flightIdle) == flightInterrupted }

// Interrupt takes the answer under way from its session when nothing of it has arrived yet, and
// reports whether it did: the caller then closes the connection, which ends the session's wait
// with an error (Response returns ErrInterrupted when the answer arrived meanwhile).
func (f *Flight) Interrupt() bool { return f.state.CompareAndSwap(flightArmed, flightInterrupted) }

// claim takes the answer for the client; false: it was interrupted first. A nil Flight (a
// command nobody may interrupt) is always claimed.
func (f *Flight) claim() bool {
	return f == nil || f.state.CompareAndSwap(flightArmed, flightStreaming) || f.state.Load() != flightInterrupted
}

// ErrInterrupted is the node-side error of a response whose Flight was interrupted after its
// first packet arrived and before it was claimed: nothing reached the client.
var ErrInterrupted = errors.New("the answer was interrupted: its node was found down")
