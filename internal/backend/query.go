package backend

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Query is for the control plane (the monitor's SHOW SLAVE STATUS, SELECT @@read_only, ...): a
// small text-protocol result decoded into strings. The forwarding path never decodes rows; it
// relays them.

// Bounds of a Query result. A result past either is read to its end and dropped, and Query
// returns ErrResultTooLarge: the monitor's queries return a few rows, and a node must not be
// able to make sluice hold an unbounded result.
const (
	// MaxQueryRows bounds the rows of a Query result.
	MaxQueryRows = 10_000
	// MaxQueryBytes bounds the memory a Query result holds: the bytes of its column names and
	// row packets, plus the fixed size of a Value per cell. It also bounds one packet of the
	// answer (a larger one fails with mysql.ErrPacketTooLarge and the connection is unusable).
	MaxQueryBytes = 1 << 20
)

// ErrResultTooLarge is returned by Query for a result past MaxQueryRows or MaxQueryBytes. The
// connection stays usable.
var ErrResultTooLarge = errors.New("backend: query result larger than the bounds of Query")

// Value is one cell of a text result: its text, or NULL. (A NULL is told apart from the empty
// string; sluice does not import database/sql for its NullString.)
type Value struct {
	S    string
	Null bool
}

// Rows is the result of Query: the column names, and the rows, each with one Value per column.
// A statement without a result set (an OK) gives no columns and no rows.
//
// The cells of one row share one string allocation (the row packet's bytes); Rows is not tied to
// the connection's buffers.
type Rows struct {
	Columns []string
	Values  [][]Value
}

// Map returns row i as a map from column name to text, for results looked up by name (SHOW
// SLAVE STATUS has some 60 columns). A NULL cell has no entry, so `v, ok := m[name]` tells NULL
// (ok false) from the empty string; of two columns with the same name the first wins. A row
// that does not exist (a replica-status query on a node that replicates from nobody returns
// none) gives a nil map, from which every lookup reports absent.
func (r *Rows) Map(i int) map[string]string {
	if r == nil || i < 0 || i >= len(r.Values) {
		return nil
	}
	row := r.Values[i]
	m := make(map[string]string, len(r.Columns))
	for j, name := range r.Columns {
		if row[j].Null {
			continue
		}
		if _, dup := m[name]; !dup {
			m[name] = row[j].S
		}
	}
	return m
}

// Query runs q with COM_QUERY and returns its first result decoded: a result set's columns and
// rows, or, for a statement that returns none, a Rows without columns or rows. Under the
// classic protocol and CLIENT_DEPRECATE_EOF alike.
//
// Further results (a multi-statement, a CALL) are read and dropped, so the connection is ready
// for its next command; an ERR in any of them is returned in place of the rows, as the statement
// as a whole failed. A refusal of the node is a *mysql.SQLError, a result past the bounds
// ErrResultTooLarge; after those, and after a malformed row, the connection stays usable. After
// any other error (transport, a packet past MaxQueryBytes) close it.
func (c *Conn) Query(q string) (*Rows, error) {
	buf := append(c.Scratch(), mysql.ComQuery)
	buf = append(buf, q...)
	if err := c.send(buf); err != nil {
		return nil, err
	}
	// One packet past the bound is refused before it is read into memory.
	defer func(limit int) { c.MaxPacket = limit }(c.MaxPacket)
	c.MaxPacket = MaxQueryBytes
	rows := &Rows{}
	err := c.readResults(rows)
	// The packet buffer may have grown with the result; an idle connection does not keep that.
	c.ReleaseLarge(64 << 10)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// drained reports whether err, from readResultSet, left the result read to its end.
func drained(err error) bool {
	var m *malformedRowError
	return err == ErrResultTooLarge || errors.As(err, &m)
}

// malformedRowError is a row that does not decode as a text row of the result's columns.
type malformedRowError struct{ reason string }

func (e *malformedRowError) Error() string { return "backend: malformed text row: " + e.reason }

// valueSize is what one cell costs besides its bytes, counted against MaxQueryBytes.
const valueSize = int(unsafe.Sizeof(Value{}))

// readResultSet reads a text result set whose column-count packet is first, up to its
// terminator, and returns the terminator's status. Into keep, when not nil, go the column names
// and the rows. A result set past the bounds, or with a malformed row, is read to its end
// and reported as ErrResultTooLarge or a *malformedRowError, with keep emptied.
func (c *Conn) readResultSet(first []byte, keep *Rows) (uint16, error) {
	n, _, null, err := mysql.ReadLenEncInt(first)
	if err != nil || null || n == 0 {
		return 0, fmt.Errorf("backend: malformed column count 0x%x", first)
	}
	var failed error
	size := 0
	fail := func(err error) {
		if failed == nil {
			failed = err
		}
		if keep != nil {
			keep.Columns, keep.Values = nil, nil
			keep = nil
		}
	}
	for i := uint64(0); i < n; i++ {
		p, err := c.readDefinition()
		if err != nil {
			return 0, err
		}
		if keep == nil {
			continue
		}
		name, err := columnName(p)
		if err != nil {
			return 0, err
		}
		if size += len(name); size > MaxQueryBytes {
			fail(ErrResultTooLarge)
			continue
		}
		keep.Columns = append(keep.Columns, string(name))
	}
	if c.Caps&mysql.ClientDeprecateEOF == 0 {
		// The classic EOF after the column definitions.
		p, err := c.readDefinition()
		if err != nil {
			return 0, err
		}
		if !mysql.IsEOF(p, len(p)) {
			return 0, fmt.Errorf("backend: packet 0x%02x in place of the EOF after the column definitions", p[0])
		}
	}
	for {
		p, err := c.readPacket()
		if err != nil {
			return 0, err
		}
		switch {
		case mysql.IsERR(p):
			// A row cannot start with 0xff (not a length): the statement failed half way.
			return 0, mysql.ParseERR(p)
		case mysql.IsEOF(p, len(p)):
			// A row starting with 0xfe (an 8-byte length) is at least 16 MiB long.
			status, err := mysql.TerminatorStatus(p, c.Caps)
			if err != nil {
				return 0, err
			}
			return status, failed
		}
		if keep == nil {
			continue
		}
		size += len(p) + valueSize*len(keep.Columns)
		if size > MaxQueryBytes || len(keep.Values) == MaxQueryRows {
			fail(ErrResultTooLarge)
			continue
		}
		row, err := textRow(p, len(keep.Columns))
		if err != nil {
			fail(err)
			continue
		}
		keep.Values = append(keep.Values, row)
	}
}

// readDefinition reads a packet of a result set's header (a column definition, the classic EOF
// after them), where an ERR means the statement failed: that ERR comes back as the node's
// *mysql.SQLError (the connection stays usable), any other packet as it is. It allocates only
// for the error.
func (c *Conn) readDefinition() ([]byte, error) {
	p, err := c.readPacket()
	if err != nil {
		return nil, err
	}
	if mysql.IsERR(p) {
		return nil, mysql.ParseERR(p)
	}
	return p, nil
}

// columnName returns the name (the alias the statement gave) of a ColumnDefinition41: the fifth
// length-encoded string, after catalog, schema, table and original table. MariaDB's extended
// metadata comes later in the packet and does not move it.
func columnName(p []byte) ([]byte, error) {
	for range 4 {
		_, k, err := mysql.ReadLenEncString(p)
		if err != nil {
			return nil, fmt.Errorf("backend: malformed column definition: %w", err)
		}
		p = p[k:]
	}
	name, _, err := mysql.ReadLenEncString(p)
	if err != nil {
		return nil, fmt.Errorf("backend: malformed column definition: %w", err)
	}
	return name, nil
}

// textRow decodes a text-protocol row of cols cells: each a length-encoded string, or 0xfb for
// NULL. The cells are substrings of one copy of the packet.
func textRow(p []byte, cols int) ([]Value, error) {
	s := string(p)
	row := make([]Value, cols)
	off := 0
	for j := range row {
		if off >= len(p) {
			return nil, &malformedRowError{fmt.Sprintf("%d cells, want %d", j, cols)}
		}
		v, k, null, err := mysql.ReadLenEncInt(p[off:])
		if err != nil {
			return nil, &malformedRowError{err.Error()}
		}
		off += k
		if null {
			row[j].Null = true
			continue
		}
		if v > uint64(len(p)-off) {
			return nil, &malformedRowError{"cell longer than the row"}
		}
		row[j].S = s[off : off+int(v)]
		off += int(v)
	}
	if off != len(p) {
		return nil, &malformedRowError{fmt.Sprintf("%d bytes after the last of %d cells", len(p)-off, cols)}
	}
	return row, nil
}

// WriteQuery writes stmt as a COM_QUERY into c's write buffer without sending it: a command
// that goes out with the next one, in the same round trip (its answer comes first). The scratch
// buffer keeps its capacity; nothing is allocated once it has grown.
func (c *Conn) WriteQuery(stmt ...[]byte) error {
	buf := append(c.Scratch(), mysql.ComQuery)
	for _, s := range stmt {
		buf = append(buf, s...)
	}
	c.KeepScratch(buf)
	c.SetSeq(0)
	return c.WritePacket(buf)
}

// ReadScalarIs reads the answer to a COM_QUERY whose result is one value (SELECT f(...)) and
// reports whether that value is want. Any other answer is false: no result set, NULL, another
// shape; a refusal of the node is returned as *mysql.SQLError (the connection stays usable, as
// it does after a false). It does not allocate, save for the node's error. Any other error leaves
// the answer partly read: close the connection.
func (c *Conn) ReadScalarIs(want string) (bool, error) {
	c.SetSeq(1)
	p, err := c.readPacket()
	if err != nil {
		return false, err
	}
	switch {
	case mysql.IsERR(p):
		return false, mysql.ParseERR(p)
	case mysql.IsOK(p) || p[0] == localInfileHeader:
		return false, c.finishResults(p)
	}
	n, _, null, err := mysql.ReadLenEncInt(p)
	if err != nil || null || n == 0 || n > 4096 {
		return false, fmt.Errorf("backend: malformed column count 0x%x", p)
	}
	for i := uint64(0); i < n; i++ {
		if _, err = c.readDefinition(); err != nil {
			return false, err
		}
	}
	if c.Caps&mysql.ClientDeprecateEOF == 0 {
		if p, err = c.readPacket(); err != nil {
			return false, err
		}
		if !mysql.IsEOF(p, len(p)) {
			return false, fmt.Errorf("backend: packet 0x%02x in place of the EOF after the column definitions", p[0])
		}
	}
	is, rows := false, 0
	for {
		if p, err = c.readPacket(); err != nil {
			return false, err
		}
		switch {
		case mysql.IsERR(p):
			return false, mysql.ParseERR(p)
		case mysql.IsEOF(p, len(p)):
			status, err := mysql.TerminatorStatus(p, c.Caps)
			if err != nil {
				return false, err
			}
			c.Status = status
			if status&mysql.StatusMoreResultsExists != 0 {
				if err := c.readResults(nil); err != nil {
					return false, err
				}
			}
			return is && rows == 1, nil
		}
		rows++
		if rows == 1 && n == 1 && p[0] != 0xfb {
			v, _, err := mysql.ReadLenEncString(p)
			is = err == nil && string(v) == want
		}
	}
}

// finishResults reads the rest of an answer whose first packet p (an OK, or a LOCAL INFILE
// request) was read already.
func (c *Conn) finishResults(p []byte) error {
	if p[0] == localInfileHeader {
		if err := c.WritePacketFlush(nil); err != nil {
			return err
		}
		if err := c.readResults(nil); err != nil {
			return err
		}
		return errLocalInfile
	}
	ok, err := mysql.ParseOK(p, c.Caps)
	if err != nil {
		return err
	}
	c.Status = ok.Status
	if ok.Status&mysql.StatusMoreResultsExists != 0 {
		return c.readResults(nil)
	}
	return nil
}

// DiscardResults reads and drops the answer to a command already sent whose results are OK
// packets and result sets (text or binary rows; not a cursor's): what a pipelined command that is
// no longer wanted answered. The node's refusal is returned as *mysql.SQLError; after it, and
// after nil, the connection is ready for its next command.
func (c *Conn) DiscardResults() error {
	c.SetSeq(1)
	return c.readResults(nil)
}

// selectDatabase is the statement ResetSession asks the schema with.
var selectDatabase = []byte("SELECT DATABASE()")

// ResetSession resets the node's session (COM_RESET_CONNECTION: the node's own reset of
// everything a client may have left, mariadb-facts.md §9) and, with askDB, asks which schema
// the reset kept (SELECT DATABASE()); on a read-only connection the read-only guard, which the
// reset ended, follows. All of them go out in one write: one round trip. db is that schema, ""
// for none, or "" without askDB. Every answer is read before it returns, whatever they are.
// The reset's refusal is the node's *mysql.SQLError; any error leaves the session in a state
// the caller does not know: close the connection. c.Status is the status of the last answer.
// The idle prepared statements c keeps are forgotten as the reset is sent, whatever the answer.
// On success c is at rest (Wake): nothing of a session on it, the guard in force where it
// belongs, no GTID tracking (the reset put session_track_system_variables back).
func (c *Conn) ResetSession(askDB bool) (db string, err error) {
	c.ForgetStmts() // the reset drops the node's prepared statements (as Command's does)
	c.forgetUserVars()
	c.rested, c.TracksGTIDs = false, false
	c.unguarded = true
	c.SetSeq(0)
	if err := c.WritePacket([]byte{mysql.ComResetConnection}); err != nil {
		return "", err
	}
	if askDB {
		if err := c.WriteQuery(selectDatabase); err != nil {
			return "", err
		}
	}
	if c.readOnly {
		if err := c.WriteQuery([]byte(ReadOnlyGuard)); err != nil {
			return "", err
		}
	}
	if err := c.Flush(); err != nil {
		return "", err
	}
	err = c.readCommandAnswer()
	if askDB {
		var rows Rows
		limit := c.MaxPacket
		c.MaxPacket = MaxQueryBytes
		c.SetSeq(1)
		dbErr := c.readResults(&rows)
		c.MaxPacket = limit
		c.ReleaseLarge(64 << 10)
		switch {
		case err != nil:
		case dbErr != nil:
			err = dbErr
		case len(rows.Values) != 1 || len(rows.Values[0]) != 1:
			err = errors.New("backend: SELECT DATABASE() did not answer one value")
		default:
			db = rows.Values[0][0].S
		}
	}
	if c.readOnly {
		if gerr := c.readCommandAnswer(); err == nil {
			err = gerr
		}
	}
	if err != nil {
		return "", err
	}
	c.unguarded, c.rested, c.clean = false, true, true
	return db, nil
}
