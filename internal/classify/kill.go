package classify

import (
	"bytes"
	"math"
)

// ParseKill recognises KILL [HARD|SOFT] [CONNECTION|QUERY] id, the form that names a
// connection id, and returns the id and whether only the running query is to be killed
// (QUERY). Words are case-insensitive and may be separated by whitespace and comments, as
// everywhere in this package (an executable comment's content is text: /*!KILL 5*/ is a
// KILL); the id is a decimal number that fits in 32 bits (connection ids are uint32 in the
// protocol); the text may end in ';' (any number of them) with whitespace and comments.
//
// Anything else gives ok false: KILL USER name, MariaDB's KILL QUERY ID n, an expression
// (KILL @v, KILL 1+1, KILL '5', KILL (5)), a number that is not a plain decimal (0x5, 5.0,
// 5e0) or over 4294967295, more statements after it (KILL 5; SELECT 1), and a KILL that a
// server reads otherwise when a versioned comment in it does not run there (KILL /*!99999
// QUERY */ 5 is KILL 5 to MariaDB; /*M!100100 KILL 5 */ is nothing to MySQL).
func ParseKill(q []byte) (id uint64, queryOnly bool, ok bool) {
	if len(q) > maxStmt {
		return 0, false, false
	}
	id, queryOnly, dep, ok := parseKill(q, Dialect{})
	if ok && dep&DependsVersion != 0 {
		// Read again with no versioned comment running (a MySQL reading of version 0): the
		// two ends of what servers read agree only when the comments hold no part of it.
		id2, queryOnly2, _, ok2 := parseKill(q, Dialect{Flavor: FlavorMySQL})
		if !ok2 || id2 != id || queryOnly2 != queryOnly {
			return 0, false, false
		}
	}
	return id, queryOnly, ok
}

// parseKill is ParseKill under dialect d; dep is what an ok reading depends on.
func parseKill(q []byte, d Dialect) (id uint64, queryOnly bool, dep Depends, ok bool) {
	l := lexer{s: q, d: d}
	t := l.scan()
	if !wordIs(q, t, "KILL") {
		return 0, false, 0, false
	}
	t = l.scan()
	if wordIs(q, t, "HARD") || wordIs(q, t, "SOFT") {
		t = l.scan()
	}
	switch {
	case wordIs(q, t, "CONNECTION"):
		t = l.scan()
	case wordIs(q, t, "QUERY"):
		queryOnly = true
		t = l.scan()
	}
	if t.typ != tNumber {
		return 0, false, 0, false
	}
	id, ok = parseUint32(q[t.start:t.end])
	if !ok {
		return 0, false, 0, false
	}
	for t = l.scan(); t.typ == tSemi; t = l.scan() {
	}
	if t.typ != tEOF {
		return 0, false, 0, false
	}
	return id, queryOnly, l.dep, true
}

// wordIs reports whether t is a word spelling upper, ignoring case.
func wordIs(s []byte, t token, upper string) bool {
	return t.typ == tWord && eqFold(s[t.start:t.end], upper)
}

// parseUint32 parses a run of decimal digits (leading zeros allowed) into a value of at most
// math.MaxUint32. Anything else, or an overflow, gives ok false.
func parseUint32(b []byte) (n uint64, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > math.MaxUint32 {
			return 0, false
		}
	}
	return n, true
}

// KillsUser reports whether q is KILL [HARD|SOFT] [CONNECTION|QUERY] USER …: a KILL that names an
// account, not a connection id.
func KillsUser(q []byte) bool {
	if len(q) > maxStmt {
		return false
	}
	l := lexer{s: q}
	if !wordIs(q, l.scan(), "KILL") {
		return false
	}
	t := l.scan()
	if wordIs(q, t, "HARD") || wordIs(q, t, "SOFT") {
		t = l.scan()
	}
	if wordIs(q, t, "CONNECTION") || wordIs(q, t, "QUERY") {
		t = l.scan()
	}
	return wordIs(q, t, "USER")
}

// SelectsConnectionID recognises a statement that is exactly SELECT CONNECTION_ID(), which
// the proxy answers itself with its own connection id: an optional alias ([AS] name, [AS]
// `name` or [AS] 'name'), an optional FROM DUAL, trailing ';' with whitespace and comments;
// words in any case, separated by whitespace and comments (a leading hint is a comment). name
// is [start, end) of the column's name as the server gives it: the alias without its quotes, or
// else the call as written (connection_id ( )).
//
// Anything more gives ok false (SELECT CONNECTION_ID(), 1; SELECT CONNECTION_ID() + 0; an
// alias that is a keyword without quotes, or holds a quote or a backslash), and so does text
// that another server or sql_mode could read otherwise (a versioned comment, "…"): the proxy
// then sends the statement to a node as it is.
func SelectsConnectionID(q []byte) (name [2]int32, ok bool) {
	if len(q) > maxStmt {
		return name, false
	}
	l := lexer{s: q}
	if !wordIs(q, l.scan(), "SELECT") {
		return name, false
	}
	fn := l.scan()
	if !wordIs(q, fn, "CONNECTION_ID") || l.scan().typ != tLParen {
		return name, false
	}
	t := l.scan()
	if t.typ != tRParen {
		return name, false
	}
	name = [2]int32{fn.start, t.end}
	t = l.scan()
	as := wordIs(q, t, "AS")
	if as {
		t = l.scan()
	}
	switch {
	case t.typ == tWord && lookup(q[t.start:t.end]) == kwNone:
		name = [2]int32{t.start, t.end}
		t = l.scan()
	case t.typ == tIdent && q[t.start] == '`' || t.typ == tString && q[t.start] == '\'':
		if t.end-t.start < 2 || q[t.end-1] != q[t.start] {
			return name, false // unterminated
		}
		if body := q[t.start+1 : t.end-1]; bytes.IndexByte(body, q[t.start]) >= 0 || bytes.IndexByte(body, '\\') >= 0 {
			return name, false
		}
		name = [2]int32{t.start + 1, t.end - 1}
		t = l.scan()
	case as:
		return name, false // AS and no name sluice reads as the server does
	}
	if call := q[fn.end:name[1]]; name[0] == fn.start && (bytes.Contains(call, []byte("/*!")) || bytes.Contains(call, []byte("/*M!"))) {
		// The server names the column by the call as written, but with the markers of the
		// executable comments in it left out (CONNECTION_ID(/*!*/) is "CONNECTION_ID()"):
		// rare enough to leave to it.
		return name, false
	}
	if wordIs(q, t, "FROM") {
		if !wordIs(q, l.scan(), "DUAL") {
			return name, false
		}
		t = l.scan()
	}
	for t.typ == tSemi {
		t = l.scan()
	}
	if t.typ != tEOF || l.dep != 0 {
		return name, false
	}
	return name, true
}
