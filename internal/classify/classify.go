package classify

import (
	"bytes"
	"math"
	"sync"
)

// maxStmt bounds the statement length so that offsets fit in Result's int32 fields. The
// server's own limit (max_allowed_packet) is 1 GiB, so nothing real is cut.
const maxStmt = math.MaxInt32

// maxNest bounds recursion: statements inside statements (EXPLAIN x, SET STATEMENT … FOR x,
// ANALYZE x) and string literals classified again (PREPARE s FROM '…', EXECUTE IMMEDIATE '…').
// Real SQL needs two levels; the bound keeps hostile input from growing the stack.
const maxNest = 4

// Classify returns the kind, flags and hint of a statement as a client sent it in COM_QUERY
// (or COM_STMT_PREPARE). It never allocates, never panics, reads the text once from left
// to right, and is safe for concurrent use: it keeps no state between calls.
//
// Only the first statement of a multi-statement text decides Kind; the rest contribute
// Flags (with Multi) and Kinds. Text the classifier does not understand gives Unknown.
func Classify(stmt []byte) Result {
	return classify(stmt, 0)
}

func classify(stmt []byte, nest int) Result {
	var c classifier
	c.classify(stmt, nest)
	return c.res
}

// classify classifies stmt into c, which must be zero.
func (c *classifier) classify(stmt []byte, nest int) {
	if len(stmt) > maxStmt {
		stmt = stmt[:maxStmt]
	}
	c.lx.s = stmt
	c.lx.spaces = hasSpaceByte(stmt)
	c.nest = nest
	c.hint()
	c.run()
	c.res.Depends = c.lx.dep
}

// stmt is what the classifier knows about the statement it is in.
type stmt struct {
	kind       Kind
	inner      Kind
	show       ShowKind
	innerFlags Flags
	name       [2]int32

	withPending bool // after WITH: the kind is the first statement keyword at withDepth
	withDepth   int

	explain      bool // EXPLAIN/DESCRIBE: kind becomes Explain at the end
	explainTable bool // DESCRIBE tbl
	analyze      bool // ANALYZE stmt, EXPLAIN ANALYZE stmt: runs the statement

	// A stored program's body (CREATE PROCEDURE … BEGIN … END) holds ';' that do not end the
	// statement. bodyTrack counts BEGIN/CASE against END in body; noFlags says the body is
	// only being defined, so what it contains (GET_LOCK, INTO, @v) does not run now.
	bodyTrack bool
	noFlags   bool
	body      int

	nest int // nesting of statements within this statement (EXPLAIN x, SET STATEMENT … FOR x)

	// selects has bit d set while the parentheses open at depth d hold a SELECT keyword read
	// at that depth (bit 0: the statement's own level): a FROM there is a query's (TableRef),
	// one at a depth without it belongs to a function (EXTRACT(YEAR FROM d)). Depths from 64
	// on count as holding one.
	selects uint64
}

// selectAt notes a SELECT keyword at paren depth d.
func (st *stmt) selectAt(d int) {
	if d < 64 {
		st.selects |= 1 << uint(d)
	}
}

// selectedAt reports whether a SELECT was read in the parentheses open at depth d.
func (st *stmt) selectedAt(d int) bool {
	return d >= 64 || st.selects&(1<<uint(d)) != 0
}

// closeParen leaves paren depth c.depth+1, which the caller just decremented: what the
// parentheses held no longer counts.
func (c *classifier) closeParen() {
	if d := c.depth + 1; d < 64 {
		c.st.selects &^= 1 << uint(d)
	}
}

type classifier struct {
	lx    lexer
	res   Result
	st    stmt
	depth int // parenthesis depth in the current statement
	nest  int // depth of classify calls on string literals

	// allLocks: RELEASE_ALL_LOCKS( is called in text that runs. Flags has no bit left for
	// it (ReleaseLock covers both release functions), so ReleasesAllLocks reads it here.
	allLocks bool
}

// run classifies statement after statement until the text ends.
func (c *classifier) run() {
	for first := true; ; first = false {
		t := c.lx.next()
		if t.typ == tSemi {
			// Empty statements: at the end of the text (with whitespace and comments) the
			// server ignores them (or, alone, answers 1065); before another statement it
			// refuses the whole text (1064), which is read here as an empty statement,
			// Unknown (Kind's zero value when it comes first).
			for t.typ == tSemi {
				t = c.lx.next()
			}
			if t.typ == tEOF {
				return
			}
			c.res.Flags |= Multi
			c.res.Kinds |= 1 << Unknown
			c.res.Statements++
			first = false
		}
		if t.typ == tEOF {
			return
		}
		if !first {
			c.res.Flags |= Multi
		}
		c.st = stmt{}
		c.depth = 0
		t = c.rest(c.head(t))
		c.finish(first)
		if c.res.Statements < 65535 {
			c.res.Statements++
		}
		// Where the statement ended, so that two readings that split the text differently
		// differ in Result even when their kinds agree.
		c.res.Splits = (c.res.Splits ^ uint32(t.end)) * 16777619
		if t.typ == tEOF {
			return
		}
		if !c.lx.hasPeek {
			// The server lexes each statement of a batch afresh: an executable comment
			// open at the ';' is not open in the next statement, whose "*/" is text.
			c.lx.exec = false
		}
	}
}

