package proxy

import (
	"errors"
	"slices"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
)

// The binary-protocol commands: the session's three entry points (prepare, stmtCommand, execute)
// and the wire work of the statement table (s.stmts), which prepares, executes and closes
// statements on the node connections it is given. Relaying an answer and mapping a failure
// stay with the session (respond, fail); the table sends, the session relays.

// prepare handles COM_STMT_PREPARE: prepare on the session's home node, answer with sluice's id.
func (s *session) prepare() error {
	// The statement's text is kept for the statement's life: it counts against the session's
	// budget, checked on what the header claims before anything is read.
	if n, _, err := s.client.PeekHeader(); err != nil {
		return err
	} else if e := s.stmts.textTooLarge(n); e != nil {
		return s.refuse(&request{n: n, unread: true}, e)
	}
	p, err := readKept(s.client, s.stmts.room())
	if err != nil {
		return err
	}
	if e := s.stmts.full(); e != nil {
		return s.refuse(nil, e)
	}
	st := &stmt{query: append([]byte(nil), p[1:]...)}
	st.class = s.reader.classifyPrepared(st.query, s.nodes.all(), s.rs.Bound)
	c, err := s.nodes.use(s.nodes.home())
	if err == nil {
		// The variables the text reads are the session's before the node describes it (their
		// types are the statement's), as at each EXECUTE.
		err = s.nodes.share.before(&st.class, st.query, c.dialect, c.Conn, false, s.rs.Autocommit)
	}
	if err == nil {
		var failed bool
		var warnings uint16
		if failed, warnings, err = s.stmts.prepareRelayed(c.Conn, s.nodes.home(), stmtContext(c.Conn, s.nodes.state()), st, p, s.client); err == nil {
			// A prepare changes the node's diagnostics area as running the text would.
			s.rs.LearnPrepare(&st.class, s.nodes.home(), failed, warnings)
		}
	}
	if err == nil {
		err = relay.Finish(s.client)
	}
	if err != nil {
		return s.fail(s.nodes.home(), err, nil)
	}
	return nil
}

// stmtCommand handles the commands that name a statement: EXECUTE, FETCH, RESET, CLOSE,
// SEND_LONG_DATA.
func (s *session) stmtCommand(cmd byte, n int) error {
	head, err := s.client.PeekPayload(n, 5)
	if err != nil {
		return err
	}
	if len(head) < 5 {
		if cmd == mysql.ComStmtClose || cmd == mysql.ComStmtSendLongData {
			return discardCommand(s.client, n) // no answer to these
		}
		return s.refuse(&request{n: n, unread: true}, errMalformed())
	}
	id := getUint32(head[1:])
	st := s.stmts.lookup(id)
	switch cmd {
	case mysql.ComStmtClose:
		if err := discardCommand(s.client, n); err != nil {
			return err
		}
		if st != nil {
			s.stmts.close(st)
		}
		return nil
	case mysql.ComStmtSendLongData:
		// Checked against the session's budget before anything is buffered: n is what the
		// header claims, and the whole chunk (continuations included) is what it would keep.
		// A chunk refused leaves its error for the next EXECUTE (admitLongData).
		if !s.stmts.admitLongData(st, n) {
			return discardCommand(s.client, n)
		}
		p, err := readKept(s.client, s.stmts.room())
		if err != nil {
			return err
		}
		s.stmts.keepLongData(st, p)
		return nil
	}
	if st == nil {
		names := map[byte]string{mysql.ComStmtExecute: "mysqld_stmt_execute", mysql.ComStmtBulkExecute: "mysqld_stmt_bulk_execute",
			mysql.ComStmtFetch: "mysqld_stmt_fetch", mysql.ComStmtReset: "mysqld_stmt_reset"}
		return s.refuse(&request{n: n, unread: true}, mysql.NewError(mysql.ErrUnknownStmtHandler, "HY000", "Unknown prepared statement handler (%d) given to %s", id, names[cmd]))
	}
	var b *stmtBinding
	kind := relay.Rows
	switch cmd {
	case mysql.ComStmtExecute, mysql.ComStmtBulkExecute:
		return s.execute(st, n, cmd == mysql.ComStmtBulkExecute)
	case mysql.ComStmtFetch:
		bc := st.cursorConn
		if bc == nil {
			bc = s.nodes.conn()
		}
		if bc != nil {
			b = st.binding(bc)
		}
		if b == nil {
			return s.refuse(&request{n: n, unread: true}, mysql.NewError(mysql.ErrStmtHasNoOpenCursor, "HY000", "The statement (%d) has no open cursor.", id))
		}
	default: // COM_STMT_RESET
		s.stmts.resetLongData(st)
		if s.nodes.conn() != nil {
			b = st.binding(s.nodes.conn())
		}
		if b == nil {
			// Never prepared on this connection: nothing to reset there.
			if err := discardCommand(s.client, n); err != nil {
				return err
			}
			s.client.SetSeq(1)
			return writeOK(s.client, s.status, s.login.caps)
		}
		kind = relay.Single
	}
	// FETCH or RESET, relayed outside the dispatch path; a failure is mapped as fail does. The
	// binding is copied: closing a connection while relaying would move st's bindings.
	bc, node, r := b.bc, b.node, request{n: n, unread: true}
	err = s.stmts.sendCommand(s.client, bc, b.id, &r, nil)
	if err == nil {
		err = s.respond(bc, kind, nil)
	}
	if err != nil {
		return s.fail(node, err, &r)
	}
	return nil
}

