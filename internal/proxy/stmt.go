package proxy

import (
	"errors"
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
// is kept in the session until the next EXECUTE, then sent to whichever connection runs it.

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
	// until the next EXECUTE or RESET.
	longData [][]byte
	longSize int
	longErr  *mysql.SQLError
	// cursorConn is the connection where the last EXECUTE opened a cursor, for FETCH.
	cursorConn *backend.Conn
}

// stmtBinding is the statement's id on one node connection.
type stmtBinding struct {
	bc *backend.Conn
	id uint32
	// typed reports whether this connection has been sent parameter types.
	typed bool
}

// unbind forgets st's binding and cursor on bc, a connection that is closed.
func (st *stmt) unbind(bc *backend.Conn) {
	st.on = slices.DeleteFunc(st.on, func(b stmtBinding) bool { return b.bc == bc })
	if st.cursorConn == bc {
		st.cursorConn = nil
	}
}

func (st *stmt) binding(bc *backend.Conn) *stmtBinding {
	for i := range st.on {
		if st.on[i].bc == bc {
			return &st.on[i]
		}
	}
	return nil
}

// Limits that protect the proxy's memory from one session.
const (
	defaultMaxStatements = 16382    // MySQL's default max_prepared_stmt_count
	defaultMaxLongData   = 64 << 20 // per session, across its statements
)

func (s *session) maxStatements() int {
	if n := s.p.opts.MaxPreparedStatements; n > 0 {
		return n
	}
	return defaultMaxStatements
}

func (s *session) maxLongData() int {
	if n := s.p.opts.MaxLongData; n > 0 {
		return n
	}
	return defaultMaxLongData
}

// lastPrepared is the id MariaDB clients use for "the statement just prepared" when they send
// PREPARE and EXECUTE together.
const lastPrepared = 0xffffffff

func (s *session) lookupStmt(id uint32) *stmt {
	if id == lastPrepared {
		id = s.lastStmtID
	}
	return s.stmts[id]
}

// prepare handles COM_STMT_PREPARE: prepare on the session's node, answer with sluice's id.
func (s *session) prepare() error {
	// The statement's text is kept for the statement's life: it counts against the session's
	// budget, checked on what the header claims before anything is read.
	if n, _, err := s.client.PeekHeader(); err != nil {
		return err
	} else if s.kept+n > s.maxLongData() {
		return s.refuseCommand(n, mysql.NewError(mysql.ErrOutOfResources, "HY000",
			"sluice: this session's prepared statements and long data would exceed %d bytes (limits.max_long_data)", s.maxLongData()))
	}
	p, err := s.readKept()
	if err != nil {
		return err
	}
	if len(s.stmts) >= s.maxStatements() {
		s.client.SetSeq(1)
		return s.writeErr(mysql.NewError(mysql.ErrMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: %d)", s.maxStatements()))
	}
	st := &stmt{query: append([]byte(nil), p[1:]...)}
	st.class = s.reader.classifyPrepared(st.query, s.conns, s.rs.Bound)
	if err := s.prepareHome(st, p); err != nil {
		return s.fail(s.home, err, nil)
	}
	return nil
}

// prepareHome prepares st (whose COM_STMT_PREPARE is p) on the session's home node and relays
// the answer with sluice's statement id in place of the node's.
func (s *session) prepareHome(st *stmt, p []byte) error {
	if _, err := s.use(s.home); err != nil {
		return err
	}
	bc := s.bc
	bc.SetSeq(0)
	if err := bc.WritePacket(p); err != nil {
		return &relayError{err: err}
	}
	if err := bc.FlushBeforeRead(); err != nil {
		return &relayError{err: err}
	}
	n, _, err := bc.PeekHeader()
	if err != nil {
		return &relayError{err: err}
	}
	first, err := bc.PeekPayload(n, 12)
	if err != nil {
		return &relayError{err: err}
	}
	if len(first) == 0 || first[0] != 0x00 || len(first) < 12 {
		// ERR (or anything unexpected): relay it as it is.
		if err := bc.CopyPacket(s.client, n); err != nil {
			return fromNode(err)
		}
		return s.finish(nil)
	}
	backendID := getUint32(first[1:])
	st.columns = uint16(first[5]) | uint16(first[6])<<8
	st.params = uint16(first[7]) | uint16(first[8])<<8
	s.nextStmtID++
	st.id = s.nextStmtID
	// The OK with sluice's id in place of the node's.
	_, seq, _ := bc.PeekHeader()
	s.client.SetSeq(seq)
	if err := s.client.WriteRaw([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq, 0x00,
		byte(st.id), byte(st.id >> 8), byte(st.id >> 16), byte(st.id >> 24)}); err != nil {
		return &relayError{client: true, err: err}
	}
	if err := bc.Discard(9); err != nil {
		return &relayError{err: err}
	}
	if err := bc.CopyN(s.client, n-5); err != nil {
		return fromNode(err)
	}
	bc.SetSeq(seq + 1)
	s.client.SetSeq(seq + 1)
	if st.shape, err = relayDefs(bc, int(st.params), int(st.columns), s.client); err != nil {
		return err
	}
	st.on = append(st.on, stmtBinding{bc: bc, id: backendID})
	s.stmts[st.id] = st
	s.kept += len(st.query)
	s.lastStmtID = st.id
	return s.finish(nil)
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
				return 0, fromNode(err)
			}
			if group.hash && i < group.n {
				p, err := bc.PeekPayload(n, n)
				if err != nil {
					return 0, fromNode(err)
				}
				for _, b := range p {
					shape = (shape ^ uint64(b)) * 1099511628211
				}
			}
			if dst != nil {
				if err := bc.CopyPacket(dst, n); err != nil {
					return 0, fromNode(err)
				}
				continue
			}
			if err := bc.Discard(4 + n); err != nil {
				return 0, fromNode(err)
			}
			bc.SetSeq(bc.Seq() + 1)
		}
	}
	return shape, nil
}

