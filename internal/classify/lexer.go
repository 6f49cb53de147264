package classify

import "bytes"

// tokType is the type of one token. The lexer only distinguishes what the classifier looks
// at: words (which may be keywords), the quoted things whose contents must never count as
// keywords, variables, and the few punctuation marks that carry structure.
type tokType uint8

const (
	tEOF     tokType = iota
	tWord            // unquoted identifier or keyword
	tIdent           // `quoted identifier`
	tString          // '…' or "…" (a "…" identifier under ANSI_QUOTES is also never a keyword)
	tNumber          // anything starting with a digit, including identifiers such as 1abc
	tUserVar         // @name, @'name', @"name", @`name`, or a lone @
	tSysVar          // @@name, @@scope.name
	tParam           // ?
	tLParen          // (
	tRParen          // )
	tSemi            // ;
	tComma           // ,
	tDot             // .
	tEq              // =
	tAssign          // :=
	tOp              // any other byte
)

// token is a half-open byte range [start, end) of the statement. Offsets are int32 (the
// statement is capped at math.MaxInt32 bytes) to keep a token at 12 bytes: tokens are
// copied on every step of the lexer.
type token struct {
	typ        tokType
	start, end int32
}

// Character classes for the lexer's inner loops. The classes of single-byte tokens that
// are common between a statement's keywords let the scan loop dispatch on one table lookup.
// cWord and cDigit come last: ">= cWord" means "continues an identifier".
const (
	cOther   uint8 = iota
	cSpace         // whitespace
	cComment       // '#', '-', '/', '*': may start (or, '*', end an executable) comment
	cComma         // ,
	cParam         // ?
	cLParen        // (
	cRParen        // )
	cWord          // may start and continue a word: letters, '_', '$', bytes >= 0x80 (UTF-8)
	cDigit         // starts a number, continues a word
)

var charClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			t[c] = cSpace
		case c == '#' || c == '-' || c == '/' || c == '*':
			t[c] = cComment
		case c == ',':
			t[c] = cComma
		case c == '?':
			t[c] = cParam
		case c == '(':
			t[c] = cLParen
		case c == ')':
			t[c] = cRParen
		case c >= '0' && c <= '9':
			t[c] = cDigit
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$', c >= 0x80:
			t[c] = cWord
		}
	}
	return t
}()

// isWordByte reports whether c continues an identifier.
func isWordByte(c byte) bool { return charClass[c] >= cWord }

// lexer splits a statement into tokens in one forward pass with one token of lookahead.
// It skips whitespace and comments, and treats executable comments (/*!…*/, /*!NNNNN…*/,
// /*M!…*/, /*M!NNNNNN…*/) that run on its Dialect's server as statement text: the markers
// are skipped, the content is lexed, because the server runs it (mysqldump wraps SET and
// CREATE statements in them). A versioned comment that does not run there is a comment.
type lexer struct {
	s    []byte
	i    int  // next byte to lex
	exec bool // inside an executable comment, whose "*/" is skipped like whitespace

	d   Dialect // the server and sql_mode whose reading the lexer follows
	dep Depends // what met so far another server or mode would read otherwise
	// spaces: the text holds a byte 0xA0 or 0xFF somewhere, so the tokens outside quotes are
	// looked at for one (DependsSpace). Set by the classifier; other readers leave it off.
	spaces bool

	peeked  token
	hasPeek bool

	// prev and cur are the last two tokens next returned; the classifier looks back one
	// token to see qualified names (t.update) and user@host.
	prev, cur token
}

// next returns the next token and makes it cur.
func (l *lexer) next() token {
	var t token
	if l.hasPeek {
		t, l.hasPeek = l.peeked, false
	} else {
		t = l.scan()
	}
	l.prev, l.cur = l.cur, t
	return t
}

// peek returns the token next will return, lexing it once.
func (l *lexer) peek() token {
	if !l.hasPeek {
		l.peeked, l.hasPeek = l.scan(), true
	}
	return l.peeked
}

// scan lexes one token from l.i.
func (l *lexer) scan() token {
	s := l.s
	i := l.skip(l.i)
	if i >= len(s) {
		l.i = len(s)
		return token{typ: tEOF, start: int32(len(s)), end: int32(len(s))}
	}
	start := i
	var typ tokType
	switch charClass[s[i]] {
	case cWord:
		if s[i] == '$' {
			typ, i = l.dollar(i)
		} else {
			typ, i = tWord, wordEnd(s, i+1)
		}
	case cDigit:
		typ, i = tNumber, numberEnd(s, i+1)
	default:
		typ, i = l.lexOther(i)
	}
	l.i = i
	if l.spaces && typ != tString && typ != tIdent && hasSpaceByte(s[start:i]) {
		l.dep |= DependsSpace
	}
	return token{typ: typ, start: int32(start), end: int32(i)}
}

// hasSpaceByte reports whether b holds a byte some single-byte character set reads as
// whitespace (DependsSpace).
func hasSpaceByte(b []byte) bool {
	return bytes.IndexByte(b, 0xa0) >= 0 || bytes.IndexByte(b, 0xff) >= 0
}