// execute handles COM_STMT_EXECUTE (and MariaDB's COM_STMT_BULK_EXECUTE, bulk): the statement is
// routed like its text, on every EXECUTE. The command is held when it fits the read buffer,
// so that a replica that fails before answering can be replaced by another; the statement's
// long data goes with whichever node runs it (statements.sendExecute, from dispatch's send
// step), and is gone after.
func (s *session) execute(st *stmt, n int, bulk bool) error {
	defer s.stmts.dropLongData(st)
	if e := s.stmts.longDataErr(st); e != nil {
		// Long data the session would not keep: the EXECUTE gets the reason, as the server
		// reports long-data errors.
		return s.refuse(&request{n: n, unread: true}, e)
	}
	r := request{class: st.class, stmt: st.query, n: n, st: st, bulk: bulk, unread: true}
	if n < mysql.MaxPacketPayload {
		if p, err := s.client.PeekPayload(n, n); err == nil && len(p) == n {
			s.cmd = append(s.cmd[:0], p...)
			if err := s.client.Discard(4 + n); err != nil {
				return err
			}
			r.held, r.unread = true, false
			defer releaseBuf(&s.cmd)
		}
	}
	return s.dispatch(&r, s.settings.current())
}

// readKept reads from client a command whose content the session keeps (a statement's text,
// long data, an EXECUTE to rewrite), bounded by room, what is left of the session's budget: a
// command whose 16 MiB continuations take it past the budget ends the session (it cannot be
// skipped once its first packet is read).
func readKept(client *mysql.Conn, room int) ([]byte, error) {
	client.SetSeq(0)
	client.MaxPacket = room
	defer func() { client.MaxPacket = 0 }()
	return client.ReadPacket()
}

