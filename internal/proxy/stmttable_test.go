package proxy

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
)

// Unit tests of the statement table on its own: no session, no proxy. The I/O methods run
// against in-memory node and client connections (memConn) with scripted answers.

// tableStmt is a statement as prepareRelayed would keep it, text query, under a new id.
func tableStmt(t *statements, query string) *stmt {
	st := &stmt{query: []byte(query), params: 1, columns: 1}
	st.id = t.newID()
	t.add(st)
	return st
}

// memNode is a node connection over m.
func memNode(m *memConn) *backend.Conn {
	return &backend.Conn{Conn: mysql.NewConn(m, 0, 4<<10), Caps: frontCaps, Handshake: &mysql.Handshake{}}
}

func wantSQLError(t *testing.T, what string, e *mysql.SQLError, code uint16, state string) {
	t.Helper()
	if e == nil {
		t.Fatalf("%s: no error, want %d (%s)", what, code, state)
	}
	if e.Code != code || e.State != state {
		t.Fatalf("%s: error %d (%s) %q, want %d (%s)", what, e.Code, e.State, e.Message, code, state)
	}
}

func TestStatementsAddLookupClose(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	a := tableStmt(&tb, "SELECT 1")
	b := tableStmt(&tb, "SELECT 22")
	if tb.lookup(a.id) != a || tb.lookup(b.id) != b {
		t.Fatal("lookup does not find the statements added")
	}
	if tb.lookup(lastPrepared) != b {
		t.Fatal("lastPrepared does not name the statement prepared last")
	}
	if tb.lookup(99) != nil || tb.lookup(0) != nil {
		t.Fatal("lookup finds a statement never prepared")
	}
	if tb.kept != len("SELECT 1")+len("SELECT 22") {
		t.Fatalf("kept %d, want the two texts", tb.kept)
	}
	tb.remove(b)
	if tb.lookup(b.id) != nil || tb.lookup(lastPrepared) != nil {
		t.Fatal("a closed statement is still found (by its id or as the one prepared last)")
	}
	if tb.lookup(a.id) != a || tb.kept != len("SELECT 1") {
		t.Fatalf("closing one statement changed the other (kept %d)", tb.kept)
	}
	tb.remove(a)
	if tb.kept != 0 || len(tb.byID) != 0 {
		t.Fatalf("after closing everything: kept %d, %d statements", tb.kept, len(tb.byID))
	}
}

// Ids count up from 1 and are never handed out twice while the session lasts: not after a
// CLOSE, not after a PREPARE that failed, not after a reset (the client may still hold one).
// After 2^32 prepares they wrap, skipping 0, lastPrepared and the ids still in use.
func TestStatementsIDs(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	a := tableStmt(&tb, "SELECT 1")
	if a.id != 1 {
		t.Fatalf("first id %d, want 1", a.id)
	}
	if id := tb.newID(); id != 2 { // a PREPARE the node refused after the id was taken
		t.Fatalf("second id %d, want 2", id)
	}
	tb.remove(a)
	if b := tableStmt(&tb, "SELECT 2"); b.id != 3 {
		t.Fatalf("id after a close and a failed prepare: %d, want 3", b.id)
	}
	tb.reset()
	if c := tableStmt(&tb, "SELECT 3"); c.id != 4 {
		t.Fatalf("id after a reset: %d, want 4", c.id)
	}

	// The wrap: 1 (live) and lastPrepared and 0 are skipped.
	tb = newStatements(0, 0, slog.Default())
	live := tableStmt(&tb, "SELECT 1")
	tb.lastID = lastPrepared - 2
	for _, want := range []uint32{lastPrepared - 1, 2, 3} {
		if got := tb.newID(); got != want {
			t.Fatalf("id near the wrap: %d, want %d", got, want)
		}
	}
	if tb.lookup(live.id) != live {
		t.Fatal("the wrap replaced a live statement")
	}
}