// prepareOn prepares st on bc (a connection that has not seen it), reading the node's answer
// without relaying it.
func (s *session) prepareOn(bc *backend.Conn, st *stmt) (*stmtBinding, error) {
	bc.SetSeq(0)
	s.scratch = append(append(s.scratch[:0], mysql.ComStmtPrepare), st.query...)
	if err := bc.WritePacketFlush(s.scratch); err != nil {
		return nil, &relayError{err: err}
	}
	p, err := bc.ReadPacket()
	if err != nil {
		return nil, &relayError{err: err}
	}
	if mysql.IsERR(p) {
		return nil, mysql.ParseERR(p)
	}
	if len(p) < 12 || p[0] != 0 {
		return nil, &relayError{err: errors.New("malformed prepare response")}
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
		bc.SetSeq(0)
		if err := bc.WritePacketFlush([]byte{mysql.ComStmtClose, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}); err != nil {
			return nil, &relayError{err: err}
		}
		return nil, errShapeDiffers
	}
	st.on = append(st.on, stmtBinding{bc: bc, id: id})
	return &st.on[len(st.on)-1], nil
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
		return s.refuseCommand(n, errMalformed())
	}
	id := getUint32(head[1:])
	st := s.lookupStmt(id)
	switch cmd {
	case mysql.ComStmtClose:
		if err := discardCommand(s.client, n); err != nil {
			return err
		}
		if st != nil {
			s.closeStmt(st)
		}
		return nil
	case mysql.ComStmtSendLongData:
		return s.sendLongData(st, n)
	}
	if st == nil {
		names := map[byte]string{mysql.ComStmtExecute: "mysqld_stmt_execute", mysql.ComStmtBulkExecute: "mysqld_stmt_bulk_execute",
			mysql.ComStmtFetch: "mysqld_stmt_fetch", mysql.ComStmtReset: "mysqld_stmt_reset"}
		return s.refuseCommand(n, mysql.NewError(mysql.ErrUnknownStmtHandler, "HY000", "Unknown prepared statement handler (%d) given to %s", id, names[cmd]))
	}
	switch cmd {
	case mysql.ComStmtExecute, mysql.ComStmtBulkExecute:
		return s.execute(st, n, cmd == mysql.ComStmtBulkExecute)
	case mysql.ComStmtFetch:
		bc := st.cursorConn
		if bc == nil {
			bc = s.bc
		}
		var b *stmtBinding
		if bc != nil {
			b = st.binding(bc)
		}
		if b == nil {
			return s.refuseCommand(n, mysql.NewError(mysql.ErrStmtHasNoOpenCursor, "HY000", "The statement (%d) has no open cursor.", id))
		}
		return s.forwardStmtOn(bc, b.id, n, respRows)
	default: // COM_STMT_RESET
		s.dropLongData(st)
		st.longErr = nil
		var b *stmtBinding
		if s.bc != nil {
			b = st.binding(s.bc)
		}
		if b == nil {
			// Never prepared on this connection: nothing to reset there.
			if err := discardCommand(s.client, n); err != nil {
				return err
			}
			s.client.SetSeq(1)
			return s.writeOKPacket(s.status)
		}
		return s.forwardStmtOn(s.bc, b.id, n, respSingle)
	}
}

// forwardStmtOn relays a statement command to bc (one of the session's connections) outside
// the dispatch path (FETCH, RESET), mapping a failure as fail does.
func (s *session) forwardStmtOn(bc *backend.Conn, id uint32, n int, kind respKind) error {
	r := request{n: n, unread: true}
	err := s.forwardStmt(bc, id, &r, kind)
	if err == nil {
		return nil
	}
	for i, c := range s.conns {
		if c != nil && c.Conn == bc {
			return s.fail(i, err, &r)
		}
	}
	return err
}