// prepareRelayed prepares st (whose COM_STMT_PREPARE, read whole, is p) on bc, node node's
// connection, whose session state ctx summarises (stmtContext), and relays the node's answer to
// client with sluice's new statement id in place of the node's; the statement is then kept,
// bound there. An ERR is relayed as it is (nothing is kept: failed), except the node's
// max_prepared_stmt_count refusal while bc keeps idle statements: they are closed and the
// prepare tried once more. warnings is the prepare OK's warning count. The client's response
// is left unflushed.
func (t *statements) prepareRelayed(bc *backend.Conn, node int, ctx uint64, st *stmt, p []byte, client *mysql.Conn) (failed bool, warnings uint16, err error) {
	var n int
	var first []byte
	for try := 0; ; try++ {
		if err := relay.Send(client, bc, p); err != nil {
			return false, 0, err
		}
		if n, _, err = bc.PeekHeader(); err != nil {
			return false, 0, &relay.Error{Err: err}
		}
		if first, err = bc.PeekPayload(n, 12); err != nil {
			return false, 0, &relay.Error{Err: err}
		}
		if try > 0 || !tooManyStmts(first) || bc.CachedStmts() == 0 {
			break
		}
		if err := bc.Discard(4 + n); err != nil {
			return false, 0, &relay.Error{Err: err}
		}
		bc.EvictStmts() // sent with the prepare again
	}
	if len(first) == 0 || first[0] != 0x00 || len(first) < 12 {
		// ERR (or anything unexpected): relay it as it is.
		if err := bc.CopyPacket(client, n); err != nil {
			return false, 0, relay.FromNode(err)
		}
		return true, 0, nil
	}
	warnings = uint16(first[10]) | uint16(first[11])<<8
	backendID := getUint32(first[1:])
	st.columns = uint16(first[5]) | uint16(first[6])<<8
	st.params = uint16(first[7]) | uint16(first[8])<<8
	st.id = t.newID()
	// The OK with sluice's id in place of the node's.
	_, seq, _ := bc.PeekHeader()
	client.SetSeq(seq)
	if err := client.WriteRaw([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq, 0x00,
		byte(st.id), byte(st.id >> 8), byte(st.id >> 16), byte(st.id >> 24)}); err != nil {
		return false, 0, &relay.Error{Client: true, Err: err}
	}
	if err := bc.Discard(9); err != nil {
		return false, 0, &relay.Error{Err: err}
	}
	if err := bc.CopyN(client, n-5); err != nil {
		return false, 0, relay.FromNode(err)
	}
	bc.SetSeq(seq + 1)
	client.SetSeq(seq + 1)
	if st.shape, err = relayDefs(bc, int(st.params), int(st.columns), client); err != nil {
		return false, 0, err
	}
	st.bind(bc, node, backendID, ctx)
	t.add(st)
	return false, warnings, nil
}

// relayDefs relays (dst != nil) or skips the params parameter and columns column definitions
// (with their EOFs) that follow a prepare OK, and returns a hash (FNV-1a) of the column
// definitions: the statement's shape as the node describes it.
func relayDefs(bc *backend.Conn, params, columns int, dst *mysql.Conn) (uint64, error) {
	shape := uint64(14695981039346656037)
	for _, group := range [2]struct {
		n    int
		hash bool
	}{{params, false}, {columns, true}} {
		if group.n == 0 {
			continue
		}
		count := group.n
		if bc.Caps&mysql.ClientDeprecateEOF == 0 {
			count++ // the EOF after the definitions
		}
		for i := 0; i < count; i++ {
			n, _, err := bc.PeekHeader()
			if err != nil {
				return 0, relay.FromNode(err)
			}
			if group.hash && i < group.n {
				p, err := bc.PeekPayload(n, n)
				if err != nil {
					return 0, relay.FromNode(err)
				}
				for _, b := range p {
					shape = (shape ^ uint64(b)) * 1099511628211
				}
			}
			if dst != nil {
				if err := bc.CopyPacket(dst, n); err != nil {
					return 0, relay.FromNode(err)
				}
				continue
			}
			if err := bc.Discard(4 + n); err != nil {
				return 0, relay.FromNode(err)
			}
			bc.SetSeq(bc.Seq() + 1)
		}
	}
	return shape, nil
}