func TestStatementsLimits(t *testing.T) {
	tb := newStatements(2, 100, slog.Default())
	if e := tb.full(); e != nil {
		t.Fatalf("an empty table is full: %v", e)
	}
	tableStmt(&tb, strings.Repeat("x", 40))
	if e := tb.textTooLarge(60); e != nil {
		t.Fatalf("a text that just fits refused: %v", e)
	}
	wantSQLError(t, "a text past max_long_data", tb.textTooLarge(61), mysql.ErrOutOfResources, "HY000")
	if got := tb.room(); got != 60 {
		t.Fatalf("room %d, want 60", got)
	}
	tableStmt(&tb, strings.Repeat("y", 60))
	wantSQLError(t, "a third statement of two allowed", tb.full(), mysql.ErrMaxPreparedStmtCount, "42000")
	if got := tb.room(); got != 1 {
		t.Fatalf("room of a spent budget %d, want 1 (a packet limit of 0 would mean none)", got)
	}
	tb.remove(tb.lookup(1))
	if e := tb.full(); e != nil {
		t.Fatalf("full after a close: %v", e)
	}

	def := newStatements(0, -1, slog.Default())
	if def.maxCount != defaultMaxStatements || def.maxKept != defaultMaxLongData {
		t.Fatalf("defaults: %d statements, %d bytes", def.maxCount, def.maxKept)
	}
}

// Long data counts against the budget with the texts; a chunk past it drops the statement's
// long data and leaves the error for its next EXECUTE, once; a RESET clears both.
func TestStatementsLongData(t *testing.T) {
	tb := newStatements(0, 100, slog.Default())
	st := tableStmt(&tb, "INSERT INTO t VALUES (?)") // 24 bytes
	chunk := func(data string) []byte {
		return append([]byte{mysql.ComStmtSendLongData, byte(st.id), 0, 0, 0, 0, 0}, data...)
	}
	if tb.admitLongData(nil, 1) {
		t.Fatal("long data for an unknown statement admitted")
	}
	p := chunk("abc")
	if !tb.admitLongData(st, len(p)) {
		t.Fatal("a small chunk refused")
	}
	tb.keepLongData(st, p)
	if len(st.longData) != 1 || string(st.longData[0]) != "\x00\x00abc" || tb.kept != 24+len(p) {
		t.Fatalf("kept %q, %d bytes; want the parameter number and data, %d bytes", st.longData, tb.kept, 24+len(p))
	}
	tb.dropLongData(st) // sent with an EXECUTE
	if len(st.longData) != 0 || tb.kept != 24 || st.longSize != 0 {
		t.Fatalf("after the EXECUTE: %d chunks, kept %d", len(st.longData), tb.kept)
	}

	tb.keepLongData(st, chunk("abc"))
	if tb.admitLongData(st, 100-24-10+1) {
		t.Fatal("a chunk past the budget admitted")
	}
	if len(st.longData) != 0 || tb.kept != 24 {
		t.Fatalf("a refused chunk left long data: %d chunks, kept %d", len(st.longData), tb.kept)
	}
	if tb.admitLongData(st, 1) {
		t.Fatal("a chunk after a refused one admitted: the EXECUTE would run without the refused part")
	}
	wantSQLError(t, "EXECUTE after refused long data", tb.longDataErr(st), mysql.ErrNetPacketTooLarge, "08S01")
	if e := tb.longDataErr(st); e != nil {
		t.Fatalf("the long-data error given twice: %v", e)
	}

	if tb.admitLongData(st, 1000) {
		t.Fatal("setup: a chunk past the budget admitted")
	}
	tb.resetLongData(st) // COM_STMT_RESET
	if e := tb.longDataErr(st); e != nil {
		t.Fatalf("the long-data error outlived a RESET: %v", e)
	}
	if !tb.admitLongData(st, 10) {
		t.Fatal("a chunk after a RESET refused")
	}
	tb.keepLongData(st, chunk("xyz"))
	tb.remove(st)
	if tb.kept != 0 {
		t.Fatalf("closing a statement with long data left %d bytes kept", tb.kept)
	}
}

