package classify

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// VarEffects say what a statement may do to session values that live on the node connection
// that runs it and that a connection pool must carry to the next one, besides the user
// variables it names (UserVars). The zero value: none.
type VarEffects uint8

// The effects.
const (
	// VarsUnnamed: the statement may set user variables its text does not name, so they
	// cannot be read back by name: CALL (the procedure's body, OUT parameters), MariaDB's
	// BEGIN NOT ATOMIC … END block (it may CALL or EXECUTE inside), EXECUTE IMMEDIATE of
	// anything but a string literal (a literal's text is scanned like the statement itself).
	// Stored functions and triggers may set variables too, but a call of one cannot be told
	// from a built-in function's without the catalog: they are not counted (see UserVars).
	VarsUnnamed VarEffects = 1 << iota
	// VarsExecute: EXECUTE name runs a statement prepared with SQL PREPARE. What it sets is
	// in the prepared text, which this text does not hold: the caller that kept that text
	// scans it with UserVars, or treats the statement as VarsUnnamed.
	VarsExecute
	// VarsLastInsertID: LAST_INSERT_ID( is called (reading it, or with an argument setting
	// it), or @@last_insert_id, @@identity or @@insert_id is read, in any scope spelling.
	VarsLastInsertID
	// VarsFoundRows: FOUND_ROWS( is called: it reads what the connection's previous
	// statement left.
	VarsFoundRows
	// VarsRowCount: ROW_COUNT( is called: likewise.
	VarsRowCount
)

var varEffectNames = [...]string{"VarsUnnamed", "VarsExecute", "VarsLastInsertID", "VarsFoundRows", "VarsRowCount"}

