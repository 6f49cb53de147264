package backend

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/mysql"
)

// User variables and LAST_INSERT_ID live on a node connection. A connection pool that moves a
// session from one connection to another carries them: ReadUserVars reads the values a
// statement may have set, with their types and character sets, in one round trip, and
// AppendRestore writes the one statement that recreates them (and LAST_INSERT_ID) on the
// connection the session lands on next. Which variables a statement sets is
// classify.UserVars's question; when to read and restore is the session's.

// Bounds of ReadUserVars. A variable longer than MaxUserVarBytes is not sent (the answer says
// only its length) and ReadUserVars reports ErrUserVarTooLarge: such a session is pinned
// rather than its value held by sluice and replayed. With MaxUserVarsPerRead the row of one
// answer stays under about 4 MiB.
const (
	// MaxUserVarBytes bounds one variable's value, in bytes of its own character set.
	MaxUserVarBytes = 64 << 10
	// MaxUserVarsPerRead bounds the variables one ReadUserVars reads (3 columns each).
	MaxUserVarsPerRead = 64
	// maxUserVarsPacket bounds one packet of the answer: the row, each value once, a
	// collation name and a length per variable.
	maxUserVarsPacket = MaxUserVarsPerRead*(MaxUserVarBytes+128) + 64<<10
)

// ErrUserVarTooLarge: a variable's value is longer than MaxUserVarBytes (errors.Is matches a
// *UserVarTooLargeError). The connection stays usable.
var ErrUserVarTooLarge = errors.New("backend: user variable larger than MaxUserVarBytes")

// UserVarTooLargeError names the variable whose value ReadUserVars did not read.
type UserVarTooLargeError struct {
	Name string
	Len  int64 // bytes
}

func (e *UserVarTooLargeError) Error() string {
	return fmt.Sprintf("backend: user variable @%s holds %d bytes, more than %d", e.Name, e.Len, MaxUserVarBytes)
}

// Is makes errors.Is(err, ErrUserVarTooLarge) true.
func (e *UserVarTooLargeError) Is(target error) bool { return target == ErrUserVarTooLarge }

// UnreadValueError: the node answered a read of values (ReadUserVars, ReadSessionVars) whole,
// but with what does not read as the values asked for (a column type, a row count, a value
// that is not its type's): no value is taken, and the connection stays usable.
type UnreadValueError struct{ Err error }

func (e *UnreadValueError) Error() string { return e.Err.Error() }
func (e *UnreadValueError) Unwrap() error { return e.Err }

// UserVarType is what a user variable holds, as the server keeps it: a user variable is a
// string (with a character set and collation), a signed or unsigned 64-bit integer, a DECIMAL
// or a DOUBLE. Temporal values are strings there.
type UserVarType uint8

// The types.
const (
	UserVarString   UserVarType = iota // Collation tells the character set; "binary" for bytes
	UserVarInt                         // BIGINT
	UserVarUnsigned                    // BIGINT UNSIGNED
	UserVarDecimal                     // DECIMAL: Value keeps its scale (1.50)
	UserVarDouble                      // DOUBLE
)

var userVarTypeNames = [...]string{"string", "int", "unsigned", "decimal", "double"}

func (t UserVarType) String() string {
	if int(t) < len(userVarTypeNames) {
		return userVarTypeNames[t]
	}
	return "UserVarType(" + strconv.Itoa(int(t)) + ")"
}

// UserVar is one user variable's value as ReadUserVars read it from a node. A variable that was
// never set reads as a NULL binary string, as SET @a = NULL leaves it: the two behave alike.
// A UserVar is a plain value: whoever holds it owns it.
type UserVar struct {
	// Name is the variable's name, unquoted, in the session's character_set_client
	// (classify.AppendUserVarName).
	Name string
	Type UserVarType
	// Null: the value is NULL (of Type: CAST(NULL AS SIGNED) is an integer NULL).
	Null bool
	// Value is, for a number, its text as the server printed it (an integer, 1.50, 1.5e-7);
	// for a string, its bytes in its own character set.
	Value string
	// Collation is a string's collation (utf8mb4_general_ci, binary), NULL strings included;
	// empty for numbers.
	Collation string
}