// A statement has one binding per node connection it was prepared on; a connection that
// closes takes its bindings and cursors with it, in every statement; new parameter types on
// one connection make the others untyped.
func TestStatementsBindings(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	primary, replica := memNode(&memConn{}), memNode(&memConn{})
	a, b := tableStmt(&tb, "SELECT 1"), tableStmt(&tb, "SELECT 2")
	a.bind(primary, 0, 7, 0)
	a.bind(replica, 1, 8, 0)
	b.bind(replica, 1, 9, 0)
	if got := a.binding(replica); got == nil || got.id != 8 || got.node != 1 {
		t.Fatalf("a's binding on the replica: %+v, want node 1, id 8", got)
	}
	if got := b.binding(primary); got != nil {
		t.Fatalf("b found bound on the primary: %+v", got)
	}

	pb, rb := a.binding(primary), a.binding(replica)
	a.rebound(pb, []byte{0x08, 0})
	if !pb.typed || rb.typed || !bytes.Equal(a.types, []byte{0x08, 0}) {
		t.Fatalf("after types bound on the primary: primary typed %v, replica typed %v, types %x", pb.typed, rb.typed, a.types)
	}
	a.rebound(rb, []byte{0xfd, 0})
	if pb := a.binding(primary); pb.typed || !a.binding(replica).typed {
		t.Fatal("types bound anew on the replica left the primary typed with the old ones")
	}

	a.cursorConn = replica
	if !tb.cursorOn(replica) || tb.cursorOn(primary) {
		t.Fatal("cursorOn does not report the cursor where it is")
	}
	tb.unbind(replica)
	if a.binding(replica) != nil || b.binding(replica) != nil {
		t.Fatal("a closed connection's bindings survive")
	}
	if a.cursorConn != nil || tb.cursorOn(replica) {
		t.Fatal("a closed connection's cursor survives")
	}
	if got := a.binding(primary); got == nil || got.id != 7 {
		t.Fatalf("closing the replica's connection took the primary's binding: %+v", got)
	}
}

func TestStatementsReset(t *testing.T) {
	tb := newStatements(1, 0, slog.Default())
	st := tableStmt(&tb, "SELECT 1")
	tb.keepLongData(st, []byte{mysql.ComStmtSendLongData, 1, 0, 0, 0, 0, 0, 'x'})
	tb.reset()
	if len(tb.byID) != 0 || tb.kept != 0 || tb.lookup(st.id) != nil || tb.lookup(lastPrepared) != nil {
		t.Fatalf("after a reset: %d statements, kept %d", len(tb.byID), tb.kept)
	}
	if e := tb.full(); e != nil {
		t.Fatalf("a reset table is full: %v", e)
	}
}

