package route

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// cluster: node 0 primary, 1 replica1, 2 replica2.
func cluster(up ...bool) *topology.Snapshot {
	if len(up) == 0 {
		up = []bool{true, true, true}
	}
	return &topology.Snapshot{
		Nodes: []*topology.Node{
			{Index: 0, Name: "primary", Role: topology.Primary},
			{Index: 1, Name: "replica1"},
			{Index: 2, Name: "replica2"},
		},
		Load:    []*topology.Load{{}, {}, {}},
		Up:      up,
		Primary: 0,
	}
}

func rw(weights ...int) *Settings {
	if len(weights) == 0 {
		weights = []int{0, 100, 100}
	}
	return &Settings{Name: "rw", Mode: ReadWrite, Weights: weights, Policy: NewWeighted()}
}

func TestWeightedSequence(t *testing.T) {
	w := NewWeighted()
	snap := cluster()
	nodes := snap.Nodes
	var got []string
	for i := 0; i < 10; i++ {
		got = append(got, nodes[w.Pick(snap, []int{0, 1, 2}, []int{100, 200, 200})].Name)
	}
	want := []string{"replica1", "replica2", "primary", "replica1", "replica2", "replica1", "replica2", "primary", "replica1", "replica2"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("picks %v, want %v", got, want)
		}
	}
}

func TestLeastActive(t *testing.T) {
	snap := cluster()
	nodes := snap.Load
	p := &LeastActive{}
	if n := p.Pick(snap, []int{1, 2}, []int{100, 100}); n != 1 {
		t.Fatalf("first tie: %d, want the first listed", n)
	}
	nodes[1].Active.Store(3)
	nodes[2].Active.Store(1)
	if n := p.Pick(snap, []int{1, 2}, []int{100, 100}); n != 2 {
		t.Fatalf("fewest active: %d", n)
	}
	// Weight matters: 3 active at weight 400 beats 1 active at weight 100.
	if n := p.Pick(snap, []int{1, 2}, []int{400, 100}); n != 1 {
		t.Fatalf("per weight: %d", n)
	}
	if n := p.Pick(snap, nil, nil); n != -1 {
		t.Fatalf("no candidates: %d", n)
	}
}

// TestLeastActiveRotatesTies: one client's serial reads leave every replica idle between them,
// so every pick is a tie; the picks go round the tied candidates (before, every one went to the
// first listed), a less loaded candidate still wins whatever the turn, and a pick allocates
// nothing.
func TestLeastActiveRotatesTies(t *testing.T) {
	snap := cluster()
	p := &LeastActive{}
	got := map[int]int{}
	for range 6 {
		got[p.Pick(snap, []int{0, 1, 2}, []int{100, 100, 100})]++
	}
	if got[0] != 2 || got[1] != 2 || got[2] != 2 {
		t.Fatalf("six tied picks over three nodes: %v, want two each", got)
	}
	// Ties among the least loaded only: node 1 is busy, 0 and 2 share the picks.
	snap.Load[1].Active.Store(1)
	got = map[int]int{}
	for range 6 {
		got[p.Pick(snap, []int{0, 1, 2}, []int{100, 100, 100})]++
	}
	if got[1] != 0 || got[0] == 0 || got[2] == 0 || got[0]+got[2] != 6 {
		t.Fatalf("picks with node 1 busy: %v", got)
	}
	// Weight still counts, on every turn: 2 active at weight 400 beats 1 active at weight 100.
	snap.Load[0].Active.Store(2)
	snap.Load[1].Active.Store(1)
	snap.Load[2].Active.Store(1)
	for range 4 {
		if n := p.Pick(snap, []int{0, 1, 2}, []int{400, 100, 100}); n != 0 {
			t.Fatalf("per weight: %d, want 0", n)
		}
	}
	if a := testing.AllocsPerRun(100, func() { p.Pick(snap, []int{0, 1, 2}, []int{100, 100, 100}) }); a != 0 {
		t.Fatalf("%v allocs per pick", a)
	}
}

