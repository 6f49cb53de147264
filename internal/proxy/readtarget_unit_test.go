package proxy

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// TestReadTargetFind: the position a read must see at each consistency level, and when it
// cannot be known (the read then goes to the primary).
func TestReadTargetFind(t *testing.T) {
	errGone := errors.New("primary gone")
	global := func(pos string, err error) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) { return append(b, pos...), err }
	}
	for _, tc := range []struct {
		name             string
		level            route.Consistency
		tracked, unknown bool
		last             string
		global           func([]byte) ([]byte, error)
		latest           string // "-": zero (nothing known)
		has, failed      bool
		target           string
	}{
		{name: "eventual", level: route.Eventual, tracked: true, last: "0-1-5"},
		{name: "session, untracked", level: route.SessionConsistency, last: "0-1-5", failed: true},
		{name: "session, last commit unknown", level: route.SessionConsistency, tracked: true, unknown: true, last: "0-1-5", failed: true},
		{name: "session, nothing committed", level: route.SessionConsistency, tracked: true},
		{name: "session", level: route.SessionConsistency, tracked: true, last: "0-1-5,1-1-9", has: true, target: "0-1-5,1-1-9"},
		{name: "global", level: route.Global, global: global("0-1-77", nil), has: true, target: "0-1-77"},
		{name: "global, unreadable", level: route.Global, global: global("", errGone), failed: true},
		{name: "global, not a position", level: route.Global, global: global("0-1-1'); DROP TABLE t; --", nil), failed: true},
		{name: "global, empty", level: route.Global, global: global("", nil), failed: true},
		{name: "latest", level: route.Latest, latest: "0-1-80,1-2-3", has: true, target: "0-1-80,1-2-3"},
		{name: "latest, session untracked", level: route.Latest, unknown: true, latest: "0-1-80", has: true, target: "0-1-80"},
		{name: "latest, nothing known", level: route.Latest, latest: "-", failed: true},
		{name: "latest, nothing committed", level: route.Latest, latest: ""},
	} {
		rt := readTarget{tracked: tc.tracked, unknown: tc.unknown, last: []byte(tc.last), target: []byte("stale")}
		var latest gtid.Position
		if tc.latest != "-" {
			var err error
			if latest, err = gtid.Parse(gtid.MariaDB, tc.latest); err != nil {
				t.Fatal(err)
			}
		}
		has := rt.find(tc.level, gtid.MariaDB, latest, tc.global)
		if has != tc.has || rt.failed != tc.failed || (has && string(rt.target) != tc.target) {
			t.Errorf("%s: has %v (%q), failed %v; want %v (%q), %v", tc.name, has, rt.target, rt.failed, tc.has, tc.target, tc.failed)
		}
		if has && rt.pos.String() != tc.target {
			t.Errorf("%s: parsed %q, want %q", tc.name, rt.pos.String(), tc.target)
		}
	}
}

// TestReadTargetGTIDs: the session's last commit, one entry per replication domain, as the OKs
// report it; lost after a classic EOF that hides a state change, known again at the next GTID.
func TestReadTargetGTIDs(t *testing.T) {
	var rt readTarget
	for _, step := range []struct {
		gtid, want string
	}{
		{"0-1-5", "0-1-5"},
		{"1-1-3", "0-1-5,1-1-3"},
		{"0-1-6", "0-1-6,1-1-3"},
		{"1-2-4", "0-1-6,1-2-4"},
	} {
		rt.noteGTID([]byte(step.gtid))
		if string(rt.last) != step.want || rt.unknown {
			t.Fatalf("after %s: %q (unknown %v), want %q", step.gtid, rt.last, rt.unknown, step.want)
		}
	}
	rt.stateHidden()
	if !rt.unknown {
		t.Fatal("a classic EOF's hidden state change leaves the last commit known")
	}
	rt.noteGTID(nil)
	if !rt.unknown {
		t.Fatal("an empty GTID made the last commit known")
	}
	rt.noteGTID([]byte("0-1-7"))
	if rt.unknown || string(rt.last) != "0-1-7,1-2-4" {
		t.Fatalf("after the next GTID: %q (unknown %v)", rt.last, rt.unknown)
	}
}

