// Package classify tells, for every statement a client sends, what kind it is and what in
// it matters for routing, so that the router can send it to the primary or to a replica.
//
// Classify is on the hot path of every COM_QUERY (and every COM_STMT_PREPARE): a
// hand-written lexer that never allocates, reads the text once from left to right, and
// returns a flat Result (kind, flags, SHOW kind, hint, offsets into the statement). A full
// SQL parser costs microseconds and dozens of allocations per statement; routing needs only
// the first keywords plus a handful of traps that a first-keyword check misses (see the
// Flags): locking reads, SELECT … INTO, lock and session functions, user variables,
// temporary tables, multi-statements, executable comments, WITH … UPDATE.
//
// # What the lexer sees
//
// Whitespace and comments (-- followed by a space or control character, #, /* */) are
// skipped. Strings ('…', "…", with doubled quotes and backslash escapes) and `identifiers`
// never hold keywords. Keywords are case-insensitive whole words; a word after '.' is a
// qualified name, never a keyword (t.update, db.get_lock(…)). A function counts only when '('
// follows, possibly after whitespace or comments, so a column named get_lock does not.
//
// The text is read as one server reads it, in one session's sql_mode (ClassifyFor and its
// Dialect; Classify reads for no server in particular, FlavorAny). The rules, from the
// servers' lexers and checked on MariaDB 10.11 by the differential test (servertest):
//
//   - /*!NNNNN …*/ runs when NNNNN is not above the server's version (MAJOR*10000 +
//     MINOR*100 + PATCH); then its content is statement text, else the whole comment is a comment, its
//     quotes, ';' and -- included. A comment that does not run may hold one ordinary /* */
//     inside; an ordinary comment holds none. /*! without five digits always runs, the
//     digits being content.
//   - MariaDB reads five digits, or six when a sixth follows (a seventh is content), and never
//     runs /*! versions 50700–99999 (MySQL's); /*M!NNNNNN …*/ runs on MariaDB at or above
//     its version, 50700–99999 included. MariaDB before 11 greets with "5.5.5-10.x…":
//     ParseServerVersion skips the prefix.
//   - MySQL reads exactly five digits; from 8.0.34 six when whitespace follows the sixth. To
//     MySQL /*M! is an ordinary comment. MySQL 9 reads $tag$ … $tag$ as a string.
//   - FlavorAny runs every versioned comment, five or six digits.
//   - A statement of a batch starts afresh: an executable comment open at its ';' is closed
//     (MariaDB refuses such a batch whole).
//   - NO_BACKSLASH_ESCAPES: a backslash in a string is a character ('x\' ends at its second
//     quote). ANSI_QUOTES: "…" quotes a name, without escapes. MariaDB's MSSQL (which implies
//     ANSI_QUOTES) quotes names in [ … ] too, ]] standing for ].
//   - ';' after the last statement, with whitespace and comments, ends the text (the server
//     ignores them); an empty statement between two is Unknown (the server refuses the text).
//
// Result.Depends says what another server or mode would read otherwise: DependsVersion for a
// versioned comment not every supported server (MariaDB 10+, MySQL 5.7+) runs alike, or a
// $tag$; DependsMode for a backslash in a string, any "…", or a '[' token; DependsCharset
// (below). Zero means every supported server in every mode and character set reads the text
// as this reading did (FuzzClassify checks it for servers and modes),
// so the proxy reads once; otherwise it reads under every dialect its nodes and the session's
// possible modes give, and treats text whose readings differ (Result, Statements and where
// each statement ends, Splits) as not understood.
//
// The lexer reads bytes, not characters: in big5, cp932, gbk, sjis and gb18030 a byte from
// 0x81 up and a '\', '`', '[' or ']' after it are one character, and a string or name ends
// elsewhere. It does not read those sets; it marks text where that matters (DependsCharset),
// which the proxy then does not send to a replica unless the session's set is known to be
// another. Likewise single-byte sets (latin1 and others) read 0xA0 or 0xFF as whitespace,
// where the lexer reads a word: a word, number or variable holding one is marked
// DependsSpace (SpaceCharset, SpaceCollation name those sets; servertest checks them).
//
// # Decisions
//
//   - Unknown means "not understood": the router must treat it as a write. Empty input,
//     comments only, garbage and cut-off statements that give no kind are Unknown; nothing
//     here ever panics (FuzzClassify).
//   - Multi-statements: Kind, Show, Inner and Name describe the first statement. Flags and
//     Kinds collect every statement, so SELECT 1; CREATE TEMPORARY TABLE … carries
//     Multi|TempTable. A trailing ';' followed only by whitespace and comments is not Multi.
//     The ';' inside a stored program's BEGIN … END body (CREATE PROCEDURE/FUNCTION/TRIGGER/
//     EVENT, MariaDB's BEGIN NOT ATOMIC and Oracle-mode packages) do not split it.
//   - A stored program's body is only defined by CREATE, not run: nothing in it (GET_LOCK,
//     INTO, @v) sets a flag. MariaDB's BEGIN NOT ATOMIC … END runs at once: it is Call,
//     and its body's flags count.
//   - EXPLAIN and DESCRIBE are Explain with Inner set to the explained kind, and
//     ExplainWrite when that kind writes; DESCRIBE tbl has Inner Show and Show ShowColumns.
//     MySQL's EXPLAIN ANALYZE and MariaDB's ANALYZE stmt run stmt: they get stmt's own kind
//     (ANALYZE UPDATE is Update) and the Analyze flag.
//   - MariaDB's SET STATEMENT … FOR stmt gets stmt's kind and flags, plus SetStatement; its
//     variables last for stmt only, so they set no other Set* flag. EXECUTE IMMEDIATE
//     'text' gets the literal text's kind and flags; with anything but a literal it is
//     Unknown.
//   - PREPARE s FROM 'text' classifies the literal (Inner, InnerFlags) so that EXECUTE s can
//     be routed by what it runs. This and EXECUTE IMMEDIATE are the only places that read
//     bytes twice: the literal is lexed as a string, then classified.
//   - SET ROLE is Set with SetRole: it changes session state. SET DEFAULT ROLE and SET
//     PASSWORD write grant tables: DCL. SET [SESSION] TRANSACTION is SetTransaction; with
//     SESSION also SetSession (it lasts), with GLOBAL also SetGlobal. SET NAMES and SET
//     CHARACTER SET are SetNames only. A scope keyword applies to the assignments after it,
//     as in the server.
//   - Locks that live on a connection until released are LockTables, and their releases
//     UnlockTables: LOCK TABLES, LOCK INSTANCE FOR BACKUP, MariaDB's BACKUP STAGE (END
//     releases) and BACKUP LOCK/UNLOCK, FLUSH TABLES … WITH READ LOCK and … FOR EXPORT.
//   - User variables that a statement may assign although no := shows it are UserVarAssign:
//     CALL p(@out) (an OUT parameter), GET DIAGNOSTICS @n = …, LOAD DATA … (@col).
//     'user'@'host' in account names is not a variable.
//   - Hints count only in a comment before the first token (at the very start, or after other
//     leading comments and whitespace, which ORMs and tracers prepend); a routing hint after
//     it may come from text the application did not write for routing. An executable comment
//     is text: the leading comments end there.
//   - Oracle-mode seq.nextval/currval/lastval count as Sequence, so a column of that name
//     qualified by its table does too: a false alarm sends a read to the primary, which is
//     the safe side.
//
// # What the proxy asks besides Classify
//
// The proxy's other questions about statement text are answered here too, from Classify's
// Result or with the same lexer, never by searching bytes: a substring search finds SET in
// OFFSET, LOCK in a column lock_id and RELEASE_ALL_LOCKS in a string.
//
//   - LeavesSessionState: whether a multi-statement batch may leave state on its
//     connection, from Kinds and Flags alone. UPDATE … SET and INSERT … ON DUPLICATE KEY
//     UPDATE a = 1 leave none: that SET belongs to the statement. Reading a user variable
//     leaves none; assigning one does (UserVarAssign).
//   - FirstWordIs (CREATE or DROP TEMPORARY TABLE?): the first token as Classify sees it,
//     so an executable comment's content is the statement (/*!40101 CREATE …*/ starts with
//     CREATE), ordinary comments and a hint are skipped.
//   - ReleasesAllLocks: RELEASE_ALL_LOCKS( as a call, counted exactly where Classify sets
//     ReleaseLock (Flags has no bit left to tell the two release functions apart).
//   - ReadsDiagnostics and KeepsDiagnostics (diag.go): whether a statement reads the session's
//     warnings (SHOW WARNINGS, @@warning_count…), and whether it leaves them as the previous
//     statement left them (it names no table: TableRef), by MariaDB's rule, checked against a
//     live server (servertest's TestDiagnosticsRule).
//   - UserVars (uservars.go): the user variables a statement reads and assigns, by token, for a
//     connection pool that reads back what a statement set and restores it on the next
//     connection; VarEffects for what it may set without naming it (CALL, BEGIN NOT ATOMIC,
//     EXECUTE) and for LAST_INSERT_ID, FOUND_ROWS and ROW_COUNT. AppendUserVarName and
//     AppendUserVarKey turn a token into the name and the case-folded key. Checked against a
//     live server (servertest's TestUserVarsAssignments).
//   - SetVars (setvars.go): the session system variables a SET assigns, by name, and whether
//     each value is a literal, for a session that reads back the values of expressions where
//     they ran and replays those; false for any SET it cannot read to its end as session
//     assignments only (GLOBAL, user variables, NAMES, TRANSACTION, ROLE…).
//   - ParseKill: KILL [HARD|SOFT] [CONNECTION|QUERY] n with n a plain decimal that fits in
//     32 bits, words separated by whitespace or comments, trailing ';' allowed. Every other
//     KILL form is not ok. KillsUser: KILL … USER name, a KILL that names an account.
package classify