// closeStmt closes st on every connection it was prepared on (COM_STMT_CLOSE has no response).
func (s *session) closeStmt(st *stmt) {
	for _, b := range st.on {
		b.bc.SetSeq(0)
		s.scratch = append(s.scratch[:0], mysql.ComStmtClose, byte(b.id), byte(b.id>>8), byte(b.id>>16), byte(b.id>>24))
		if err := b.bc.WritePacket(s.scratch); err != nil {
			continue
		}
		// Flushed with the connection's next command.
	}
	s.dropLongData(st)
	s.kept -= len(st.query)
	delete(s.stmts, st.id)
}

// sendLongData keeps one COM_STMT_SEND_LONG_DATA chunk for the next EXECUTE. A chunk that
// would take the session past its limit drops the statement's long data; the next EXECUTE then
// fails with the reason, as the server reports long-data errors.
func (s *session) sendLongData(st *stmt, n int) error {
	// Checked against the session's budget before anything is buffered: n is what the header
	// claims, and the whole chunk (continuations included) is what the session would keep.
	if st == nil || st.longErr != nil || s.kept+n > s.maxLongData() {
		if st != nil && st.longErr == nil {
			s.longDataTooLarge(st)
		}
		return discardCommand(s.client, n)
	}
	p, err := s.readKept()
	if err != nil {
		return err
	}
	st.longData = append(st.longData, append([]byte(nil), p[5:]...))
	st.longSize += len(p)
	s.kept += len(p)
	return nil
}

func (s *session) longDataTooLarge(st *stmt) {
	st.longErr = mysql.NewError(mysql.ErrNetPacketTooLarge, "08S01",
		"Long data for prepared statement exceeds sluice's limit of %d bytes per session (limits.max_long_data)", s.maxLongData())
	s.dropLongData(st)
}

// readKept reads a command whose content the session keeps (a statement's text, long data),
// bounded by what is left of the session's budget: a command whose 16 MiB continuations take
// it past the budget ends the session (it cannot be skipped once its first packet is read).
func (s *session) readKept() ([]byte, error) {
	s.client.SetSeq(0)
	s.client.MaxPacket = max(s.maxLongData()-s.kept, 1)
	defer func() { s.client.MaxPacket = 0 }()
	return s.client.ReadPacket()
}

// dropLongData forgets st's long data (sent, reset, or refused) and gives its bytes back to the
// session's budget.
func (s *session) dropLongData(st *stmt) {
	s.kept -= st.longSize
	st.longData, st.longSize = st.longData[:0], 0
}

// execute handles COM_STMT_EXECUTE (and MariaDB's COM_STMT_BULK_EXECUTE, bulk): the statement is
// routed like its text, on every EXECUTE. The command is held when it fits the read buffer,
// so that a replica that fails before answering can be replaced by another; the statement's
// long data goes with whichever node runs it, and is gone after.
func (s *session) execute(st *stmt, n int, bulk bool) error {
	defer s.dropLongData(st)
	if e := st.longErr; e != nil {
		// Long data the session would not keep: the EXECUTE gets the reason, as the server
		// reports long-data errors.
		st.longErr = nil
		return s.refuseCommand(n, e)
	}
	r := request{class: st.class, stmt: st.query, n: n, st: st, bulk: bulk, unread: true}
	if n < mysql.MaxPacketPayload {
		if p, err := s.client.PeekPayload(n, n); err == nil && len(p) == n {
			s.cmd = append(s.cmd[:0], p...)
			if err := s.client.Discard(4 + n); err != nil {
				return err
			}
			r.held, r.unread = true, false
			defer s.releaseCmd()
		}
	}
	return s.dispatch(&r)
}