// bindOn returns st's binding on bc (node node's connection, named name, whose session state
// ctx summarises: stmtContext), preparing st there first when it has none and bc keeps no idle
// statement of st's text prepared under ctx (backend.Conn.TakeStmt). A node that describes the
// statement otherwise than the client was told (its schema differs) does not run it, now or
// later: errShapeDiffers. Other errors are prepareOn's: the node's refusal (*mysql.SQLError)
// or a broken connection.
func (t *statements) bindOn(bc *backend.Conn, node int, name string, ctx uint64, st *stmt) (*stmtBinding, error) {
	if b := st.binding(bc); b != nil {
		return b, nil
	}
	if slices.Contains(st.differs, node) {
		return nil, errShapeDiffers
	}
	if c, ok := bc.TakeStmt(ctx, st.query); ok {
		// Prepared there by this session or an earlier one, and let go of. It runs for st
		// only when the node described it as st's client was told: a table altered since
		// either side was prepared makes them differ (then it is closed, and the text
		// prepared afresh, which compares again). The binding starts without parameter
		// types: st's are sent with its first EXECUTE there. (Nothing else of the earlier
		// session's use reaches st: no cursor or long data (letGo), and no "metadata already
		// sent" state, since sluice never offers MARIADB_CLIENT_CACHE_METADATA.)
		if c.Params == st.params && c.Columns == st.columns && c.Shape == st.shape {
			return st.bind(bc, node, c.ID, ctx), nil
		}
		bc.CloseStmt(c.ID)
	}
	b, err := t.prepareOn(bc, node, ctx, st)
	if errors.Is(err, errShapeDiffers) {
		t.log.Info("prepared statement differs on a node; it does not run there", "node", name)
		st.differs = append(st.differs, node)
	}
	return b, err
}

// prepareOn prepares st on bc (a connection that has not seen it) under ctx, reading the node's
// answer without relaying it. Refused for the node's max_prepared_stmt_count while bc keeps
// idle statements, it closes them and tries once more.
func (t *statements) prepareOn(bc *backend.Conn, node int, ctx uint64, st *stmt) (*stmtBinding, error) {
	var p []byte
	for try := 0; ; try++ {
		bc.SetSeq(0)
		t.buf = append(append(t.buf[:0], mysql.ComStmtPrepare), st.query...)
		err := bc.WritePacketFlush(t.buf)
		t.releaseBuf()
		if err != nil {
			return nil, &relay.Error{Err: err}
		}
		if p, err = bc.ReadPacket(); err != nil {
			return nil, &relay.Error{Err: err}
		}
		if try > 0 || !tooManyStmts(p) || bc.EvictStmts() == 0 {
			break
		}
	}
	if mysql.IsERR(p) {
		return nil, mysql.ParseERR(p)
	}
	if len(p) < 12 || p[0] != 0 {
		return nil, &relay.Error{Err: errors.New("malformed prepare response")}
	}
	id := getUint32(p[1:])
	columns, params := int(p[5])|int(p[6])<<8, int(p[7])|int(p[8])<<8
	shape, err := relayDefs(bc, params, columns, nil)
	if err != nil {
		return nil, err
	}
	if columns != int(st.columns) || params != int(st.params) || shape != st.shape {
		// The node describes the statement otherwise than the client was told: its rows would
		// not match the client's metadata. It is closed there and runs on the primary.
		bc.CloseStmt(id)
		if err := bc.Flush(); err != nil {
			return nil, &relay.Error{Err: err}
		}
		return nil, errShapeDiffers
	}
	return st.bind(bc, node, id, ctx), nil
}

// stmtCache is how many idle prepared statements a node connection of a session of login l
// keeps under ps (backend.Conn.KeepStmts): under pool_mode transaction, where the connection
// goes from session to session between statements, backend.DefaultStmtCache, so that the next
// session that runs a text prepared there does not prepare it again; otherwise none: the
// connection is the session's alone (and reset before another session takes it), and a
// statement its client closes is closed on the node at once, as it would be directly.
func (p *Proxy) stmtCache(l *login, ps *PoolSettings) int {
	if ps != nil && ps.Mode == PoolTransaction && p.pooled(l, ps) {
		return backend.DefaultStmtCache
	}
	return 0
}

// tooManyStmts reports whether p, a node's answer to a PREPARE (its first bytes), is its refusal
// for max_prepared_stmt_count (ER 1461).
func tooManyStmts(p []byte) bool {
	return len(p) >= 3 && p[0] == 0xff && uint16(p[1])|uint16(p[2])<<8 == mysql.ErrMaxPreparedStmtCount
}