// Column types of a ColumnDefinition41 that a user variable's value is sent as.
const (
	typeDecimal    = 0
	typeTiny       = 1
	typeShort      = 2
	typeLong       = 3
	typeFloat      = 4
	typeDouble     = 5
	typeNull       = 6
	typeLongLong   = 8
	typeInt24      = 9
	typeVarchar    = 15
	typeNewDecimal = 246
	typeTinyBlob   = 249
	typeMediumBlob = 250
	typeLongBlob   = 251
	typeBlob       = 252
	typeVarString  = 253
	typeString     = 254

	flagUnsigned = 0x20
)

// AppendReadUserVars appends the statement ReadUserVars sends: three columns per name, then
// LAST_INSERT_ID() when lastInsertID. For @a:
//
//	IF(FALSE,@a,NULL)                                       always NULL; its definition gives @a's type and sign
//	CAST(CONCAT_WS(' ',COLLATION(@a),LENGTH(@a)) AS BINARY)  the collation and the length in bytes (the collation alone when NULL)
//	IF(LENGTH(@a)<=N,CAST(@a AS BINARY),NULL)               the value: a string's own bytes, a number's text
//
// As binary the value comes as it is: a string in another character set than the session's
// character_set_results would come converted otherwise, and a DECIMAL keeps its own scale
// (IF(…, @a, …) would print it padded to 38 digits). A number's text is the one SELECT @a
// prints (0.30000000000000004, 1.2345678901234567e19, 1.50). Each value is sent once, and not
// at all past N (MaxUserVarBytes). Checked on MariaDB 10.11. The statement reads no table: it
// leaves the session's warnings and LAST_INSERT_ID as they were, but, like any SELECT, sets
// FOUND_ROWS() and ROW_COUNT().
func AppendReadUserVars(dst []byte, names []string, lastInsertID bool) []byte {
	dst = append(dst, "SELECT "...)
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendValueColumns(dst, appendUserVarRef(nil, name), MaxUserVarBytes)
	}
	if lastInsertID {
		if len(names) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, "LAST_INSERT_ID()"...)
	}
	return dst
}

// appendValueColumns appends the three columns that read the value of v (a variable's
// reference: @`a`, @@session.a) with its type, collation and length, the value itself not
// sent past max bytes (AppendReadUserVars).
func appendValueColumns(dst, v []byte, max int) []byte {
	dst = append(dst, "IF(FALSE,"...)
	dst = append(dst, v...)
	dst = append(dst, ",NULL),CAST(CONCAT_WS(' ',COLLATION("...)
	dst = append(dst, v...)
	dst = append(dst, "),LENGTH("...)
	dst = append(dst, v...)
	dst = append(dst, ")) AS BINARY),IF(LENGTH("...)
	dst = append(dst, v...)
	dst = append(dst, ")<="...)
	dst = strconv.AppendInt(dst, int64(max), 10)
	dst = append(dst, ",CAST("...)
	dst = append(dst, v...)
	return append(dst, " AS BINARY),NULL)"...)
}

// appendUserVarRef appends @`name`, a backquote in the name doubled.
func appendUserVarRef(dst []byte, name string) []byte {
	dst = append(dst, "@`"...)
	for i := 0; i < len(name); i++ {
		if name[i] == '`' {
			dst = append(dst, '`')
		}
		dst = append(dst, name[i])
	}
	return append(dst, '`')
}

// ReadUserVars reads the user variables names (unquoted, as classify.AppendUserVarName gives
// them; at most MaxUserVarsPerRead) from the connection in one round trip, and its
// LAST_INSERT_ID() when lastInsertID (else 0 is returned). The connection's
// character_set_client must be the one the names are written in (the session's).
//
// A node's refusal comes back as its *mysql.SQLError, a value past MaxUserVarBytes as a
// *UserVarTooLargeError (the others are read; the connection stays usable after both). A
// value that does not read as its type (a node that sends what no server does) is an error
// after which the connection is usable too; a transport or protocol error leaves the answer
// partly read: close the connection.
func (c *Conn) ReadUserVars(names []string, lastInsertID bool) ([]UserVar, uint64, error) {
	if len(names) > MaxUserVarsPerRead {
		return nil, 0, fmt.Errorf("backend: %d user variables to read, more than %d", len(names), MaxUserVarsPerRead)
	}
	if len(names) == 0 && !lastInsertID {
		return nil, 0, nil
	}
	buf := append(c.Scratch(), mysql.ComQuery)
	return c.readValues(AppendReadUserVars(buf, names, lastInsertID), names, lastInsertID, MaxUserVarBytes, false)
}