// executeOn runs r, an EXECUTE, on bc, where the statement is bound as b (dispatch's send step).
func (s *session) executeOn(r *request, bc *backend.Conn, b *stmtBinding) error {
	st := r.st
	if r.bulk {
		// Its parameter types come with it (the driver sets SEND_TYPES_TO_SERVER) and it takes
		// no long data; the answer is one OK or ERR (sluice does not offer
		// MARIADB_CLIENT_BULK_UNIT_RESULTS).
		return s.forwardStmt(bc, b.id, r, respResult)
	}
	// Long data goes first, with this connection's id.
	for _, chunk := range st.longData {
		bc.SetSeq(0)
		s.scratch = append(s.scratch[:0], mysql.ComStmtSendLongData, byte(b.id), byte(b.id>>8), byte(b.id>>16), byte(b.id>>24))
		s.scratch = append(s.scratch, chunk...)
		if err := bc.WritePacket(s.scratch); err != nil {
			return &relayError{err: err}
		}
	}
	typesAt := -1
	if st.params > 0 {
		typesAt = 1 + 4 + 1 + 4 + (int(st.params)+7)/8 // the new-params-bound flag
	}
	head := s.cmd
	if !r.held {
		var err error
		if head, err = s.client.PeekPayload(r.n, max(10, typesAt+1+2*int(st.params))); err != nil {
			return &relayError{client: true, err: err}
		}
	}
	kind := respResult
	if len(head) > 5 && head[5]&0x0f != 0 {
		st.cursorConn = bc // a cursor type was asked for: FETCH goes here
		s.usedCursor.Store(true)
		kind = respCursor
	}
	// Parameter types: remember them when bound; supply them when this connection lacks them.
	if typesAt > 0 {
		if len(head) > typesAt && head[typesAt] == 1 && len(head) >= typesAt+1+2*int(st.params) {
			st.types = append(st.types[:0], head[typesAt+1:typesAt+1+2*int(st.params)]...)
			// Types bound anew: the other connections have the old ones, or none.
			for i := range st.on {
				st.on[i].typed = false
			}
			b.typed = true
		} else if len(head) > typesAt && head[typesAt] == 0 && !b.typed && len(st.types) > 0 {
			return s.executeWithTypes(r, b, typesAt, kind)
		}
	}
	return s.forwardStmt(bc, b.id, r, kind)
}

// bindOn returns st's binding on c, preparing st there first when it has none. A node that
// describes the statement otherwise than the client was told (its schema differs) does not run
// it, now or later: errShapeDiffers. Other errors are prepareOn's: the node's refusal
// (*mysql.SQLError) or a broken connection.
func (s *session) bindOn(c *nodeConn, st *stmt) (*stmtBinding, error) {
	if b := st.binding(c.Conn); b != nil {
		return b, nil
	}
	if slices.Contains(st.differs, c.idx) {
		return nil, errShapeDiffers
	}
	b, err := s.prepareOn(c.Conn, st)
	if errors.Is(err, errShapeDiffers) {
		s.log.Info("prepared statement differs on a node; it does not run there", "node", c.name)
		st.differs = append(st.differs, c.idx)
	}
	return b, err
}

// executeWithTypes rewrites an EXECUTE that relies on types bound earlier on another connection,
// adding them, for a connection that prepared the statement lazily.
func (s *session) executeWithTypes(r *request, b *stmtBinding, typesAt int, kind respKind) error {
	p := s.cmd
	if !r.held {
		// Held whole to be rewritten: bounded by the session's budget like long data.
		var err error
		r.unread = false
		if p, err = s.readKept(); err != nil {
			return &relayError{client: true, err: err}
		}
	}
	out := append(s.scratch[:0], p[0], byte(b.id), byte(b.id>>8), byte(b.id>>16), byte(b.id>>24))
	out = append(out, p[5:typesAt]...)
	out = append(out, 1)
	out = append(out, r.st.types...)
	out = append(out, p[typesAt+1:]...)
	s.scratch = out // released after the command when large (session.loop)
	b.typed = true
	return s.sendPacket(b.bc, out, kind)
}

// forwardStmt sends r, a statement command, to bc with the statement id replaced by the node's
// (id), and relays the answer. A held command is sent from s.cmd; otherwise it streams from the
// client's buffer.
func (s *session) forwardStmt(bc *backend.Conn, id uint32, r *request, kind respKind) error {
	if r.held {
		s.cmd[1], s.cmd[2], s.cmd[3], s.cmd[4] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
		return s.sendPacket(bc, s.cmd, kind)
	}
	n := r.n
	r.unread = false
	hdr, err := s.client.PeekPayload(n, 1)
	if err != nil {
		return &relayError{client: true, err: err}
	}
	cmd := hdr[0]
	if err := s.client.Discard(9); err != nil {
		return &relayError{client: true, err: err}
	}
	// Built in s.scratch: a slice literal passed to WriteRaw would be allocated per statement.
	s.scratch = append(s.scratch[:0], byte(n), byte(n>>8), byte(n>>16), 0, cmd,
		byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
	if err := bc.WriteRaw(s.scratch); err != nil {
		return &relayError{err: err, partial: true}
	}
	if err := s.client.CopyN(bc.Conn, n-5); err != nil {
		return toNode(err)
	}
	seq := uint8(1)
	for n == mysql.MaxPacketPayload {
		if n, _, err = s.client.PeekHeader(); err != nil {
			return &relayError{client: true, err: err}
		}
		if err := s.client.CopyPacket(bc.Conn, n); err != nil {
			return toNode(err)
		}
		seq++
	}
	bc.SetSeq(seq)
	s.client.SetSeq(seq)
	if err := bc.FlushBeforeRead(); err != nil {
		return &relayError{err: err}
	}
	return s.relayTimed(bc, kind)
}
