package proxy

import (
	"log/slog"
	"slices"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
)

// Binary-protocol prepared statements.
//
// The client sees sluice's own statement ids. Each statement remembers its SQL text and, per node
// connection it has been prepared on, that connection's statement id, so it can be prepared
// lazily on another connection the first time it runs there. Long data (COM_STMT_SEND_LONG_DATA)
// is kept in the table until the next EXECUTE, then sent to whichever connection runs it.

// stmt is one prepared statement of a session.
type stmt struct {
	id      uint32
	query   []byte          // SQL text, for preparing on another connection
	class   classify.Result // routed per EXECUTE
	params  uint16
	columns uint16
	// shape is a hash of the column definitions the client was given at PREPARE: a node that
	// describes the statement otherwise (its schema differs, an ALTER TABLE replicating) does
	// not run it.
	shape uint64
	// differs lists the nodes where the statement was found to have another shape.
	differs []int
	// types are the parameter types of the last EXECUTE that bound them (new-params-bound flag
	// 1); a connection that prepares the statement lazily needs them with its first EXECUTE.
	types []byte
	on    []stmtBinding
	// longData holds COM_STMT_SEND_LONG_DATA payloads (without the command byte and the id)
	// until the next EXECUTE or RESET; longSize is what they count against the table's budget.
	longData [][]byte
	longSize int
	longErr  *mysql.SQLError
	// cursorConn is the connection where the last EXECUTE opened a cursor, for FETCH.
	cursorConn *backend.Conn
}

// stmtBinding is the statement's id on one node connection. A binding belongs to the connection,
// not to the node: a node connection that is replaced (closed, reopened) has none of the old
// one's statements, so a binding is looked up by the connection and dropped with it (unbind).
type stmtBinding struct {
	bc   *backend.Conn
	node int // the node bc is connected to (the session's index): where a failure is mapped
	id   uint32
	// ctx is the session state the node statement was prepared under (stmtContext): its key
	// in bc's cache once the session lets go of it (letGo).
	ctx uint64
	// typed reports whether this connection has been sent parameter types: by this session,
	// for this statement (a node statement taken from bc's cache has another session's).
	typed bool
	// dirty: a cursor was opened on the node statement, or long data sent to it; it is
	// closed, not kept for another session, when let go of.
	dirty bool
}

// bind records that st is prepared on bc (node node's connection) as the node's statement id,
// under session state ctx.
func (st *stmt) bind(bc *backend.Conn, node int, id uint32, ctx uint64) *stmtBinding {
	st.on = append(st.on, stmtBinding{bc: bc, node: node, id: id, ctx: ctx})
	return &st.on[len(st.on)-1]
}

// binding returns st's binding on bc, nil when st is not prepared there.
func (st *stmt) binding(bc *backend.Conn) *stmtBinding {
	for i := range st.on {
		if st.on[i].bc == bc {
			return &st.on[i]
		}
	}
	return nil
}

// unbind forgets st's binding and cursor on bc, a connection that is closed.
func (st *stmt) unbind(bc *backend.Conn) {
	st.on = slices.DeleteFunc(st.on, func(b stmtBinding) bool { return b.bc == bc })
	if st.cursorConn == bc {
		st.cursorConn = nil
	}
}

// rebound notes that the EXECUTE about to run on b bound new parameter types: b gets them with
// it, every other connection of st has older ones (or none).
func (st *stmt) rebound(b *stmtBinding, types []byte) {
	st.types = append(st.types[:0], types...)
	for i := range st.on {
		st.on[i].typed = false
	}
	b.typed = true
}

// Limits that protect the proxy's memory from one session.
const (
	defaultMaxStatements = 16382    // MySQL's default max_prepared_stmt_count
	defaultMaxLongData   = 64 << 20 // per session, across its statements
)

// lastPrepared is the id MariaDB clients use for "the statement just prepared" when they send
// PREPARE and EXECUTE together.
const lastPrepared = 0xffffffff

// statements is one session's table of binary prepared statements: the statements by sluice's
// id, the allocation of those ids, each statement's bindings to node connections, and the bytes
// the session keeps for them (their texts and long data waiting for EXECUTE) under the limits
// limits.max_prepared_statements and limits.max_long_data.
//
// It is owned by its session and used only from the session's goroutine: nothing in it is
// synchronised. The bookkeeping methods (this file) do no I/O; the methods in stmt.go prepare,
// execute and close statements on the node connections they are given.
type statements struct {
	byID map[uint32]*stmt
	// lastID is the id handed out last; ids count up from 1 and are not used again while the
	// session lasts (newID).
	lastID uint32
	// last is the statement prepared last, the one lastPrepared names (0: none).
	last uint32
	// low indexes the statements of ids below lowIDs by id (nil: none), so that an EXECUTE
	// finds its statement without a map lookup: ids count up from 1, and a client's usual
	// statements are its first ones (sysbench prepares a few dozen per connection). It holds
	// exactly byID's statements of those ids, and grows only as far as the ids handed out.
	low []*stmt
	// kept counts the bytes held for the statements (texts and waiting long data), at most
	// maxKept, except for a chunk being read (readKept bounds it to what is left).
	kept     int
	maxCount int
	maxKept  int
	// buf builds the commands sent to nodes (prepare, close, long data, a rewritten EXECUTE);
	// let go of after a large one (releaseBuf), so that an idle session does not keep it.
	buf []byte
	log *slog.Logger
}

// newStatements makes an empty table with the given limits (0 or less: the defaults). log
// receives what the table notes about nodes (a statement that differs there).
func newStatements(maxCount, maxKept int, log *slog.Logger) statements {
	if maxCount <= 0 {
		maxCount = defaultMaxStatements
	}
	if maxKept <= 0 {
		maxKept = defaultMaxLongData
	}
	return statements{byID: make(map[uint32]*stmt), maxCount: maxCount, maxKept: maxKept, log: log}
}