// readValues sends query (a COM_QUERY packet's payload) that reads names' values in three
// columns each (appendValueColumns, the values not sent past max bytes) and, when
// lastInsertID, LAST_INSERT_ID() after them, and reads its answer: ReadUserVars's, for user
// variables and for system variables (ReadSessionVars; sysVars: a boolean's text is ON or
// OFF, read as 1 or 0).
func (c *Conn) readValues(query []byte, names []string, lastInsertID bool, max int64, sysVars bool) ([]UserVar, uint64, error) {
	if err := c.send(query); err != nil {
		return nil, 0, err
	}
	defer func(limit int) {
		c.MaxPacket = limit
		c.ReleaseLarge(64 << 10)
	}(c.MaxPacket)
	c.MaxPacket = maxUserVarsPacket

	p, err := c.readPacket()
	if err != nil {
		return nil, 0, err
	}
	switch {
	case mysql.IsERR(p):
		return nil, 0, mysql.ParseERR(p)
	case mysql.IsOK(p) || p[0] == localInfileHeader:
		if err := c.finishResults(p); err != nil {
			return nil, 0, err
		}
		return nil, 0, errors.New("backend: no result set for the user variables")
	}
	cols := 3 * len(names)
	if lastInsertID {
		cols++
	}
	if n, _, null, err := mysql.ReadLenEncInt(p); err != nil || null || n != uint64(cols) {
		return nil, 0, fmt.Errorf("backend: column count 0x%x for %d user variables", p, len(names))
	}
	vars := make([]UserVar, len(names))
	var failed error
	for i := 0; i < cols; i++ {
		p, err := c.readDefinition()
		if err != nil {
			return nil, 0, err
		}
		if i%3 != 0 || i/3 >= len(names) {
			continue
		}
		typ, flags, err := columnType(p, c.MariaDBCaps&mysql.MariaDBClientExtendedMetadata != 0)
		if err != nil {
			return nil, 0, err
		}
		v := &vars[i/3]
		v.Name = names[i/3]
		switch typ {
		case typeLongLong, typeLong, typeInt24, typeShort, typeTiny:
			v.Type = UserVarInt
			if flags&flagUnsigned != 0 {
				v.Type = UserVarUnsigned
			}
		case typeNewDecimal, typeDecimal:
			v.Type = UserVarDecimal
		case typeDouble, typeFloat:
			v.Type = UserVarDouble
		case typeVarchar, typeVarString, typeString, typeTinyBlob, typeMediumBlob, typeLongBlob, typeBlob, typeNull:
			v.Type = UserVarString
		default:
			if failed == nil {
				failed = fmt.Errorf("backend: user variable @%s sent as column type %d", v.Name, typ)
			}
		}
	}
	if c.Caps&mysql.ClientDeprecateEOF == 0 {
		if p, err = c.readPacket(); err != nil {
			return nil, 0, err
		}
		if !mysql.IsEOF(p, len(p)) {
			return nil, 0, fmt.Errorf("backend: packet 0x%02x in place of the EOF after the column definitions", p[0])
		}
	}
	var lid uint64
	rows := 0
	for {
		if p, err = c.readPacket(); err != nil {
			return nil, 0, err
		}
		switch {
		case mysql.IsERR(p):
			return nil, 0, mysql.ParseERR(p)
		case mysql.IsEOF(p, len(p)):
			status, err := mysql.TerminatorStatus(p, c.Caps)
			if err != nil {
				return nil, 0, err
			}
			c.Status = status
			if status&mysql.StatusMoreResultsExists != 0 {
				if err := c.readResults(nil); err != nil {
					return nil, 0, err
				}
			}
			if failed == nil && rows != 1 {
				failed = fmt.Errorf("backend: %d rows of user variables", rows)
			}
			if failed != nil {
				if !errors.Is(failed, ErrUserVarTooLarge) {
					failed = &UnreadValueError{Err: failed}
				}
				return nil, 0, failed
			}
			return vars, lid, nil
		}
		rows++
		if rows > 1 || failed != nil {
			continue
		}
		row, err := textRow(p, cols)
		if err != nil {
			failed = err
			continue
		}
		for i := range vars {
			if err := vars[i].decode(row[3*i+1], row[3*i+2], max, sysVars); err != nil && failed == nil {
				failed = err
			}
		}
		if lastInsertID {
			v := row[cols-1]
			if lid, err = strconv.ParseUint(v.S, 10, 64); err != nil || v.Null {
				failed = fmt.Errorf("backend: LAST_INSERT_ID() read as %q", v.S)
			}
		}
	}
}

