package topology

import (
	"slices"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
)

// Roles follow what the nodes are, not what the configuration said at start, but only through a
// planned switchover: sluice never promotes anything itself, and never takes a node for the
// primary just because it is writable (MariaDB replicas are writable by default; a replica
// whose replication was reset is writable and stale). The configured roles are the first view.

// candidate reports whether st shows a node that could be a new primary: it answered the last
// check, is not read-only, and replicates from no one.
func candidate(st *NodeState) bool {
	return st != nil && st.Health == Healthy && !st.ReadOnly && st.Replica == nil
}

// ChoosePrimary decides, from the nodes' latest states, which node is the primary. cur is the
// snapshot in force.
//   - cur's primary not seen by the monitor yet: nothing changes.
//   - cur's primary answers and is writable: it stays the primary, whatever its replication
//     status (an active/passive pair replicates both ways). Any other node that is writable and
//     replicates from no one is listed in several (two primaries at once).
//   - cur's primary answers and is read-only: it was demoted. The new primary is the one node
//     that is writable, replicates from no one, and has applied everything the old one wrote;
//     until there is exactly one such node, a switchover is under way (switching: writes wait).
//   - cur's primary does not answer: it stays the primary (writes to it fail as before; sluice
//     does no failover), unless it was being demoted when it went (switching): then a new
//     primary is taken as above, against the last position the old one was seen at.
func ChoosePrimary(cur *Snapshot, states []*NodeState) (primary int, switching bool, several []int) {
	p := cur.Primary
	if p >= len(states) || states[p] == nil {
		return p, cur.Switching, cur.Writable
	}
	old := states[p]
	switch {
	case old.Health == Healthy && !old.ReadOnly:
		for i, st := range states {
			if i != p && candidate(st) {
				several = append(several, i)
			}
		}
		if several != nil {
			several = append([]int{p}, several...)
		}
		return p, false, several
	case old.Health == Healthy, cur.Switching:
		// Demoted (or gone while being demoted).
	default:
		return p, false, nil
	}
	next := -1
	for i, st := range states {
		if i == p || !candidate(st) || !caughtUp(st, old) {
			continue
		}
		if next >= 0 {
			return p, true, nil // two: wait until the operator's intent is clear
		}
		next = i
	}
	if next < 0 {
		return p, true, nil
	}
	return next, false, nil
}

// caughtUp reports whether the node in state st has applied everything the node in state old
// wrote to its binlog (positions that cannot be read or compared say no).
func caughtUp(st, old *NodeState) bool {
	fl := gtid.MariaDB
	if FlavorOf(st.Version) == MySQL {
		fl = gtid.MySQL
	}
	have, err := gtid.Parse(fl, st.Applied)
	if err != nil {
		return false
	}
	want, err := gtid.Parse(fl, old.BinlogPos)
	if err != nil {
		return false
	}
	return have.Contains(want)
}

// Detached reports whether node i, not the primary, answers but replicates from no one: a
// demoted primary not yet repointed, a replica whose replication was reset, a second
// writable node. What it holds falls behind the primary at once, so it takes no reads. Without
// the monitor's view of the node (no state yet), it is not.
func (s *Snapshot) Detached(i int) bool {
	if i == s.Primary || i >= len(s.State) {
		return false
	}
	st := s.State[i]
	return st != nil && st.Health == Healthy && st.Replica == nil
}

// StateName words node i's state for people (SHOW NODES, the admin API): up; down; full (it
// answered 1040, too many connections); switching (the primary, no longer writable, no new
// one yet); writable (a second writable node: it takes no reads, and no writes); detached
// (replicates from no one: takes no reads); lagging (a replica past maxLag; 0: no limit);
// draining (being drained, sluice still holds connections to it) and drained (none left);
// joining (added while sluice runs, not seen yet) and removed (its slot is free).
func (s *Snapshot) StateName(i int, maxLag time.Duration) string {
	if s.IsRemoved(i) {
		return "removed"
	}
	if s.IsDraining(i) {
		if s.Load[i].Conns.Load() > 0 {
			return "draining"
		}
		return "drained"
	}
	if s.IsJoining(i) {
		return "joining"
	}
	if !s.Up[i] {
		return "down"
	}
	st := s.State[i]
	switch {
	case st == nil:
	case st.Health == Full:
		return "full"
	case s.IsPrimary(i) && s.Switching:
		return "switching"
	case slices.Contains(s.Writable, i):
		return "writable"
	case s.Detached(i):
		return "detached"
	case !s.IsPrimary(i) && st.LagKnown && maxLag > 0 && st.Lag > maxLag:
		return "lagging"
	}
	return "up"
}