// prepareRelayed answers the client with sluice's id in place of the node's and keeps the
// statement bound there; a node's ERR goes to the client as it is and nothing is kept.
func TestStatementsPrepareRelayed(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	node, client := &memConn{}, &memConn{}
	cc := mysql.NewConn(client, 0, 0)
	bc := memNode(node)
	node.load(benchPrepareOK)
	tb.lastID = 4 // sluice's id differs from the node's (7)
	prep := append([]byte{mysql.ComStmtPrepare}, benchPrepareSQL...)
	st := &stmt{query: []byte(benchPrepareSQL)}
	if _, _, err := tb.prepareRelayed(bc, 0, 0, st, prep, cc); err != nil {
		t.Fatal(err)
	}
	if err := cc.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(node.out, packets(0, prep)) {
		t.Fatalf("node got %x, want the client's PREPARE", node.out)
	}
	want := packets(1, []byte{0, 5, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, benchColumn, benchColumn)
	if !bytes.Equal(client.out, want) {
		t.Fatalf("client got %x, want %x", client.out, want)
	}
	if st.id != 5 || tb.lookup(5) != st || tb.lookup(lastPrepared) != st || st.params != 1 || st.columns != 1 {
		t.Fatalf("kept statement %+v", st)
	}
	if b := st.binding(bc); b == nil || b.id != benchNodeStmtID || b.node != 0 {
		t.Fatalf("binding on the node: %+v, want id %d", b, benchNodeStmtID)
	}

	refusal := packets(1, mysql.AppendERR(nil, mysql.NewError(1146, "42S02", "Table 'test.nope' doesn't exist")))
	node.load(refusal)
	client.load(nil)
	st2 := &stmt{query: []byte("SELECT * FROM nope")}
	if _, _, err := tb.prepareRelayed(bc, 0, 0, st2, append([]byte{mysql.ComStmtPrepare}, st2.query...), cc); err != nil {
		t.Fatal(err)
	}
	_ = cc.Flush()
	if !bytes.Equal(client.out, refusal) {
		t.Fatalf("client got %x, want the node's ERR %x", client.out, refusal)
	}
	if len(tb.byID) != 1 || tb.lookup(lastPrepared) != st {
		t.Fatal("a refused PREPARE was kept")
	}
}

// bindOn prepares a statement lazily on a connection that has not seen it; a node that
// describes it otherwise gets it closed again and is never asked twice.
func TestStatementsBindOn(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	home, other, differs := &memConn{}, &memConn{}, &memConn{}
	hc, oc, dc := memNode(home), memNode(other), memNode(differs)
	home.load(benchPrepareOK)
	st := &stmt{query: []byte(benchPrepareSQL)}
	if _, _, err := tb.prepareRelayed(hc, 0, 0, st, append([]byte{mysql.ComStmtPrepare}, st.query...), mysql.NewConn(&memConn{}, 0, 0)); err != nil {
		t.Fatal(err)
	}

	if b, err := tb.bindOn(hc, 0, "home", 0, st); err != nil || b.id != benchNodeStmtID {
		t.Fatalf("bindOn where it is prepared: %+v, %v", b, err)
	}
	other.load(packets(1, []byte{0, 9, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, benchColumn, benchColumn))
	b, err := tb.bindOn(oc, 1, "other", 0, st)
	if err != nil || b.id != 9 || b.node != 1 {
		t.Fatalf("lazy prepare: %+v, %v; want the node's id 9", b, err)
	}
	if want := packets(0, append([]byte{mysql.ComStmtPrepare}, benchPrepareSQL...)); !bytes.Equal(other.out, want) {
		t.Fatalf("other node got %x, want %x", other.out, want)
	}

	otherColumn := bytes.Replace(benchColumn, []byte("\x01v\x01v"), []byte("\x01w\x01w"), 1)
	differs.load(packets(1, []byte{0, 3, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, benchColumn, otherColumn))
	if _, err := tb.bindOn(dc, 2, "differs", 0, st); !errors.Is(err, errShapeDiffers) {
		t.Fatalf("a node with another column: %v, want errShapeDiffers", err)
	}
	closeIt := packets(0, []byte{mysql.ComStmtClose, 3, 0, 0, 0})
	if !bytes.HasSuffix(differs.out, closeIt) {
		t.Fatalf("the differing node's statement not closed: node got %x", differs.out)
	}
	differs.load(nil)
	if _, err := tb.bindOn(dc, 2, "differs", 0, st); !errors.Is(err, errShapeDiffers) || len(differs.out) != 0 {
		t.Fatalf("second try on the differing node: %v, node got %x", err, differs.out)
	}

	refused := &memConn{}
	refused.load(packets(1, mysql.AppendERR(nil, mysql.NewError(1142, "42000", "SELECT command denied"))))
	var se *mysql.SQLError
	if _, err := tb.bindOn(memNode(refused), 3, "refused", 0, st); !errors.As(err, &se) || se.Code != 1142 {
		t.Fatalf("a node refusing the PREPARE: %v, want its error", err)
	}
	if len(st.on) != 2 {
		t.Fatalf("%d bindings, want the home's and the other's", len(st.on))
	}
}

// close sends COM_STMT_CLOSE with each connection's own id, and forgets the statement.
func TestStatementsClose(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	m1, m2 := &memConn{}, &memConn{}
	c1, c2 := memNode(m1), memNode(m2)
	st := tableStmt(&tb, "SELECT 1")
	st.bind(c1, 0, 7, 0)
	st.bind(c2, 1, 8, 0)
	tb.close(st)
	_, _ = c1.Flush(), c2.Flush()
	if want := packets(0, []byte{mysql.ComStmtClose, 7, 0, 0, 0}); !bytes.Equal(m1.out, want) {
		t.Fatalf("first connection got %x, want %x", m1.out, want)
	}
	if want := packets(0, []byte{mysql.ComStmtClose, 8, 0, 0, 0}); !bytes.Equal(m2.out, want) {
		t.Fatalf("second connection got %x, want %x", m2.out, want)
	}
	if tb.lookup(st.id) != nil || tb.kept != 0 {
		t.Fatal("a closed statement is kept")
	}
}

// sendExecute: long data first with the connection's id, then the EXECUTE with it; a
// connection that lacks the types bound elsewhere gets them written into the EXECUTE; a
// cursor's EXECUTE says so, and FETCH goes where it opened.
func TestStatementsSendExecute(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	pm, rm := &memConn{}, &memConn{}
	primary, replica := memNode(pm), memNode(rm)
	st := tableStmt(&tb, benchPrepareSQL)
	pb, rb := st.bind(primary, 0, 7, 0), st.bind(replica, 1, 8, 0)
	client := mysql.NewConn(&memConn{}, 0, 0)
	payload := func(p []byte) []byte { return p[4:] } // one packet's payload

	long := []byte{mysql.ComStmtSendLongData, byte(st.id), 0, 0, 0, 0, 0, 'a', 'b'}
	tb.keepLongData(st, long)
	held := payload(stmtExecute(st.id))
	r := &request{n: len(held), held: true, st: st}
	kind, err := tb.sendExecute(client, primary, pb, r, held)
	if err != nil || kind != relay.Statement {
		t.Fatalf("sendExecute: %v, %v", kind, err)
	}
	want := append(packets(0, []byte{mysql.ComStmtSendLongData, 7, 0, 0, 0, 0, 0, 'a', 'b'}), stmtExecute(7)...)
	if !bytes.Equal(pm.out, want) {
		t.Fatalf("primary got %x, want %x", pm.out, want)
	}
	if !pb.typed || !bytes.Equal(st.types, []byte{0x08, 0}) {
		t.Fatalf("types of the EXECUTE not remembered: typed %v, %x", pb.typed, st.types)
	}
	tb.dropLongData(st) // the session's execute does, after the EXECUTE

	held = payload(stmtExecuteBound(st.id))
	r = &request{n: len(held), held: true, st: st}
	if _, err := tb.sendExecute(client, replica, rb, r, held); err != nil {
		t.Fatal(err)
	}
	if want := stmtExecute(8); !bytes.Equal(rm.out, want) {
		t.Fatalf("replica got %x, want the EXECUTE with the types bound on the primary %x", rm.out, want)
	}
	if !rb.typed {
		t.Fatal("the replica is not marked typed after getting the types")
	}

	rm.load(nil)
	cursor := payload(stmtExecute(st.id))
	cursor[5] = 1 // CURSOR_TYPE_READ_ONLY
	r = &request{n: len(cursor), held: true, st: st}
	if kind, err := tb.sendExecute(client, replica, rb, r, cursor); err != nil || kind != relay.Cursor {
		t.Fatalf("a cursor's EXECUTE: %v, %v; want relay.Cursor", kind, err)
	}
	if st.cursorConn != replica {
		t.Fatal("the cursor's connection is not remembered for FETCH")
	}
}

// sendCommand streams a command still in the client's buffer to the node with the node's id.
func TestStatementsSendCommandStreams(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	nm, cm := &memConn{}, &memConn{}
	bc := memNode(nm)
	fetch := packets(0, []byte{mysql.ComStmtFetch, 1, 0, 0, 0, 10, 0, 0, 0})
	cm.load(fetch)
	client := mysql.NewConn(cm, 0, 0)
	n, _, err := client.PeekHeader()
	if err != nil {
		t.Fatal(err)
	}
	r := &request{n: n, unread: true}
	if err := tb.sendCommand(client, bc, 7, r, nil); err != nil {
		t.Fatal(err)
	}
	if r.unread {
		t.Fatal("the command is still marked unread")
	}
	if want := packets(0, []byte{mysql.ComStmtFetch, 7, 0, 0, 0, 10, 0, 0, 0}); !bytes.Equal(nm.out, want) {
		t.Fatalf("node got %x, want %x", nm.out, want)
	}
	if client.Seq() != 1 || bc.Seq() != 1 {
		t.Fatalf("sequence ids for the answer: client %d, node %d; want 1", client.Seq(), bc.Seq())
	}
}

// TestStatementsLowIndex: lookup finds the same statements by id whether the id is below
// lowIDs (statements.low) or above (the map), after closes and a reset too, and the index
// holds exactly the map's statements.
func TestStatementsLowIndex(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	var all []*stmt
	for range lowIDs + 10 {
		all = append(all, tableStmt(&tb, "SELECT 1"))
	}
	check := func(what string) {
		t.Helper()
		for id := uint32(0); id < lowIDs+20; id++ {
			if got, want := tb.lookup(id), tb.byID[id]; got != want {
				t.Fatalf("%s: lookup(%d) = %p, the map has %p", what, id, got, want)
			}
		}
		for _, st := range tb.low {
			if st != nil {
				if tb.byID[st.id] != st {
					t.Fatalf("%s: the index holds statement %d, the map does not", what, st.id)
				}
			}
		}
		if len(tb.low) > lowIDs {
			t.Fatalf("%s: the index grew to %d entries, past lowIDs", what, len(tb.low))
		}
	}
	check("added")
	if tb.lookup(all[0].id) != all[0] || tb.lookup(all[lowIDs+5].id) != all[lowIDs+5] {
		t.Fatal("a statement is not found by its id")
	}
	for _, i := range []int{0, 7, lowIDs - 2, lowIDs + 3} {
		tb.remove(all[i])
	}
	check("closed")
	if tb.lookup(all[7].id) != nil || tb.lookup(all[lowIDs+3].id) != nil {
		t.Fatal("a closed statement is still found")
	}
	tb.reset()
	check("reset")
	for _, st := range all {
		if tb.lookup(st.id) != nil {
			t.Fatalf("statement %d found after a reset", st.id)
		}
	}
	// After a wrap of the ids (newID skips those in use), a small id is a new statement.
	tb.lastID = lastPrepared - 1
	st := tableStmt(&tb, "SELECT 2")
	if st.id != 1 || tb.lookup(1) != st {
		t.Fatalf("after the wrap: id %d, lookup %p, want 1 and the new statement", st.id, tb.lookup(1))
	}
	check("wrapped")
}

// BenchmarkStatementsLookup is an EXECUTE's lookup of its statement among a session's 36 (as
// sysbench prepares them), by turns: the low index; and an id past lowIDs, in the map.
func BenchmarkStatementsLookup(b *testing.B) {
	tb := newStatements(0, 0, slog.Default())
	var ids []uint32
	for range 36 {
		ids = append(ids, tableStmt(&tb, "SELECT 1").id)
	}
	far := &stmt{id: lowIDs + 1000, query: []byte("SELECT 2")}
	tb.add(far)
	b.Run("low", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if tb.lookup(ids[i%len(ids)]) == nil {
				b.Fatal("not found")
			}
			i += 7
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if tb.lookup(far.id) != far {
				b.Fatal("not found")
			}
		}
	})
}
