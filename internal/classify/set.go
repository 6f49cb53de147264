package classify

// headSet reads a SET statement. The forms that are not variable assignments come first:
// SET STATEMENT … FOR, SET PASSWORD, SET [DEFAULT] ROLE, SET [scope] TRANSACTION. What is
// left is a list of assignments, whose targets decide the flags.
//
// SET ROLE changes which roles the session has active: session state like a variable, so
// it is Set with SetRole, to be replayed or pinned. SET DEFAULT ROLE and SET PASSWORD write
// the grant tables, so they are DCL and go to the primary.
func (c *classifier) headSet() token {
	st := &c.st
	st.kind = Set
	t, k := c.nextKw()
	switch k {
	case kwStatement:
		return c.headSetStatement()
	case kwPassword:
		st.kind = DCL
		return c.next()
	case kwDefault:
		if c.peekKw() == kwRole {
			st.kind = DCL
			c.next()
			return c.next()
		}
	case kwRole:
		c.res.Flags |= SetRole
		return c.next()
	case kwTransaction:
		// Without a scope, SET TRANSACTION only shapes the next transaction: SetTransaction
		// alone. With SESSION it lasts for the session, so SetSession comes with it.
		c.res.Flags |= SetTransaction
		return c.txCharacteristics()
	case kwGlobal, kwPersist, kwPersistOnly, kwSession, kwLocal:
		if c.peekKw() == kwTransaction {
			c.next()
			c.res.Flags |= SetTransaction
			if k == kwSession || k == kwLocal {
				c.res.Flags |= SetSession
			} else {
				c.res.Flags |= SetGlobal
			}
			return c.txCharacteristics()
		}
	}
	return c.setList(t)
}

// txCharacteristics reads the characteristics of SET … TRANSACTION (ISOLATION LEVEL …, READ
// ONLY, READ WRITE) up to the end of the statement, and returns the token that ends it.
func (c *classifier) txCharacteristics() token {
	for {
		t, k := c.nextKw()
		switch {
		case t.typ == tEOF || t.typ == tSemi:
			return t
		case k == kwRead && c.peekKw() == kwWrite:
			c.next()
			c.res.Flags |= SetReadWrite
		}
	}
}

// setList reads SET's comma-separated assignments from t. As in the server, a scope keyword
// (GLOBAL, SESSION, LOCAL, PERSIST, PERSIST_ONLY) applies to the assignments after it until
// the next one; @@global.x and the like apply to their own variable only.
func (c *classifier) setList(t token) token {
	global := false
	for {
		k := c.kw(t)
	scope:
		for {
			switch k {
			case kwGlobal, kwPersist, kwPersistOnly:
				global = true
			case kwSession, kwLocal:
				global = false
			default:
				break scope
			}
			t, k = c.nextKw()
		}
		auto, names, access := false, false, false
		switch t.typ {
		case tUserVar:
			c.res.Flags |= UserVar | UserVarAssign
		case tSysVar:
			g, name := c.sysVarAt(t)
			c.setScope(g)
			auto = !g && eqFold(name, "AUTOCOMMIT")
			access = !g && (eqFold(name, "TX_READ_ONLY") || eqFold(name, "TRANSACTION_READ_ONLY"))
		case tWord, tIdent:
			switch {
			case k == kwNames || k == kwCharset:
				names = true
			case k == kwCharacter && c.peekKw() == kwSet:
				c.next()
				names = true
			default:
				if c.lx.peek().typ == tDot { // structured: keycache.key_buffer_size
					c.next()
					t = c.next()
				}
				c.setScope(global)
				auto = !global && c.identEq(t, "AUTOCOMMIT")
				access = !global && (c.identEq(t, "TX_READ_ONLY") || c.identEq(t, "TRANSACTION_READ_ONLY"))
			}
		default:
			return t // not an assignment: the main loop scans the rest
		}
		t = c.next()
		if names {
			c.res.Flags |= SetNames
		} else {
			if t.typ != tEq && t.typ != tAssign {
				return t
			}
			t = c.next()
		}
		// The value runs to a ',' outside parentheses. It is scanned for flags like any
		// expression: SET @a = (SELECT … FOR UPDATE), SET @id = LAST_INSERT_ID().
		first, n := t, 0
		for t.typ != tEOF && t.typ != tSemi && (t.typ != tComma || c.depth > 0) {
			c.token(t)
			n++
			t = c.next()
		}
		if auto {
			c.res.Flags |= SetAutocommit
			c.res.Autocommit = c.boolValue(first, n)
		}
		if access && c.boolValue(first, n) != 1 {
			c.res.Flags |= SetReadWrite
		}
		if t.typ != tComma {
			return t
		}
		t = c.next()
	}
}

// setScope records an assignment to a system variable of the given scope.
func (c *classifier) setScope(global bool) {
	if global {
		c.res.Flags |= SetGlobal
	} else {
		c.res.Flags |= SetSession
	}
}

// headSetStatement reads MariaDB's SET STATEMENT var = value [, …] FOR stmt. The variables
// last for stmt only, so they set no Set* flag but SetStatement; the kind is stmt's. An
// assignment to tx_read_only or transaction_read_only sets SetReadWrite whatever its value:
// stmt could run read-write.
func (c *classifier) headSetStatement() token {
	c.res.Flags |= SetStatement
	depth := 0
	for {
		t, k := c.nextKw()
		if depth <= 0 && (c.identEq(t, "TX_READ_ONLY") || c.identEq(t, "TRANSACTION_READ_ONLY")) {
			c.res.Flags |= SetReadWrite
		}
		switch {
		case t.typ == tEOF || t.typ == tSemi:
			return t
		case t.typ == tLParen:
			depth++
		case t.typ == tRParen:
			depth--
		case k == kwFor && depth <= 0:
			return c.inner(c.next())
		}
	}
}

// identEq reports whether a word or quoted identifier token spells upper, ignoring case.
func (c *classifier) identEq(t token, upper string) bool {
	b := c.lx.s[t.start:t.end]
	if t.typ == tIdent {
		// `name`, and "name" under ANSI_QUOTES or [name] under MSSQL: SET "tx_read_only" = 0
		// sets the variable there.
		if r := c.nameOf(t); len(b) >= 2 && int(r[1]-r[0]) == len(b)-2 {
			b = c.lx.s[r[0]:r[1]]
		} else {
			return false
		}
	} else if t.typ != tWord {
		return false
	}
	return eqFold(b, upper)
}

// boolValue reads a boolean system variable's value from the n tokens starting at t:
// 1 or 0 for a literal (1, 0, ON, OFF, TRUE, FALSE, quoted or not), -1 for anything else.
func (c *classifier) boolValue(t token, n int) int8 {
	if n != 1 {
		return -1
	}
	b := c.lx.s[t.start:t.end]
	switch t.typ {
	case tString:
		if len(b) < 2 || b[len(b)-1] != b[0] {
			return -1
		}
		b = b[1 : len(b)-1]
	case tWord, tNumber:
	default:
		return -1
	}
	switch {
	case eqFold(b, "1"), eqFold(b, "ON"), eqFold(b, "TRUE"):
		return 1
	case eqFold(b, "0"), eqFold(b, "OFF"), eqFold(b, "FALSE"):
		return 0
	}
	return -1
}
