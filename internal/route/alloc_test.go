package route

import (
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
)

// TestDecideDoesNotAllocate: Decide runs for every statement; once a session's candidate
// scratch has grown, no decision that routes a statement may allocate, whatever the endpoint's
// mode and policy. (Refusals build an error and may allocate: they end the statement.)
func TestDecideDoesNotAllocate(t *testing.T) {
	stmts := [][]byte{
		[]byte("SELECT c FROM sbtest1 WHERE id=42"),
		[]byte("/* app */ SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c"),
		[]byte("SHOW TABLES"),
		[]byte("SELECT c FROM sbtest1 WHERE id=42 FOR UPDATE"),
		[]byte("SELECT LAST_INSERT_ID()"),
		[]byte("SELECT FOUND_ROWS()"),
		[]byte("SET NAMES utf8mb4"),
		[]byte("BEGIN"),
		[]byte("START TRANSACTION READ ONLY"),
		[]byte("COMMIT"),
		[]byte("/*FORCE_MASTER*/ SELECT c FROM sbtest1 WHERE id=42"),
		[]byte("/*FORCE_SLAVE*/ SELECT c FROM sbtest1 WHERE id=42"),
		[]byte("/*FORCE_NODE='replica2'*/ SELECT c FROM sbtest1 WHERE id=42"),
	}
	writes := [][]byte{
		[]byte("UPDATE sbtest1 SET k=k+1 WHERE id=42"),
		[]byte("INSERT INTO sbtest1 (id, k, c, pad) VALUES (1, 2, 'c', 'pad')"),
	}
	results := func(stmts [][]byte) []classify.Result {
		rs := make([]classify.Result, len(stmts))
		for i, s := range stmts {
			rs[i] = classify.Classify(s)
		}
		return rs
	}
	reads, writeResults := results(stmts), results(writes)
	var roStmts [][]byte
	for i, r := range reads {
		if r.Flags&classify.LockingRead == 0 && r.Hint != classify.HintForceMaster {
			roStmts = append(roStmts, stmts[i])
		}
	}
	roResults := results(roStmts)
	for _, tc := range []struct {
		name string
		ep   *Settings
	}{
		{"read-write, weighted", rw()},
		{"read-write, least-active", &Settings{Name: "rw", Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: &LeastActive{}}},
		{"read-write, least-connections", &Settings{Name: "rw", Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: LeastConnections{}}},
		{"read-write, least-connections over the cluster", &Settings{Name: "rw", Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: LeastConnections{From: CountCluster}}},
		{"read-write, transaction splitting", &Settings{Name: "rw", Mode: ReadWrite, Weights: []int{50, 100, 100}, Policy: NewWeighted(), SplitTx: true}},
		{"read-only", &Settings{Name: "ro", Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted()}},
	} {
		snap := cluster()
		s := NewSession()
		s.Bound = 1
		decide := func(stmts [][]byte, rs []classify.Result) {
			for i := range stmts {
				d := Decide(&rs[i], stmts[i], &s, tc.ep, snap)
				if d.Err != nil {
					t.Fatalf("%s: %s: %v", tc.name, stmts[i], d.Err)
				}
				if d.Node < 0 && !d.Local {
					t.Fatalf("%s: %s: no node", tc.name, stmts[i])
				}
			}
		}
		run := func() {
			decide(stmts, reads)
			decide(writes, writeResults)
		}
		if tc.ep.Mode == ReadOnly {
			// Only what a read-only endpoint runs: no writes, no locking read, no FORCE_MASTER.
			run = func() { decide(roStmts, roResults) }
		}
		if a := testing.AllocsPerRun(100, run); a != 0 {
			t.Errorf("%s: %v allocations per pass over the statements, want 0", tc.name, a)
		}
	}
}

// TestLearnAndRetryDoNotAllocate: Learn runs after every statement, Retry and Reroute after
// every failed try: none of them may allocate.
func TestLearnAndRetryDoNotAllocate(t *testing.T) {
	stmts := [][]byte{
		[]byte("SELECT c FROM sbtest1 WHERE id=42"),
		[]byte("UPDATE sbtest1 SET k=k+1 WHERE id=42"),
		[]byte("SET NAMES utf8mb4"),
		[]byte("set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')"),
		[]byte("SET autocommit = 0"),
		[]byte("CREATE TEMPORARY TABLE t (a INT)"),
		[]byte("DROP TEMPORARY TABLE t"),
		[]byte("SELECT GET_LOCK('a', 1)"),
		[]byte("SELECT RELEASE_LOCK('a')"),
	}
	cs := make([]classify.Result, len(stmts))
	for i, s := range stmts {
		cs[i] = classify.Classify(s)
	}
	ep, snap := rw(), cluster()
	s := NewSession()
	read := cs[0]
	run := func() {
		for i := range stmts {
			s.Learn(&cs[i], stmts[i], Decision{Node: 0}, ep, Outcome{Node: 0, Primary: true, Status: 2})
		}
		Retry(&s, ep, snap, Failed{Decision: Decision{Node: 1, Reason: ReasonRead}})
		Retry(&s, ep, snap, Failed{Decision: Decision{Node: 1, Reason: ReasonRead}, Cause: CauseNotReached})
		Reroute(&read, stmts[0], &s, ep, snap, 1)
	}
	run()
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Errorf("%v allocations per pass, want 0", a)
	}
}