// String lists the set effects as "A|B", or "0". It allocates: for logs and tests.
func (e VarEffects) String() string {
	if e == 0 {
		return "0"
	}
	s := ""
	for i, n := range varEffectNames {
		if e&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if rest := e &^ (1<<len(varEffectNames) - 1); rest != 0 {
		if s != "" {
			s += "|"
		}
		s += "VarEffects(" + itoa(int(rest)) + ")"
	}
	return s
}

// UserVars names the user variables a statement text reads and assigns, as the server of d
// reads the text (executable comments, sql_mode quoting), and returns the other effects the
// text has on connection-bound values. For every user-variable token it calls visit (when not
// nil) with the token's bytes, '@' and quotes included (@a, @`a b`, @'x'; AppendUserVarName
// gives the name, AppendUserVarKey the name to compare by), and whether the statement may
// assign the variable. tok is valid only during the call; a variable may be reported more than
// once. UserVars never allocates (a string literal of EXECUTE IMMEDIATE with escapes is
// unescaped into a pooled buffer), never panics, and is safe for concurrent use.
//
// A variable is assigned when:
//   - := follows it, anywhere: SELECT @a := 1, SET @a := 1, UPDATE t SET c = (@a := c);
//   - = follows it right after SET or after a comma at SET's level: SET @a = 1, @b = 2
//     (so @a in SET @b = @a = 1 is a comparison, read);
//   - it is in the list after INTO: SELECT … INTO @a, @b [FROM …], … FROM t INTO @a;
//   - it is anywhere in a statement (from the keywords on) of LOAD DATA|XML (the column list
//     (@col) assigns), GET [CURRENT|STACKED] DIAGNOSTICS @n = …, or CALL p(@out) (an OUT
//     parameter).
//
// Every other occurrence reads: SET @a = @a + 1 (the second), EXECUTE s USING @a, PREPARE s
// FROM @sql, SELECT @a. Inside strings, quoted names and ordinary comments nothing counts;
// 'user'@'host' names an account; @@name is a system variable. The rules err on the side of
// "assigns" (reading back a variable that did not change costs a little; missing one that did
// loses it): a stored program's body (CREATE PROCEDURE … BEGIN … END) is scanned as if it ran,
// and EXPLAIN SELECT @a := 1 counts though EXPLAIN runs nothing.
//
// Stored functions and triggers that assign user variables are not followed (a call of one
// looks like a built-in function's; counting every function call or every write as
// VarsUnnamed would pin nearly every session): variables they set are read back only when the
// statement itself names them. Names are the server's: case-insensitive (AppendUserVarKey).
func UserVars(stmt []byte, d Dialect, visit func(tok []byte, assigns bool)) VarEffects {
	if len(stmt) > maxStmt {
		stmt = stmt[:maxStmt]
	}
	var v varScanner
	v.c.lx.s, v.c.lx.d = stmt, d
	v.visit = visit
	v.run(0)
	return v.eff
}

// varScanner is the state of one UserVars call. It borrows the classifier for its lexer and
// keyword helpers only.
type varScanner struct {
	c     classifier
	visit func(tok []byte, assigns bool)
	eff   VarEffects

	depth    int  // parenthesis depth in the statement
	start    bool // the next token starts a statement
	setDepth int  // depth of the statement's last SET keyword; -1: none
	into     bool // in the @a, @b list after INTO
	all      bool // every variable from here to the statement's end assigns (LOAD, GET, CALL)
}

func (v *varScanner) run(nest int) {
	c := &v.c
	v.newStatement()
	for {
		t := c.next()
		if t.typ == tEOF {
			return
		}
		start := v.start
		v.start = false
		if t.typ != tUserVar && t.typ != tComma {
			v.into = false
		}
		switch t.typ {
		case tSemi:
			v.newStatement()
			if !c.lx.hasPeek {
				c.lx.exec = false // as in classifier.run: each statement is lexed afresh
			}
		case tLParen:
			v.depth++
		case tRParen:
			if v.depth > 0 {
				v.depth--
			}
		case tUserVar:
			v.userVar(t)
		case tSysVar:
			_, name := c.sysVarAt(t)
			if eqFold(name, "LAST_INSERT_ID") || eqFold(name, "IDENTITY") || eqFold(name, "INSERT_ID") {
				v.eff |= VarsLastInsertID
			}
		case tWord:
			v.word(t, start, nest)
		}
	}
}

// newStatement resets what holds for one statement only.
func (v *varScanner) newStatement() {
	v.depth, v.start, v.setDepth, v.into, v.all = 0, true, -1, false, false
}

// userVar reports the user variable t.
func (v *varScanner) userVar(t token) {
	c := &v.c
	if t.end-t.start < 2 {
		return // a lone @ names nothing (the server refuses @ a)
	}
	// 'user'@'host', `user`@`host`, user@host name an account, not a variable.
	if p := c.lx.prev; p.end == t.start && (p.typ == tString || p.typ == tIdent || p.typ == tWord) {
		return
	}
	assigns := v.all || v.into
	if !assigns {
		switch n := c.lx.peek(); n.typ {
		case tAssign:
			assigns = true
		case tEq:
			p := c.lx.prev
			assigns = c.kw(p) == kwSet || p.typ == tComma && v.setDepth == v.depth
		}
	}
	if v.visit != nil {
		v.visit(c.lx.s[t.start:t.end], assigns)
	}
}

// word looks at one word for the keywords that change how variables are read.
func (v *varScanner) word(t token, start bool, nest int) {
	c := &v.c
	if c.lx.prev.typ == tDot {
		return // a qualified name: t.call, db.last_insert_id(…) is a stored function
	}
	switch c.kw(t) {
	case kwSet:
		v.setDepth = v.depth
	case kwInto:
		v.into = c.lx.peek().typ == tUserVar
	case kwLoad:
		if k := c.peekKw(); k == kwData || k == kwXml {
			v.all = true
		}
	case kwGet:
		if n := c.lx.peek(); c.identEq(n, "DIAGNOSTICS") || c.identEq(n, "CURRENT") || c.identEq(n, "STACKED") {
			v.all = true
		}
	case kwCall:
		v.all = true
		v.eff |= VarsUnnamed
	case kwBegin:
		if c.peekKw() == kwNot { // BEGIN NOT ATOMIC: a block that runs at once
			v.eff |= VarsUnnamed
		}
	case kwExecute:
		// A statement's first word, or the statement of SET STATEMENT … FOR EXECUTE.
		if start || c.kw(c.lx.prev) == kwFor {
			v.execute(nest)
		}
	case kwLastInsertId:
		if c.lx.peek().typ == tLParen {
			v.eff |= VarsLastInsertID
		}
	case kwFoundRows:
		if c.lx.peek().typ == tLParen {
			v.eff |= VarsFoundRows
		}
	case kwRowCount:
		if c.lx.peek().typ == tLParen {
			v.eff |= VarsRowCount
		}
	}
}

// execute reads what follows EXECUTE: a statement name (VarsExecute), or IMMEDIATE and the
// text to run, which is scanned when it is a string literal alone and VarsUnnamed otherwise.
// The USING list after it is read by the main loop (its variables are read).
func (v *varScanner) execute(nest int) {
	c := &v.c
	if c.peekKw() != kwImmediate {
		v.eff |= VarsExecute
		return
	}
	c.next()
	if c.lx.peek().typ != tString {
		v.eff |= VarsUnnamed
		return
	}
	t := c.next()
	if !c.textEnds() || nest >= maxNest {
		v.eff |= VarsUnnamed
		return
	}
	s := c.lx.s
	end := t.end
	if end-t.start >= 2 && s[end-1] == s[t.start] {
		end--
	}
	text := s[t.start+1 : end]
	if q := s[t.start]; bytes.IndexByte(text, q) >= 0 || c.lx.d.Mode&NoBackslashEscapes == 0 && bytes.IndexByte(text, '\\') >= 0 {
		bp := valueBufs.Get().(*[]byte)
		defer func() {
			if cap(*bp) <= maxPooledValue {
				valueBufs.Put(bp)
			}
		}()
		*bp = unescape((*bp)[:0], text, q, c.lx.d.Mode&NoBackslashEscapes != 0)
		text = *bp
	}
	var in varScanner
	in.c.lx.s, in.c.lx.d = text, c.lx.d
	in.visit = v.visit
	in.run(nest + 1)
	v.eff |= in.eff
}

// AppendUserVarName appends to dst the name of the user variable whose token UserVars
// reported (tok, '@' first), as the server reads it under d: @a is a; in @`a b` a doubled
// backtick stands for one; @'x' and @"x" read like string literals (a doubled quote is one,
// backslash escapes unless NoBackslashEscapes), @"x" like @`x` under AnsiQuotes. The name is in
// the session's character_set_client, as written. A token that is not one (no '@') appends
// nothing.
func AppendUserVarName(dst, tok []byte, d Dialect) []byte {
	if len(tok) < 2 || tok[0] != '@' {
		return dst
	}
	body := tok[1:]
	q := body[0]
	switch q {
	case '\'', '"', '`':
	default:
		return append(dst, body...)
	}
	body = body[1:]
	if len(body) > 0 && body[len(body)-1] == q {
		body = body[:len(body)-1]
	}
	if q == '`' || q == '"' && d.Mode&AnsiQuotes != 0 {
		for i := 0; i < len(body); i++ {
			dst = append(dst, body[i])
			if body[i] == q && i+1 < len(body) && body[i+1] == q {
				i++
			}
		}
		return dst
	}
	return unescape(dst, body, q, d.Mode&NoBackslashEscapes != 0)
}

// AppendUserVarKey appends to dst the name of the user variable token tok (AppendUserVarName)
// in lower case, so that two spellings of one variable give the same key, as user variables'
// names are case-insensitive on the server (@ABC is @abc, @É is @é; checked on MariaDB 10.11,
// which lower-cases in its system character set). ASCII letters are always folded; a name
// that is valid UTF-8 is folded by Unicode simple case mapping (unicode.ToLower), which agrees
// with the server's for the letters names are written in; other bytes (a name in a single-byte
// character set such as latin1) are kept as written, so two spellings of such a name that
// differ in the case of a non-ASCII letter give two keys. It allocates only to grow dst.
func AppendUserVarKey(dst, tok []byte, d Dialect) []byte {
	n := len(dst)
	dst = AppendUserVarName(dst, tok, d)
	name := dst[n:]
	ascii := true
	for _, b := range name {
		if b >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii || !utf8.Valid(name) {
		for i := n; i < len(dst); i++ {
			if c := dst[i]; 'A' <= c && c <= 'Z' {
				dst[i] = c + 'a' - 'A'
			}
		}
		return dst
	}
	// Fold into the space after the name, then move the result down: the folded name may be
	// longer or shorter than the name.
	end := len(dst)
	for i := n; i < end; {
		r, size := utf8.DecodeRune(dst[i:end])
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		i += size
	}
	m := copy(dst[n:], dst[end:])
	return dst[:n+m]
}
