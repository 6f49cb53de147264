package route

import (
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/topology"
)

// What happens when a statement does not run where Decide sent it: a read whose replica failed
// before any byte of its answer reached the client (or was found down while the read waited for
// its answer: CauseDown, Interruptible) goes to another replica once, then to the primary; one
// whose replica did not reach the position its consistency level needs goes to the
// primary, which has it; one whose prepared form or session state a replica refused goes to the
// primary too. The proxy says what failed (Failed); Retry and Elsewhere say where it goes.

// Cause is why a try of a statement failed, as far as where it goes next depends on it.
type Cause uint8

const (
	// CauseNode: the node did not answer it: its connection broke or timed out, or it
	// refused the connection with an error (too many connections, access denied there, a
	// node removed meanwhile), before any byte of an answer reached the client.
	CauseNode Cause = iota
	// CauseNotReached: the replica did not reach the position the read must see within the
	// consistency timeout, or that position could not be known (then no replica is known to
	// have it).
	CauseNotReached
	// CauseShape: the statement's prepared form differs on the replica.
	CauseShape
	// CauseStateSync: the replica refused the session's state (a replayed SET).
	CauseStateSync
	// CauseFinal: nothing may follow: the command cannot be sent again (it was streamed),
	// part of the answer reached the client, the session was killed, or the client's own
	// connection broke.
	CauseFinal
	// CauseDown: the node was found down (by the monitor, or by another session's failure)
	// while the try waited for its answer, and the proxy cut the wait short before any byte
	// of the answer arrived (only a try Interruptible allows): the read runs elsewhere. Unlike
	// CauseNode, the same node is never tried again, and the topology knows already.
	CauseDown
)

// Failed is a try of a statement that did not work out: where it went and why it failed there.
type Failed struct {
	Decision // the try's decision; Node is the node that failed it
	Cause    Cause
	// Renewable: the try ran on a connection the session kept from before (not one opened
	// for it, nor one already replaced) and that connection broke without an error answer:
	// the node may have closed it idle, or restarted since, which says nothing of the node.
	Renewable bool
}

// Next says what follows a failed try.
type Next uint8

const (
	// Stop: the failure stands; the proxy tells the client what it means.
	Stop Next = iota
	// Resend: send the statement as the decision returned says.
	Resend
	// Renew: send it again to the same node (the decision returned is the failed one), on a
	// new connection.
	Renew
	// Elsewhere: the replica failed the read: the proxy takes it out of routing (when it is
	// down) and asks Reroute where the read goes, over the snapshot that follows.
	Elsewhere
)

// Retry decides where a statement goes after its try f failed, over snap (the topology now).
// A replica that refused the session's state pins the session to the primary (PinSet), even
// when there is no primary to go to.
func Retry(s *Session, ep *Settings, snap *topology.Snapshot, f Failed) (Decision, Next) {
	if f.Cause == CauseFinal || f.Err != nil || f.Local || f.Node < 0 || f.Node == snap.Primary {
		return f.Decision, Stop
	}
	switch f.Cause {
	case CauseNotReached:
		// The primary has everything: what the read must see is there. (EndTx: the try
		// never ran, so what it was to end is still to end.)
		return Decision{Node: snap.Primary, Reason: ReasonConsistency, EndTx: f.EndTx}, Resend
	case CauseShape:
		if ep.Mode == ReadOnly {
			return f.Decision, Stop // no primary to fall back to
		}
		return Decision{Node: snap.Primary, Reason: ReasonFallback}, Resend
	case CauseStateSync:
		s.Pins |= PinSet
		if ep.Mode == ReadOnly {
			return f.Decision, Stop
		}
		return Decision{Node: snap.Primary, Reason: ReasonPinned}, Resend
	}
	if f.Reason != ReasonRead {
		// Only a plain read may run elsewhere: a hint named its node, a transaction or a
		// binding holds the session where it is.
		return f.Decision, Stop
	}
	if f.Renewable && f.Cause != CauseDown {
		return f.Decision, Renew
	}
	return f.Decision, Elsewhere
}

// Interruptible reports whether a try decided as d over snap may be cut short when its node is
// found down before any byte of its answer arrived, and sent again elsewhere (CauseDown): a
// plain read the policy sent to a replica (ReasonRead: no lock, no side effect, outside any
// transaction — safe to run twice). A hint names its node, a transaction or a binding holds the
// session where it is, and nothing for the primary runs twice. The proxy adds what it alone
// knows: the command is held whole, and no transaction is open on that connection.
func Interruptible(d Decision, snap *topology.Snapshot) bool {
	return d.Reason == ReasonRead && d.Err == nil && !d.Local && d.Node >= 0 && d.Node != snap.Primary
}

// Reroute routes read c (its text stmt) after tries replicas failed it (Retry said
// Elsewhere; snap is the topology once the last of them was reported): to the replica Decide
// picks, after the first failure only, and to the primary otherwise, or when Decide would not
// send it to a replica now.
func Reroute(c *classify.Result, stmt []byte, s *Session, ep *Settings, snap *topology.Snapshot, tries int) Decision {
	if tries == 1 {
		next := Decide(c, stmt, s, ep, snap)
		if next.Err == nil && !next.Local && next.Node != snap.Primary {
			return next
		}
	}
	return Decision{Node: snap.Primary, Reason: ReasonFallback}
}

// NeedsWait reports whether a statement decided as d must first wait, on its replica, for the
// position its read must see (s.HasTarget): a read, or a read-only transaction's start, on a
// replica. A hint's replica (FORCE_SLAVE asks for any) and a transaction already open there
// do not wait.
func NeedsWait(d Decision, s *Session, snap *topology.Snapshot) bool {
	if !s.HasTarget || d.Node == snap.Primary {
		return false
	}
	switch d.Reason {
	case ReasonRead, ReasonReadOnlyTx:
		return true
	}
	return false
}