// finish settles the kind of the statement just read and records it.
func (c *classifier) finish(first bool) {
	st := &c.st
	k := st.kind
	if st.withPending {
		k = Unknown // WITH without a statement keyword after the CTEs
	}
	if st.explain || st.analyze {
		st.inner = k
		if st.explainTable {
			st.inner, st.show = Show, ShowColumns
		}
		if st.analyze {
			c.res.Flags |= Analyze // it ran: the kind stays the statement's own
		} else {
			if st.inner.IsWrite() {
				c.res.Flags |= ExplainWrite
			}
			k = Explain
		}
	}
	c.res.Kinds |= 1 << k
	if first {
		c.res.Kind = k
		c.res.Inner = st.inner
		c.res.Show = st.show
		c.res.InnerFlags = st.innerFlags
		c.res.Name = st.name
	}
}

// kw returns the keyword t spells, or kwNone.
func (c *classifier) kw(t token) kwID {
	if t.typ != tWord {
		return kwNone
	}
	return lookup(c.lx.s[t.start:t.end])
}

// next is c.lx.next, for brevity in the statement heads.
func (c *classifier) next() token { return c.lx.next() }

// nextKw returns the next token and its keyword.
func (c *classifier) nextKw() (token, kwID) {
	t := c.lx.next()
	return t, c.kw(t)
}

// peekKw returns the keyword of the token after cur without consuming it.
func (c *classifier) peekKw() kwID { return c.kw(c.lx.peek()) }

// nameOf returns the range of an identifier token without its backquotes.
func (c *classifier) nameOf(t token) [2]int32 {
	switch t.typ {
	case tWord, tNumber:
		return [2]int32{t.start, t.end}
	case tIdent:
		end := t.end
		if end-t.start >= 2 && (c.lx.s[end-1] == c.lx.s[t.start] || c.lx.s[end-1] == ']') {
			end--
		}
		return [2]int32{t.start + 1, end}
	}
	return [2]int32{}
}

// head reads the first token(s) of a statement, which decide its kind, and returns the first
// token it did not consume. The main loop then scans the rest for flags.
func (c *classifier) head(t token) token {
	st := &c.st
	if t.typ == tEOF || t.typ == tSemi {
		return t // an empty statement
	}
	if t.typ == tLParen {
		// (SELECT …) UNION (SELECT …), ((WITH … SELECT …))
		for t.typ == tLParen {
			c.depth++
			t = c.next()
		}
		switch c.kw(t) {
		case kwSelect, kwWith, kwValues, kwTable:
			return c.head(t)
		}
		return t
	}
	switch c.kw(t) {
	case kwSelect, kwValues, kwTable:
		st.kind = Select
		switch c.kw(t) {
		case kwSelect:
			st.selectAt(c.depth)
		case kwTable:
			c.res.Flags |= TableRef // TABLE t (MySQL 8)
		}
	case kwWith:
		st.withPending, st.withDepth = true, c.depth
	case kwInsert:
		st.kind = Insert
	case kwReplace:
		st.kind = Replace
	case kwUpdate:
		st.kind = Update
	case kwDelete:
		st.kind = Delete
	case kwLoad:
		switch c.peekKw() {
		case kwData, kwXml:
			st.kind = LoadData
			return c.headLoad()
		case kwIndex:
			st.kind = Admin // LOAD INDEX INTO CACHE
		}
	case kwCreate:
		return c.headCreate()
	case kwAlter:
		return c.headAlter()
	case kwDrop:
		return c.headDrop()
	case kwRename:
		st.kind = DDL
		if c.peekKw() == kwUser {
			st.kind = DCL
		}
	case kwTruncate:
		st.kind = DDL
	case kwGrant, kwRevoke:
		st.kind = DCL
	case kwBegin:
		return c.headBegin()
	case kwStart:
		switch c.peekKw() {
		case kwTransaction:
			c.next()
			return c.headStartTransaction()
		case kwSlave, kwReplica, kwAll, kwGroupReplication:
			st.kind = Admin
		}
	case kwCommit:
		return c.headEndTransaction(Commit)
	case kwRollback:
		return c.headEndTransaction(Rollback)
	case kwSavepoint:
		st.kind = Savepoint
		t = c.next()
		st.name = c.nameOf(t)
	case kwRelease:
		if c.peekKw() == kwSavepoint {
			c.next()
			st.kind = ReleaseSavepoint
			t = c.next()
			st.name = c.nameOf(t)
		}
	case kwXa:
		st.kind = XA
	case kwSet:
		return c.headSet()
	case kwUse:
		st.kind = Use
		t = c.next()
		st.name = c.nameOf(t)
	case kwShow:
		return c.headShow()
	case kwExplain, kwDescribe, kwDesc:
		return c.headExplain()
	case kwAnalyze:
		return c.headAnalyze()
	case kwCall:
		st.kind = Call
	case kwDo:
		st.kind = Do
	case kwHandler:
		st.kind = Handler
	case kwLock:
		switch c.peekKw() {
		case kwTable, kwTables, kwInstance:
			st.kind = LockTables
		}
	case kwUnlock:
		switch c.peekKw() {
		case kwTable, kwTables, kwInstance:
			st.kind = UnlockTables
		}
	case kwBackup:
		// MariaDB's BACKUP STAGE START…BLOCK_COMMIT and BACKUP LOCK hold locks on the
		// connection until BACKUP STAGE END / BACKUP UNLOCK, exactly like LOCK TABLES.
		var k kwID
		t, k = c.nextKw()
		switch k {
		case kwStage:
			st.kind = LockTables
			t, k = c.nextKw()
			if k == kwEnd {
				st.kind = UnlockTables
			}
		case kwLock:
			st.kind = LockTables
		case kwUnlock:
			st.kind = UnlockTables
		}
	case kwPrepare:
		return c.headPrepare()
	case kwExecute:
		return c.headExecute()
	case kwDeallocate:
		st.kind = Deallocate
		t = c.next()
		if c.kw(t) == kwPrepare {
			t = c.next()
		}
		st.name = c.nameOf(t)
	case kwKill:
		st.kind = Kill
	case kwFlush:
		return c.headFlush()
	case kwOptimize, kwCheck, kwRepair, kwChecksum, kwInstall, kwUninstall, kwReset,
		kwPurge, kwChange, kwStop, kwShutdown, kwRestart, kwBinlog, kwCache, kwClone, kwImport:
		st.kind = Admin
	case kwHelp:
		st.kind = Help
	case kwSignal:
		st.kind = Signal
	case kwResignal:
		st.kind = Resignal
	case kwGet:
		st.kind = Get
	case kwDeclare, kwReturn, kwLeave, kwIterate, kwOpen, kwClose, kwFetch:
		st.kind = Other
	default:
		return t // Unknown: the rest of the statement is still scanned for flags
	}
	if t.typ == tEOF || t.typ == tSemi {
		return t
	}
	return c.next()
}