// stmtContext summarises the session state bc carries, which the caller brought in line with
// the session's (st): the database, the COM_SET_OPTION value and the replayed session statements
// (State.Sum: SET NAMES, sql_mode...), what a statement's text is read with when it is prepared
// there. An idle node statement is taken for a session only under the same summary: a text
// prepared in another database, or under another sql_mode, means something else. It does not
// allocate.
func stmtContext(bc *backend.Conn, st *backend.State) uint64 {
	fp := bc.Fingerprint()
	h := st.Sum(min(fp.Applied, len(st.Stmts)))
	const prime = 1099511628211
	h = (h ^ uint64(fp.Options)) * prime
	for i := 0; i < len(fp.DB); i++ {
		h = (h ^ uint64(fp.DB[i])) * prime
	}
	return (h ^ uint64(len(fp.DB))) * prime
}

// park lets go of every statement bound on bc, which goes to another session (pool_mode
// transaction: giveBack): each node statement stays prepared there, idle in bc's cache, for
// whichever session runs the same text next (backend.Conn.KeepStmt; closed when bc keeps
// none), and the session's bindings there are forgotten: the session may not use bc without
// taking it again.
func (t *statements) park(bc *backend.Conn) {
	for _, st := range t.byID {
		if b := st.binding(bc); b != nil {
			st.letGo(b)
			st.unbind(bc)
		}
	}
}

// close lets go of st on every connection it was prepared on (park's way: kept idle there, or
// closed) and forgets it.
func (t *statements) close(st *stmt) {
	for i := range st.on {
		st.letGo(&st.on[i])
	}
	t.remove(st)
}

// letGo gives b's node statement to b's connection's cache, or closes it (COM_STMT_CLOSE, sent
// with the connection's next command) when another session could find something of st's
// there: a cursor opened, or long data sent (the server keeps long data that an EXECUTE did not
// consume). The caller forgets b.
func (st *stmt) letGo(b *stmtBinding) {
	if b.dirty {
		b.bc.CloseStmt(b.id)
		return
	}
	b.bc.KeepStmt(backend.CachedStmt{ID: b.id, Params: st.params, Columns: st.columns, Shape: st.shape, Context: b.ctx, Text: st.query})
}

// sendExecute sends r, an EXECUTE (or a bulk one) of r.st, to bc, where the statement is bound
// as b (dispatch's send step): the statement's long data first, then the command with the node's
// statement id, rewritten with the parameter types when it relies on types bound on another
// connection. held is the command when r.held; otherwise it streams from client's buffer. It
// returns the kind of answer to relay (relay.Cursor: the EXECUTE opened a cursor, and FETCH goes
// to bc), with client's sequence id set for it; the caller relays.
func (t *statements) sendExecute(client *mysql.Conn, bc *backend.Conn, b *stmtBinding, r *request, held []byte) (relay.Kind, error) {
	st := r.st
	if r.bulk {
		// Its parameter types come with it (the driver sets SEND_TYPES_TO_SERVER) and it takes
		// no long data; the answer is one OK or ERR (sluice does not offer
		// MARIADB_CLIENT_BULK_UNIT_RESULTS).
		return relay.Statement, t.sendCommand(client, bc, b.id, r, held)
	}
	defer t.releaseBuf()
	// Long data goes first, with this connection's id. The node statement is not handed to
	// another session after (letGo).
	if len(st.longData) > 0 {
		b.dirty = true
	}
	for _, chunk := range st.longData {
		bc.SetSeq(0)
		t.buf = append(t.buf[:0], mysql.ComStmtSendLongData, byte(b.id), byte(b.id>>8), byte(b.id>>16), byte(b.id>>24))
		t.buf = append(t.buf, chunk...)
		if err := bc.WritePacket(t.buf); err != nil {
			return relay.Statement, &relay.Error{Err: err}
		}
	}
	typesAt := -1
	if st.params > 0 {
		typesAt = 1 + 4 + 1 + 4 + (int(st.params)+7)/8 // the new-params-bound flag
	}
	head := held
	if !r.held {
		var err error
		if head, err = client.PeekPayload(r.n, max(10, typesAt+1+2*int(st.params))); err != nil {
			return relay.Statement, &relay.Error{Client: true, Err: err}
		}
	}
	kind := relay.Statement
	if len(head) > 5 && head[5]&0x0f != 0 {
		st.cursorConn = bc // a cursor type was asked for: FETCH goes here
		b.dirty = true     // closed, not handed on, when let go of (letGo)
		kind = relay.Cursor
	}
	// Parameter types: remember them when bound; supply them when this connection lacks them.
	if typesAt > 0 {
		if len(head) > typesAt && head[typesAt] == 1 && len(head) >= typesAt+1+2*int(st.params) {
			st.rebound(b, head[typesAt+1:typesAt+1+2*int(st.params)])
		} else if len(head) > typesAt && head[typesAt] == 0 && !b.typed && len(st.types) > 0 {
			return kind, t.sendWithTypes(client, b, r, held, typesAt)
		}
	}
	return kind, t.sendCommand(client, bc, b.id, r, held)
}

