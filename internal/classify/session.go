package classify

// What the proxy asks about a statement after it ran, to follow the state a session leaves on
// its connection: may a batch have left any, did a statement create or drop a temporary table,
// did it release every user lock. The answers come from what Classify already knows, or from
// the lexer, so that keywords inside strings, comments, `identifiers`, qualified names and
// longer words (OFFSET, RESET, lock_id) never count.

// batchStateKinds and batchStateFlags are the kinds and flags by which LeavesSessionState
// finds a statement that leaves state; its comment says why each is in or out.
const (
	batchStateKinds = KindSet(1<<Unknown | 1<<Set | 1<<Use | 1<<Begin | 1<<XA |
		1<<LockTables | 1<<Prepare | 1<<Execute | 1<<Call | 1<<Handler)
	batchStateFlags = TempTable | UserVarAssign | LockFunction | Chain
)

// LeavesSessionState is the default rule for a multi-statement batch (c.Flags has Multi):
// it reports whether any statement in the batch may leave session state behind on the
// connection it ran on, so that the session must stay there. c is the batch's Result.
//
// The first statement must be a plain SELECT, INSERT, UPDATE, DELETE or REPLACE, or the
// batch leaves state (the proxy's rule from before Kinds existed: a batch that starts with
// anything else is rare enough to judge coarsely). After that, the batch leaves state when
// any statement in it
//
//   - is of a kind that sets state: SET (variables, names, roles, the next transaction;
//     GLOBAL too, which the rule does not tell apart), USE, BEGIN/START TRANSACTION, XA,
//     LOCK TABLES and the other connection locks (LockTables), PREPARE;
//   - or of a kind that may run anything: EXECUTE, CALL, BEGIN NOT ATOMIC, HANDLER (an open
//     handler), Unknown (text not understood; also an empty statement between two ';',
//     where the server stops the batch with ER_EMPTY_QUERY);
//   - or carries TempTable (CREATE/DROP TEMPORARY TABLE), UserVarAssign (SET @v, @v := …,
//     … INTO @v, CALL p(@out)), LockFunction (GET_LOCK) or Chain (COMMIT AND CHAIN).
//
// Nothing else leaves state. The SET clause of UPDATE … SET, INSERT … SET and INSERT … ON
// DUPLICATE KEY UPDATE a = 1 belongs to that statement. USE INDEX is an index hint. LOCK IN
// SHARE MODE and FOR UPDATE hold their locks for the statement or for the transaction,
// which the server's status flags follow. Reading @v or @@autocommit changes nothing. SET
// STATEMENT … FOR stmt sets its variables for stmt only. Statements that only remove state
// (UNLOCK TABLES, RELEASE_LOCK, DEALLOCATE PREPARE, COMMIT, ROLLBACK) leave none: missing a
// removal only keeps a session pinned longer. DDL, DCL (SET PASSWORD) and Admin (START
// SLAVE) change the server, not the connection. Per-statement results (LAST_INSERT_ID,
// FOUND_ROWS, ROW_COUNT, warnings) are not session state here: a router follows them by
// where the previous statement ran.
//
// Every one of these facts comes from Classify, whose lexer never finds keywords inside
// strings, comments, `identifiers` or longer words, nor after '.', and skips a stored
// program's body that is only defined; no text is read again. On a single statement (no
// Multi) the rule answers the same question just as coarsely.
func LeavesSessionState(c *Result) bool {
	switch c.Kind {
	case Select, Insert, Update, Delete, Replace:
	default:
		return true
	}
	return c.Kinds&batchStateKinds != 0 || c.Flags&batchStateFlags != 0
}

// FirstWordIs reports whether the first word of stmt is the keyword upper, which must be
// written in upper case (FirstWordIs(stmt, "CREATE")): whole word, any case in stmt. It skips
// what the lexer skips before the first token: whitespace and comments (/* */, # …, -- …),
// including a routing hint. An executable comment's markers are skipped and its content is
// the statement's text, as everywhere in this package: the server runs /*!40101 CREATE
// TEMPORARY TABLE … */, so its first word is CREATE. A quoted `CREATE` is a name, not the
// keyword.
//
// It reads the first word only: for a statement that wraps another (SET STATEMENT … FOR x,
// EXECUTE IMMEDIATE 'x', EXPLAIN x) it answers for the wrapper.
func FirstWordIs(stmt []byte, upper string) bool {
	if len(stmt) > maxStmt {
		stmt = stmt[:maxStmt]
	}
	l := lexer{s: stmt}
	t := l.scan()
	return t.typ == tWord && eqFold(stmt[t.start:t.end], upper)
}

// ReleasesAllLocks reports whether stmt calls RELEASE_ALL_LOCKS(), which releases every user
// lock the session holds, as opposed to RELEASE_LOCK(name): both set the ReleaseLock flag.
// It counts the call exactly where Classify counts ReleaseLock (followed by '(', not after
// '.', not in a stored program's body that is only being defined, not in PREPARE's text; in
// EXECUTE IMMEDIATE's literal text and BEGIN NOT ATOMIC it counts), and never inside strings,
// comments or `identifiers`.
//
// Flags has no bit left for it, so it classifies stmt again: call it only when the Result
// has ReleaseLock, which ReleasesAllLocks(stmt) implies.
func ReleasesAllLocks(stmt []byte) bool {
	var c classifier
	c.classify(stmt, 0)
	return c.allLocks
}
