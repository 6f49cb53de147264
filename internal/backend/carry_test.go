package backend

import "testing"

// TestContinuesComparesStatements: a connection given back unreset is taken as carrying a
// prefix of a session's state only when it carries those very statements. The sum is a 64-bit
// FNV-1a, which a client can collide on purpose (it chooses its SET statements' bytes, comments
// included): a connection whose sum equals another session's must still not pass for it,
// or that session would run under the first one's settings (its time zone, sql_mode, role...).
func TestContinuesComparesStatements(t *testing.T) {
	state := func(epoch uint64, stmts ...string) *State {
		st := &State{Epoch: epoch}
		for _, s := range stmts {
			st.Stmts = append(st.Stmts, []byte(s))
		}
		return st
	}
	victim := state(7, "SET NAMES utf8mb4", "SET time_zone='+00:00'")
	attacker := state(3, "SET NAMES utf8mb4", "SET time_zone='+09:00' /* bytes chosen to collide */")

	c := &Conn{}
	c.fp = Fingerprint{Epoch: attacker.Epoch, Applied: 2}
	c.Carries(attacker)
	if c.Continues(victim) {
		t.Fatal("a connection carrying other statements continues the session's state")
	}
	c.carried.Sum = victim.Sum(2) // what a crafted collision gives
	if c.Continues(victim) {
		t.Fatal("a connection whose sum collides with the session's continues it: it carries other statements")
	}

	// The same statements, held by another session: a prefix continues.
	same := state(1, "SET NAMES utf8mb4")
	c.fp = Fingerprint{Epoch: same.Epoch, Applied: 1}
	c.Carries(same)
	if !c.Continues(victim) || !c.Continues(attacker) {
		t.Fatal("a connection carrying a prefix of the session's statements does not continue them")
	}
	if c.Continues(state(9)) {
		t.Fatal("a connection carrying a statement continues a session that has none")
	}
	c.Continue(victim)
	if c.Fingerprint().Epoch != victim.Epoch || c.Fingerprint().Applied != 1 {
		t.Fatalf("Continue: %+v", c.Fingerprint())
	}
	// The session that gave it back forgets its state and reuses its list: what the
	// connection carries does not change with it.
	src := state(1, "SET NAMES utf8mb4")
	c.fp = Fingerprint{Epoch: src.Epoch, Applied: 1}
	c.Carries(src)
	src.Stmts = append(src.Stmts[:0], []byte("SET time_zone='+09:00'"))
	src.Epoch++
	if !c.Continues(victim) {
		t.Fatal("what the connection carries changed with the list of the session that gave it back")
	}
}