// TestReadTargetNoteOK: OK by OK, a commit that changed rows and said no GTID leaves the last
// commit unknown, in and out of a transaction; one that said its GTID does not; a replica's OKs
// and an untracked session change nothing.
func TestReadTargetNoteOK(t *testing.T) {
	const inTx = mysql.StatusInTrans
	type ok struct {
		gtid     string
		status   uint16
		affected uint64
		replica  bool
	}
	for _, tc := range []struct {
		name      string
		untracked bool
		oks       []ok
		unknown   bool
		txWrote   bool
		respGTID  bool
	}{
		{name: "autocommit write with its GTID", oks: []ok{{gtid: "0-1-5", affected: 1}}, respGTID: true},
		{name: "autocommit write without", oks: []ok{{affected: 1}}, unknown: true},
		{name: "a write that changed nothing", oks: []ok{{}}},
		{name: "transaction: write, then commit with its GTID", oks: []ok{{status: inTx, affected: 2}, {gtid: "0-1-6"}}, respGTID: true},
		{name: "transaction: write, then commit without", oks: []ok{{status: inTx, affected: 2}, {}}, unknown: true},
		{name: "transaction still open", oks: []ok{{status: inTx, affected: 2}}, txWrote: true},
		{name: "transaction that changed nothing, commit without", oks: []ok{{status: inTx}, {}}},
		{name: "a replica's OK", oks: []ok{{affected: 1, replica: true}}},
		{name: "untracked", untracked: true, oks: []ok{{affected: 1}}},
	} {
		rt := readTarget{tracked: !tc.untracked}
		rt.newResponse()
		for _, o := range tc.oks {
			rt.noteGTID([]byte(o.gtid))
			rt.noteOK(o.status, o.affected, !o.replica)
		}
		if rt.unknown != tc.unknown || rt.txWrote != tc.txWrote || rt.respGTID != tc.respGTID {
			t.Errorf("%s: unknown %v, txWrote %v, respGTID %v; want %v, %v, %v", tc.name, rt.unknown, rt.txWrote, rt.respGTID,
				tc.unknown, tc.txWrote, tc.respGTID)
		}
	}
}

// TestReadTargetLearn: after a statement, what its commits said: a client that sets the tracked
// variables itself, a statement that may commit without counting rows and said no GTID, an ERR
// of the primary after a statement that may have committed first.
func TestReadTargetLearn(t *testing.T) {
	for _, tc := range []struct {
		name              string
		stmt              string
		failed, onReplica bool
		respGTID          bool
		status            uint16
		unknown, txWrote  bool
	}{
		{name: "a read", stmt: "SELECT 1"},
		{name: "the client sets the tracked variables", stmt: "SET SESSION session_track_system_variables = ''", unknown: true},
		{name: "a DDL that said no GTID", stmt: "CREATE TABLE t (a INT)", unknown: true},
		{name: "a DDL that said its GTID", stmt: "CREATE TABLE t (a INT)", respGTID: true},
		{name: "a DDL on a replica", stmt: "CREATE TABLE t (a INT)", onReplica: true},
		{name: "a CALL in a transaction", stmt: "CALL p()", status: mysql.StatusInTrans, txWrote: true},
		{name: "a temporary table", stmt: "CREATE TEMPORARY TABLE t (a INT)"},
		{name: "a failed write on the primary", stmt: "UPDATE t SET a = 1", failed: true, unknown: true},
		{name: "a failed read on the primary", stmt: "SELECT a FROM t", failed: true},
	} {
		rt := readTarget{tracked: true, respGTID: tc.respGTID}
		c := classify.Classify([]byte(tc.stmt))
		rt.learn(&c, []byte(tc.stmt), tc.failed, !tc.onReplica, tc.status)
		if rt.unknown != tc.unknown || rt.txWrote != tc.txWrote {
			t.Errorf("%s: unknown %v, txWrote %v; want %v, %v", tc.name, rt.unknown, rt.txWrote, tc.unknown, tc.txWrote)
		}
	}
}