// lookup returns the statement the client names by id (lastPrepared: the one prepared last),
// nil for one it does not have.
func (t *statements) lookup(id uint32) *stmt {
	if id == lastPrepared {
		id = t.last
	}
	if id < uint32(len(t.low)) {
		return t.low[id]
	}
	if id < lowIDs {
		return nil // low holds every statement of such an id
	}
	return t.byID[id]
}

// lowIDs bounds the ids statements.low indexes: at most 2 KiB of pointers per session.
const lowIDs = 256

// textTooLarge returns the error for a statement text of n bytes that the table cannot keep
// (nil when it can): the texts count against limits.max_long_data with the long data.
func (t *statements) textTooLarge(n int) *mysql.SQLError {
	if t.kept+n <= t.maxKept {
		return nil
	}
	return mysql.NewError(mysql.ErrOutOfResources, "HY000",
		"sluice: this session's prepared statements and long data would exceed %d bytes (limits.max_long_data)", t.maxKept)
}

// full returns the server's error for one statement too many (nil while there is room).
func (t *statements) full() *mysql.SQLError {
	if len(t.byID) < t.maxCount {
		return nil
	}
	return mysql.NewError(mysql.ErrMaxPreparedStmtCount, "42000",
		"Can't create more than max_prepared_stmt_count statements (current value: %d)", t.maxCount)
}

// room is the largest command the table may still keep: what is left of its byte budget, at
// least 1 (a packet limit of 0 would mean none).
func (t *statements) room() int { return max(t.maxKept-t.kept, 1) }

// newID hands out the id of a statement about to be prepared. Ids count up from 1; an id whose
// PREPARE then fails is not handed out again. After 2^32 prepares the count wraps, skipping 0,
// lastPrepared and the ids still in use.
func (t *statements) newID() uint32 {
	for {
		t.lastID++
		if id := t.lastID; id != 0 && id != lastPrepared && t.byID[id] == nil {
			return id
		}
	}
}

// add keeps st, prepared under st.id (from newID), as the statement prepared last; its text
// counts against the budget until it is closed.
func (t *statements) add(st *stmt) {
	t.byID[st.id] = st
	if st.id < lowIDs {
		if int(st.id) >= len(t.low) {
			t.low = append(t.low, make([]*stmt, int(st.id)+1-len(t.low))...)
		}
		t.low[st.id] = st
	}
	t.kept += len(st.query)
	t.last = st.id
}

// remove forgets st and gives its bytes back (its COM_STMT_CLOSE: close).
func (t *statements) remove(st *stmt) {
	t.dropLongData(st)
	t.kept -= len(st.query)
	delete(t.byID, st.id)
	if st.id < uint32(len(t.low)) {
		t.low[st.id] = nil
	}
	if t.last == st.id {
		t.last = 0
	}
}

// admitLongData reports whether a COM_STMT_SEND_LONG_DATA chunk of n bytes for st (nil: a
// statement the client does not have) may be kept. A chunk that would take the table past its
// budget drops st's long data and leaves the error its next EXECUTE gets (the server reports
// long-data errors there); every later chunk is refused until then (or a RESET).
func (t *statements) admitLongData(st *stmt, n int) bool {
	if st == nil || st.longErr != nil {
		return false
	}
	if t.kept+n > t.maxKept {
		st.longErr = mysql.NewError(mysql.ErrNetPacketTooLarge, "08S01",
			"Long data for prepared statement exceeds sluice's limit of %d bytes per session (limits.max_long_data)", t.maxKept)
		t.dropLongData(st)
		return false
	}
	return true
}

// keepLongData keeps p, a whole COM_STMT_SEND_LONG_DATA command for st (command byte, statement
// id, parameter number, data), for st's next EXECUTE. All of p counts against the budget.
func (t *statements) keepLongData(st *stmt, p []byte) {
	st.longData = append(st.longData, append([]byte(nil), p[5:]...))
	st.longSize += len(p)
	t.kept += len(p)
}

// dropLongData forgets st's long data (sent, reset, or refused) and gives its bytes back.
func (t *statements) dropLongData(st *stmt) {
	t.kept -= st.longSize
	st.longData, st.longSize = st.longData[:0], 0
}

// longDataErr returns, once, the error that admitLongData left for st's next EXECUTE.
func (t *statements) longDataErr(st *stmt) *mysql.SQLError {
	e := st.longErr
	st.longErr = nil
	return e
}

// resetLongData is COM_STMT_RESET's part: st's long data and its error are gone.
func (t *statements) resetLongData(st *stmt) {
	t.dropLongData(st)
	st.longErr = nil
}

// unbind forgets every binding and cursor on bc, a node connection that is closed: a statement
// runs there again only after it is prepared on the connection that replaces it.
func (t *statements) unbind(bc *backend.Conn) {
	for _, st := range t.byID {
		st.unbind(bc)
	}
}

// cursorOn reports whether a statement has a cursor open on bc (a FETCH may follow there).
func (t *statements) cursorOn(bc *backend.Conn) bool {
	for _, st := range t.byID {
		if st.cursorConn == bc {
			return true
		}
	}
	return false
}

// reset forgets every statement (COM_RESET_CONNECTION, COM_CHANGE_USER: the node drops them
// too, and the session's other connections are closed). Ids go on counting: one the client
// still holds names no statement rather than a new one.
func (t *statements) reset() {
	clear(t.byID)
	clear(t.low)
	t.kept, t.last = 0, 0
}

// releaseBuf lets go of the command buffer after a large command.
func (t *statements) releaseBuf() {
	if cap(t.buf) > keepBuffer {
		t.buf = nil
	}
}
