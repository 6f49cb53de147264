package proxy

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// The statement path must not allocate: these tests run one command at a time through a
// session whose client and node are in-memory connections served in the test's own goroutine,
// so testing.AllocsPerRun counts exactly the allocations of the session (no goroutine on the
// other side of a pipe whose allocations would be counted too, or missed at the window's edge).

// memConn is an in-memory net.Conn: Read serves in, then io.EOF; Write appends to out. Neither
// allocates once out has grown to the largest response.
type memConn struct {
	in     []byte
	off    int
	out    []byte
	writes int // Write calls since load
}

func (m *memConn) Read(p []byte) (int, error) {
	if m.off >= len(m.in) {
		return 0, io.EOF
	}
	n := copy(p, m.in[m.off:])
	m.off += n
	return n, nil
}

func (m *memConn) Write(p []byte) (int, error) {
	m.out = append(m.out, p...)
	m.writes++
	return len(p), nil
}

// load makes in the next bytes to read and empties out.
func (m *memConn) load(in []byte) { m.in, m.off, m.out, m.writes = in, 0, m.out[:0], 0 }

func (m *memConn) Close() error                     { return nil }
func (m *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (m *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (m *memConn) SetDeadline(time.Time) error      { return nil }
func (m *memConn) SetReadDeadline(time.Time) error  { return nil }
func (m *memConn) SetWriteDeadline(time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "127.0.0.1:3306" }

// memSession is a session over memConns.
type memSession struct {
	s            *session
	client, node *memConn
}

func newMemSession(tb testing.TB) *memSession {
	m := &memSession{client: &memConn{}, node: &memConn{}}
	m.s = benchSession(tb, m.client, m.node)
	return m
}

// run serves one command: the client's request goes in, the node's canned answer comes back,
// and both sides must see what the exchange says. It reports through tb without allocating
// when all is well.
func (m *memSession) run(tb testing.TB, e exchange) {
	req, resp := e.atNode()
	m.client.load(e.request)
	m.node.load(resp)
	if _, err := m.s.command(); err != nil {
		tb.Fatalf("command: %v", err)
	}
	if !bytes.Equal(m.node.out, req) {
		tb.Fatalf("node got %x, want %x", m.node.out, req)
	}
	if !bytes.Equal(m.client.out, e.response) {
		tb.Fatalf("client got %x, want %x", m.client.out, e.response)
	}
}

// assertNoAllocs fails when f allocates, on average, anything per run. An allocation in every
// run shows as at least 1.
func assertNoAllocs(t *testing.T, what string, f func()) {
	t.Helper()
	if a := testing.AllocsPerRun(100, f); a != 0 {
		t.Errorf("%s: %v allocations per run, want 0", what, a)
	}
}

func TestForwardDoesNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		name string
		ex   exchange
	}{
		{"small result", textQuery(resultSet(1))},
		{"100 rows", textQuery(resultSet(100))},
		{"OK", textQuery(packets(1, []byte{0, 1, 0, 2, 0, 0, 0}))},
	} {
		m := newMemSession(t)
		assertNoAllocs(t, "COM_QUERY, "+tc.name, func() { m.run(t, tc.ex) })
	}
}

func TestExecuteDoesNotAllocate(t *testing.T) {
	m := newMemSession(t)
	m.run(t, prepareExchange)
	for _, tc := range []struct {
		name string
		ex   exchange
	}{
		{"small result", executeExchange(binaryResultSet(1))},
		{"100 rows", executeExchange(binaryResultSet(100))},
		{"OK", executeExchange(packets(1, []byte{0, 1, 0, 2, 0, 0, 0}))},
		{"types bound before", exchange{request: stmtExecuteBound(1), nodeRequest: stmtExecuteBound(benchNodeStmtID),
			response: binaryResultSet(1)}},
	} {
		assertNoAllocs(t, "COM_STMT_EXECUTE, "+tc.name, func() { m.run(t, tc.ex) })
	}
}

// okWithState is an OK packet (header 0x00, or 0xfe ending a result set) whose session-state
// block carries the changes given as (type, data) pairs.
func okWithState(header byte, changes ...[]byte) []byte {
	var block []byte
	for i := 0; i+1 < len(changes); i += 2 {
		block = append(block, changes[i][0])
		block = mysql.AppendLenEncString(block, changes[i+1])
	}
	status := mysql.StatusAutocommit | mysql.StatusSessionStateChange
	p := []byte{header, 0, 0, byte(status), byte(status >> 8), 0, 0}
	p = mysql.AppendLenEncString(p, nil) // info
	return mysql.AppendLenEncString(p, block)
}

// sysvarChange is a SESSION_TRACK_SYSTEM_VARIABLES entry's data: name, value.
func sysvarChange(name, value string) []byte {
	return mysql.AppendLenEncString(mysql.AppendLenEncString(nil, []byte(name)), []byte(value))
}

// schemaChange is a SESSION_TRACK_SCHEMA entry's data.
func schemaChange(db string) []byte { return mysql.AppendLenEncString(nil, []byte(db)) }

var (
	trackSysvar = []byte{mysql.SessionTrackSystemVariables}
	trackSchema = []byte{mysql.SessionTrackSchema}
	trackState  = []byte{mysql.SessionTrackStateChange}
)