// TestReadTargetWaitStmt: the wait in each flavour's words, the position without the line
// breaks servers print in it, and the pipelined wait's answer expected once.
func TestReadTargetWaitStmt(t *testing.T) {
	rt := readTarget{target: []byte("0-1-5,\n1-1-9")}
	if got, want := string(rt.waitStmt("10.11.6-MariaDB", 1500*time.Millisecond)), "SELECT MASTER_GTID_WAIT('0-1-5,1-1-9', 1.500000)"; got != want {
		t.Errorf("MariaDB: %q, want %q", got, want)
	}
	rt.target = []byte("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-23")
	if got, want := string(rt.waitStmt("8.0.36", time.Second)), "SELECT WAIT_FOR_EXECUTED_GTID_SET('3e11fa47-71ca-11e1-9e33-c80aa9429562:1-23', 1.000000)"; got != want {
		t.Errorf("MySQL: %q, want %q", got, want)
	}
	if _, ok := rt.takeAwait(); ok {
		t.Fatal("a wait's answer expected before one was sent")
	}
	rt.sentWait(3 * time.Second)
	if wait, ok := rt.takeAwait(); !ok || wait != 3*time.Second {
		t.Fatalf("after sentWait: %v %v", wait, ok)
	}
	if _, ok := rt.takeAwait(); ok {
		t.Fatal("the wait's answer expected twice")
	}
}

// TestReadTargetDecide: a read whose replica's stream says it has not reached the position waits,
// until a position moves it there (the replica), or until the consistency timeout (the primary,
// counted); one whose position cannot be known goes to the primary at once; a replica without a
// stream is decided at once, to wait there itself.
func TestReadTargetDecide(t *testing.T) {
	mariadb := func(s string) gtid.Position {
		p, err := gtid.Parse(gtid.MariaDB, s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := classify.Classify([]byte("SELECT 1"))
	for _, tc := range []struct {
		name      string
		streaming bool
		tracked   bool
		move      bool // replica1 reaches the position while the read waits
		want      route.Decision
		await     bool
		timeouts  int64
	}{
		{name: "position unknown", want: route.Decision{Node: 0, Reason: route.ReasonConsistency}},
		{name: "no stream: decided at once, waits there", tracked: true, want: route.Decision{Node: 1, Reason: route.ReasonRead}, await: true},
		{name: "stream, timed out", tracked: true, streaming: true, want: route.Decision{Node: 0, Reason: route.ReasonConsistency}, timeouts: 1},
		{name: "stream, reached meanwhile", tracked: true, streaming: true, move: true, want: route.Decision{Node: 1, Reason: route.ReasonRead}, await: true},
	} {
		snap := &topology.Snapshot{
			Nodes:   []*topology.Node{{Index: 0, Name: "primary", Role: topology.Primary}, {Index: 1, Name: "replica1"}},
			Load:    []*topology.Load{{}, {}},
			Up:      []bool{true, true},
			Primary: 0,
		}
		positions := topology.NewPositions(2)
		positions.SetStreaming(1, tc.streaming)
		positions.Advance(1, mariadb("0-1-4"))
		p := &Proxy{opts: Options{Positions: positions}}
		p.server.Store(&serverInfo{version: "10.11.6-MariaDB"})
		set := &route.Settings{Name: "rw", Weights: []int{0, 100}, Policy: route.NewWeighted(),
			Consistency: route.SessionConsistency, ConsistencyTimeout: 50 * time.Millisecond}
		if tc.move {
			set.ConsistencyTimeout = 10 * time.Second
			go func() {
				time.Sleep(20 * time.Millisecond)
				positions.Advance(1, mariadb("0-1-5"))
			}()
		}
		rt := readTarget{tracked: tc.tracked, last: []byte("0-1-5")}
		rs := route.NewSession()
		env := &readEnv{p: p, killed: make(chan struct{}), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		d, await := rt.decide(&c, []byte("SELECT 1"), &rs, set, snap, env,
			func() (*backend.Conn, error) { return nil, errors.New("no primary connection in this test") })
		if d != tc.want || await != tc.await || p.consistencyTimeouts.Load() != tc.timeouts {
			t.Errorf("%s: %+v, await %v, timeouts %d; want %+v, %v, %d", tc.name, d, await, p.consistencyTimeouts.Load(),
				tc.want, tc.await, tc.timeouts)
		}
	}
}