// headLoad reads DATA|XML [LOW_PRIORITY|CONCURRENT] [LOCAL] INFILE after LOAD: with LOCAL, the
// client sends a file of its own (LoadLocal), named by the string literal after INFILE (Name,
// without its quotes and as written: escapes are not undone).
func (c *classifier) headLoad() token {
	c.next() // DATA or XML
	t := c.next()
	if t.typ == tWord && (eqFold(c.lx.s[t.start:t.end], "LOW_PRIORITY") || eqFold(c.lx.s[t.start:t.end], "CONCURRENT")) {
		t = c.next()
	}
	if c.kw(t) == kwLocal {
		if p := c.lx.peek(); p.typ == tWord && eqFold(c.lx.s[p.start:p.end], "INFILE") {
			c.res.Flags |= LoadLocal
			c.next() // INFILE
			if t = c.next(); t.typ == tString && t.end-t.start >= 2 {
				c.st.name = [2]int32{t.start + 1, t.end - 1} // the file's name, as written
			}
		}
	}
	return t
}

// inner classifies the statement that an EXPLAIN, ANALYZE or SET STATEMENT … FOR wraps.
func (c *classifier) inner(t token) token {
	if c.st.nest >= maxNest {
		c.st.kind = Unknown
		return t
	}
	c.st.nest++
	// As at the start of a statement: a head that does not recognise what follows leaves it
	// Unknown, not the wrapper's kind (SET STATEMENT … FOR EXECUTE IMMEDIATE @q was a Set).
	c.st.kind = Unknown
	return c.head(t)
}

// isStatementStart reports whether t can start a statement EXPLAIN or ANALYZE can wrap.
func (c *classifier) isStatementStart(t token) bool {
	if t.typ == tLParen {
		return true
	}
	switch c.kw(t) {
	case kwSelect, kwWith, kwValues, kwTable, kwInsert, kwReplace, kwUpdate, kwDelete:
		return true
	}
	return false
}

// skipUser skips the account after DEFINER =: CURRENT_USER[()], name, 'name'@'host',
// `name`@`host`, name@host.
func (c *classifier) skipUser() {
	t, k := c.nextKw()
	if k == kwCurrentUser || k == kwCurrentRole {
		if c.lx.peek().typ == tLParen {
			c.next()
			if c.lx.peek().typ == tRParen {
				c.next()
			}
		}
		return
	}
	if t.typ != tWord && t.typ != tString && t.typ != tIdent {
		return
	}
	if p := c.lx.peek(); p.typ == tUserVar {
		c.next()
		if p.end-p.start == 1 { // 'name' @ 'host' with spaces: the host is the next token
			c.next()
		}
	}
}

