package classify

// MaxSysVarName bounds the length of a system variable's name SetVars reports: the server's
// longest is under 64 bytes.
const MaxSysVarName = 64

// SetVars names the session system variables a SET statement assigns, as the server of d
// reads the text, so that a caller can read back the values they took (SELECT @@session.name)
// and carry those instead of the text. It calls visit, in order, with each assignment's
// variable name (a sub-slice of stmt, valid during the call only: letters, digits and '_'
// only, at most MaxSysVarName bytes, as written) and whether its value is a literal (one
// number, string or word, or a signed number: replaying the text gives the same value on any
// connection) rather than an expression (a function, an operator, a system variable: its
// value depends on the connection it runs on). A variable may be reported more than once.
//
// It returns false — the statement cannot be named fully, and visit may have been called for
// a part of it — for anything but a list of session assignments read to its end: a scope of
// GLOBAL, PERSIST or PERSIST_ONLY (keyword or @@global.), a user variable anywhere (SET @a =
// 1, or @a read in a value), SET NAMES, CHARACTER SET, CHARSET, PASSWORD, [DEFAULT] ROLE,
// TRANSACTION, STATEMENT … FOR, a structured name (keycache.x), a name quoted with an escaped
// quote or with other bytes than letters, digits and '_', an empty value, unbalanced
// parentheses, and more than one statement (one ';' at the end is allowed). SESSION, LOCAL,
// @@x, @@session.x, @@local.x, := in place of =, comments and quoted names are read as the
// server reads them.
//
// SetVars never allocates, never panics, and is safe for concurrent use.
func SetVars(stmt []byte, d Dialect, visit func(name []byte, literal bool)) bool {
	if len(stmt) > maxStmt {
		stmt = stmt[:maxStmt]
	}
	var c classifier
	c.lx.s, c.lx.d = stmt, d
	if _, k := c.nextKw(); k != kwSet {
		return false
	}
	t, k := c.nextKw()
	for {
		for k == kwSession || k == kwLocal {
			t, k = c.nextKw()
		}
		var name []byte
		switch t.typ {
		case tSysVar:
			global, n := c.sysVarAt(t)
			if global {
				return false
			}
			name = n
		case tWord:
			switch k {
			case kwGlobal, kwPersist, kwPersistOnly, kwNames, kwCharset, kwCharacter, kwPassword,
				kwRole, kwDefault, kwTransaction, kwStatement:
				return false
			}
			name = stmt[t.start:t.end]
		case tIdent:
			r := c.nameOf(t)
			if r[1]-r[0] != t.end-t.start-2 {
				return false // an unterminated name
			}
			name = stmt[r[0]:r[1]]
		default:
			return false
		}
		if !sysVarName(name) || c.lx.peek().typ == tDot {
			return false
		}
		if t = c.next(); t.typ != tEq && t.typ != tAssign {
			return false
		}
		t = c.next()
		first, last, n, depth := t, t, 0, 0
		for t.typ != tEOF && t.typ != tSemi && (t.typ != tComma || depth > 0) {
			switch t.typ {
			case tLParen:
				depth++
			case tRParen:
				if depth--; depth < 0 {
					return false
				}
			case tUserVar:
				return false
			}
			n++
			last, t = t, c.next()
		}
		if n == 0 || depth != 0 {
			return false
		}
		if visit != nil {
			visit(name, c.setLiteral(first, last, n))
		}
		switch t.typ {
		case tSemi:
			return c.next().typ == tEOF
		case tEOF:
			return true
		}
		t, k = c.nextKw()
	}
}

// sysVarName reports whether b may be a system variable's name: what a caller writes
// unquoted into SELECT @@session.name, so letters, digits and '_' only.
func sysVarName(b []byte) bool {
	if len(b) == 0 || len(b) > MaxSysVarName {
		return false
	}
	for _, ch := range b {
		if !('a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '_') {
			return false
		}
	}
	return true
}

// setLiteral reports whether the n tokens from first to last are a literal value: one number,
// string, word or quoted name, or '-' or '+' and a number.
func (c *classifier) setLiteral(first, last token, n int) bool {
	t := first
	switch n {
	case 1:
		switch t.typ {
		case tNumber, tString, tWord, tIdent:
			return true
		}
	case 2:
		s := c.lx.s
		if t.typ == tOp && t.end-t.start == 1 && (s[t.start] == '-' || s[t.start] == '+') {
			return last.typ == tNumber
		}
	}
	return false
}
