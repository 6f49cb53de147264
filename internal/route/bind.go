package route

import (
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/topology"
)

// A read-only endpoint binds each session to one replica (BindReplica) for its whole life,
// and every statement of it goes there (decideReadOnly): the session's state, its
// transactions, temporary tables and locks live on that replica. The binding is kept only
// while the replica is fit for the endpoint's reads: by the rules a new binding is chosen by
// (Settings.eligibility, the rules ReadEligibility and WhyNoReads word), so a replica that is
// down, draining, removed, errant or broken, detached, past the endpoint's max_replica_lag,
// given no weight, or the primary now, takes no new bindings and loses the ones it has
// (Unfit): the proxy moves each session at its next statement boundary where nothing holds it
// there (no transaction, temporary table, lock or cursor), as a drain moves it, its state
// replayed on the new replica. A session that cannot move yet stays, and moves later.
//
// When no replica is fit, a session stays where it is (a read-only endpoint never reads from
// the primary): on a lagging or draining replica it goes on reading there, older data rather
// than none; on one that is down its statements fail as they would without sluice; on an
// errant or broken one it is refused (decideReadOnly: what the replica holds is not the
// primary's data). It moves at its first statement once a replica is fit again.
//
// No flapping: a binding moves only off a replica that is unfit, never back to one that
// recovered (sessions moved off a lagging replica stay where they went), and the lag gate
// takes a replica back only under three quarters of max_replica_lag.

// BindReplica chooses the replica a new session of a read-only endpoint is bound to, or -1.
func BindReplica(s *Session, ep *Settings, snap *topology.Snapshot) int {
	if _, ok := ep.Policy.(*LeastActive); ok {
		bind := *ep
		bind.Policy = LeastConnections{}
		return pickReplica(s, &bind, snap, false)
	}
	return pickReplica(s, ep, snap, false)
}

// Unfit returns the nodes a read-only endpoint's sessions bound to them must leave under snap:
// bit i set when node i takes none of ep's new bindings (BindReplica's rules). It is computed
// once per snapshot and endpoint settings, and kept: for a session's statement it is one
// pointer comparison and a load. Like a binding, it decides the lag gate (a replica set aside
// for lag stays aside until under three quarters of max_replica_lag). Safe from any
// goroutine.
func Unfit(ep *Settings, snap *topology.Snapshot) uint64 {
	if ep.unfit != nil {
		if u := ep.unfit.last.Load(); u != nil && u.snap == snap {
			return u.nodes
		}
	}
	var nodes uint64
	for i := 0; i < len(snap.Nodes) && i < topology.MaxNodes; i++ {
		if ep.eligibility(snap, i, false, false, true) != Eligible {
			nodes |= 1 << i
		}
	}
	if ep.unfit != nil {
		// Sessions that see a new snapshot at once compute the same set, whichever stores last.
		ep.unfit.last.Store(&unfitNodes{snap: snap, nodes: nodes})
	}
	return nodes
}

// unfitCache keeps Unfit's last answer for one version of an endpoint's settings (Update
// gives each version its own: weights count). Safe for concurrent use.
type unfitCache struct {
	last atomic.Pointer[unfitNodes]
}

// unfitNodes is Unfit's answer for one snapshot. Immutable.
type unfitNodes struct {
	snap  *topology.Snapshot
	nodes uint64
}
