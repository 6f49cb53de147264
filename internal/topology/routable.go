package topology

// Routable reports whether node i may be given new work — a read, a binding, the target of a
// routing hint: it is up, and not draining or drained, joining, removed, or found errant or
// broken by the monitor. It is the one place that says which node states take new work; a new
// state that takes none belongs here, so that every router that asks falls in line. Work
// already under way (a transaction open on a node being drained) is the router's to finish.
// What only some reads must avoid (a detached or unsynced replica) is TakesNoReads.
func (s *Snapshot) Routable(i int) bool {
	return i >= 0 && i < len(s.Up) && s.Up[i] && !s.IsDraining(i) && !s.IsJoining(i) && !s.IsRemoved(i) &&
		!s.faulty(i)
}

// faulty reports whether the monitor found node i errant or its replication broken.
func (s *Snapshot) faulty(i int) bool { return i < len(s.State) && s.State[i].Faulty() }

// Unroutable words why node i takes no new work, for an error a client reads ("" when it is
// Routable).
func (s *Snapshot) Unroutable(i int) string {
	switch {
	case s.Routable(i):
		return ""
	case s.IsRemoved(i):
		return "removed"
	case s.IsDraining(i):
		return "draining"
	case s.IsJoining(i):
		return "joining"
	case s.faulty(i) && s.State[i].Errant != "":
		return "errant"
	case s.faulty(i):
		return "broken"
	}
	return "down"
}
