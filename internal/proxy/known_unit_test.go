package proxy

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

func mariaPos(t *testing.T, s string) gtid.Position {
	t.Helper()
	p, err := gtid.Parse(gtid.MariaDB, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKnownCommits: the known position keeps, per domain, the highest sequence number any
// commit reported, ignores what is not a GTID, and takes in the primary's reported position
// when it is ahead (then keeps it for the reads after).
func TestKnownCommits(t *testing.T) {
	var k knownCommits
	k.use(route.Latest)
	if got := k.target(gtid.Position{}); !got.IsZero() {
		t.Fatalf("nothing known: %q, want the zero position", got)
	}
	for _, step := range []struct{ gtid, want string }{
		{"0-1-5", "0-1-5"},
		{"0-1-4", "0-1-5"}, // older: a session acknowledged later than another's commit
		{"1-1-9", "0-1-5,1-1-9"},
		{"0-1-7", "0-1-7,1-1-9"},
		{"0-1-x", "0-1-7,1-1-9"}, // not a GTID
		{"", "0-1-7,1-1-9"},
	} {
		k.noteCommit([]byte(step.gtid))
		if got := k.target(gtid.Position{}).String(); got != step.want {
			t.Fatalf("after %q: %q, want %q", step.gtid, got, step.want)
		}
	}
	if got := k.target(mariaPos(t, "0-1-6")).String(); got != "0-1-7,1-1-9" {
		t.Fatalf("primary behind: %q", got)
	}
	if got := k.target(mariaPos(t, "0-1-6,2-1-3")).String(); got != "0-1-7,1-1-9,2-1-3" {
		t.Fatalf("primary ahead in a domain: %q", got)
	}
	if got := k.target(gtid.Position{}).String(); got != "0-1-7,1-1-9,2-1-3" {
		t.Fatalf("the primary's position was not kept: %q", got)
	}
	// MySQL: OWN_GTID is uuid:n; the known position is the union of the sets.
	var my knownCommits
	my.use(route.Latest)
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	my.noteCommit([]byte(uuid + ":1"))
	my.noteCommit([]byte(uuid + ":2"))
	want, err := gtid.Parse(gtid.MySQL, uuid+":1-2")
	if err != nil {
		t.Fatal(err)
	}
	if got := my.target(gtid.Position{}); !got.Equal(want) {
		t.Fatalf("MySQL commits: %q, want %q", got, want)
	}
	ahead, err := gtid.Parse(gtid.MySQL, uuid+":1-5")
	if err != nil {
		t.Fatal(err)
	}
	if got := my.target(ahead); !got.Equal(ahead) {
		t.Fatalf("MySQL primary ahead: %q", got)
	}
	var fresh knownCommits
	fresh.use(route.Latest)
	if got := fresh.target(mariaPos(t, "0-1-3")).String(); got != "0-1-3" {
		t.Fatalf("only the primary's position known: %q", got)
	}
}

// TestKnownCommitsConcurrent: commits noted from many goroutines at once are all in the known
// position (no compare-and-swap loses one).
func TestKnownCommitsConcurrent(t *testing.T) {
	var k knownCommits
	k.use(route.Latest)
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 1; i <= each; i++ {
				k.noteCommit(fmt.Appendf(nil, "%d-1-%d", w, i))
				k.noteCommit(fmt.Appendf(nil, "99-1-%d", w*each+i))
			}
		})
	}
	wg.Wait()
	want := ""
	for w := range writers {
		want += fmt.Sprintf("%d-1-%d,", w, each)
	}
	want += fmt.Sprintf("99-1-%d", writers*each)
	if got := k.target(gtid.Position{}).String(); got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// TestKnownCommitsAllocs: a read's target, and a commit already known, cost no allocation.
func TestKnownCommitsAllocs(t *testing.T) {
	var k knownCommits
	k.use(route.Latest)
	k.noteCommit([]byte("0-1-50"))
	primary := mariaPos(t, "0-1-40")
	old := []byte("0-1-49")
	if n := testing.AllocsPerRun(100, func() {
		k.noteCommit(old)
		_ = k.target(primary)
	}); n != 0 {
		t.Fatalf("%v allocs per read and known commit, want 0", n)
	}
	// A commit that moves the position (every write, with a writer running) costs none either:
	// the position is built by the first read after it, once.
	seq := int64(100)
	buf := make([]byte, 0, 32)
	if n := testing.AllocsPerRun(100, func() {
		seq++
		buf = strconv.AppendInt(append(buf[:0], "0-1-"...), seq, 10)
		k.noteCommit(buf)
	}); n != 0 {
		t.Fatalf("%v allocs per new commit, want 0", n)
	}
	if got := k.target(primary).String(); got != "0-1-"+strconv.FormatInt(seq, 10) {
		t.Fatalf("after the new commits: %q", got)
	}
}