// skipObjectModifiers consumes what may stand between CREATE/ALTER and the object type
// (OR REPLACE, DEFINER = …, SQL SECURITY …, ALGORITHM = …, TEMPORARY, UNIQUE, ONLINE …) and
// returns the object keyword's token and whether TEMPORARY was among them.
func (c *classifier) skipObjectModifiers() (t token, k kwID, temp bool) {
	for range 32 {
		t, k = c.nextKw()
		switch k {
		case kwOr, kwReplace, kwUnique, kwFulltext, kwSpatial, kwOnline, kwOffline,
			kwAggregate, kwIgnore, kwNonblocking:
		case kwTemporary:
			temp = true
		case kwDefiner:
			if c.lx.peek().typ == tEq {
				c.next()
			}
			c.skipUser()
		case kwSql: // SQL SECURITY DEFINER|INVOKER
			c.next()
			c.next()
		case kwAlgorithm: // ALGORITHM = UNDEFINED|MERGE|TEMPTABLE
			if c.lx.peek().typ == tEq {
				c.next()
			}
			c.next()
		default:
			return t, k, temp
		}
	}
	return t, k, temp
}

func (c *classifier) headCreate() token {
	st := &c.st
	st.kind = DDL
	t, k, temp := c.skipObjectModifiers()
	switch k {
	case kwTable, kwSequence:
		if temp {
			c.res.Flags |= TempTable
		}
	case kwUser, kwRole:
		st.kind = DCL
	case kwProcedure, kwFunction, kwTrigger, kwEvent:
		st.bodyTrack, st.noFlags = true, true
	case kwPackage:
		// MariaDB's Oracle-mode CREATE PACKAGE [BODY] p AS … END has no BEGIN around
		// its ';'-separated members: the whole text up to the last END is the body.
		st.bodyTrack, st.noFlags, st.body = true, true, 1
	}
	if t.typ == tEOF || t.typ == tSemi {
		return t
	}
	return c.next()
}

func (c *classifier) headAlter() token {
	st := &c.st
	st.kind = DDL
	t, k, _ := c.skipObjectModifiers()
	switch k {
	case kwUser, kwRole:
		st.kind = DCL
	case kwEvent: // ALTER EVENT … DO BEGIN … END
		st.bodyTrack, st.noFlags = true, true
	}
	if t.typ == tEOF || t.typ == tSemi {
		return t
	}
	return c.next()
}

func (c *classifier) headDrop() token {
	st := &c.st
	st.kind = DDL
	t, k := c.nextKw()
	temp := false
	if k == kwTemporary {
		temp = true
		t, k = c.nextKw()
	}
	switch k {
	case kwTable, kwTables, kwSequence:
		if temp {
			c.res.Flags |= TempTable
		}
	case kwUser, kwRole:
		st.kind = DCL
	case kwPrepare:
		st.kind = Deallocate
		t = c.next()
		st.name = c.nameOf(t)
	}
	if t.typ == tEOF || t.typ == tSemi {
		return t
	}
	return c.next()
}

// headBegin: BEGIN [WORK] starts a transaction; MariaDB's BEGIN NOT ATOMIC … END is an
// anonymous stored program that runs at once, so it is classified like CALL, and the ';'
// inside its body do not split it.
func (c *classifier) headBegin() token {
	st := &c.st
	t, k := c.nextKw()
	switch {
	case t.typ == tEOF || t.typ == tSemi:
		st.kind = Begin
		return t
	case k == kwWork:
		st.kind = Begin
		return c.next()
	case k == kwNot:
		st.kind = Call
		st.bodyTrack, st.body = true, 1
		if c.peekKw() == kwAtomic {
			c.next()
		}
		return c.next()
	}
	return t // BEGIN something: Unknown
}

// headStartTransaction reads START TRANSACTION's characteristics, after TRANSACTION.
func (c *classifier) headStartTransaction() token {
	c.st.kind = Begin
	for {
		t, k := c.nextKw()
		switch {
		case t.typ == tEOF || t.typ == tSemi:
			return t
		case k == kwRead:
			switch c.peekKw() {
			case kwOnly:
				c.next()
				c.res.Flags |= ReadOnlyTx
			case kwWrite:
				c.next()
				c.res.Flags |= ReadWriteTx
			}
		case k == kwConsistent:
			c.res.Flags |= ConsistentSnapshot
		}
	}
}

// headEndTransaction reads COMMIT|ROLLBACK [WORK] [AND [NO] CHAIN] [[NO] RELEASE] and
// ROLLBACK [WORK] TO [SAVEPOINT] name.
func (c *classifier) headEndTransaction(kind Kind) token {
	st := &c.st
	st.kind = kind
	t, k := c.nextKw()
	if k == kwWork {
		t, k = c.nextKw()
	}
	if kind == Rollback && k == kwTo {
		st.kind = RollbackTo
		t, k = c.nextKw()
		if k == kwSavepoint {
			t = c.next()
		}
		st.name = c.nameOf(t)
		return c.next()
	}
	no := false
	for t.typ == tWord {
		switch k {
		case kwAnd:
			no = false
		case kwNo:
			no = true
		case kwChain:
			if !no {
				c.res.Flags |= Chain
			}
			no = false
		case kwRelease:
			if !no {
				c.res.Flags |= Release
			}
			no = false
		default:
			return t
		}
		t, k = c.nextKw()
	}
	return t
}