// stateOKs are OK packets with the session-state blocks a node sends on the statement path,
// none of which changes what the session keeps: the GTID of a write (last_gtid, which sluice
// tracks for read-your-writes), autocommit and character set changes with the state-change
// flag, and the same for the OK that ends a result set.
var stateOKs = []struct {
	name string
	p    []byte
}{
	{"last_gtid", okWithState(0, trackSysvar, sysvarChange("last_gtid", "0-1-4711"))},
	{"system variables", okWithState(0,
		trackSysvar, sysvarChange("autocommit", "ON"),
		trackSysvar, sysvarChange("character_set_client", "utf8mb4"),
		trackState, mysql.AppendLenEncString(nil, []byte("1")))},
	{"end of rows, last_gtid", okWithState(0xfe, trackSysvar, sysvarChange("last_gtid", "0-1-4711"))},
}

// stateExchange is a query answered by okp (after one row when okp ends a result set), as a
// client with clientCaps receives it: the same bytes, or without the session-state block when
// the client did not ask for SESSION_TRACK.
func stateExchange(t testing.TB, okp []byte, clientCaps uint32) exchange {
	var head [][]byte
	if okp[0] == 0xfe {
		head = [][]byte{{1}, benchColumn, []byte("\x0bhello world")}
	}
	ex := textQuery(packets(1, append(head, okp)...))
	if clientCaps&mysql.ClientSessionTrack == 0 {
		ok, err := mysql.ParseOK(okp, frontCaps)
		if err != nil {
			t.Fatal(err)
		}
		ex.nodeResponse = ex.response
		ex.response = packets(1, append(head, mysql.AppendOK(nil, ok, clientCaps))...)
	}
	return ex
}

// TestSessionStateCheckDoesNotAllocate covers what the session does per statement to keep its
// node connections in line: sync on a connection already in line, and the session-state block
// of the node's OK when nothing the session keeps changes, for clients with and without
// SESSION_TRACK (the latter get the OK re-encoded).
func TestSessionStateCheckDoesNotAllocate(t *testing.T) {
	m, c := inLineSession(t)
	s := m.s
	assertNoAllocs(t, "sync of a connection in line", func() {
		if _, err := s.sync(c); err != nil {
			t.Fatal(err)
		}
	})
	if len(m.node.out) != 0 {
		t.Fatalf("sync sent %x to a node already in line", m.node.out)
	}

	for _, tc := range stateOKs {
		for _, caps := range []uint32{frontCaps, frontCaps &^ mysql.ClientSessionTrack} {
			s.login.caps = caps
			ex := stateExchange(t, tc.p, caps)
			if caps&mysql.ClientSessionTrack == 0 && bytes.Equal(ex.response, ex.nodeResponse) {
				t.Fatalf("%s: the OK is not re-encoded for a client without SESSION_TRACK", tc.name)
			}
			what := "a statement answered by an OK with " + tc.name
			if caps&mysql.ClientSessionTrack == 0 {
				what += ", client without SESSION_TRACK"
			}
			assertNoAllocs(t, what, func() { m.run(t, ex) })
			if s.state.DB != "sbtest" {
				t.Fatalf("%s: schema changed to %q", tc.name, s.state.DB)
			}
		}
	}
	s.login.caps = frontCaps

	// After a schema change, the next statement's sync brings the connection in line once; the
	// check allocates nothing again afterwards.
	m.run(t, stateExchange(t, okWithState(0, trackSchema, schemaChange("other")), frontCaps))
	if s.state.DB != "other" {
		t.Fatalf("schema %q after a SESSION_TRACK_SCHEMA change to other", s.state.DB)
	}
	before := s.state
	before.DB = "sbtest"
	c.Adopt(&before) // as if the change had been made on another node of the session
	m.node.load(packets(1, []byte{0, 0, 0, 2, 0, 0, 0}))
	if _, err := s.sync(c); err != nil {
		t.Fatal(err)
	}
	if want := packets(0, append([]byte{mysql.ComInitDB}, "other"...)); !bytes.Equal(m.node.out, want) {
		t.Fatalf("sync sent %x, want COM_INIT_DB %x", m.node.out, want)
	}
	assertNoAllocs(t, "sync after the schema change was replayed", func() {
		if _, err := s.sync(c); err != nil {
			t.Fatal(err)
		}
	})
}

// TestClassifyAndRouteDoNotAllocate: the session classifies and routes every COM_QUERY and
// routes every EXECUTE; neither may allocate for the statements of ordinary traffic.
func TestClassifyAndRouteDoNotAllocate(t *testing.T) {
	stmts := [][]byte{
		[]byte("SELECT c FROM sbtest1 WHERE id=42"),
		[]byte("/* app */ SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c"),
		[]byte("UPDATE sbtest1 SET k=k+1 WHERE id=42"),
		[]byte("INSERT INTO sbtest1 (id, k, c, pad) VALUES (1, 2, 'c', 'pad')"),
		[]byte("SELECT c FROM sbtest1 WHERE id=42 FOR UPDATE"),
		[]byte("BEGIN"),
		[]byte("COMMIT"),
		[]byte("SET NAMES utf8mb4"),
		[]byte("/*FORCE_MASTER*/ SELECT 1"),
		[]byte("SELECT LAST_INSERT_ID()"),
	}
	m := newMemSession(t)
	s := m.s
	snap := s.p.topo.Snapshot()
	assertNoAllocs(t, "classifying and routing 10 statements", func() {
		for _, stmt := range stmts {
			if _, ok := classify.IsProxyInternal(stmt); ok {
				t.Fatalf("%s: proxy internal", stmt)
			}
			c := classify.Classify(stmt)
			d := route.Decide(&c, stmt, &s.rs, s.ep.route.Settings(), snap)
			if d.Err != nil || d.Node != 0 {
				t.Fatalf("%s: %+v", stmt, d)
			}
		}
	})
}
