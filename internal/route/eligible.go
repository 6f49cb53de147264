package route

import (
	"fmt"
	"time"

	"github.com/sluicedb/sluice/internal/topology"
)

// Ineligible says why a node takes none of an endpoint's new reads; Eligible: it takes them.
// Which nodes take an endpoint's reads depends on the endpoint (its weights, its
// max_replica_lag, its mode), so it is said per endpoint, never as a node's state.
type Ineligible uint8

const (
	Eligible Ineligible = iota
	// NoWeight: the endpoint gives the node a read weight of 0.
	NoWeight
	// Unroutable: the node takes no new work at all (down, draining, joining, removed, errant,
	// broken); topology.Snapshot.Unroutable words which.
	Unroutable
	// PrimaryExcluded: the primary, where only replicas take the reads (a read-only endpoint's
	// bindings).
	PrimaryExcluded
	// OutOfRotation: a replica that takes no reads whatever its weight (detached; unsynced, for
	// a read that must see a position); topology.Snapshot.StateName words which.
	OutOfRotation
	// Lagging: a replica whose lag went past the endpoint's max_replica_lag and is not back
	// under three quarters of it yet.
	Lagging
)

func (r Ineligible) String() string {
	switch r {
	case Eligible:
		return "eligible"
	case NoWeight:
		return "weight 0"
	case Unroutable:
		return "takes no new work"
	case PrimaryExcluded:
		return "the primary: this endpoint reads from replicas only"
	case OutOfRotation:
		return "out of rotation"
	case Lagging:
		return "lag over max_replica_lag"
	}
	return "unknown"
}

// eligibility is why node i takes none of ep's new reads now (Eligible: it takes them): the
// rules pickReplica chooses by, in one place. withPrimary: the primary may read (by its
// weight); needsPosition: the read must see a position, which an unsynced replica cannot show
// it holds; learn: the lag gate remembers its verdict (a read decides; a view only looks).
func (ep *Settings) eligibility(snap *topology.Snapshot, i int, withPrimary, needsPosition, learn bool) Ineligible {
	w := 0
	if i < len(ep.Weights) {
		w = ep.Weights[i] // a node added after the endpoint's weights has none
	}
	switch {
	case w <= 0:
		return NoWeight
	case !snap.Routable(i):
		return Unroutable
	case i == snap.Primary:
		if !withPrimary {
			return PrimaryExcluded
		}
		return Eligible
	case i >= len(snap.State):
		return Eligible
	case snap.TakesNoReads(i, needsPosition):
		return OutOfRotation
	}
	var ok bool
	if learn {
		ok = ep.gate.usable(i, snap.State[i], ep.MaxLag)
	} else {
		ok, _ = ep.gate.judge(i, snap.State[i], ep.MaxLag)
	}
	if !ok {
		return Lagging
	}
	return Eligible
}

// ReadEligibility says whether node i takes endpoint ep's new reads now and, when it does
// not, why, by the rules reads are routed by: a read-write endpoint's reads (the primary by
// its weight; under session, global or latest consistency, reads that must see a position), a
// read-only endpoint's new bindings (replicas only). It looks without changing what the
// endpoint remembers (which replicas it set aside for lag). Safe from any goroutine.
func ReadEligibility(ep *Settings, snap *topology.Snapshot, i int) Ineligible {
	return ep.eligibility(snap, i, ep.Mode == ReadWrite, ep.Consistency != Eventual, false)
}

// Lag is a node's lag as routing judges it against max_replica_lag: measured by the monitor
// from GTID positions, else as the node reports it (Seconds_Behind_Master); false when neither
// is known.
func Lag(st *topology.NodeState) (time.Duration, bool) { return lagOf(st) }

// WhyNoReads words ReadEligibility for people: "" when node i takes ep's new reads now, else
// why not: its state (down, draining, drained, joining, errant, broken, detached, unsynced),
// "weight 0", its lag against ep's max_replica_lag, or that ep reads from replicas only.
func WhyNoReads(ep *Settings, snap *topology.Snapshot, i int) string {
	switch why := ReadEligibility(ep, snap, i); why {
	case Eligible:
		return ""
	case Unroutable, OutOfRotation:
		return snap.StateName(i, 0)
	case Lagging:
		lag, known := lagOf(snap.State[i])
		switch {
		case !known:
			return fmt.Sprintf("lag unknown since it was over max_replica_lag %s", ep.MaxLag)
		case lag > ep.MaxLag:
			return fmt.Sprintf("lag %s over max_replica_lag %s", lag.Round(time.Millisecond), ep.MaxLag)
		}
		return fmt.Sprintf("lag %s: was over max_replica_lag %s, takes reads again under %s",
			lag.Round(time.Millisecond), ep.MaxLag, ep.MaxLag*3/4)
	default:
		return why.String()
	}
}