// headShow tells apart the SHOW statements in ShowKind.
func (c *classifier) headShow() token {
	st := &c.st
	st.kind = Show
	global := false
	t, k := c.nextKw()
modifiers:
	for {
		switch k {
		case kwFull, kwExtended, kwStorage:
		case kwGlobal:
			global = true
		case kwSession, kwLocal:
			global = false
		default:
			break modifiers
		}
		t, k = c.nextKw()
	}
	switch k {
	case kwMaster:
		switch c.peekKw() {
		case kwStatus:
			st.show = ShowMasterStatus
		case kwLogs:
			st.show = ShowBinlog
		}
	case kwBinlog:
		switch c.peekKw() {
		case kwStatus:
			st.show = ShowMasterStatus
		case kwEvents:
			st.show = ShowBinlog
		}
	case kwBinary:
		switch c.peekKw() {
		case kwLogs:
			st.show = ShowBinlog
		case kwLog: // SHOW BINARY LOG STATUS (MySQL 8.2+)
			st.show = ShowMasterStatus
		}
	case kwSlave, kwReplica, kwReplicas, kwRelaylog:
		st.show = ShowSlave
	case kwAll:
		switch c.peekKw() {
		case kwSlaves, kwReplicas:
			st.show = ShowSlave
		}
	case kwProcesslist:
		st.show = ShowProcesslist
	case kwWarnings, kwErrors, kwCount:
		st.show = ShowWarnings
	case kwStatus:
		st.show = ShowStatus
		if global {
			st.show = ShowGlobalStatus
		}
	case kwVariables:
		st.show = ShowVariables
		if global {
			st.show = ShowGlobalVariables
		}
	case kwCreate:
		st.show = ShowCreate
	case kwTables, kwTable:
		st.show = ShowTables
	case kwColumns, kwFields, kwIndex, kwIndexes, kwKeys:
		st.show = ShowColumns
	case kwDatabases, kwSchemas:
		st.show = ShowDatabases
	case kwGrants:
		st.show = ShowGrants
	case kwProfile, kwProfiles:
		st.show = ShowProfile
	case kwEngine, kwInnodb:
		st.show = ShowEngine
	}
	if c.showReadsCatalog(t, k) {
		c.res.Flags |= TableRef
	}
	if t.typ == tEOF || t.typ == tSemi {
		return t
	}
	return c.next()
}

// showReadsCatalog reports whether the SHOW whose first word after its modifiers is t (keyword
// k) is answered from the server's catalog tables (information_schema), which it opens as
// tables: checked on MariaDB 10.11 (such a SHOW clears the session's warnings, one answered
// otherwise, SHOW GRANTS, PROCESSLIST, CREATE DATABASE|PROCEDURE…, MASTER STATUS, keeps them).
func (c *classifier) showReadsCatalog(t token, k kwID) bool {
	switch k {
	case kwStatus, kwVariables, kwTables, kwTable, kwColumns, kwFields, kwIndex, kwIndexes, kwKeys,
		kwDatabases, kwSchemas, kwOpen, kwTriggers, kwEvents, kwPlugins, kwEngines, kwCharacter,
		kwCharset, kwCollation, kwProfile:
		return true
	case kwCreate:
		switch c.peekKw() {
		case kwTable, kwView, kwSequence:
			return true
		}
	case kwProcedure, kwFunction, kwPackage:
		if k == kwPackage && c.identEq(c.lx.peek(), "BODY") {
			c.next()
		}
		return c.peekKw() == kwStatus
	}
	// USER_STATISTICS, CLIENT_STATISTICS, INDEX_STATISTICS, TABLE_STATISTICS
	const suffix = "_STATISTICS"
	w := c.lx.s[t.start:t.end]
	return t.typ == tWord && len(w) > len(suffix) && eqFold(w[len(w)-len(suffix):], suffix)
}

// headExplain reads EXPLAIN/DESCRIBE/DESC [EXTENDED|PARTITIONS|ANALYZE|FORMAT=x|INTO @v]
// followed by a statement, a table (DESCRIBE tbl), or FOR CONNECTION n.
func (c *classifier) headExplain() token {
	st := &c.st
	st.explain = true
	t, k := c.nextKw()
	for t.typ == tWord {
		switch k {
		case kwExtended, kwPartitions:
		case kwAnalyze: // MySQL's EXPLAIN ANALYZE runs the statement
			if st.analyze {
				return c.inner(t) // EXPLAIN ANALYZE ANALYZE TABLE: the second is a statement
			}
			st.analyze = true
		case kwFormat:
			if c.lx.peek().typ == tEq {
				c.next()
			}
			c.next()
		case kwInto: // MySQL 8.1+: EXPLAIN FORMAT=JSON INTO @v SELECT …
			if c.lx.peek().typ == tUserVar {
				c.next()
				c.res.Flags |= UserVar | UserVarAssign
			}
		case kwFor: // EXPLAIN FOR CONNECTION n: Inner stays Unknown
			return c.next()
		default:
			if c.isStatementStart(t) {
				return c.inner(t)
			}
			st.explainTable = true
			c.res.Flags |= TableRef
			return c.next()
		}
		t, k = c.nextKw()
	}
	if c.isStatementStart(t) {
		return c.inner(t)
	}
	if t.typ == tIdent {
		st.explainTable = true // DESCRIBE `t`
		c.res.Flags |= TableRef
		return c.next()
	}
	return t
}

