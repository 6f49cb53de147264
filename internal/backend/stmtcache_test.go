package backend

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// wireConn is a net.Conn that records what is written to it and reads from in.
type wireConn struct {
	in  bytes.Reader
	out bytes.Buffer
}

func (w *wireConn) Read(p []byte) (int, error)       { return w.in.Read(p) }
func (w *wireConn) Write(p []byte) (int, error)      { return w.out.Write(p) }
func (w *wireConn) Close() error                     { return nil }
func (w *wireConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (w *wireConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (w *wireConn) SetDeadline(time.Time) error      { return nil }
func (w *wireConn) SetReadDeadline(time.Time) error  { return nil }
func (w *wireConn) SetWriteDeadline(time.Time) error { return nil }
func wireNode(w *wireConn) *Conn                     { return &Conn{Conn: mysql.NewConn(w, 0, 4<<10)} }
func idle(id uint32, ctx uint64, text string) CachedStmt {
	return CachedStmt{ID: id, Context: ctx, Text: []byte(text), Params: 1, Columns: 2, Shape: 3}
}

// closed returns the node statement ids of the COM_STMT_CLOSE packets written to c (flushed),
// in order, and empties the record; any other packet fails the test.
func closed(t *testing.T, c *Conn, w *wireConn) []uint32 {
	t.Helper()
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	b := w.out.Bytes()
	for len(b) > 0 {
		if len(b) < 9 || b[0] != 5 || b[3] != 0 || b[4] != mysql.ComStmtClose {
			t.Fatalf("not a COM_STMT_CLOSE: %x", b)
		}
		ids = append(ids, uint32(b[5])|uint32(b[6])<<8|uint32(b[7])<<16|uint32(b[8])<<24)
		b = b[9:]
	}
	w.out.Reset()
	return ids
}

func TestStmtCacheTakeKeep(t *testing.T) {
	w := &wireConn{}
	c := wireNode(w)
	// No limit set: nothing is kept, a statement let go of is closed.
	c.KeepStmt(idle(1, 7, "SELECT ?"))
	if got := closed(t, c, w); len(got) != 1 || got[0] != 1 {
		t.Fatalf("limit 0: closed %v, want [1]", got)
	}
	if _, ok := c.TakeStmt(7, []byte("SELECT ?")); ok {
		t.Fatal("limit 0: a statement was kept")
	}

	c.KeepStmts(3)
	c.KeepStmt(idle(2, 7, "SELECT ?"))
	if _, ok := c.TakeStmt(8, []byte("SELECT ?")); ok {
		t.Fatal("taken under another context")
	}
	if _, ok := c.TakeStmt(7, []byte("SELECT ?, 1")); ok {
		t.Fatal("taken for another text")
	}
	got, ok := c.TakeStmt(7, []byte("SELECT ?"))
	if !ok || got.ID != 2 || got.Params != 1 || got.Columns != 2 || got.Shape != 3 || got.Context != 7 || string(got.Text) != "SELECT ?" {
		t.Fatalf("took %+v, %v", got, ok)
	}
	if _, ok := c.TakeStmt(7, []byte("SELECT ?")); ok || c.CachedStmts() != 0 {
		t.Fatal("a statement taken is still in the cache")
	}
	if ids := closed(t, c, w); len(ids) != 0 {
		t.Fatalf("closed %v taking statements", ids)
	}

	// The same key again: the idle one is replaced (closed).
	c.KeepStmt(idle(3, 7, "SELECT ?"))
	c.KeepStmt(idle(4, 7, "SELECT ?"))
	if ids := closed(t, c, w); len(ids) != 1 || ids[0] != 3 {
		t.Fatalf("same key: closed %v, want [3]", ids)
	}
	if got, _ := c.TakeStmt(7, []byte("SELECT ?")); got.ID != 4 {
		t.Fatalf("same key: took %d, want the newer 4", got.ID)
	}
}

// Past its limit the cache closes the least recently used statement; one taken and given back
// is the most recently used.
func TestStmtCacheLRU(t *testing.T) {
	w := &wireConn{}
	c := wireNode(w)
	c.KeepStmts(3)
	for i, q := range []string{"a", "b", "c"} {
		c.KeepStmt(idle(uint32(10+i), 1, q))
	}
	s, _ := c.TakeStmt(1, []byte("a")) // a is used again: b is now the oldest
	c.KeepStmt(s)
	c.KeepStmt(idle(13, 1, "d"))
	if ids := closed(t, c, w); len(ids) != 1 || ids[0] != 11 {
		t.Fatalf("past the limit: closed %v, want b's 11", ids)
	}
	if c.CachedStmts() != 3 {
		t.Fatalf("%d kept, want 3", c.CachedStmts())
	}
	for _, q := range []string{"a", "c", "d"} {
		if _, ok := c.TakeStmt(1, []byte(q)); !ok {
			t.Fatalf("%s was evicted", q)
		}
	}

	// A lower limit closes the oldest.
	for i, q := range []string{"e", "f", "g"} {
		c.KeepStmt(idle(uint32(20+i), 1, q))
	}
	c.KeepStmts(1)
	if ids := closed(t, c, w); len(ids) != 2 || ids[0] != 20 || ids[1] != 21 {
		t.Fatalf("lowered limit: closed %v, want [20 21]", ids)
	}
	// EvictStmts closes what is left and says how many.
	if n := c.EvictStmts(); n != 1 || c.CachedStmts() != 0 {
		t.Fatalf("EvictStmts: %d, %d left", n, c.CachedStmts())
	}
	if ids := closed(t, c, w); len(ids) != 1 || ids[0] != 22 {
		t.Fatalf("EvictStmts closed %v, want [22]", ids)
	}
}

// A reset of the node's session drops its statements: the cache forgets them without closing
// them (their ids mean nothing on the node any more), whether sluice sent the reset (Command)
// or relayed it (MarkReset), or the pool reset the connection (ResetSession).
func TestStmtCacheForgottenAtReset(t *testing.T) {
	w := &wireConn{}
	c := wireNode(w)
	c.KeepStmts(4)
	c.KeepStmt(idle(1, 1, "a"))
	c.MarkReset(1)
	if c.CachedStmts() != 0 {
		t.Fatal("MarkReset kept the statements")
	}
	for _, cmd := range []byte{mysql.ComResetConnection, mysql.ComChangeUser} {
		c.KeepStmt(idle(2, 1, "a"))
		w.in.Reset([]byte{7, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}) // OK
		if err := c.Command([]byte{cmd}); err != nil {
			t.Fatal(err)
		}
		if c.CachedStmts() != 0 {
			t.Fatalf("command %#x kept the statements", cmd)
		}
		if got := w.out.Bytes(); len(got) != 5 || got[4] != cmd {
			t.Fatalf("command %#x: node got %x, want the command alone (no COM_STMT_CLOSE)", cmd, got)
		}
		w.out.Reset()
	}
	// ResetSession (the pool's reset) forgets them too.
	c.KeepStmt(idle(4, 1, "a"))
	w.in.Reset([]byte{7, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0})
	if _, err := c.ResetSession(false); err != nil {
		t.Fatal(err)
	}
	if c.CachedStmts() != 0 {
		t.Fatal("ResetSession kept the statements")
	}
	w.out.Reset()
	// Another command leaves them.
	c.KeepStmt(idle(3, 1, "a"))
	w.in.Reset([]byte{7, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0})
	if err := c.Command([]byte{mysql.ComPing}); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if c.CachedStmts() != 1 {
		t.Fatal("COM_PING dropped the cache")
	}
}

// A connection that moves between sessions statement by statement takes and gives back its
// statements without allocating.
func TestStmtCacheAllocs(t *testing.T) {
	w := &wireConn{}
	c := wireNode(w)
	c.KeepStmts(2)
	text := []byte("SELECT c FROM sbtest1 WHERE id=?")
	c.KeepStmt(CachedStmt{ID: 1, Context: 5, Text: text})
	if n := testing.AllocsPerRun(100, func() {
		s, ok := c.TakeStmt(5, text)
		if !ok {
			t.Fatal("miss")
		}
		c.KeepStmt(s)
	}); n != 0 {
		t.Fatalf("%v allocs per take and keep, want 0", n)
	}
}
