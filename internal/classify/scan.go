package classify

// The words the classifier looks for after a statement's head, where most words are table
// and column names. They come in groups so that a statement only stops at the words that
// can matter to it: INTO only in a SELECT, statement keywords only while a WITH is
// undecided, BEGIN/CASE/END only in a stored program.
var (
	scanAlways = [...]string{
		"FOR", "LOCK", "GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS", "IS_FREE_LOCK",
		"IS_USED_LOCK", "LAST_INSERT_ID", "ROW_COUNT", "FOUND_ROWS", "NEXTVAL", "LASTVAL",
		"SETVAL", "SQL_CALC_FOUND_ROWS", "NEXT", "PREVIOUS", "CONNECTION_ID",
	}
	scanSelect = [...]string{"INTO"}
	scanTables = [...]string{"SELECT", "FROM"}
	scanWith   = [...]string{"SELECT", "VALUES", "TABLE", "UPDATE", "DELETE", "INSERT", "REPLACE"}
	scanBody   = [...]string{"BEGIN", "CASE", "END"}
)

// Bits of a scan set: which groups besides scanAlways a statement looks for.
const (
	scanSetSelect = 1 << iota
	scanSetWith
	scanSetBody
	scanSetTables // SELECT and FROM, for TableRef: in the statements that may hold a query
	numScanSets   = 1 << 4
)

// scanSet returns the groups of words the current statement looks for.
func (c *classifier) scanSet() int {
	set := 0
	switch c.st.kind {
	case Select:
		set |= scanSetSelect | scanSetTables
	case Set, Do:
		set |= scanSetTables
	}
	if c.st.withPending {
		set |= scanSetWith | scanSetTables
	}
	if c.st.bodyTrack {
		set |= scanSetBody
	}
	return set
}

// scanFilters[set][n] has bit letterBit(c) set when a word of length n starting with c is
// in one of set's groups: a word that misses it needs no lookup. It is a prefilter only;
// lookup decides.
var scanFilters = func() (f [numScanSets][maxKwLen + 1]uint32) {
	for set := range f {
		add := func(words []string) {
			for _, w := range words {
				f[set][len(w)] |= letterBit(w[0])
			}
		}
		add(scanAlways[:])
		if set&scanSetSelect != 0 {
			add(scanSelect[:])
		}
		if set&scanSetWith != 0 {
			add(scanWith[:])
		}
		if set&scanSetBody != 0 {
			add(scanBody[:])
		}
		if set&scanSetTables != 0 {
			add(scanTables[:])
		}
	}
	return f
}()

// letterBit maps an ASCII letter of either case to its bit (A = 1), anything else to 0.
func letterBit(c byte) uint32 {
	c |= 0x20
	if c < 'a' || c > 'z' {
		return 0
	}
	return 1 << (c - 'a' + 1)
}

// rest reads the statement after its head, from t, and returns the token that ends it: EOF,
// or a ';' outside a stored program's body. Most tokens there are names, numbers,
// placeholders and punctuation that no rule looks at: fast skips them in place, and only
// the tokens some rule looks at go through token.
func (c *classifier) rest(t token) token {
	for {
		if t.typ == tEOF || t.typ == tSemi && c.st.body == 0 {
			return t
		}
		c.token(t)
		if c.lx.hasPeek {
			t = c.lx.next()
		} else {
			t = c.fast()
		}
	}
}

// fast lexes from c.lx.i like next, but passes over the tokens token would ignore, keeping
// only the parenthesis depth and the previous token up to date, and returns the first token
// a rule looks at: a word that may be one of the scan words (scanFilters), a word after '.'
// that may be a sequence pseudo-column, a variable, ';', EOF, and '(' while a WITH is
// undecided. It is the hot loop of the classifier: one pass, no calls for common tokens.
func (c *classifier) fast() token {
	l := &c.lx
	s := l.s
	i := l.i
	prev := l.cur
	filter := &scanFilters[c.scanSet()]
	for {
		if i >= len(s) {
			t := token{typ: tEOF, start: int32(len(s)), end: int32(len(s))}
			l.i, l.prev, l.cur = len(s), prev, t
			return t
		}
		start := i
		ch := s[i]
		var typ tokType
		look := false
		switch charClass[ch] {
		case cSpace:
			i++
			continue
		case cWord:
			if ch == '$' {
				if typ, i = l.dollar(i); typ != tWord {
					break
				}
			} else {
				typ, i = tWord, wordEnd(s, i+1)
			}
			if n := i - start; prev.typ == tDot {
				look = n == 7 // seq.nextval, seq.currval, seq.lastval
			} else {
				look = n < len(filter) && filter[n]&letterBit(ch) != 0
			}
		case cDigit:
			typ, i = tNumber, numberEnd(s, i+1)
		case cComma:
			typ, i = tComma, i+1
		case cParam:
			typ, i = tParam, i+1
		case cLParen:
			typ, i = tLParen, i+1
			if c.st.withPending {
				look = true // token decides whether it opens the statement
			} else {
				c.depth++
			}
		case cRParen:
			typ, i = tRParen, i+1
			if c.depth > 0 {
				c.depth--
				c.closeParen()
			}
		case cComment:
			if j := l.skip(i); j != i {
				i = j
				continue
			}
			typ, i = l.lexOther(i) // '-', '/', '*' as operators
		default:
			typ, i = l.lexOther(i)
			look = typ == tSemi || typ == tUserVar || typ == tSysVar
		}
		if l.spaces && typ != tString && typ != tIdent && hasSpaceByte(s[start:i]) {
			l.dep |= DependsSpace // as scan
		}
		t := token{typ: typ, start: int32(start), end: int32(i)}
		if look {
			l.i, l.prev, l.cur = i, prev, t
			return t
		}
		prev = t
	}
}