// sendWithTypes sends r, an EXECUTE that relies on types bound earlier on another connection, to
// b's connection (which prepared the statement lazily) rewritten with those types; typesAt is
// where its new-params-bound flag is.
func (t *statements) sendWithTypes(client *mysql.Conn, b *stmtBinding, r *request, held []byte, typesAt int) error {
	p := held
	if !r.held {
		// Held whole to be rewritten: bounded by the session's budget like long data.
		var err error
		r.unread = false
		if p, err = readKept(client, t.room()); err != nil {
			return &relay.Error{Client: true, Err: err}
		}
	}
	out := append(t.buf[:0], p[0], byte(b.id), byte(b.id>>8), byte(b.id>>16), byte(b.id>>24))
	out = append(out, p[5:typesAt]...)
	out = append(out, 1)
	out = append(out, r.st.types...)
	out = append(out, p[typesAt+1:]...)
	t.buf = out
	b.typed = true
	return relay.Send(client, b.bc, out)
}

// sendCommand sends r, a statement command, to bc with the statement id replaced by the node's
// (id), and sets client's sequence id for the answer. A held command is sent from held;
// otherwise it streams from client's buffer.
func (t *statements) sendCommand(client *mysql.Conn, bc *backend.Conn, id uint32, r *request, held []byte) error {
	if r.held {
		held[1], held[2], held[3], held[4] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
		return relay.Send(client, bc, held)
	}
	n := r.n
	r.unread = false
	hdr, err := client.PeekPayload(n, 1)
	if err != nil {
		return &relay.Error{Client: true, Err: err}
	}
	cmd := hdr[0]
	if err := client.Discard(9); err != nil {
		return &relay.Error{Client: true, Err: err}
	}
	// Built in t.buf: a slice literal passed to WriteRaw would be allocated per statement.
	t.buf = append(t.buf[:0], byte(n), byte(n>>8), byte(n>>16), 0, cmd,
		byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
	if err := bc.WriteRaw(t.buf); err != nil {
		return &relay.Error{Err: err, Partial: true}
	}
	if err := client.CopyN(bc.Conn, n-5); err != nil {
		return relay.ToNode(err)
	}
	seq := uint8(1)
	for n == mysql.MaxPacketPayload {
		if n, _, err = client.PeekHeader(); err != nil {
			return &relay.Error{Client: true, Err: err}
		}
		if err := client.CopyPacket(bc.Conn, n); err != nil {
			return relay.ToNode(err)
		}
		seq++
	}
	bc.SetSeq(seq)
	client.SetSeq(seq)
	if err := bc.FlushBeforeRead(); err != nil {
		return &relay.Error{Err: err}
	}
	return nil
}

// errShapeDiffers: a node prepared a statement with other parameters or columns than the node
// the client prepared it on.
var errShapeDiffers = errors.New("the node describes the prepared statement differently")

// errNeedReprepare is what the client gets when a statement cannot run where it has the shape it
// was told (the server's own error for a statement whose tables changed).
var errNeedReprepare = mysql.NewError(mysql.ErrNeedReprepare, "HY000", "Prepared statement needs to be re-prepared")

// errMalformed is the server's answer to a command too short for what it must hold.
func errMalformed() *mysql.SQLError {
	return mysql.NewError(mysql.ErrMalformedPacket, "HY000", "Malformed communication packet")
}

func getUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
