package topology

import (
	"net"
	"slices"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
)

// Roles follow what the nodes are, not what the configuration said at start, but only through a
// planned switchover: sluice never promotes anything itself, and never takes a node for the
// primary just because it is writable (MariaDB replicas are writable by default; a replica
// whose replication was reset is writable and stale). The configured roles are the first view.

// candidate reports whether st shows a node that could be a new primary: it answered the last
// check, is not read-only, replicates from no one, and the monitor found nothing wrong with it.
func candidate(st *NodeState) bool {
	return st != nil && st.Health == Healthy && !st.ReadOnly && st.Replica == nil && !st.Faulty()
}

// Replicating returns the set of nodes whose states show them replicating (bit i: node i):
// the nodes that may become the primary of a switchover that begins now (Snapshot.Candidates).
func Replicating(states []*NodeState) uint64 {
	var set uint64
	for i, st := range states {
		if i < 64 && st != nil && st.Replica != nil && !st.Faulty() {
			set |= 1 << i
		}
	}
	return set
}

// ChoosePrimary decides, from the nodes' latest states, which node is the primary. cur is the
// snapshot in force.
//   - cur's primary not seen by the monitor yet: nothing changes.
//   - cur's primary answers and is writable: it stays the primary, whatever its replication
//     status (an active/passive pair replicates both ways). Any other node that is writable and
//     replicates from no one is listed in several (two primaries at once).
//   - cur's primary answers and is read-only: it was demoted. The new primary is the one node
//     that is writable, replicates from no one, has applied everything the old one wrote, and
//     replicated when the old one stopped taking writes (Snapshot.Candidates: a replica detached
//     before then, writable, is never taken, even when it has everything: a read_only turned
//     on and off again on the primary must not move the writes to it for good); until there
//     is exactly one such node, a switchover is under way (switching: writes wait, then fail),
//     and a primary writable again ends it. A node the old primary now replicates from is
//     eligible too: the switchover is done (also how one made while sluice was not running
//     shows at its start).
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
	eligible := cur.Candidates
	if !cur.Switching {
		eligible = Replicating(cur.State) // it begins now
	}
	next := -1
	for i, st := range states {
		if i == p || i >= 64 || (eligible&(1<<i) == 0 && (i >= len(cur.Nodes) || !replicatesFrom(old, cur.Nodes[i]))) || !candidate(st) || !caughtUp(st, old) {
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

// replicatesFrom reports whether the node in state st replicates from node n: an old primary
// repointed at the new one, the last step of a switchover (also how one done while sluice was
// not running shows at its start).
func replicatesFrom(st *NodeState, n *Node) bool {
	if st == nil || st.Replica == nil || n == nil || st.Replica.Source == "" {
		return false
	}
	return sameAddress(st.Replica.Source, n.Address)
}

// sameAddress compares two host:port addresses, localhost and 127.0.0.1 alike.
func sameAddress(a, b string) bool {
	norm := func(s string) string {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return s
		}
		if host == "localhost" || host == "::1" {
			host = "127.0.0.1"
		}
		return net.JoinHostPort(strings.ToLower(host), port)
	}
	return norm(a) == norm(b)
}

// caughtUp reports whether the node in state st has applied everything the node in state old
// wrote to its binlog (positions that cannot be read or compared say no).
func caughtUp(st, old *NodeState) bool {
	fl := gtid.FlavorOf(st.Version)
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

// TakesNoReads reports whether node i, not the primary, is out of rotation whatever its weight:
// detached, errant or broken; and, for a read that must see a position (needsPosition), unsynced.
func (s *Snapshot) TakesNoReads(i int, needsPosition bool) bool {
	if i == s.Primary || i >= len(s.State) {
		return false
	}
	st := s.State[i]
	return s.Detached(i) || st.Faulty() || (needsPosition && st != nil && st.Unsynced)
}

// StateName words node i's state for people (SHOW NODES, the admin API): up; down; auth_failed
// (it refused the monitor's login: routed on what was last known of it); full (it
// answered 1040, too many connections); switching (the primary, no longer writable, no new
// one yet); errant (holds transactions the primary does not); broken (its replication stopped
// with an error); unsynced (the primary's position went backwards since it was last seen caught
// up); writable (a second writable node: it takes no reads, and no writes); detached
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
	case st.AuthFailed != "":
		return "auth_failed"
	case st.Health == Full:
		return "full"
	case s.IsPrimary(i) && s.Switching:
		return "switching"
	case !s.IsPrimary(i) && st.Errant != "":
		return "errant"
	case !s.IsPrimary(i) && st.Broken != "":
		return "broken"
	case slices.Contains(s.Writable, i):
		return "writable"
	case !s.IsPrimary(i) && st.Unsynced:
		return "unsynced"
	case s.Detached(i):
		return "detached"
	case !s.IsPrimary(i) && st.LagKnown && maxLag > 0 && st.Lag > maxLag:
		return "lagging"
	}
	return "up"
}
