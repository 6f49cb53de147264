package backend

import (
	"bytes"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Prepared statements a node connection keeps for whichever session uses it next.
//
// Under transaction pooling a node connection goes from session to session between
// statements. A binary prepared statement belongs to its session (sluice's statement table),
// but the node's statement belongs to the connection: when a session lets go of the connection
// (or its client closes the statement), the node statement stays prepared there, idle, in the
// connection's StmtCache; the next session that runs the same text in the same context on the
// connection takes it (TakeStmt) instead of preparing the text again (a round trip saved per
// statement per connection change).
//
// The cache lives in the Conn because it must travel with the connection through the pool,
// which hands a connection to one session at a time: whoever holds the connection holds its
// cache, from the same goroutine, and nothing in it is synchronised.
//
// Only idle statements are in the cache: one a session has bound is the session's until it lets
// go of it (KeepStmt), so two bindings never share a node statement, and what one binding
// leaves on it (its parameter types, a cursor, long data) is the next one's concern only
// through what KeepStmt accepts: the caller keeps a statement only when no cursor was opened on
// it and no long data sent to it, and a binding that takes one from the cache starts without
// parameter types (it sends its own with its first EXECUTE).
//
// Bound: at most the limit set by KeepStmts idle statements per connection (0, the default:
// none, every statement let go of is closed as before). The node's max_prepared_stmt_count is
// global (16382 by default): the caller chooses a limit that, times the connections it keeps
// per node, stays well under it; a PREPARE the node refuses for that limit (ER 1461) can make
// room by closing the idle statements (EvictStmts) and try again. Past the limit the least
// recently used idle statement is closed (COM_STMT_CLOSE, sent with the connection's next
// command). A reset of the node's session (COM_RESET_CONNECTION, COM_CHANGE_USER: Command,
// MarkReset) drops them all on the node; the cache forgets them (ForgetStmts). They go with
// the connection when it is closed.

// CachedStmt is one idle node statement: the node's id for it, what the node said of it when it
// was prepared (its parameter and column counts, and Shape, a hash of its column definitions
// that the caller computes), and the key it is found by: the text and Context, a summary of the
// session state it was prepared under (the database, the character set and sql_mode a text is
// read with), which the caller computes and must match for the statement to mean the same.
type CachedStmt struct {
	ID      uint32
	Params  uint16
	Columns uint16
	Shape   uint64
	Context uint64
	// Text is the statement's SQL. It is kept, not copied: the caller never modifies it.
	Text []byte

	hash       uint64
	prev, next *CachedStmt // the LRU list: prev is more recently used
}

// stmtCache is a Conn's idle prepared statements: by hash of (context, text) (one per hash:
// a second statement with the same hash, the same text or a collision, replaces the first, which
// is closed), and in a list from the most (head) to the least (tail) recently used. free keeps
// entries taken out, for the next KeepStmt: a connection that moves between sessions
// statement by statement does not allocate for it.
type stmtCache struct {
	byHash     map[uint64]*CachedStmt
	head, tail *CachedStmt
	n, max     int
	free       []*CachedStmt
	// cmd holds a COM_STMT_CLOSE being written (not the Conn's scratch buffer, which may
	// hold a packet the caller is reading).
	cmd [5]byte
}

// DefaultStmtCache is the idle prepared statements a connection keeps under transaction
// pooling: 128 per connection, so that 64 connections to a node (the max_per_node the pool
// benchmarks use) keep 8192, half of the server's default max_prepared_stmt_count.
const DefaultStmtCache = 128

// KeepStmts sets how many idle prepared statements c keeps (0: none); those past the new limit
// are closed, the least recently used first.
func (c *Conn) KeepStmts(n int) {
	c.stmts.max = max(n, 0)
	for c.stmts.n > c.stmts.max {
		c.closeStmt(c.stmts.evict(c.stmts.tail))
	}
}

// TakeStmt returns the idle statement prepared on c as text under context ctx, and takes it out
// of the cache (it is the caller's until it gives it back with KeepStmt, or closes it). ok is
// false when there is none. It does not allocate.
func (c *Conn) TakeStmt(ctx uint64, text []byte) (st CachedStmt, ok bool) {
	e := c.stmts.byHash[stmtHash(ctx, text)]
	if e == nil || e.Context != ctx || !bytes.Equal(e.Text, text) {
		return CachedStmt{}, false
	}
	return c.stmts.evict(e), true
}

// KeepStmt gives st, a node statement the caller no longer uses, to c's cache, where it is the
// most recently used; the least recently used one is closed when that takes the cache past its
// limit, and an idle one with the same key is replaced (closed). With a limit of 0 st is
// closed. The caller keeps only a statement in a state any session may take: no cursor open on
// it, no long data sent to it since its last EXECUTE.
func (c *Conn) KeepStmt(st CachedStmt) {
	if c.stmts.max == 0 {
		c.closeStmt(st)
		return
	}
	h := stmtHash(st.Context, st.Text)
	if old := c.stmts.byHash[h]; old != nil {
		c.closeStmt(c.stmts.evict(old))
	}
	for c.stmts.n >= c.stmts.max {
		c.closeStmt(c.stmts.evict(c.stmts.tail))
	}
	var e *CachedStmt
	if k := len(c.stmts.free); k > 0 {
		e, c.stmts.free = c.stmts.free[k-1], c.stmts.free[:k-1]
	} else {
		e = new(CachedStmt)
	}
	*e = st
	e.hash = h
	if c.stmts.byHash == nil {
		c.stmts.byHash = make(map[uint64]*CachedStmt)
	}
	c.stmts.byHash[h] = e
	e.next = c.stmts.head
	if e.next != nil {
		e.next.prev = e
	} else {
		c.stmts.tail = e
	}
	c.stmts.head = e
	c.stmts.n++
}

// CachedStmts is how many idle prepared statements c keeps.
func (c *Conn) CachedStmts() int { return c.stmts.n }

// EvictStmts closes every idle prepared statement c keeps (COM_STMT_CLOSE, sent with the next
// command) and returns how many: room for a PREPARE the node refused at its
// max_prepared_stmt_count.
func (c *Conn) EvictStmts() int {
	n := c.stmts.n
	for c.stmts.tail != nil {
		c.closeStmt(c.stmts.evict(c.stmts.tail))
	}
	return n
}

// ForgetStmts forgets every idle prepared statement without closing it: the node dropped them
// (its session was reset).
func (c *Conn) ForgetStmts() {
	for c.stmts.tail != nil {
		c.stmts.evict(c.stmts.tail)
	}
}

// CloseStmt closes node statement id on c: COM_STMT_CLOSE, which has no answer, written to be
// sent with c's next command. A write that fails is not reported: the connection is broken,
// and its statements with it.
func (c *Conn) CloseStmt(id uint32) {
	c.SetSeq(0)
	c.stmts.cmd = [5]byte{mysql.ComStmtClose, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}
	_ = c.WritePacket(c.stmts.cmd[:])
}

func (c *Conn) closeStmt(st CachedStmt) { c.CloseStmt(st.ID) }

// evict takes e out of the cache and returns what it held; e goes to the free list.
func (sc *stmtCache) evict(e *CachedStmt) CachedStmt {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sc.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sc.tail = e.prev
	}
	delete(sc.byHash, e.hash)
	sc.n--
	st := *e
	st.prev, st.next = nil, nil
	*e = CachedStmt{}
	sc.free = append(sc.free, e)
	return st
}

// stmtHash is FNV-1a over ctx and text.
func stmtHash(ctx uint64, text []byte) uint64 {
	const prime = 1099511628211
	h := uint64(sumSeed)
	for i := 0; i < 8; i++ {
		h = (h ^ (ctx >> (8 * i) & 0xff)) * prime
	}
	for _, b := range text {
		h = (h ^ uint64(b)) * prime
	}
	return h
}
