package topology

// Roles follow what the nodes are, not what the configuration said at start: the primary is the
// node that takes writes (read_only off) and replicates from no one. The configured roles are
// the first view, kept until the monitor has seen the nodes.

// writable reports whether st shows a node that could be the primary: it answered the last
// check, is not read-only, and replicates from no one.
func writable(st *NodeState) bool {
	return st != nil && st.Health == Healthy && !st.ReadOnly && st.Replica == nil
}

// ChoosePrimary decides, from the nodes' latest states, which node is the primary. cur is the
// snapshot in force (its primary is kept whenever the states do not say otherwise).
//   - One writable node: it is the primary.
//   - None: when cur's primary answers but went read-only or replicates, a switchover is under
//     way (switching: writes wait); when it does not answer, it stays the primary (writes to it
//     fail as before; finding a new primary for a dead one is a failover, not followed here).
//   - Several (two primaries at once): cur's primary stays if it is one of them, else the
//     first; writable lists them all.
//
// Until the monitor has seen cur's primary (no state yet), nothing changes.
func ChoosePrimary(cur *Snapshot, states []*NodeState) (primary int, switching bool, several []int) {
	if cur.Primary >= len(states) || states[cur.Primary] == nil {
		// The monitor has not seen the primary yet: nothing says it is not.
		return cur.Primary, cur.Switching, cur.Writable
	}
	var w []int
	for i, st := range states {
		if writable(st) {
			w = append(w, i)
		}
	}
	switch {
	case len(w) == 1:
		return w[0], false, nil
	case len(w) > 1:
		for _, i := range w {
			if i == cur.Primary {
				return i, false, w
			}
		}
		return w[0], false, w
	}
	if p := cur.Primary; states[p].Health == Healthy {
		return p, true, nil // up, and not writable
	}
	return cur.Primary, cur.Switching, nil
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