// headAnalyze: ANALYZE [NO_WRITE_TO_BINLOG|LOCAL] TABLE is maintenance; MariaDB's
// ANALYZE [FORMAT=JSON] stmt runs stmt and reports how it ran, so its kind is stmt's: an
// ANALYZE UPDATE updates.
func (c *classifier) headAnalyze() token {
	st := &c.st
	t, k := c.nextKw()
	switch k {
	case kwTable, kwTables, kwNoWriteToBinlog, kwLocal:
		st.kind = Admin
		return t
	case kwFormat:
		if c.lx.peek().typ == tEq {
			c.next()
		}
		c.next()
		t = c.next()
	}
	if c.isStatementStart(t) {
		st.analyze = true
		return c.inner(t)
	}
	st.kind = Admin
	return t
}

// headPrepare reads PREPARE name FROM 'text' | @var and classifies a literal text, so that a
// later EXECUTE can be routed by what it runs.
func (c *classifier) headPrepare() token {
	st := &c.st
	st.kind = Prepare
	t, k := c.nextKw()
	if k != kwFrom {
		st.name = c.nameOf(t)
		t, k = c.nextKw()
	}
	if k == kwFrom {
		t = c.next()
	}
	if t.typ == tString && c.textEnds() {
		r, _ := c.literal(t) // defined, not run: a RELEASE_ALL_LOCKS( in it releases nothing yet
		st.inner, st.innerFlags = r.Kind, r.Flags
	}
	return t
}

// textEnds reports whether the string literal just read is the whole text of PREPARE … FROM or
// EXECUTE IMMEDIATE: the statement ends after it, or (EXECUTE IMMEDIATE) USING follows. The
// server takes an expression there: adjacent literals are one string ('SELECT 1' ' INTO
// OUTFILE …' prepares the INTO OUTFILE), and anything else after the literal (a COLLATE, an
// operator) is text sluice does not know; the inner statement then stays Unknown.
func (c *classifier) textEnds() bool {
	n := c.lx.peek()
	return n.typ == tEOF || n.typ == tSemi || c.identEq(n, "USING")
}

// headExecute reads EXECUTE name [USING …]. MariaDB's EXECUTE IMMEDIATE 'text' runs text at
// once: a literal text gives its own kind and flags; anything else (a variable, an
// expression) is Unknown, since the text is not known here.
func (c *classifier) headExecute() token {
	st := &c.st
	t, k := c.nextKw()
	if k != kwImmediate {
		st.kind = Execute
		st.name = c.nameOf(t)
		if t.typ == tEOF || t.typ == tSemi {
			return t
		}
		return c.next()
	}
	t = c.next()
	if t.typ != tString || !c.textEnds() {
		return t
	}
	r, allLocks := c.literal(t)
	st.kind, st.show, st.inner, st.innerFlags = r.Kind, r.Show, r.Inner, r.InnerFlags
	c.res.Flags |= r.Flags
	c.allLocks = c.allLocks || allLocks
	if r.Flags&SetAutocommit != 0 {
		c.res.Autocommit = r.Autocommit
	}
	return t
}

// literal classifies the value of a string literal token: the text the server runs, its
// escapes undone (unescape) under the dialect's NO_BACKSLASH_ESCAPES.
// allLocks reports whether the text calls RELEASE_ALL_LOCKS(.
func (c *classifier) literal(t token) (r Result, allLocks bool) {
	if c.nest >= maxNest {
		return Result{}, false
	}
	s := c.lx.s
	end := t.end
	if end-t.start >= 2 && s[end-1] == s[t.start] {
		end--
	}
	text := s[t.start+1 : end]
	if q := s[t.start]; bytes.IndexByte(text, q) >= 0 || c.lx.d.Mode&NoBackslashEscapes == 0 && bytes.IndexByte(text, '\\') >= 0 {
		// The text as the server has it differs from its spelling: classified from a copy
		// (pooled: the recursion makes any local buffer escape).
		bp := valueBufs.Get().(*[]byte)
		defer func() {
			if cap(*bp) <= maxPooledValue {
				valueBufs.Put(bp)
			}
		}()
		*bp = unescape((*bp)[:0], text, q, c.lx.d.Mode&NoBackslashEscapes != 0)
		text = *bp
	}
	var in classifier
	in.lx.d = c.lx.d
	in.classify(text, c.nest+1)
	c.lx.dep |= in.lx.dep
	return in.res, in.allLocks
}

// valueBufs hold the values of string literals that literal classifies; maxPooledValue is the
// largest capacity kept for reuse.
var valueBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledValue = 64 << 10

