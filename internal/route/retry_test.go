package route

import (
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
)

// TestRetry: where a statement goes after a try failed, for every cause, on both endpoint modes.
func TestRetry(t *testing.T) {
	ro := &Settings{Name: "ro", Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted()}
	read := Decision{Node: 1, Reason: ReasonRead}
	for _, tc := range []struct {
		name string
		ep   *Settings
		f    Failed
		want Decision
		next Next
		pins Pin
	}{
		{"nothing may follow", rw(), Failed{Decision: read, Cause: CauseFinal}, read, Stop, 0},
		{"the primary failed it", rw(), Failed{Decision: Decision{Node: 0, Reason: ReasonWrite}}, Decision{Node: 0, Reason: ReasonWrite}, Stop, 0},
		{"a refusal never ran", rw(), Failed{Decision: Decision{Node: -1, Err: errHintWrite}, Cause: CauseNotReached},
			Decision{Node: -1, Err: errHintWrite}, Stop, 0},
		{"a local answer never ran", rw(), Failed{Decision: Decision{Node: -1, Local: true, Reason: ReasonDeferredTx}, Cause: CauseNotReached},
			Decision{Node: -1, Local: true, Reason: ReasonDeferredTx}, Stop, 0},
		{"position not reached", rw(), Failed{Decision: read, Cause: CauseNotReached},
			Decision{Node: 0, Reason: ReasonConsistency}, Resend, 0},
		{"position not reached, the replica transaction still to end", rw(),
			Failed{Decision: Decision{Node: 2, Reason: ReasonReadOnlyTx, EndTx: true}, Cause: CauseNotReached},
			Decision{Node: 0, Reason: ReasonConsistency, EndTx: true}, Resend, 0},
		{"prepared form differs", rw(), Failed{Decision: read, Cause: CauseShape}, Decision{Node: 0, Reason: ReasonFallback}, Resend, 0},
		{"prepared form differs, read-only", ro, Failed{Decision: Decision{Node: 1, Reason: ReasonBound}, Cause: CauseShape},
			Decision{Node: 1, Reason: ReasonBound}, Stop, 0},
		{"session state refused", rw(), Failed{Decision: read, Cause: CauseStateSync}, Decision{Node: 0, Reason: ReasonPinned}, Resend, PinSet},
		{"session state refused, read-only: pinned all the same", ro, Failed{Decision: Decision{Node: 1, Reason: ReasonBound}, Cause: CauseStateSync},
			Decision{Node: 1, Reason: ReasonBound}, Stop, PinSet},
		{"a hint's replica failed", rw(), Failed{Decision: Decision{Node: 2, Reason: ReasonHint}}, Decision{Node: 2, Reason: ReasonHint}, Stop, 0},
		{"a transaction's replica failed", rw(), Failed{Decision: Decision{Node: 2, Reason: ReasonInTransaction}},
			Decision{Node: 2, Reason: ReasonInTransaction}, Stop, 0},
		{"a read-only transaction's start failed", rw(), Failed{Decision: Decision{Node: 2, Reason: ReasonReadOnlyTx}},
			Decision{Node: 2, Reason: ReasonReadOnlyTx}, Stop, 0},
		{"the bound replica failed", ro, Failed{Decision: Decision{Node: 1, Reason: ReasonBound}}, Decision{Node: 1, Reason: ReasonBound}, Stop, 0},
		{"a kept connection broke", rw(), Failed{Decision: read, Renewable: true}, read, Renew, 0},
		{"the read's replica failed", rw(), Failed{Decision: read}, read, Elsewhere, 0},
		{"the read's replica was found down while it waited", rw(), Failed{Decision: read, Cause: CauseDown}, read, Elsewhere, 0},
		{"found down: never renewed on the same node, even on a kept connection", rw(),
			Failed{Decision: read, Cause: CauseDown, Renewable: true}, read, Elsewhere, 0},
		{"found down, but part of the answer reached the client", rw(), Failed{Decision: read, Cause: CauseFinal}, read, Stop, 0},
		{"found down under a hint", rw(), Failed{Decision: Decision{Node: 2, Reason: ReasonHint}, Cause: CauseDown},
			Decision{Node: 2, Reason: ReasonHint}, Stop, 0},
		{"found down in a read-only transaction", rw(), Failed{Decision: Decision{Node: 2, Reason: ReasonReadOnlyTx}, Cause: CauseDown},
			Decision{Node: 2, Reason: ReasonReadOnlyTx}, Stop, 0},
		{"found down: the bound replica", ro, Failed{Decision: Decision{Node: 1, Reason: ReasonBound}, Cause: CauseDown},
			Decision{Node: 1, Reason: ReasonBound}, Stop, 0},
		{"found down: the primary never runs a statement twice", rw(), Failed{Decision: Decision{Node: 0, Reason: ReasonRead}, Cause: CauseDown},
			Decision{Node: 0, Reason: ReasonRead}, Stop, 0},
	} {
		s := NewSession()
		d, next := Retry(&s, tc.ep, cluster(), tc.f)
		if d != tc.want || next != tc.next || s.Pins != tc.pins {
			t.Errorf("%s: %+v, next %d, pins %b; want %+v, %d, %b", tc.name, d, next, s.Pins, tc.want, tc.next, tc.pins)
		}
	}
}

