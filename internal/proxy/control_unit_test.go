package proxy

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

func testTopology(tb testing.TB, nodes int) *topology.Topology {
	tb.Helper()
	ns := []topology.Node{{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary}}
	for i := 1; i < nodes; i++ {
		ns = append(ns, topology.Node{Name: "replica" + string(rune('0'+i)), Address: "127.0.0.1:1", Role: topology.Replica})
	}
	topo, err := topology.New(topology.Options{Nodes: ns})
	if err != nil {
		tb.Fatal(err)
	}
	return topo
}

// TestSessionView: what a session publishes, as the control plane and a drain read it.
func TestSessionView(t *testing.T) {
	var v sessionView
	v.init(1)
	var si SessionInfo
	if v.describe(&si) {
		t.Fatal("a session that has not logged in is listed")
	}
	if _, _, since := v.held(); !since.IsZero() {
		t.Fatal("idle since before the login")
	}
	start := time.Unix(1000, 0)
	v.loggedIn("app", start)
	if !v.describe(&si) || si.User != "app" || !si.Started.Equal(start) || !si.Statement.IsZero() || si.InTx || si.Pins != nil {
		t.Fatalf("after login: %+v", si)
	}
	if _, _, since := v.held(); !since.Equal(start) {
		t.Fatalf("idle since %v, want the login's %v", since, start)
	}
	v.commandStarted(start.Add(time.Second))
	if !v.describe(&si) || !si.Statement.Equal(start.Add(time.Second)) {
		t.Fatalf("during a command: statement %v", si.Statement)
	}
	if took := v.commandTook(func() time.Time { return start.Add(3 * time.Second) }); took != 2*time.Second {
		t.Fatalf("command took %v", took)
	}
	v.commandEnded(start.Add(4*time.Second), true, route.PinTempTable|route.PinGetLock)
	if v.commandTook(func() time.Time { return start.Add(5 * time.Second) }) != 0 {
		t.Fatal("a command's time outside a command")
	}
	si = SessionInfo{}
	v.describe(&si)
	if !si.InTx || !slices.Equal(si.Pins, []string{"temporary_table", "user_lock"}) || !si.Statement.IsZero() {
		t.Fatalf("after a command: %+v", si)
	}
	inTx, pinned, since := v.held()
	if !inTx || !pinned || !since.Equal(start.Add(4*time.Second)) {
		t.Fatalf("held: %v %v %v", inTx, pinned, since)
	}
	v.changedUser("other")
	if v.describe(&si); si.User != "other" || !si.Started.Equal(start) {
		t.Fatalf("after a change of user: %+v", si)
	}
	if r := v.lastRoute(); r.valid {
		t.Fatal("a route before the first statement")
	}
	v.routed(1, route.ReasonRead)
	if r := v.lastRoute(); !r.valid || r.node != 1 || r.reason != route.ReasonRead {
		t.Fatalf("last route %+v", r)
	}
}

// TestSessionViewCountGrows: a statement on a node added since the session began makes room
// for the topology's nodes; counting does not allocate otherwise; a reader on another
// goroutine adds up counts while they are written (run with -race).
func TestSessionViewCountGrows(t *testing.T) {
	var v sessionView
	v.init(1)
	topo := testTopology(t, 3)
	v.count(0, route.ReasonWrite, time.Millisecond, topo)
	if n := testing.AllocsPerRun(100, func() { v.count(0, route.ReasonWrite, time.Millisecond, topo) }); n != 0 {
		t.Errorf("count allocates %v times", n)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			sum := newSessionStats(3)
			sum.add(v.counts())
		}
	}()
	for range 1000 {
		v.count(1, route.ReasonRead, 2*time.Millisecond, topo)
	}
	close(stop)
	wg.Wait()
	st := v.counts()
	if st.nodes != 3 {
		t.Fatalf("room for %d nodes, want the topology's 3", st.nodes)
	}
	if got := st.byRoute[int(route.ReasonWrite)*3+0].Load(); got != 102 {
		t.Errorf("writes on node 0: %d (lost in the growth?)", got)
	}
	if got := st.byRoute[int(route.ReasonRead)*3+1].Load(); got != 1000 {
		t.Errorf("reads on node 1: %d", got)
	}
}