// unescape appends to dst the value of the contents s of a string literal quoted by q, as the
// server reads it: a doubled quote is one, and (unless noBackslash) a backslash escape is the
// character it stands for (\n a newline, \0 a NUL, \Z 0x1a …; \% and \_ stay as written). The
// text PREPARE or EXECUTE IMMEDIATE runs is that value, not the spelling: 'SELECT "x\" INTO
// OUTFILE … -- "' spells one string after SELECT, but runs SELECT "x" INTO OUTFILE …, and
// '# \n FLUSH LOGS' runs FLUSH LOGS after a comment's end.
func unescape(dst, s []byte, q byte, noBackslash bool) []byte {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '\\' && !noBackslash && i+1 < len(s):
			i++
			switch b = s[i]; b {
			case '0':
				b = 0
			case 'b':
				b = '\b'
			case 'n':
				b = '\n'
			case 'r':
				b = '\r'
			case 't':
				b = '\t'
			case 'Z':
				b = 0x1a
			case '%', '_':
				dst = append(dst, '\\')
			}
		case b == q && i+1 < len(s) && s[i+1] == q:
			i++
		}
		dst = append(dst, b)
	}
	return dst
}

// headFlush: FLUSH TABLES … WITH READ LOCK and FLUSH TABLES … FOR EXPORT take locks that live
// until UNLOCK TABLES on the same connection, so they are LockTables; other FLUSHes are Flush.
func (c *classifier) headFlush() token {
	c.st.kind = Flush
	for {
		t, k := c.nextKw()
		switch {
		case t.typ == tEOF || t.typ == tSemi:
			return t
		case k == kwWith && c.peekKw() == kwRead, k == kwFor && c.peekKw() == kwExport:
			c.st.kind = LockTables
		}
	}
}

// token looks at one token after the statement head for flags. t must be c.lx.cur, the
// token c.lx.next returned last, because token looks at c.lx.prev and peeks past t.
func (c *classifier) token(t token) {
	switch t.typ {
	case tLParen:
		// WITH c AS (…) (SELECT …): a parenthesised query right after the CTEs is the
		// statement itself; a '(' after AS opens a CTE's definition instead.
		if st := &c.st; st.withPending && c.depth == st.withDepth && c.kw(c.lx.prev) != kwAs {
			if c.lx.peek().typ == tLParen {
				st.withPending, st.kind = false, Select // WITH c AS (…) ((SELECT …) UNION …)
			}
			switch c.peekKw() {
			case kwSelect, kwWith, kwValues, kwTable:
				st.withPending, st.kind = false, Select
			}
		}
		c.depth++
	case tRParen:
		if c.depth > 0 {
			c.depth--
			c.closeParen()
		}
	case tWord:
		c.word(t)
	case tUserVar:
		if c.st.noFlags || c.st.kind == DCL {
			return
		}
		// 'user'@'host', `user`@`host`, user@host name an account, not a variable.
		if p := c.lx.prev; p.end == t.start && (p.typ == tString || p.typ == tIdent || p.typ == tWord) {
			return
		}
		c.res.Flags |= UserVar
		switch c.st.kind {
		case Call, Get, LoadData:
			// CALL p(@out) may assign through an OUT parameter, GET DIAGNOSTICS @n = …
			// and LOAD DATA … (@col) assign: the variable then lives where this ran.
			c.res.Flags |= UserVarAssign
		default:
			if c.lx.peek().typ == tAssign {
				c.res.Flags |= UserVarAssign
			}
		}
	case tSysVar:
		if c.st.noFlags {
			return
		}
		c.res.Flags |= SysVarRead
		switch _, name := c.sysVarAt(t); {
		case eqFold(name, "LAST_INSERT_ID") || eqFold(name, "IDENTITY"):
			c.res.Flags |= LastInsertID
		case eqFold(name, "TX_READ_ONLY") || eqFold(name, "TRANSACTION_READ_ONLY"):
			c.res.Flags |= TxReadOnlyRead
		case eqFold(name, "WARNING_COUNT") || eqFold(name, "ERROR_COUNT"):
			// What the previous statement left in the diagnostics area: read where it is.
			c.res.Flags |= DiagnosticsRead
		}
	}
}