// skip returns the index of the first byte at or after i that is not whitespace or inside
// a comment. It enters and leaves executable comments, whose markers it skips as if they
// were whitespace, so that their content is lexed as statement text.
func (l *lexer) skip(i int) int {
	s := l.s
	for i < len(s) {
		c := s[i]
		cls := charClass[c]
		if cls == cSpace {
			i++
			continue
		}
		if cls >= cWord {
			return i // the common case: a word or number follows
		}
		switch {
		case c == '#':
			i = skipLine(s, i+1)
		case c == '-' && i+1 < len(s) && s[i+1] == '-' && (i+2 == len(s) || s[i+2] <= ' ' || s[i+2] == 0x7f):
			// "--" starts a comment only when a space or control character follows, so
			// that 1--1 stays arithmetic, as in the server.
			i = skipLine(s, i+2)
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			i = l.comment(i)
		case c == '*' && l.exec && i+1 < len(s) && s[i+1] == '/':
			i, l.exec = i+2, false
		default:
			return i
		}
	}
	return i
}

// wordEnd returns the end of the word whose second byte is at i.
func wordEnd(s []byte, i int) int {
	for i < len(s) && charClass[s[i]] >= cWord {
		i++
	}
	return i
}

// numberEnd returns the end of the number whose second byte is at i. Numbers, hex literals
// and identifiers that start with digits are never keywords, so one loop that also takes
// '.' (decimals) covers them all.
func numberEnd(s []byte, i int) int {
	for i < len(s) && (charClass[s[i]] >= cWord || s[i] == '.') {
		i++
	}
	return i
}

// lexOther lexes the token at s[i], which does not start a word or a number, and returns
// its type and end.
func (l *lexer) lexOther(i int) (tokType, int) {
	s := l.s
	c := s[i]
	i++
	switch c {
	case '\'':
		return tString, l.skipString(i, c)
	case '"':
		l.dep |= DependsMode // a string, or under ANSI_QUOTES a name (DESCRIBE "t", USE "db")
		if l.d.Mode&AnsiQuotes != 0 {
			return tIdent, l.skipQuoted(i, c)
		}
		return tString, l.skipString(i, c)
	case '`':
		if i >= 2 && s[i-2] >= 0x81 {
			l.dep |= DependsCharset
		}
		return tIdent, l.skipQuoted(i, '`')
	case '[':
		l.dep |= DependsMode
		if i >= 2 && s[i-2] >= 0x81 {
			l.dep |= DependsCharset
		}
		if l.d.Mode&Brackets != 0 {
			return tIdent, l.skipQuoted(i, ']')
		}
	case ']':
		if i >= 2 && s[i-2] >= 0x81 {
			l.dep |= DependsCharset // a name's end under MSSQL
		}
	case '@':
		if i < len(s) && s[i] == '@' {
			return tSysVar, numberEnd(s, i+1)
		}
		if i < len(s) {
			if s[i] == '"' {
				l.dep |= DependsMode
			}
			switch q := s[i]; {
			case q == '\'' || q == '"' && l.d.Mode&AnsiQuotes == 0:
				return tUserVar, l.skipString(i+1, q)
			case q == '`' || q == '"':
				return tUserVar, l.skipQuoted(i+1, q)
			}
		}
		return tUserVar, numberEnd(s, i)
	case '?':
		return tParam, i
	case '(':
		return tLParen, i
	case ')':
		return tRParen, i
	case ';':
		return tSemi, i
	case ',':
		return tComma, i
	case '.':
		return tDot, i
	case '=':
		return tEq, i
	case ':':
		if i < len(s) && s[i] == '=' {
			return tAssign, i + 1
		}
	}
	return tOp, i
}

// skipLine returns the index after the next newline at or after i, or len(s).
func skipLine(s []byte, i int) int {
	if j := bytes.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// skipComment returns the index after the "*/" that closes a comment whose body starts at i,
// or len(s) when it is unterminated.
func skipComment(s []byte, i int) int {
	if j := bytes.Index(s[i:], []byte("*/")); j >= 0 {
		return i + j + 2
	}
	return len(s)
}

// skipString returns the index after the closing quote q of a string whose body starts at i.
// A doubled quote stays inside, and so does a backslash escape unless the lexer's mode is
// NoBackslashEscapes. A backslash makes the reading depend on the mode. Unterminated: len(s).
func (l *lexer) skipString(i int, q byte) int {
	s := l.s
	for i < len(s) {
		switch s[i] {
		case '\\':
			l.dep |= DependsMode
			if s[i-1] >= 0x81 {
				l.dep |= DependsCharset
			}
			if l.d.Mode&NoBackslashEscapes == 0 {
				i += 2
				continue
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

// skipQuoted is skipString without backslash escapes, for `identifiers` (and "identifiers"
// under AnsiQuotes, where a backslash makes the reading depend on the mode, and [identifiers]
// under Brackets, q being ']').
func (l *lexer) skipQuoted(i int, q byte) int {
	s := l.s
	for {
		j := bytes.IndexByte(s[i:], q)
		if j < 0 {
			if q == '"' && bytes.IndexByte(s[i:], '\\') >= 0 {
				l.dep |= DependsMode
			}
			return len(s)
		}
		if q == '"' && bytes.IndexByte(s[i:i+j], '\\') >= 0 {
			l.dep |= DependsMode
		}
		i += j
		if q != '"' && s[i-1] >= 0x81 {
			l.dep |= DependsCharset
		}
		if i+1 < len(s) && s[i+1] == q {
			i += 2
			continue
		}
		return i + 1
	}
}