// decode sets v's value from its second and third cells (AppendReadUserVars), v.Type being set
// from the first column's definition.
func (v *UserVar) decode(meta, val Value, max int64, sysVar bool) error {
	if meta.Null {
		return fmt.Errorf("backend: no collation for user variable @%s", v.Name)
	}
	coll, size, sized := meta.S, int64(-1), false
	if i := strings.IndexByte(meta.S, ' '); i >= 0 {
		n, err := strconv.ParseInt(meta.S[i+1:], 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("backend: user variable @%s: length %q", v.Name, meta.S[i+1:])
		}
		coll, size, sized = meta.S[:i], n, true
	}
	if !validCollation(coll) {
		return fmt.Errorf("backend: user variable @%s: collation %q", v.Name, coll)
	}
	if size > max {
		return &UserVarTooLargeError{Name: v.Name, Len: size}
	}
	v.Null = !sized // LENGTH(NULL) is NULL, and CONCAT_WS leaves it out
	if v.Type == UserVarString {
		v.Collation = coll
	}
	if v.Null {
		return nil
	}
	if val.Null || int64(len(val.S)) != size {
		return fmt.Errorf("backend: user variable @%s: %d bytes of %d", v.Name, len(val.S), size)
	}
	v.Value = val.S
	if sysVar && v.Type == UserVarInt {
		// A boolean system variable is a BIGINT whose text is ON or OFF (MariaDB 10.11).
		switch v.Value {
		case "ON":
			v.Value = "1"
		case "OFF":
			v.Value = "0"
		}
	}
	if v.Type != UserVarString && !validNumber(v.Type, v.Value) {
		return fmt.Errorf("backend: user variable @%s: %q is no %v", v.Name, v.Value, v.Type)
	}
	return nil
}

// validCollation reports whether s may be a collation's name: what AppendRestore writes
// unquoted into a statement, so nothing but letters, digits and '_'.
func validCollation(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// validNumber reports whether s is a number of type t as the server prints one: what
// AppendRestore writes unquoted into a statement.
func validNumber(t UserVarType, s string) bool {
	var err error
	switch t {
	case UserVarInt:
		_, err = strconv.ParseInt(s, 10, 64)
	case UserVarUnsigned:
		_, err = strconv.ParseUint(s, 10, 64)
	case UserVarDecimal:
		digits, dot := 0, false
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '-' && i == 0:
			case c == '.' && !dot && digits > 0:
				dot = true
			case '0' <= c && c <= '9':
				digits++
			default:
				return false
			}
		}
		return digits > 0 && digits <= 81 && s[len(s)-1] != '.' // 81: the most a server's decimal holds
	case UserVarDouble:
		for i := 0; i < len(s); i++ {
			if c := s[i]; !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
				return false
			}
		}
		_, err = strconv.ParseFloat(s, 64)
	default:
		return false
	}
	return err == nil
}

