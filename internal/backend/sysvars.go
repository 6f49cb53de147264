package backend

import (
	"fmt"

	"github.com/sluicedb/sluice/internal/mysql"
)

// A SET whose values are expressions (SET sql_mode = CONCAT(@@sql_mode, ',X'), as drivers and
// frameworks send at start-up) gives on another connection what the expression gives there,
// not what it gave here. The session instead reads back, on the connection that ran it, the
// values the variables took (ReadSessionVars) and replays those as literals
// (AppendSetSession), as user variables are carried (ReadUserVars, AppendRestore): the same
// three columns per value and the same literals.

// Bounds of ReadSessionVars: a longer value is not carried (the session is pinned instead).
const (
	// MaxSessionVarBytes bounds one system variable's value, in bytes of its character set:
	// sql_mode and optimizer_switch are well under it.
	MaxSessionVarBytes = 4 << 10
	// MaxSessionVarsPerRead bounds the variables one ReadSessionVars reads.
	MaxSessionVarsPerRead = 32
)

// AppendReadSessionVars appends the statement ReadSessionVars sends: for each name the three
// columns AppendReadUserVars reads a user variable with, of @@session.name. Names must be
// system variable names (letters, digits, '_': classify.SetVars gives no other).
func AppendReadSessionVars(dst []byte, names []string) []byte {
	dst = append(dst, "SELECT "...)
	var ref []byte
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		ref = append(append(ref[:0], "@@session."...), name...)
		dst = appendValueColumns(dst, ref, MaxSessionVarBytes)
	}
	return dst
}

// ReadSessionVars reads the session values of the system variables names (at most
// MaxSessionVarsPerRead, each made of letters, digits and '_' only) on the connection in one
// round trip: each with its type (an integer, DECIMAL or DOUBLE variable's value is its text),
// or its character set and collation for a string. A node's refusal comes back as its
// *mysql.SQLError, a value past MaxSessionVarBytes as a *UserVarTooLargeError; the connection
// stays usable after both and after a value that does not read as its type. A transport or
// protocol error leaves the answer partly read: close the connection.
func (c *Conn) ReadSessionVars(names []string) ([]UserVar, error) {
	if len(names) == 0 || len(names) > MaxSessionVarsPerRead {
		return nil, fmt.Errorf("backend: %d system variables to read, want 1 to %d", len(names), MaxSessionVarsPerRead)
	}
	for _, n := range names {
		if !validCollation(n) { // the same alphabet: letters, digits, '_', at most 64 bytes
			return nil, fmt.Errorf("backend: %q is no system variable's name", n)
		}
	}
	buf := append(c.Scratch(), mysql.ComQuery)
	vals, _, err := c.readValues(AppendReadSessionVars(buf, names), names, false, MaxSessionVarBytes, true)
	return vals, err
}

// AppendSetSession appends to dst the statement that gives the system variables vals (from
// ReadSessionVars) their values on another connection:
//
//	SET SESSION sql_mode=_utf8mb3 X'414e5349' COLLATE utf8mb3_general_ci,max_statement_time=10.000000,x=NULL
//
// Numbers go as the text the server printed (checked again here), strings in hexadecimal
// after their character set's introducer with their collation (AppendRestore's literals: no
// byte of a value is read by the lexer, and the session's sql_mode does not matter), NULL as
// NULL. It reports false, and appends nothing, when a value is not one ReadSessionVars gives
// (a name or collation outside their alphabet, a number that is not one): the caller carries
// no guess.
func AppendSetSession(dst []byte, vals []UserVar) ([]byte, bool) {
	if len(vals) == 0 {
		return dst, false
	}
	for i := range vals {
		v := &vals[i]
		if !validCollation(v.Name) || v.Type == UserVarString && !validCollation(v.Collation) ||
			v.Type != UserVarString && !v.Null && !validNumber(v.Type, v.Value) {
			return dst, false
		}
	}
	dst = append(dst, "SET SESSION "...)
	for i := range vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		v := &vals[i]
		dst = append(dst, v.Name...)
		dst = append(dst, '=')
		switch {
		case v.Null:
			dst = append(dst, "NULL"...)
		case v.Type == UserVarString:
			dst = v.appendString(dst)
		default:
			dst = append(dst, v.Value...)
		}
	}
	return dst, true
}