// TestLeastConnections: fewest connections per unit of weight, counted by this proxy or polled
// from the nodes (Threads_connected); ties to the node listed first.
func TestLeastConnections(t *testing.T) {
	snap := cluster()
	snap.Load[1].Conns.Store(5)
	snap.Load[2].Conns.Store(2)
	snap.State = []*topology.NodeState{nil, {ThreadsConnected: 10}, {ThreadsConnected: 30}}
	if n := (LeastConnections{}).Pick(snap, []int{1, 2}, []int{100, 100}); n != 2 {
		t.Fatalf("proxy's counts: %d", n)
	}
	if n := (LeastConnections{From: CountNodes}).Pick(snap, []int{1, 2}, []int{100, 100}); n != 1 {
		t.Fatalf("nodes' counts: %d", n)
	}
	if n := (LeastConnections{From: CountNodes}).Pick(snap, []int{1, 2}, []int{100, 400}); n != 2 {
		t.Fatalf("per weight: 30/400 beats 10/100: %d", n)
	}
	snap.State = nil // not polled yet: none
	if n := (LeastConnections{From: CountNodes}).Pick(snap, []int{1, 2}, []int{100, 100}); n != 1 {
		t.Fatalf("not polled, tie: %d", n)
	}
	for _, tc := range []struct{ name, from string }{{"least-connections", "nodes"}, {"least-connections", ""}, {"weighted", "proxy"}, {"least-connections", "cluster"}} {
		if _, err := ParsePolicy(tc.name, tc.from); err != nil {
			t.Errorf("%s/%s: %v", tc.name, tc.from, err)
		}
	}
	if p, _ := ParsePolicy("least-connections", "cluster"); p != (LeastConnections{From: CountCluster}) {
		t.Errorf("cluster parsed as %#v", p)
	}
	if _, err := ParsePolicy("least-connections", "both"); err == nil || !strings.Contains(err.Error(), "want proxy, nodes or cluster") {
		t.Errorf("connections_from both: %v", err)
	}
}

// TestLeastConnectionsFromCluster: counted over the cluster, a node's count is this proxy's own
// plus the other sluice nodes' (Load.Others): a node this proxy holds fewer connections to loses
// to one the others leave idle; without others' counts it is the proxy's own count.
func TestLeastConnectionsFromCluster(t *testing.T) {
	snap := cluster()
	p := LeastConnections{From: CountCluster}
	snap.Load[1].Conns.Store(1)
	snap.Load[2].Conns.Store(3)
	if n := p.Pick(snap, []int{1, 2}, []int{100, 100}); n != 1 {
		t.Fatalf("no others: %d, want 1 (own 1 < 3)", n)
	}
	snap.Load[1].Others.Store(5) // 6 against 3
	if n := p.Pick(snap, []int{1, 2}, []int{100, 100}); n != 2 {
		t.Fatalf("others on 1: %d, want 2 (1+5 > 3+0)", n)
	}
	if n := (LeastConnections{}).Pick(snap, []int{1, 2}, []int{100, 100}); n != 1 {
		t.Fatalf("proxy's counts ignore the others': %d", n)
	}
	if n := p.Pick(snap, []int{1, 2}, []int{300, 100}); n != 1 {
		t.Fatalf("per weight: 6/300 beats 3/100: %d", n)
	}
	snap.Load[2].Others.Store(3) // 6 against 6: the one listed first
	if n := p.Pick(snap, []int{1, 2}, []int{100, 100}); n != 1 {
		t.Fatalf("tie: %d, want 1", n)
	}
	if a := testing.AllocsPerRun(100, func() { p.Pick(snap, []int{0, 1, 2}, []int{100, 100, 100}) }); a != 0 {
		t.Fatalf("%v allocs per pick", a)
	}
}

