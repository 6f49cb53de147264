package monitor

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// recorded is a monitor connection that answers each query with a recorded result.
type recorded struct {
	answers map[string]*backend.Rows
	asked   []string
	closed  bool
	quit    bool // ended with a goodbye (Quit)
}

func (r *recorded) Query(q string) (*backend.Rows, error) {
	r.asked = append(r.asked, q)
	if rows, ok := r.answers[q]; ok {
		return rows, nil
	}
	return nil, mysql.NewError(1064, "42000", "not recorded: %s", q)
}

func (r *recorded) Close() error { r.closed = true; return nil }
func (r *recorded) Quit()        { r.quit = true }

func row(cols []string, vals ...string) *backend.Rows {
	r := &backend.Rows{Columns: cols}
	var v []backend.Value
	for _, s := range vals {
		if s == "NULL" {
			v = append(v, backend.Value{Null: true})
		} else {
			v = append(v, backend.Value{S: s})
		}
	}
	if len(vals) > 0 {
		r.Values = [][]backend.Value{v}
	}
	return r
}

func threads(connected, running string) *backend.Rows {
	return &backend.Rows{Columns: []string{"Variable_name", "Value"}, Values: [][]backend.Value{
		{{S: "Threads_connected"}, {S: connected}}, {{S: "Threads_running"}, {S: running}}}}
}

// TestCheckRecorded: one check of a MySQL 8 replica and of a MariaDB primary, on results
// recorded from those servers: the flavour's queries are asked, and every figure is read.
func TestCheckRecorded(t *testing.T) {
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	mysql8 := &recorded{answers: map[string]*backend.Rows{
		"SELECT @@version": row([]string{"@@version"}, "8.0.36"),
		checkQuery(gtid.MySQL): row([]string{"@@version", "ro", "@@server_id", "b", "a"},
			"8.0.36", "1", "2", uuid+":1-100", uuid+":1-97"),
		"SHOW REPLICA STATUS": row([]string{"Replica_IO_Running", "Replica_SQL_Running", "Seconds_Behind_Source",
			"Source_Host", "Source_Port", "Last_IO_Error", "Last_SQL_Error", "SQL_Delay", "SQL_Remaining_Delay"},
			"Yes", "Yes", "3", "127.0.0.1", "3307", "", "", "0", "NULL"),
		threadsQuery: threads("42", "3"),
	}}
	mariadb := &recorded{answers: map[string]*backend.Rows{
		"SELECT @@version":       row([]string{"@@version"}, "10.11.19-MariaDB-0+deb12u1-log"),
		checkQuery(gtid.MariaDB): row([]string{"v", "ro", "id", "b", "c"}, "10.11.19-MariaDB", "0", "1", "0-1-100", "0-1-100"),
		"SHOW ALL SLAVES STATUS": {Columns: []string{"Connection_name", "Slave_IO_Running"}},
		threadsQuery:             threads("7", "1"),
	}}
	m := &Monitor{opts: Options{DownAfter: 3, Timeout: time.Second}}
	for _, tc := range []struct {
		name string
		conn *recorded
		want func(*topology.NodeState) bool
	}{
		{"MySQL 8 replica", mysql8, func(st *topology.NodeState) bool {
			return st.Health == topology.Healthy && st.ReadOnly && st.ServerID == 2 && st.BinlogPos == uuid+":1-100" &&
				st.Applied == uuid+":1-97" && st.Replica != nil && *st.Replica.SecondsBehind == 3 &&
				st.Replica.Source == "127.0.0.1:3307" && st.Replica.RemainingWait == nil &&
				st.ThreadsConnected == 42 && st.ThreadsRunning == 3
		}},
		{"MariaDB primary", mariadb, func(st *topology.NodeState) bool {
			return st.Health == topology.Healthy && !st.ReadOnly && st.ServerID == 1 && st.Applied == "0-1-100" &&
				st.Replica == nil && st.ThreadsConnected == 7
		}},
	} {
		var c Conn = tc.conn
		st := m.check(context.Background(), &topology.Node{Name: tc.name}, &c, nil)
		if !tc.want(st) {
			t.Errorf("%s: %+v (replica %+v); asked %q", tc.name, st, st.Replica, tc.conn.asked)
		}
	}
	if !strings.Contains(strings.Join(mysql8.asked, ";"), "SHOW REPLICA STATUS") {
		t.Errorf("MySQL 8 asked %q", mysql8.asked)
	}
}

// TestCheckFailures: a check whose first query fails closes its connection, which the next
// check dials again; failures count up.
func TestCheckFailures(t *testing.T) {
	dials := 0
	m := &Monitor{opts: Options{DownAfter: 3, Timeout: time.Second, Dial: func(ctx context.Context, n *topology.Node) (Conn, error) {
		dials++
		return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	}}}
	broken := &recorded{}
	var c Conn = broken
	st := m.check(context.Background(), &topology.Node{Name: "n"}, &c, nil)
	if st.Failures != 1 || st.Health != topology.Unknown {
		t.Fatalf("first failed check: %+v", st)
	}
	if c != nil || !broken.closed {
		t.Fatal("a failed check kept its connection")
	}
	st = m.check(context.Background(), &topology.Node{Name: "n"}, &c, st)
	if dials != 1 || st.Failures != 2 {
		t.Fatalf("second check: %d dials, %+v", dials, st)
	}
}