// AppendRestore appends to dst one statement that gives every variable of vars its value,
// type, character set and collation, and, when withLastInsertID, sets LAST_INSERT_ID() to
// lastInsertID:
//
//	DO @`a`:=5,@`b`:=CAST(7 AS UNSIGNED),@`c`:=1.50,@`d`:=1.5e0,@`e`:=_utf8mb4 X'78' COLLATE utf8mb4_bin,
//	   @`f`:=_binary X'00ff',@`g`:=NULL,@`h`:=CAST(NULL AS SIGNED),LAST_INSERT_ID(42)
//
// DO, not SET: SET @@session.last_insert_id = 42 would do the same in one statement, but a
// node tracking every system variable (session_track_system_variables='*') reports it as a
// variable the session set; LAST_INSERT_ID(42) is reported by none. @a := x gives @a what
// SET @a = x does (the same item on the server). Strings go in hexadecimal with their
// character set's introducer, so that no byte of a value (quote, backslash, NUL, a multi-byte
// character whose second byte is a backslash) is read by the lexer and the session's sql_mode
// does not matter; the statement is at most about twice the values' size. Names are quoted with
// backquotes, in the session's character_set_client. Nothing is appended when vars is empty and
// withLastInsertID is false. The statement reads no table: it does not clear the connection's
// warnings. Checked on MariaDB 10.11 (livetest).
func AppendRestore(dst []byte, vars []UserVar, lastInsertID uint64, withLastInsertID bool) []byte {
	if len(vars) == 0 && !withLastInsertID {
		return dst
	}
	dst = append(dst, "DO "...)
	for i := range vars {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendUserVarRef(dst, vars[i].Name)
		dst = append(dst, ":="...)
		dst = vars[i].appendValue(dst)
	}
	if withLastInsertID {
		if len(vars) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, "LAST_INSERT_ID("...)
		dst = strconv.AppendUint(dst, lastInsertID, 10)
		dst = append(dst, ')')
	}
	return dst
}

// appendValue appends the expression that recreates v. v must come from ReadUserVars (its
// numbers and collation checked); anything else is written as NULL rather than as text that
// could be read as more than a value.
func (v *UserVar) appendValue(dst []byte) []byte {
	if v.Type != UserVarString && !v.Null && !validNumber(v.Type, v.Value) ||
		v.Type == UserVarString && !validCollation(v.Collation) {
		return append(dst, "NULL"...)
	}
	switch v.Type {
	case UserVarInt:
		if v.Null {
			return append(dst, "CAST(NULL AS SIGNED)"...)
		}
		return append(dst, v.Value...)
	case UserVarUnsigned:
		if v.Null {
			return append(dst, "CAST(NULL AS UNSIGNED)"...)
		}
		dst = append(dst, "CAST("...)
		dst = append(dst, v.Value...)
		return append(dst, " AS UNSIGNED)"...)
	case UserVarDecimal:
		if v.Null {
			return append(dst, "CAST(NULL AS DECIMAL(65,0))"...)
		}
		dst = append(dst, v.Value...)
		if !strings.Contains(v.Value, ".") {
			dst = append(dst, '.') // 5. is a DECIMAL literal, 5 an integer
		}
		return dst
	case UserVarDouble:
		if v.Null {
			return append(dst, "CAST(NULL AS DOUBLE)"...)
		}
		dst = append(dst, v.Value...)
		if !strings.ContainsAny(v.Value, "eE") {
			dst = append(dst, "e0"...) // 1.5 is a DECIMAL literal, 1.5e0 a DOUBLE
		}
		return dst
	}
	cs := charsetOf(v.Collation)
	if v.Null {
		if cs == "binary" {
			// Not NULL alone: assigned to a variable that holds a string, NULL keeps that
			// string's collation, where a variable never set reads as binary.
			return append(dst, "CAST(NULL AS BINARY)"...)
		}
		dst = append(dst, "CAST(NULL AS CHAR CHARACTER SET "...)
		dst = append(dst, cs...)
		dst = append(dst, ") COLLATE "...)
		return append(dst, v.Collation...)
	}
	return v.appendString(dst)
}

// appendString appends the literal of v, a string that is not NULL whose collation is checked:
// its bytes in hexadecimal after its character set's introducer, with its collation
// (_utf8mb4 X'78' COLLATE utf8mb4_bin, _binary X'00ff'), so that no byte of it is read by the
// lexer and the session's sql_mode does not matter.
func (v *UserVar) appendString(dst []byte) []byte {
	cs := charsetOf(v.Collation)
	dst = append(dst, '_')
	dst = append(dst, cs...)
	dst = append(dst, " X'"...)
	dst = hex.AppendEncode(dst, []byte(v.Value))
	dst = append(dst, '\'')
	if cs != "binary" {
		dst = append(dst, " COLLATE "...)
		dst = append(dst, v.Collation...)
	}
	return dst
}