// TestReadTargetDecideLatest: a latest-level read takes the known position as its target
// without a statement to the primary: to a replica the positions say has it, to the primary
// (after the timeout) when none has; with nothing known, to the primary at once.
func TestReadTargetDecideLatest(t *testing.T) {
	c := classify.Classify([]byte("SELECT 1"))
	for _, tc := range []struct {
		name    string
		commit  string // noted as acknowledged ("": none)
		primary string // the primary's reported position ("": unknown)
		want    route.Decision
		await   bool
		target  string
	}{
		{name: "nothing known", want: route.Decision{Node: 0, Reason: route.ReasonConsistency}},
		{name: "replica has the primary's position", primary: "0-1-4", want: route.Decision{Node: 1, Reason: route.ReasonRead}, await: true, target: "0-1-4"},
		{name: "acknowledged commit ahead of the replica", primary: "0-1-4", commit: "0-1-5", want: route.Decision{Node: 0, Reason: route.ReasonConsistency}, target: "0-1-5"},
		{name: "stream ahead of the replica", primary: "0-1-6", want: route.Decision{Node: 0, Reason: route.ReasonConsistency}, target: "0-1-6"},
	} {
		snap := &topology.Snapshot{
			Nodes:   []*topology.Node{{Index: 0, Name: "primary", Role: topology.Primary}, {Index: 1, Name: "replica1"}},
			Load:    []*topology.Load{{}, {}},
			Up:      []bool{true, true},
			Primary: 0,
		}
		positions := topology.NewPositions(2)
		positions.SetStreaming(1, true)
		positions.Advance(1, mariaPos(t, "0-1-4"))
		if tc.primary != "" {
			positions.Advance(0, mariaPos(t, tc.primary))
		}
		p := &Proxy{opts: Options{Positions: positions}}
		p.server.Store(&serverInfo{version: "10.11.6-MariaDB"})
		p.known.use(route.Latest) // as an endpoint at latest does (AddEndpoint)
		p.known.noteCommit([]byte(tc.commit))
		set := &route.Settings{Name: "rw", Weights: []int{0, 100}, Policy: route.NewWeighted(),
			Consistency: route.Latest, ConsistencyTimeout: 20 * time.Millisecond}
		var rt readTarget
		rs := route.NewSession()
		env := &readEnv{p: p, killed: make(chan struct{}), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		asked := 0
		d, await := rt.decide(&c, []byte("SELECT 1"), &rs, set, snap, env,
			func() (*backend.Conn, error) { asked++; return nil, errors.New("no primary connection in this test") })
		if d != tc.want || await != tc.await || asked != 0 || string(rt.target) != tc.target {
			t.Errorf("%s: %+v, await %v, target %q, primary asked %d times; want %+v, %v, %q, never", tc.name, d, await, rt.target, asked,
				tc.want, tc.await, tc.target)
		}
	}
}

// TestTrackAtLatest: a primary connection of a latest-level endpoint reports each commit's GTID
// (its acknowledgements feed the known position), as at session; at eventual and global it is
// left as the server has it.
func TestTrackAtLatest(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		level route.Consistency
		want  bool
	}{{route.Latest, true}, {route.SessionConsistency, true}, {route.Global, false}, {route.Eventual, false}} {
		var rt readTarget
		rt.track(&backend.Conn{TracksGTIDs: true}, tc.level, &globalTracking{}, log)
		if rt.tracked != tc.want {
			t.Errorf("%s: tracked %v, want %v", tc.level, rt.tracked, tc.want)
		}
	}
}

// TestKnownCommitsOff: a proxy with no endpoint at latest keeps no position (a commit costs its
// write path nothing); an endpoint at latest turns it on, and it stays on.
func TestKnownCommitsOff(t *testing.T) {
	var k knownCommits
	g := []byte("0-1-5")
	if n := testing.AllocsPerRun(100, func() { k.noteCommit(g) }); n != 0 {
		t.Errorf("noteCommit off: %v allocs", n)
	}
	if p := k.target(gtid.Position{}); !p.IsZero() {
		t.Fatalf("off, it knows %s", p.String())
	}
	k.use(route.SessionConsistency)
	k.noteCommit(g)
	if p := k.target(gtid.Position{}); !p.IsZero() {
		t.Fatalf("an endpoint at session turned it on: %s", p.String())
	}
	k.use(route.Latest)
	k.noteCommit(g)
	if p := k.target(gtid.Position{}); p.String() != "0-1-5" {
		t.Fatalf("on: %q", p.String())
	}
	k.use(route.Eventual)
	k.noteCommit([]byte("0-1-6"))
	if p := k.target(gtid.Position{}); p.String() != "0-1-6" {
		t.Fatalf("switched off by another level: %q", p.String())
	}
}

// TestOwnCommitsShared: once this sluice shares its commits (CommitsMoved), what its sessions
// acknowledge is in OwnCommits, with a signal and a new version per move; what other nodes sent
// (LearnCommits) is in the known position the reads wait for, never in OwnCommits: a position
// one node learned is not passed on.
func TestOwnCommitsShared(t *testing.T) {
	p := &Proxy{}
	p.known.moved = make(chan struct{}, 1)
	p.known.use(route.Latest)
	p.known.noteCommit([]byte("0-1-3")) // before sharing: known, not own
	moved := p.CommitsMoved()
	if !p.OwnCommits().IsZero() || p.KnownVersion() != 0 {
		t.Fatalf("own before any shared commit: %q v%d", p.OwnCommits(), p.KnownVersion())
	}
	p.known.noteCommit([]byte("0-1-5"))
	select {
	case <-moved:
	default:
		t.Fatal("no signal for an own commit")
	}
	v := p.KnownVersion()
	learned, err := gtid.Parse(gtid.MariaDB, "0-1-900,7-2-4")
	if err != nil {
		t.Fatal(err)
	}
	p.LearnCommits(learned)
	if got := p.OwnCommits().String(); got != "0-1-5" || p.KnownVersion() != v {
		t.Errorf("own after a learned position: %q v%d, want 0-1-5 v%d", got, p.KnownVersion(), v)
	}
	if got := p.known.target(gtid.Position{}).String(); got != "0-1-900,7-2-4" {
		t.Errorf("known after a learned position: %q, want 0-1-900,7-2-4", got)
	}
	select {
	case <-moved:
		t.Error("a learned position signalled the sharer")
	default:
	}
	// A commit already known (learned) is still this node's own: shared, with a new version.
	p.known.noteCommit([]byte("0-1-6"))
	if got := p.OwnCommits().String(); got != "0-1-6" || p.KnownVersion() <= v {
		t.Errorf("own after a commit the known position held: %q v%d", got, p.KnownVersion())
	}
}