func TestDecide(t *testing.T) {
	sel := classify.Result{Kind: classify.Select}
	type tc struct {
		name   string
		c      classify.Result
		stmt   string
		s      func(*Session)
		ep     *Settings
		snap   *topology.Snapshot
		node   int // -1: error or local
		reason Reason
		err    bool
		local  bool
	}
	tests := []tc{
		{name: "autocommit select to a replica", c: sel, node: 1, reason: ReasonRead},
		{name: "insert to primary", c: classify.Result{Kind: classify.Insert}, node: 0, reason: ReasonWrite},
		{name: "update", c: classify.Result{Kind: classify.Update}, node: 0, reason: ReasonWrite},
		{name: "ddl", c: classify.Result{Kind: classify.DDL}, node: 0, reason: ReasonWrite},
		{name: "call", c: classify.Result{Kind: classify.Call}, node: 0, reason: ReasonWrite},
		{name: "unknown", c: classify.Result{Kind: classify.Unknown}, node: 0, reason: ReasonUnknown},
		{name: "for update", c: classify.Result{Kind: classify.Select, Flags: classify.LockingRead}, node: 0, reason: ReasonLockingRead},
		{name: "select into", c: classify.Result{Kind: classify.Select, Flags: classify.SelectInto}, node: 0, reason: ReasonWrite},
		{name: "get_lock", c: classify.Result{Kind: classify.Select, Flags: classify.LockFunction}, node: 0, reason: ReasonSessionFunction},
		{name: "last_insert_id", c: classify.Result{Kind: classify.Select, Flags: classify.LastInsertID}, node: 0, reason: ReasonSessionFunction},
		{name: "sequence", c: classify.Result{Kind: classify.Select, Flags: classify.Sequence}, node: 0, reason: ReasonSessionFunction},
		{name: "user variable", c: classify.Result{Kind: classify.Select, Flags: classify.UserVar}, node: 0, reason: ReasonSessionFunction},
		{name: "calc found rows", c: classify.Result{Kind: classify.Select, Flags: classify.CalcFoundRows}, node: 0, reason: ReasonSessionFunction},
		{name: "found rows follows the previous statement", c: classify.Result{Kind: classify.Select, Flags: classify.FoundRows},
			s: func(s *Session) { s.LastNode = 2 }, node: 2, reason: ReasonPrevious},
		{name: "show warnings follows the previous statement", c: classify.Result{Kind: classify.Show, Show: classify.ShowWarnings},
			s: func(s *Session) { s.LastNode = 1 }, node: 1, reason: ReasonPrevious},
		{name: "show tables to a replica", c: classify.Result{Kind: classify.Show}, node: 1, reason: ReasonRead},
		{name: "show master status", c: classify.Result{Kind: classify.Show, Show: classify.ShowMasterStatus}, node: 0, reason: ReasonPrimaryOnly},
		{name: "show processlist", c: classify.Result{Kind: classify.Show, Show: classify.ShowProcesslist}, node: 0, reason: ReasonPrimaryOnly},
		{name: "explain select", c: classify.Result{Kind: classify.Explain}, node: 1, reason: ReasonRead},
		{name: "explain update", c: classify.Result{Kind: classify.Explain, Flags: classify.ExplainWrite}, node: 0, reason: ReasonWrite},
		{name: "multi-statement", c: classify.Result{Kind: classify.Select, Flags: classify.Multi}, node: 0, reason: ReasonMulti},
		{name: "in transaction", c: sel, s: func(s *Session) { s.InTx, s.TxNode = true, 0 }, node: 0, reason: ReasonInTransaction},
		{name: "autocommit off: reads on the primary", c: sel, s: func(s *Session) { s.Autocommit = false }, node: 0, reason: ReasonInTransaction},
		{name: "begin", c: classify.Result{Kind: classify.Begin}, node: 0, reason: ReasonTransactionStart},
		{name: "begin read only on a replica", c: classify.Result{Kind: classify.Begin, Flags: classify.ReadOnlyTx}, node: 1, reason: ReasonReadOnlyTx},
		{name: "read-only transaction stays on its replica", c: sel, s: func(s *Session) { s.InTx, s.TxNode = true, 2 }, node: 2, reason: ReasonInTransaction},
		{name: "pinned by a temp table", c: sel, s: func(s *Session) { s.Pins = PinTempTable }, node: 0, reason: ReasonPinned},
		{name: "pinned by lock tables", c: sel, s: func(s *Session) { s.Pins = PinLockTables }, node: 0, reason: ReasonPinned},
		{name: "set", c: classify.Result{Kind: classify.Set, Flags: classify.SetSession}, node: 0, reason: ReasonSession},
		{name: "replicas down: fallback", c: sel, snap: cluster(true, false, false), node: 0, reason: ReasonFallback},
		{name: "one replica down", c: sel, snap: cluster(true, false, true), node: 2, reason: ReasonRead},
		{name: "primary weight 0 and replicas weight 0", c: sel, ep: rw(0, 0, 0), node: 0, reason: ReasonFallback},
		{name: "primary with read weight", c: sel, ep: rw(100, 0, 0), node: 0, reason: ReasonRead},
		{name: "hint force master", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceMaster}, node: 0, reason: ReasonHint},
		{name: "hint force slave", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceSlave}, node: 1, reason: ReasonHint},
		{name: "hint force slave on a write", c: classify.Result{Kind: classify.Update, Hint: classify.HintForceSlave}, node: -1, err: true},
		{name: "hint force slave in a transaction that wrote", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceSlave},
			s: func(s *Session) { s.InTx, s.TxNode = true, 0 }, node: -1, err: true},
		{name: "hint force slave with no replica", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceSlave},
			snap: cluster(true, false, false), node: -1, err: true},
		{name: "hint force slave ignores primary weight", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceSlave},
			ep: rw(100, 0, 100), node: 2, reason: ReasonHint},
		{name: "hint force node", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceNode, NodeName: [2]int32{0, 8}},
			stmt: "replica2", node: 2, reason: ReasonHint},
		{name: "hint force node unknown", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceNode, NodeName: [2]int32{0, 4}},
			stmt: "nope", node: -1, err: true},
		{name: "hint force node: a write to a replica is refused", c: classify.Result{Kind: classify.Insert, Hint: classify.HintForceNode, NodeName: [2]int32{0, 8}},
			stmt: "replica1", node: -1, err: true},
		{name: "hint force node: a locking read to a replica is refused", c: classify.Result{Kind: classify.Select, Flags: classify.LockingRead, Hint: classify.HintForceNode, NodeName: [2]int32{0, 8}},
			stmt: "replica1", node: -1, err: true},
		{name: "hint force node: a replica inside a transaction that wrote is refused", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceNode, NodeName: [2]int32{0, 8}},
			stmt: "replica1", s: func(s *Session) { s.InTx, s.TxNode = true, 0 }, node: -1, err: true},
		{name: "hint force node: a write to the primary", c: classify.Result{Kind: classify.Insert, Hint: classify.HintForceNode, NodeName: [2]int32{0, 7}},
			stmt: "primary", node: 0, reason: ReasonHint},
		{name: "hint force node down", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceNode, NodeName: [2]int32{0, 8}},
			stmt: "replica1", snap: cluster(true, false, true), node: -1, err: true},
		{name: "split: begin deferred", c: classify.Result{Kind: classify.Begin}, ep: &Settings{Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: NewWeighted(), SplitTx: true},
			node: -1, local: true, reason: ReasonDeferredTx},
		{name: "split: read before the first write", c: sel, s: func(s *Session) { s.TxPending = true },
			ep: &Settings{Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: NewWeighted(), SplitTx: true}, node: 1, reason: ReasonRead},
		{name: "split: commit of a transaction that never wrote", c: classify.Result{Kind: classify.Commit}, s: func(s *Session) { s.TxPending = true },
			ep: &Settings{Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: NewWeighted(), SplitTx: true}, node: -1, local: true, reason: ReasonDeferredTx},
		{name: "split: first write to the primary", c: classify.Result{Kind: classify.Insert}, s: func(s *Session) { s.TxPending = true },
			ep: &Settings{Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: NewWeighted(), SplitTx: true}, node: 0, reason: ReasonWrite},
	}
	ro := &Settings{Name: "ro", Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted()}
	bound := func(s *Session) { s.Bound = 2 }
	tests = append(tests,
		tc{name: "read-only: select on the bound replica", c: sel, s: bound, ep: ro, node: 2, reason: ReasonBound},
		tc{name: "read-only: a session connected before the endpoint became read-only has no replica", c: sel, ep: ro, node: -1, err: true},
		tc{name: "read-only: write refused", c: classify.Result{Kind: classify.Insert}, s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: ddl refused", c: classify.Result{Kind: classify.DDL}, s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: for update refused", c: classify.Result{Kind: classify.Select, Flags: classify.LockingRead}, s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: force master refused", c: classify.Result{Kind: classify.Select, Hint: classify.HintForceMaster}, s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: set on the bound replica", c: classify.Result{Kind: classify.Set}, s: bound, ep: ro, node: 2, reason: ReasonBound},
		tc{name: "read-only: set session transaction read write refused", c: classify.Classify([]byte("SET SESSION TRANSACTION READ WRITE")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: set transaction read write refused", c: classify.Classify([]byte("SET TRANSACTION READ WRITE")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: tx_read_only = 0 refused", c: classify.Classify([]byte("SET tx_read_only = 0")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: transaction_read_only = OFF refused", c: classify.Classify([]byte("SET @@session.transaction_read_only = OFF")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: start transaction read write refused", c: classify.Classify([]byte("START TRANSACTION READ WRITE")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: set global refused", c: classify.Classify([]byte("SET GLOBAL read_only = 0")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: set session transaction read only", c: classify.Classify([]byte("SET SESSION TRANSACTION READ ONLY")), s: bound, ep: ro, node: 2, reason: ReasonBound},
		tc{name: "read-only: a batch with a write refused", c: classify.Classify([]byte("SELECT 1; INSERT INTO t VALUES (1)")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: a batch that turns the guard off refused", c: classify.Classify([]byte("SELECT 1; SET SESSION TRANSACTION READ WRITE; SELECT 2")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: a batch with a locking read refused", c: classify.Classify([]byte("SELECT 1; SELECT * FROM t FOR UPDATE")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: a batch with ddl refused", c: classify.Classify([]byte("SELECT 1; CREATE TABLE t (a INT)")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: a batch of reads and session statements", c: classify.Classify([]byte("SELECT 1; SET @a = 1; SHOW TABLES; SELECT @a")), s: bound, ep: ro, node: 2, reason: ReasonBound},
		tc{name: "read-only: set statement tx_read_only refused", c: classify.Classify([]byte("SET STATEMENT tx_read_only=0 FOR SELECT f()")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "set statement tx_read_only to the primary", c: classify.Classify([]byte("SET STATEMENT tx_read_only=0 FOR SELECT f()")), node: 0, reason: ReasonWrite},
		tc{name: "read-only: prepare of a read", c: classify.Classify([]byte("PREPARE s FROM 'SELECT ?'")), s: bound, ep: ro, node: 2, reason: ReasonBound},
		tc{name: "read-only: prepare of a write refused", c: classify.Classify([]byte("PREPARE w FROM 'INSERT INTO t VALUES (3)'")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: prepare of a read-write toggle refused", c: classify.Classify([]byte("PREPARE s FROM 'SET SESSION TRANSACTION READ WRITE'")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: prepare of set global refused", c: classify.Classify([]byte("PREPARE g FROM 'SET GLOBAL read_only=0'")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: prepare from a variable refused", c: classify.Classify([]byte("PREPARE s FROM @q")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: execute immediate of a write refused", c: classify.Classify([]byte("EXECUTE IMMEDIATE 'DELETE FROM t'")), s: bound, ep: ro, node: -1, err: true},
		tc{name: "read-only: a batch that starts with SET", c: classify.Classify([]byte("SET @a = 1; SELECT @a")), s: bound, ep: ro, node: 2, reason: ReasonBound},
		tc{name: "read-only: begin on the bound replica", c: classify.Result{Kind: classify.Begin}, s: bound, ep: ro, node: 2, reason: ReasonBound},
		tc{name: "read-only: user variables stay on the replica", c: classify.Result{Kind: classify.Select, Flags: classify.UserVar}, s: bound, ep: ro, node: 2, reason: ReasonBound},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSession()
			if tt.s != nil {
				tt.s(&s)
			}
			ep, snap := tt.ep, tt.snap
			if ep == nil {
				ep = rw()
			}
			if snap == nil {
				snap = cluster()
			}
			d := Decide(&tt.c, []byte(tt.stmt), &s, ep, snap)
			if (d.Err != nil) != tt.err || d.Node != tt.node || d.Local != tt.local || (!tt.err && d.Reason != tt.reason) {
				t.Fatalf("got node %d reason %v local %v err %v; want node %d reason %v local %v err %v",
					d.Node, d.Reason, d.Local, d.Err, tt.node, tt.reason, tt.local, tt.err)
			}
			if d.Err != nil && mysql.IsClientCode(d.Err.Code) {
				t.Fatalf("error %d is a client library's own code: libmariadb refuses it from a server", d.Err.Code)
			}
		})
	}
}

func TestBindReplica(t *testing.T) {
	ep := &Settings{Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: NewWeighted()}
	s := NewSession()
	if n := BindReplica(&s, ep, cluster(true, false, false)); n != -1 {
		t.Fatalf("no replica up: %d", n)
	}
	seen := map[int]int{}
	for i := 0; i < 10; i++ {
		seen[BindReplica(&s, ep, cluster())]++
	}
	if seen[1] != 5 || seen[2] != 5 {
		t.Fatalf("bindings %v", seen)
	}
}

func BenchmarkDecide(b *testing.B) {
	c := classify.Result{Kind: classify.Select}
	s := NewSession()
	ep := &Settings{Mode: ReadWrite, Weights: []int{0, 100, 100}, Policy: &LeastActive{}}
	snap := cluster()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Decide(&c, nil, &s, ep, snap)
	}
}

// TestEndpointUpdateChecks: settings that do not fit the topology change nothing; accepted
// ones are copied (the caller's slice is not kept) and in force at once.
func TestEndpointUpdateChecks(t *testing.T) {
	e, err := NewEndpoint("rw", *rw())
	if err != nil {
		t.Fatal(err)
	}
	before := e.Settings()
	for name, s := range map[string]Settings{
		"too many weights": {Weights: make([]int, topology.MaxNodes+1), Policy: &LeastActive{}},
		"negative weight":  {Weights: []int{0, -1, 1}, Policy: &LeastActive{}},
		"weight too large": {Weights: []int{0, MaxWeight + 1, 1}, Policy: &LeastActive{}},
		"no policy":        {Weights: []int{0, 1, 1}},
		"unknown mode":     {Weights: []int{0, 1, 1}, Policy: &LeastActive{}, Mode: 7},
	} {
		if err := e.Update(s); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if e.Settings() != before {
			t.Errorf("%s: settings changed", name)
		}
	}
	w := []int{100, 0, 0}
	if err := e.Update(Settings{Weights: w, Policy: &LeastActive{}}); err != nil {
		t.Fatal(err)
	}
	w[0] = 0
	if got := e.Settings(); got.Weights[0] != 100 || got.Name != "rw" {
		t.Fatalf("settings in force: %+v", got)
	}
}

// TestDecideEndsReplicaTransaction: in a (read-only) transaction on a replica, what a server
// would end it with ends it there, and routes as outside a transaction; everything else stays
// in it, writes included (they fail there, as in a READ ONLY transaction on a server); a
// transaction on the primary keeps everything.
func TestDecideEndsReplicaTransaction(t *testing.T) {
	inReplicaTx := func() *Session { s := NewSession(); s.InTx, s.TxNode = true, 2; return &s }
	for _, tc := range []struct {
		name   string
		stmt   string
		s      *Session
		node   int
		reason Reason
		endTx  bool
	}{
		{"begin", "START TRANSACTION", inReplicaTx(), 0, ReasonTransactionStart, true},
		{"begin read write", "START TRANSACTION READ WRITE", inReplicaTx(), 0, ReasonTransactionStart, true},
		{"begin read only", "START TRANSACTION READ ONLY", inReplicaTx(), 1, ReasonReadOnlyTx, true},
		{"set autocommit", "SET autocommit = 0", inReplicaTx(), 0, ReasonSession, true},
		{"insert refused", "INSERT INTO t VALUES (1)", inReplicaTx(), -1, ReasonWrite, false},
		{"hinted insert refused", "/*FORCE_MASTER*/ INSERT INTO t VALUES (1)", inReplicaTx(), -1, ReasonWrite, false},
		{"select stays", "SELECT 1", inReplicaTx(), 2, ReasonInTransaction, false},
		{"commit stays", "COMMIT", inReplicaTx(), 2, ReasonInTransaction, false},
		{"primary tx keeps begin", "BEGIN", func() *Session { s := NewSession(); s.InTx, s.TxNode = true, 0; return &s }(), 0, ReasonInTransaction, false},
	} {
		c := classify.Classify([]byte(tc.stmt))
		d := Decide(&c, []byte(tc.stmt), tc.s, rw(), cluster())
		if d.Node != tc.node || d.Reason != tc.reason || d.EndTx != tc.endTx || (d.Err != nil) != (tc.node < 0) {
			t.Errorf("%s: %+v, want node %d (%s) endTx %v", tc.name, d, tc.node, tc.reason, tc.endTx)
		}
		if tc.node < 0 && (d.Err == nil || d.Err.Code != 1792 || d.Err.State != "25006") {
			t.Errorf("%s: %v, want the server's error 1792 (25006) for a write in a READ ONLY transaction", tc.name, d.Err)
		}
	}
}

// TestLagThreshold: a replica past max_replica_lag takes no new reads, comes back only under
// three quarters of it (no flapping at the threshold); with every replica past it, reads go to
// the primary and a read-only endpoint binds nobody; Seconds_Behind_Master counts when the
// positions could not be compared; 0 means no limit.
func TestLagThreshold(t *testing.T) {
	e, err := NewEndpoint("rw", Settings{Weights: []int{0, 100, 100}, Policy: &LeastActive{}, MaxLag: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	snap := cluster()
	lags := func(l1, l2 time.Duration) {
		snap.State = []*topology.NodeState{{LagKnown: true}, {Lag: l1, LagKnown: true}, {Lag: l2, LagKnown: true}}
	}
	read := classify.Result{Kind: classify.Select}
	decide := func() Decision {
		s := NewSession()
		return Decide(&read, nil, &s, e.Settings(), snap)
	}
	snap.Load[2].Active.Store(1) // replica1 wins whenever it is eligible (ties rotate)
	lags(0, 0)
	if d := decide(); d.Node != 1 {
		t.Fatalf("no lag: %+v", d)
	}
	lags(3*time.Second, 0)
	if d := decide(); d.Node != 2 {
		t.Fatalf("replica1 past the threshold: %+v", d)
	}
	lags(1900*time.Millisecond, 0) // under the threshold, not under 3/4 of it: still out
	if d := decide(); d.Node != 2 {
		t.Fatalf("replica1 back too early: %+v", d)
	}
	lags(time.Second, 0)
	if d := decide(); d.Node != 1 {
		t.Fatalf("replica1 under 3/4 of the threshold: %+v", d)
	}
	lags(5*time.Second, 5*time.Second)
	if d := decide(); d.Node != 0 || d.Reason != ReasonFallback {
		t.Fatalf("every replica lagging: %+v", d)
	}
	ro, _ := NewEndpoint("ro", Settings{Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: &LeastActive{}, MaxLag: 2 * time.Second})
	s := NewSession()
	if n := BindReplica(&s, ro.Settings(), snap); n != -1 {
		t.Fatalf("read-only bound to a lagging replica: %d", n)
	}
	// Seconds_Behind_Master when the GTID lag is unknown.
	behind := int64(10)
	snap.State = []*topology.NodeState{{}, {Replica: &topology.ReplicaStatus{SecondsBehind: &behind}}, {LagKnown: true}}
	if d := decide(); d.Node != 2 {
		t.Fatalf("replica1 10 s behind by Seconds_Behind_Master: %+v", d)
	}
	// No limit.
	next := *e.Settings()
	next.MaxLag = 0
	if err := e.Update(next); err != nil {
		t.Fatal(err)
	}
	lags(time.Hour, time.Hour)
	if d := decide(); d.Node != 1 {
		t.Fatalf("max_replica_lag 0: %+v", d)
	}
}

// TestNearestZone: with nearest_zone, reads go to the usable nodes of the proxy's zone under the
// endpoint's policy, and to all usable nodes when that zone has none (down, lagging, or no
// weight there).
func TestNearestZone(t *testing.T) {
	snap := cluster()
	snap.Nodes = []*topology.Node{
		{Index: 0, Name: "primary", Role: topology.Primary, Zone: "az1"},
		{Index: 1, Name: "replica1", Zone: "az1"},
		{Index: 2, Name: "replica2", Zone: "az2"},
	}
	read := classify.Result{Kind: classify.Select}
	ep := &Settings{Weights: []int{0, 100, 100}, Policy: NewWeighted(), NearestZone: true, Zone: "az2"}
	for range 4 {
		s := NewSession()
		if d := Decide(&read, nil, &s, ep, snap); d.Node != 2 {
			t.Fatalf("proxy in az2: %+v", d)
		}
	}
	snap.Up = []bool{true, true, false} // the zone's replica is down: the others
	s := NewSession()
	if d := Decide(&read, nil, &s, ep, snap); d.Node != 1 {
		t.Fatalf("az2 replica down: %+v", d)
	}
	snap.Up = []bool{true, true, true}
	off := *ep
	off.NearestZone = false
	seen := map[int]int{}
	for range 4 {
		s := NewSession()
		seen[Decide(&read, nil, &s, &off, snap).Node]++
	}
	if seen[1] != 2 || seen[2] != 2 {
		t.Fatalf("without nearest_zone: %v", seen)
	}
	one := NewSession()
	if a := testing.AllocsPerRun(100, func() { Decide(&read, nil, &one, ep, snap) }); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

// TestDetachedNodesTakeNoReads: a node that replicates from no one (a demoted primary not yet
// repointed, a second writable node) takes no reads, with or without a lag limit, and no
// read-only binding; the other replica does.
func TestDetachedNodesTakeNoReads(t *testing.T) {
	for _, maxLag := range []time.Duration{0, 30 * time.Second} {
		e, err := NewEndpoint("rw", Settings{Weights: []int{0, 100, 100}, Policy: &LeastActive{}, MaxLag: maxLag})
		if err != nil {
			t.Fatal(err)
		}
		snap := cluster()
		replicating := &topology.NodeState{Health: topology.Healthy, LagKnown: true, Replica: &topology.ReplicaStatus{}}
		snap.State = []*topology.NodeState{{Health: topology.Healthy}, {Health: topology.Healthy, ReadOnly: true, LagKnown: true}, replicating}
		read := classify.Result{Kind: classify.Select}
		for range 4 {
			s := NewSession()
			if d := Decide(&read, nil, &s, e.Settings(), snap); d.Node != 2 {
				t.Fatalf("max lag %s: read went to %d, want replica2 (replica1 detached)", maxLag, d.Node)
			}
		}
		ro, _ := NewEndpoint("ro", Settings{Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: &LeastActive{}, MaxLag: maxLag})
		s := NewSession()
		if n := BindReplica(&s, ro.Settings(), snap); n != 2 {
			t.Fatalf("max lag %s: read-only bound to %d, want replica2", maxLag, n)
		}
	}
}

// TestSessionVariableReads: reads of what only the session's own connections know go where
// that is: @@tx_read_only to the primary (a replica connection runs read-only under sluice's
// guard), @@warning_count and @@error_count where the previous statement ran.
func TestSessionVariableReads(t *testing.T) {
	for _, tc := range []struct {
		stmt   string
		last   int
		node   int
		reason Reason
	}{
		{"SELECT @@session.tx_read_only", -1, 0, ReasonSessionFunction},
		{"SELECT @@transaction_read_only", 2, 0, ReasonSessionFunction},
		{"SELECT @@warning_count", 2, 2, ReasonPrevious},
		{"SELECT @@error_count, @@warning_count", 1, 1, ReasonPrevious},
		{"SELECT @@version", 2, 1, ReasonRead},
	} {
		s := NewSession()
		s.LastNode = tc.last
		c := classify.Classify([]byte(tc.stmt))
		d := Decide(&c, []byte(tc.stmt), &s, rw(), cluster())
		if d.Node != tc.node || d.Reason != tc.reason {
			t.Errorf("%s after node %d: %+v, want node %d (%s)", tc.stmt, tc.last, d, tc.node, tc.reason)
		}
	}
}

// TestReachedReplicasPreferred: a read that must see a position goes to a replica known to have
// it, under the policy among those; when none is known to, any candidate may be picked (the
// proxy then waits there or goes to the primary); the primary counts as having it.
func TestReachedReplicasPreferred(t *testing.T) {
	read := classify.Classify([]byte("SELECT 1"))
	for _, tc := range []struct {
		name    string
		weights []int
		reached uint64
		want    []int // acceptable nodes
	}{
		{"replica2 has it", []int{0, 100, 100}, 1 << 2, []int{2}},
		{"replica1 has it", []int{0, 100, 100}, 1 << 1, []int{1}},
		{"both have it", []int{0, 100, 100}, 1<<1 | 1<<2, []int{1, 2}},
		{"none has it: any", []int{0, 100, 100}, 0, []int{1, 2}},
		{"the primary reads too, and has it", []int{100, 100, 100}, 1 << 0, []int{0}},
	} {
		e, err := NewEndpoint("rw", Settings{Weights: tc.weights, Policy: &LeastActive{}})
		if err != nil {
			t.Fatal(err)
		}
		for range 6 {
			s := NewSession()
			s.HasTarget, s.Reached = true, tc.reached
			d := Decide(&read, nil, &s, e.Settings(), cluster())
			if !slices.Contains(tc.want, d.Node) {
				t.Fatalf("%s: read went to %d, want one of %v", tc.name, d.Node, tc.want)
			}
		}
	}
}

// TestFaultyReplicasTakeNoReads: a replica the monitor found errant or broken takes no reads and
// no read-only binding; an unsynced one (the primary's position went backwards since it was seen
// caught up) takes no read that must see a position, and eventual reads as before.
func TestFaultyReplicasTakeNoReads(t *testing.T) {
	replicating := func(st topology.NodeState) *topology.NodeState {
		st.Health, st.LagKnown, st.Replica = topology.Healthy, true, &topology.ReplicaStatus{IORunning: "Yes", SQLRunning: "Yes"}
		return &st
	}
	read := classify.Result{Kind: classify.Select}
	e, err := NewEndpoint("rw", Settings{Weights: []int{0, 100, 100}, Policy: &LeastActive{}})
	if err != nil {
		t.Fatal(err)
	}
	ro, _ := NewEndpoint("ro", Settings{Mode: ReadOnly, Weights: []int{0, 100, 100}, Policy: &LeastActive{}})
	for _, tc := range []struct {
		name     string
		replica1 topology.NodeState
		eventual []int // where eventual reads may go
		target   []int // where reads that must see a position may go
	}{
		{"errant", topology.NodeState{Errant: "holds 9-3-2"}, []int{2}, []int{2}},
		{"broken", topology.NodeState{Broken: "SQL thread: 1062"}, []int{2}, []int{2}},
		{"unsynced", topology.NodeState{Unsynced: true}, []int{1, 2}, []int{2}},
		{"fine", topology.NodeState{}, []int{1, 2}, []int{1, 2}},
	} {
		snap := cluster()
		snap.State = []*topology.NodeState{{Health: topology.Healthy}, replicating(tc.replica1), replicating(topology.NodeState{})}
		for range 6 {
			s := NewSession()
			if d := Decide(&read, nil, &s, e.Settings(), snap); !slices.Contains(tc.eventual, d.Node) {
				t.Fatalf("%s: eventual read went to %d, want one of %v", tc.name, d.Node, tc.eventual)
			}
			s.HasTarget = true
			if d := Decide(&read, nil, &s, e.Settings(), snap); !slices.Contains(tc.target, d.Node) {
				t.Fatalf("%s: read at a position went to %d, want one of %v", tc.name, d.Node, tc.target)
			}
			b := NewSession()
			if n := BindReplica(&b, ro.Settings(), snap); !slices.Contains(tc.eventual, n) {
				t.Fatalf("%s: read-only bound to %d, want one of %v", tc.name, n, tc.eventual)
			}
			// A session bound to replica1 before the verdict, with nowhere else to go: refused.
			b.Bound = 1
			d := Decide(&read, nil, &b, ro.Settings(), snap)
			if faulty := tc.replica1.Faulty(); (d.Err != nil) != faulty || (!faulty && d.Node != 1) {
				t.Fatalf("%s: read-only session bound to replica1: %+v", tc.name, d)
			}
		}
	}
}