// word looks at one word after the statement head.
func (c *classifier) word(t token) {
	st := &c.st
	if c.lx.prev.typ == tDot {
		// A word after '.' is a qualified name (t.update, db.get_lock(…) is a stored
		// function), never a keyword; except Oracle-mode sequence access, seq.nextval.
		if !st.noFlags {
			switch c.kw(t) {
			case kwNextval, kwCurrval, kwLastval:
				c.res.Flags |= Sequence
			}
		}
		return
	}
	k := c.kw(t)
	if st.bodyTrack {
		switch k {
		case kwBegin, kwCase:
			st.body++
		case kwEnd:
			// END IF/LOOP/WHILE/REPEAT/FOR close blocks that were not counted; END CASE and
			// a bare or labelled END close a counted BEGIN or CASE.
			switch c.peekKw() {
			case kwIf, kwLoop, kwWhile, kwRepeat:
				c.next()
			case kwFor:
				// END FOR closes a MariaDB FOR loop, but CASE … END FOR UPDATE ends a
				// CASE expression in a locking read.
				c.next()
				if k := c.peekKw(); k == kwUpdate || k == kwShare {
					c.next()
					if !st.noFlags {
						c.res.Flags |= LockingRead
					}
					if st.body > 0 {
						st.body--
					}
				}
			case kwCase:
				c.next()
				fallthrough
			default:
				if st.body > 0 {
					st.body--
				}
			}
		}
	}
	if st.noFlags {
		return
	}
	switch k {
	case kwFor:
		switch c.peekKw() {
		case kwUpdate, kwShare:
			c.next()
			c.res.Flags |= LockingRead
		}
	case kwLock:
		if c.peekKw() == kwIn { // LOCK IN SHARE MODE
			c.res.Flags |= LockingRead
		}
	case kwInto:
		if st.kind == Select && !st.withPending {
			c.res.Flags |= SelectInto
			if c.lx.peek().typ == tUserVar {
				c.res.Flags |= UserVarAssign
			} else {
				c.res.Flags |= IntoFile // OUTFILE, DUMPFILE (or a local variable: in doubt, a file)
			}
		}
	case kwGetLock:
		c.call(LockFunction)
	case kwReleaseLock:
		c.call(ReleaseLock)
	case kwReleaseAllLocks:
		if c.call(ReleaseLock) {
			c.allLocks = true
		}
	case kwIsFreeLock, kwIsUsedLock:
		c.call(LockQuery)
	case kwLastInsertId:
		c.call(LastInsertID)
	case kwRowCount:
		c.call(RowCount)
	case kwConnectionID:
		c.call(ConnectionID)
	case kwFoundRows:
		c.call(FoundRows)
	case kwNextval, kwLastval, kwSetval:
		c.call(Sequence)
	case kwSqlCalcFoundRows:
		c.res.Flags |= CalcFoundRows
	case kwNext, kwPrevious: // NEXT VALUE FOR seq, PREVIOUS VALUE FOR seq
		if c.peekKw() == kwValue {
			c.next()
			if c.peekKw() == kwFor {
				c.next()
				c.res.Flags |= Sequence
			}
		}
	case kwSelect, kwValues, kwTable:
		if k == kwSelect {
			st.selectAt(c.depth)
		}
		if st.withPending && c.depth == st.withDepth {
			st.withPending, st.kind = false, Select
		}
	case kwFrom:
		// A query's FROM names a table, a derived table or a CTE, unless it is FROM DUAL;
		// FROM inside a function's parentheses (EXTRACT, TRIM, SUBSTRING) names none.
		if st.selectedAt(c.depth) && c.peekKw() != kwDual {
			c.res.Flags |= TableRef
		}
	case kwUpdate, kwDelete, kwInsert, kwReplace:
		if st.withPending && c.depth == st.withDepth {
			st.withPending = false
			c.res.Flags |= WithWrite
			switch k {
			case kwUpdate:
				st.kind = Update
			case kwDelete:
				st.kind = Delete
			case kwInsert:
				st.kind = Insert
			default:
				st.kind = Replace
			}
		}
	}
}

// call sets f when the word just read is a function call: followed by '(' (whitespace and
// comments allowed between, as with IGNORE_SPACE), so that a column named get_lock is not.
// It reports whether it did.
func (c *classifier) call(f Flags) bool {
	if c.lx.peek().typ == tLParen {
		c.res.Flags |= f
		return true
	}
	return false
}

// sysVarAt reads the system variable that the @@ token t begins as the server reads it, and
// reports whether its scope is global and its name. The server reads the scope and the name
// as tokens of their own: @@global /**/ . max_connections and @@session.`tx_read_only` name
// the variable after the dot, which the lexer's one token does not hold; sysVarAt then
// consumes the dot and the name.
func (c *classifier) sysVarAt(t token) (global bool, name []byte) {
	v := c.lx.s[t.start+2 : t.end]
	global, name = c.sysVar(t)
	scoped := len(name) < len(v) // the token held the scope and its dot
	for {
		if len(name) == 0 {
			// The name is the next token: after "@@global." or "@@global /**/ .", or after
			// "@@" and a comment.
			n := c.lx.peek()
			if n.typ != tWord && n.typ != tIdent {
				return global, nil
			}
			c.next()
			r := c.nameOf(n)
			name = c.lx.s[r[0]:r[1]]
		}
		if scoped || bytes.IndexByte(name, '.') >= 0 || c.lx.peek().typ != tDot {
			return global, name
		}
		switch {
		case eqFold(name, "GLOBAL"), eqFold(name, "PERSIST"), eqFold(name, "PERSIST_ONLY"):
			global = true
		case eqFold(name, "SESSION"), eqFold(name, "LOCAL"):
			global = false
		default:
			return global, name // @@name.component, the component after a space
		}
		c.next() // the dot
		name, scoped = nil, true
	}
}

// sysVar splits an @@[scope.]name token into whether the scope is global and the name.
func (c *classifier) sysVar(t token) (global bool, name []byte) {
	v := c.lx.s[t.start+2 : t.end]
	for _, p := range [...]struct {
		prefix string
		global bool
	}{
		{"GLOBAL.", true}, {"SESSION.", false}, {"LOCAL.", false},
		{"PERSIST.", true}, {"PERSIST_ONLY.", true},
	} {
		if len(v) >= len(p.prefix) && eqFold(v[:len(p.prefix)], p.prefix) {
			return p.global, v[len(p.prefix):]
		}
	}
	return false, v
}

// eqFold reports whether b equals the upper-case ASCII string upper, ignoring case.
func eqFold(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}