// TestBrokenConnectionRefusedIsDown: when the connection kept from the last check breaks, the
// check dials again at once, and a node that refuses is down at once (not after DownAfter).
func TestBrokenConnectionRefusedIsDown(t *testing.T) {
	m := &Monitor{opts: Options{DownAfter: 3, Timeout: time.Second, Dial: func(ctx context.Context, n *topology.Node) (Conn, error) {
		return nil, &backend.ConnectError{Addr: "127.0.0.1:1", Err: syscall.ECONNREFUSED}
	}}}
	var c Conn = &brokenConn{}
	st := m.check(context.Background(), &topology.Node{Name: "n"}, &c, &topology.NodeState{Health: topology.Healthy})
	if st.Health != topology.Down || c != nil {
		t.Fatalf("broken, then refused: %+v", st)
	}
}

// TestBrokenConnectionRedialTimesOut: the kept connection breaks, and the dial that replaces
// it lasts past the check's timeout and fails: the timeout's closing of the connection (on a
// goroutine of its own) must not find the connection gone (it read *c, nil by then, and the
// nil dereference crashed sluice under load).
func TestBrokenConnectionRedialTimesOut(t *testing.T) {
	m := &Monitor{opts: Options{DownAfter: 3, Timeout: 20 * time.Millisecond, Dial: func(ctx context.Context, n *topology.Node) (Conn, error) {
		<-ctx.Done()
		// The timeout's AfterFunc runs meanwhile, with the connection taken away.
		time.Sleep(50 * time.Millisecond)
		return nil, ctx.Err()
	}}}
	var c Conn = &brokenConn{}
	st := m.check(context.Background(), &topology.Node{Name: "n"}, &c, &topology.NodeState{Health: topology.Healthy})
	if st.Failures != 1 || c != nil {
		t.Fatalf("broken, then a redial past the timeout: %+v, connection %v", st, c)
	}
}

type brokenConn struct{}

func (brokenConn) Query(string) (*backend.Rows, error) { return nil, errors.New("EOF") }
func (brokenConn) Close() error                        { return nil }
func (brokenConn) Quit()                               {}

// TestReconnectForgetsPositions: when the connection kept from the last check broke and a new
// one opens (the node may have restarted, perhaps on restored data), what the node was known
// to have applied and made visible is forgotten, so no read skips its consistency wait on it.
func TestReconnectForgetsPositions(t *testing.T) {
	n := &topology.Node{Name: "n", Index: 0}
	positions := topology.NewPositions(1)
	positions.Own(0, n)
	p, err := gtid.Parse(gtid.MariaDB, "0-1-100")
	if err != nil {
		t.Fatal(err)
	}
	fresh := &recorded{answers: map[string]*backend.Rows{
		"SELECT @@version": row([]string{"@@version"}, "10.11.19-MariaDB"),
	}}
	m := &Monitor{opts: Options{DownAfter: 3, Timeout: time.Second, Positions: positions,
		Dial: func(ctx context.Context, n *topology.Node) (Conn, error) { return fresh, nil }}}
	positions.Advance(0, p)
	positions.Confirm(0, positions.Epoch(0), p)
	var c Conn = &brokenConn{}
	m.check(context.Background(), n, &c, &topology.NodeState{Health: topology.Healthy})
	if positions.Visible(0, p) || positions.Reached(0, p) {
		t.Fatal("the node's positions survived a broken connection and a new one")
	}
	// A check over the kept connection forgets nothing.
	positions.Advance(0, p)
	positions.Confirm(0, positions.Epoch(0), p)
	m.check(context.Background(), n, &c, &topology.NodeState{Health: topology.Healthy})
	if !positions.Visible(0, p) {
		t.Fatal("a check over the kept connection forgot the node's visible position")
	}
}

// TestWatchQuitsAtEnd: a node's watch that ends between two checks (the node removed, the
// monitor stopping) ends its connection with a goodbye (Quit: COM_QUIT), not Close, so the node
// counts no aborted client.
func TestWatchQuitsAtEnd(t *testing.T) {
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{{Name: "n", Address: "127.0.0.1:1", Role: topology.Primary}}})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	conn := &recorded{answers: map[string]*backend.Rows{
		"SELECT @@version": row([]string{"@@version"}, "10.11.19-MariaDB"),
	}}
	m := New(topo, Options{Interval: time.Hour, Dial: func(context.Context, *topology.Node) (Conn, error) { return conn, nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.watch(ctx, 0, topo.Snapshot().Nodes[0])
	}()
	checked := func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.latest) > 0 && m.latest[0].st != nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for !checked() {
		if time.Now().After(deadline) {
			t.Fatal("no check within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel() // between two checks: the next is an hour away
	<-done
	if !conn.quit || conn.closed {
		t.Fatalf("the watch's end: quit %v, closed %v; want Quit only", conn.quit, conn.closed)
	}
}