// TestReroute: a read whose replica failed goes to the other replica after the first failure,
// to the primary after the second, and to the primary when no replica is left.
func TestReroute(t *testing.T) {
	c := classify.Classify([]byte("SELECT 1"))
	for _, tc := range []struct {
		name  string
		up    []bool
		tries int
		want  Decision
	}{
		{"first failure, replica2 left", []bool{true, false, true}, 1, Decision{Node: 2, Reason: ReasonRead}},
		{"second failure", []bool{true, false, true}, 2, Decision{Node: 0, Reason: ReasonFallback}},
		{"first failure, no replica left", []bool{true, false, false}, 1, Decision{Node: 0, Reason: ReasonFallback}},
	} {
		s := NewSession()
		if d := Reroute(&c, []byte("SELECT 1"), &s, rw(), cluster(tc.up...), tc.tries); d != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, d, tc.want)
		}
	}
	// Inside a deferred transaction without splitting, a read belongs to the primary: never
	// rerouted to a replica, whatever the tries.
	s := NewSession()
	s.TxPending = true
	if d := Reroute(&c, []byte("SELECT 1"), &s, rw(), cluster(), 1); d != (Decision{Node: 0, Reason: ReasonFallback}) {
		t.Errorf("deferred transaction: %+v, want the primary", d)
	}
}

// TestNeedsWait: only a read or a read-only transaction's start on a replica waits for the
// position, and only when the read has one.
func TestNeedsWait(t *testing.T) {
	snap := cluster()
	for _, tc := range []struct {
		d         Decision
		hasTarget bool
		want      bool
	}{
		{Decision{Node: 1, Reason: ReasonRead}, true, true},
		{Decision{Node: 1, Reason: ReasonReadOnlyTx}, true, true},
		{Decision{Node: 1, Reason: ReasonRead}, false, false},
		{Decision{Node: 0, Reason: ReasonRead}, true, false},
		{Decision{Node: 1, Reason: ReasonHint}, true, false},
		{Decision{Node: 1, Reason: ReasonInTransaction}, true, false},
		{Decision{Node: -1, Err: errHintWrite}, true, false},
	} {
		s := NewSession()
		s.HasTarget = tc.hasTarget
		if got := NeedsWait(tc.d, &s, snap); got != tc.want {
			t.Errorf("%+v, target %v: %v, want %v", tc.d, tc.hasTarget, got, tc.want)
		}
	}
}

// TestInterruptible: only a plain read the policy sent to a replica may be cut short when its
// node is found down, and run elsewhere: never a write, a locking read or one with side effects
// (all the primary's), a hint's, a transaction's or a binding's read, nor a refusal or a local
// answer.
func TestInterruptible(t *testing.T) {
	snap := cluster()
	for _, tc := range []struct {
		name string
		d    Decision
		want bool
	}{
		{"a read on a replica", Decision{Node: 1, Reason: ReasonRead}, true},
		{"a read the policy sent to the primary", Decision{Node: 0, Reason: ReasonRead}, false},
		{"a write", Decision{Node: 0, Reason: ReasonWrite}, false},
		{"a hint's replica", Decision{Node: 2, Reason: ReasonHint}, false},
		{"in a transaction on a replica", Decision{Node: 2, Reason: ReasonInTransaction}, false},
		{"a read-only transaction's start", Decision{Node: 2, Reason: ReasonReadOnlyTx}, false},
		{"the bound replica", Decision{Node: 1, Reason: ReasonBound}, false},
		{"a fallback", Decision{Node: 0, Reason: ReasonFallback}, false},
		{"a refusal", Decision{Node: -1, Reason: ReasonRead, Err: errNoReplica}, false},
		{"a local answer", Decision{Node: -1, Reason: ReasonRead, Local: true}, false},
	} {
		if got := Interruptible(tc.d, snap); got != tc.want {
			t.Errorf("%s: Interruptible = %v, want %v", tc.name, got, tc.want)
		}
	}
	// What Decide makes of statements: only the plain read is interruptible.
	for _, tc := range []struct {
		stmt string
		want bool
	}{
		{"SELECT v FROM t WHERE id = 1", true},
		{"SELECT v FROM t WHERE id = 1 FOR UPDATE", false},
		{"SELECT v FROM t LOCK IN SHARE MODE", false},
		{"SELECT GET_LOCK('a', 1)", false},
		{"SELECT NEXTVAL(s)", false},
		{"INSERT INTO t VALUES (1)", false},
		{"UPDATE t SET v = 1", false},
		{"/*FORCE_SLAVE*/ SELECT 1", false},
	} {
		s := NewSession()
		c := classify.Classify([]byte(tc.stmt))
		d := Decide(&c, []byte(tc.stmt), &s, rw(), snap)
		if got := Interruptible(d, snap); got != tc.want {
			t.Errorf("%q (decided %+v): Interruptible = %v, want %v", tc.stmt, d, got, tc.want)
		}
	}
	// Inside a transaction, a read is the transaction's.
	s := NewSession()
	s.InTx, s.TxNode = true, 0
	c := classify.Classify([]byte("SELECT 1"))
	if d := Decide(&c, []byte("SELECT 1"), &s, rw(), snap); Interruptible(d, snap) {
		t.Errorf("a read in a transaction (decided %+v) is interruptible", d)
	}
}
