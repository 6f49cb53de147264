package proxy

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// stmtClose is the COM_STMT_CLOSE of node statement id, as a node receives it.
func stmtClose(id byte) []byte { return packets(0, []byte{mysql.ComStmtClose, id, 0, 0, 0}) }

// flushed flushes bc and returns what its node received since m was loaded.
func flushed(t *testing.T, bc *backend.Conn, m *memConn) []byte {
	t.Helper()
	if err := bc.Flush(); err != nil {
		t.Fatal(err)
	}
	return m.out
}

// A session lets go of a connection (park): its node statements stay there, idle, and the
// next binding of the same text under the same session state takes one without a PREPARE,
// without parameter types (its own are sent with its first EXECUTE); another state prepares
// its own.
func TestStatementsParkAndTake(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	home := &memConn{}
	hc := memNode(home)
	hc.KeepStmts(backend.DefaultStmtCache)
	home.load(benchPrepareOK)
	st := &stmt{query: []byte(benchPrepareSQL)}
	if _, _, err := tb.prepareRelayed(hc, 0, 5, st, append([]byte{mysql.ComStmtPrepare}, st.query...), mysql.NewConn(&memConn{}, 0, 0)); err != nil {
		t.Fatal(err)
	}
	st.on[0].typed = true
	home.load(nil)
	tb.park(hc)
	if len(st.on) != 0 || hc.CachedStmts() != 1 {
		t.Fatalf("after park: %d bindings, %d idle on the connection; want 0, 1", len(st.on), hc.CachedStmts())
	}
	if out := flushed(t, hc, home); len(out) != 0 {
		t.Fatalf("park sent %x", out)
	}
	b, err := tb.bindOn(hc, 0, "home", 5, st)
	if err != nil || b.id != benchNodeStmtID || b.typed || b.ctx != 5 {
		t.Fatalf("bound from the cache: %+v, %v", b, err)
	}
	if out := flushed(t, hc, home); len(out) != 0 {
		t.Fatalf("a statement taken from the cache sent %x", out)
	}

	// Under another session state (another database, sql_mode...): prepared anew.
	tb.park(hc)
	home.load(packets(1, []byte{0, 9, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, benchColumn, benchColumn))
	if b, err = tb.bindOn(hc, 0, "home", 6, st); err != nil || b.id != 9 {
		t.Fatalf("another state: %+v, %v", b, err)
	}
	if want := packets(0, append([]byte{mysql.ComStmtPrepare}, benchPrepareSQL...)); !bytes.Equal(home.out, want) {
		t.Fatalf("another state: node got %x, want the PREPARE", home.out)
	}

	// A statement whose node statement took a cursor or long data is closed when let go of.
	b.dirty = true
	home.load(nil)
	tb.close(st)
	if out := flushed(t, hc, home); !bytes.Equal(out, stmtClose(9)) {
		t.Fatalf("closing a dirty statement: node got %x, want its COM_STMT_CLOSE", out)
	}
	if hc.CachedStmts() != 1 {
		t.Fatalf("%d idle, want the first one only", hc.CachedStmts())
	}
}

// A node statement the cache gives with another shape than the client was told (a table altered
// since) is closed, and the text prepared afresh.
func TestStatementsCachedShapeDiffers(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	home := &memConn{}
	hc := memNode(home)
	hc.KeepStmts(4)
	st := &stmt{query: []byte(benchPrepareSQL), params: 1, columns: 1, shape: 42}
	hc.KeepStmt(backend.CachedStmt{ID: 3, Params: 1, Columns: 2, Shape: 42, Context: 1, Text: st.query})
	home.load(packets(1, []byte{0, 9, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, benchColumn, benchColumn))
	st.shape, _ = relayDefs(memNode(&memConn{in: packets(1, benchColumn, benchColumn)}), 1, 1, nil)
	b, err := tb.bindOn(hc, 0, "home", 1, st)
	if err != nil || b.id != 9 {
		t.Fatalf("bindOn: %+v, %v", b, err)
	}
	want := append(stmtClose(3), packets(0, append([]byte{mysql.ComStmtPrepare}, benchPrepareSQL...))...)
	if !bytes.Equal(home.out, want) {
		t.Fatalf("node got %x, want the stale statement closed and the text prepared", home.out)
	}
}

// A PREPARE the node refuses for its max_prepared_stmt_count (ER 1461) while the connection keeps
// idle statements closes them and is tried once more; without idle statements the refusal is
// the answer.
func TestStatementsPrepareAtServerLimit(t *testing.T) {
	tb := newStatements(0, 0, slog.Default())
	home := &memConn{}
	hc := memNode(home)
	hc.KeepStmts(4)
	hc.KeepStmt(backend.CachedStmt{ID: 3, Context: 1, Text: []byte("SELECT 3")})
	full := packets(1, mysql.AppendERR(nil, mysql.NewError(mysql.ErrMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: 16382)")))
	st := &stmt{query: []byte(benchPrepareSQL), params: 1, columns: 1}
	st.shape, _ = relayDefs(memNode(&memConn{in: packets(1, benchColumn, benchColumn)}), 1, 1, nil)
	home.load(append(append([]byte(nil), full...), benchPrepareOK...))
	b, err := tb.bindOn(hc, 0, "home", 1, st)
	if err != nil || b.id != benchNodeStmtID {
		t.Fatalf("at the server's limit: %+v, %v", b, err)
	}
	prep := packets(0, append([]byte{mysql.ComStmtPrepare}, benchPrepareSQL...))
	want := append(append(append([]byte(nil), prep...), stmtClose(3)...), prep...)
	if !bytes.Equal(home.out, want) || hc.CachedStmts() != 0 {
		t.Fatalf("node got %x, want PREPARE, the idle statement closed, PREPARE", home.out)
	}

	st2 := &stmt{query: []byte("SELECT 2"), params: 1, columns: 1}
	home.load(full)
	var se *mysql.SQLError
	if _, err := tb.bindOn(hc, 0, "home", 1, st2); !errors.As(err, &se) || se.Code != mysql.ErrMaxPreparedStmtCount {
		t.Fatalf("nothing idle to close: %v, want the node's 1461", err)
	}
}