// charsetOf returns the character set of a collation: the part of its name before the first
// '_' (latin1_swedish_ci, utf8mb4_uca1400_ai_ci; no character set's name holds one), or the
// name itself (binary).
func charsetOf(collation string) string {
	if i := strings.IndexByte(collation, '_'); i > 0 {
		return collation[:i]
	}
	return collation
}

// columnType reads the type and flags of a ColumnDefinition41: after six length-encoded
// strings (catalog, schema, table, original table, name, original name) and, with MariaDB's
// extended metadata, one more (its type-info block), come the fixed fields: their length
// (0x0c), the character set (2 bytes), the column length (4), the type (1), the flags (2).
func columnType(p []byte, extended bool) (typ byte, flags uint16, err error) {
	n := 6
	if extended {
		n++
	}
	for range n {
		_, k, err := mysql.ReadLenEncString(p)
		if err != nil {
			return 0, 0, fmt.Errorf("backend: malformed column definition: %w", err)
		}
		p = p[k:]
	}
	if len(p) < 13 || p[0] != 0x0c {
		return 0, 0, errors.New("backend: malformed column definition: fixed fields")
	}
	return p[7], uint16(p[8]) | uint16(p[9])<<8, nil
}

// ErrNoUserVarList: the node does not list a session's user variables
// (information_schema.USER_VARIABLES is MariaDB's, from 10.2); the variables a statement set
// without naming them cannot be found there.
var ErrNoUserVarList = errors.New("backend: the node does not list user variables (information_schema.USER_VARIABLES)")

// UserVarNames lists the user variables the connection's session holds, from
// information_schema.USER_VARIABLES (MariaDB 10.2+; ErrNoUserVarList elsewhere): the names to
// give ReadUserVars after a statement that may set variables it does not name (a CALL), in
// batches of MaxUserVarsPerRead. A variable set to NULL is listed; one never set is not.
//
// The names come converted to the session's character_set_results; ReadUserVars sends them in
// its character_set_client: the same set in every session that chose one with SET NAMES (as
// drivers do), so a name outside ASCII survives there only. The query names a table, so it
// clears the connection's warnings: run it once they no longer matter. Bounded as Query (a
// session with more than MaxQueryRows variables gives ErrResultTooLarge).
func (c *Conn) UserVarNames() ([]string, error) {
	rows, err := c.Query("SELECT VARIABLE_NAME FROM information_schema.USER_VARIABLES")
	var se *mysql.SQLError
	if errors.As(err, &se) && (se.Code == 1109 || se.Code == 1146) { // unknown table
		return nil, ErrNoUserVarList
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(rows.Values))
	for _, r := range rows.Values {
		if len(r) != 1 || r[0].Null {
			return nil, errors.New("backend: malformed list of user variables")
		}
		names = append(names, r[0].S)
	}
	return names, nil
}

// NoteUserVar records that a session set the user variable whose key is key (classify's
// AppendUserVarKey) on c: a later session that reads it there without having set it must find
// it NULL, not the other's value. A reset forgets them all (forgetUserVars).
func (c *Conn) NoteUserVar(key string) {
	if c.userVars == nil {
		c.userVars = map[string]struct{}{}
	}
	c.userVars[key] = struct{}{}
}

// MayHoldUserVar reports whether a session set the user variable key on c since its last reset.
func (c *Conn) MayHoldUserVar(key string) bool {
	_, ok := c.userVars[key]
	return ok
}

// UserVarKeys calls f with the key of every user variable a session set on c since its last
// reset.
func (c *Conn) UserVarKeys(f func(key string)) {
	for k := range c.userVars {
		f(k)
	}
}

// forgetUserVars follows a reset: the node dropped every user variable.
func (c *Conn) forgetUserVars() { clear(c.userVars) }
