package classify

import "strings"

// Kind is what a statement does, as far as routing cares. The zero value, Unknown, means the
// classifier could not tell, and a router must then treat the statement as a write.
type Kind uint8

// The statement kinds. The order is part of no protocol: compare with the names, never with
// numbers, except that every Kind fits in a KindSet.
const (
	Unknown          Kind = iota // cannot classify: the router sends it to the primary
	Select                       // SELECT, WITH … SELECT, VALUES, TABLE, parenthesised SELECT
	Insert                       // INSERT, INSERT … SELECT, WITH … INSERT
	Update                       // UPDATE, WITH … UPDATE
	Delete                       // DELETE, WITH … DELETE
	Replace                      // REPLACE
	LoadData                     // LOAD DATA, LOAD XML
	DDL                          // CREATE/ALTER/DROP/RENAME/TRUNCATE of schema objects
	DCL                          // GRANT, REVOKE, CREATE/ALTER/DROP/RENAME USER, CREATE/DROP ROLE, SET PASSWORD, SET DEFAULT ROLE
	Begin                        // BEGIN [WORK], START TRANSACTION …
	Commit                       // COMMIT …
	Rollback                     // ROLLBACK … (not ROLLBACK TO)
	Savepoint                    // SAVEPOINT name
	RollbackTo                   // ROLLBACK [WORK] TO [SAVEPOINT] name
	ReleaseSavepoint             // RELEASE SAVEPOINT name
	XA                           // XA START/BEGIN/END/PREPARE/COMMIT/ROLLBACK/RECOVER
	Set                          // SET … (see the Set* flags)
	Use                          // USE db
	Show                         // SHOW … (see ShowKind)
	Explain                      // EXPLAIN/DESCRIBE/DESC that does not execute (see Result.Inner)
	Call                         // CALL, and MariaDB's anonymous BEGIN NOT ATOMIC … END block
	Do                           // DO expr
	Handler                      // HANDLER t OPEN/READ/CLOSE
	LockTables                   // LOCK TABLES, LOCK INSTANCE FOR BACKUP, BACKUP STAGE/LOCK, FLUSH TABLES … WITH READ LOCK / FOR EXPORT
	UnlockTables                 // UNLOCK TABLES/INSTANCE, BACKUP STAGE END, BACKUP UNLOCK
	Prepare                      // PREPARE name FROM …
	Execute                      // EXECUTE name [USING …]
	Deallocate                   // DEALLOCATE PREPARE name, DROP PREPARE name
	Kill                         // KILL …
	Flush                        // FLUSH … (except the locking forms, which are LockTables)
	Admin                        // ANALYZE/OPTIMIZE/CHECK/REPAIR/CHECKSUM TABLE, plugins, RESET, PURGE, CHANGE MASTER, START/STOP SLAVE, SHUTDOWN, BINLOG, CACHE INDEX, LOAD INDEX …
	Help                         // HELP 'topic'
	Signal                       // SIGNAL
	Resignal                     // RESIGNAL
	Get                          // GET [CURRENT|STACKED] DIAGNOSTICS
	Other                        // recognised, but only meaningful inside stored programs (DECLARE, RETURN, LEAVE, OPEN, FETCH …)

	numKinds = int(Other) + 1
)

var kindNames = [numKinds]string{
	"Unknown", "Select", "Insert", "Update", "Delete", "Replace", "LoadData", "DDL", "DCL",
	"Begin", "Commit", "Rollback", "Savepoint", "RollbackTo", "ReleaseSavepoint", "XA", "Set",
	"Use", "Show", "Explain", "Call", "Do", "Handler", "LockTables", "UnlockTables", "Prepare",
	"Execute", "Deallocate", "Kill", "Flush", "Admin", "Help", "Signal", "Resignal", "Get", "Other",
}

// String returns the constant's name, e.g. "Select".
func (k Kind) String() string {
	if int(k) < numKinds {
		return kindNames[k]
	}
	return "Kind(" + itoa(int(k)) + ")"
}

// IsWrite reports whether k changes table data: INSERT, UPDATE, DELETE, REPLACE, LOAD DATA.
// DDL and DCL also change the primary, but a router handles them as their own kinds.
func (k Kind) IsWrite() bool {
	switch k {
	case Insert, Update, Delete, Replace, LoadData:
		return true
	}
	return false
}

// KindSet is a set of kinds, one bit per Kind. Result.Kinds holds the kinds of every statement
// in a multi-statement text, so a router can see a COMMIT or a LOCK TABLES hidden behind the
// first statement without classifying again.
type KindSet uint64

// Has reports whether k is in the set.
func (s KindSet) Has(k Kind) bool { return s&(1<<k) != 0 }

// Flags are facts about a statement's text that its kind alone does not tell. Flags describe
// the text: EXPLAIN SELECT … FOR UPDATE carries LockingRead although EXPLAIN locks nothing.
type Flags uint64

// The flags.
const (
	LockingRead        Flags = 1 << iota // FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE (with NOWAIT, SKIP LOCKED, WAIT n)
	SelectInto                           // SELECT … INTO @v / OUTFILE / DUMPFILE / local var, before or after FROM
	LockFunction                         // GET_LOCK(
	ReleaseLock                          // RELEASE_LOCK( or RELEASE_ALL_LOCKS(
	LockQuery                            // IS_FREE_LOCK( or IS_USED_LOCK(
	LastInsertID                         // LAST_INSERT_ID( or @@last_insert_id / @@identity
	RowCount                             // ROW_COUNT(
	FoundRows                            // FOUND_ROWS(
	CalcFoundRows                        // SQL_CALC_FOUND_ROWS
	Sequence                             // NEXTVAL( LASTVAL( SETVAL( NEXT VALUE FOR, PREVIOUS VALUE FOR, seq.nextval/currval/lastval
	UserVar                              // any @name read or written
	UserVarAssign                        // @name := …, SET @name = …, … INTO @name
	SysVarRead                           // @@name, @@session.name, @@global.name read
	TempTable                            // CREATE TEMPORARY TABLE|SEQUENCE, DROP TEMPORARY TABLE|SEQUENCE
	Multi                                // more than one statement: a ';' followed by more than whitespace and comments
	WithWrite                            // WITH … followed by UPDATE/DELETE/INSERT/REPLACE
	ReadOnlyTx                           // START TRANSACTION READ ONLY
	ReadWriteTx                          // START TRANSACTION READ WRITE
	ConsistentSnapshot                   // START TRANSACTION WITH CONSISTENT SNAPSHOT
	SetAutocommit                        // SET [SESSION|LOCAL|@@session.|@@local.|@@] autocommit = …; value in Result.Autocommit
	SetNames                             // SET NAMES, SET CHARACTER SET, SET CHARSET
	SetTransaction                       // SET [SESSION|GLOBAL] TRANSACTION …
	SetGlobal                            // SET GLOBAL/PERSIST/PERSIST_ONLY/@@global. …: not session state
	SetSession                           // SET of session system variables, and SET SESSION TRANSACTION
	SetStatement                         // MariaDB SET STATEMENT … FOR <stmt>: Kind is the inner statement's
	ExplainWrite                         // EXPLAIN/DESCRIBE of INSERT/UPDATE/DELETE/REPLACE
	SetRole                              // SET ROLE (session state; SET DEFAULT ROLE is DCL instead)
	Chain                                // COMMIT/ROLLBACK AND CHAIN: a new transaction starts at once
	Release                              // COMMIT/ROLLBACK RELEASE: the server closes the connection
	Analyze                              // MariaDB ANALYZE <stmt>, MySQL EXPLAIN ANALYZE <stmt>: the statement runs; Kind is its own
	ConnectionID                         // CONNECTION_ID(: the session's thread id, which must stay the same for the session
	// SetReadWrite: a SET that may make transactions read-write: SET [scope] TRANSACTION … READ
	// WRITE, or an assignment to tx_read_only / transaction_read_only (session or next
	// transaction) of anything but a literal true. A replica connection must never take it.
	SetReadWrite
	// TxReadOnlyRead: @@tx_read_only / @@transaction_read_only read. A replica connection runs
	// read-only (sluice's guard), so only the session's home answers what the client set.
	TxReadOnlyRead
	// IntoFile: SELECT … INTO OUTFILE / DUMPFILE (with SelectInto): the statement writes a file
	// on the node that runs it, which a read-only transaction does not prevent.
	IntoFile
	// LoadLocal: LOAD DATA|XML … LOCAL INFILE: the client sends a file of its own. Only for
	// such a statement may a node ask the client for a file.
	LoadLocal
	// DiagnosticsRead: @@warning_count or @@error_count read (any scope spelling): what the
	// session's previous statement left in its node's diagnostics area (ReadsDiagnostics).
	DiagnosticsRead
	// TableRef: the statement names a table the server opens before it runs: a FROM at the
	// level of a SELECT (a subquery's, a derived table's, a CTE's reference included) that is
	// not FROM DUAL, or a SHOW the server answers from its catalog tables (SHOW TABLES,
	// STATUS, VARIABLES, COLUMNS, CREATE TABLE…, DESCRIBE tbl). Such a statement clears the
	// session's warnings first (KeepsDiagnostics). It is set in SELECT, SET, DO, EXPLAIN and
	// SHOW statements (and in the text of PREPARE … FROM 'text', InnerFlags) only; a
	// FROM inside a function's parentheses (EXTRACT(YEAR FROM d), TRIM(… FROM s)) is not one.
	TableRef

	numFlags = 37
)

var flagNames = [numFlags]string{
	"LockingRead", "SelectInto", "LockFunction", "ReleaseLock", "LockQuery", "LastInsertID",
	"RowCount", "FoundRows", "CalcFoundRows", "Sequence", "UserVar", "UserVarAssign",
	"SysVarRead", "TempTable", "Multi", "WithWrite", "ReadOnlyTx", "ReadWriteTx",
	"ConsistentSnapshot", "SetAutocommit", "SetNames", "SetTransaction", "SetGlobal",
	"SetSession", "SetStatement", "ExplainWrite", "SetRole", "Chain", "Release", "Analyze", "ConnectionID",
	"SetReadWrite", "TxReadOnlyRead", "IntoFile", "LoadLocal", "DiagnosticsRead", "TableRef",
}

// String lists the set flags as "A|B|C", or "0" when none is set. It allocates: for logs and
// tests, not for the hot path.
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var b strings.Builder
	for i := 0; i < 64; i++ {
		if f&(1<<i) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		if i < numFlags {
			b.WriteString(flagNames[i])
		} else {
			b.WriteString("Flags(1<<" + itoa(i) + ")")
		}
	}
	return b.String()
}

// ShowKind tells apart the SHOW statements a router must send somewhere in particular.
// Catalog reads (tables, columns, CREATE …) may go to a replica; SHOW WARNINGS and SHOW
// PROFILE(S) describe the session's previous statements and must go where they went;
// the status of replication, processes, engines and GLOBAL counters belongs to one node.
type ShowKind uint8

// The SHOW kinds.
const (
	ShowOther           ShowKind = iota // any other SHOW (and the zero value for other kinds)
	ShowMasterStatus                    // SHOW MASTER STATUS, SHOW BINLOG STATUS, SHOW BINARY LOG STATUS
	ShowBinlog                          // SHOW BINARY LOGS, SHOW MASTER LOGS, SHOW BINLOG EVENTS
	ShowSlave                           // SHOW SLAVE|REPLICA [name] STATUS, SHOW ALL SLAVES|REPLICAS STATUS, SHOW SLAVE HOSTS, SHOW REPLICAS, SHOW RELAYLOG EVENTS
	ShowProcesslist                     // SHOW [FULL] PROCESSLIST
	ShowWarnings                        // SHOW WARNINGS|ERRORS, SHOW COUNT(*) WARNINGS|ERRORS
	ShowStatus                          // SHOW [SESSION|LOCAL] STATUS: the session's counters
	ShowGlobalStatus                    // SHOW GLOBAL STATUS
	ShowVariables                       // SHOW [SESSION|LOCAL] VARIABLES
	ShowGlobalVariables                 // SHOW GLOBAL VARIABLES
	ShowCreate                          // SHOW CREATE TABLE|VIEW|DATABASE|USER|…
	ShowTables                          // SHOW [FULL] TABLES, SHOW TABLE STATUS
	ShowColumns                         // SHOW [FULL] COLUMNS|FIELDS, SHOW INDEX|INDEXES|KEYS, and DESCRIBE tbl
	ShowDatabases                       // SHOW DATABASES|SCHEMAS
	ShowGrants                          // SHOW GRANTS
	ShowProfile                         // SHOW PROFILE, SHOW PROFILES: session-bound like warnings
	ShowEngine                          // SHOW ENGINE x STATUS|MUTEX, SHOW INNODB STATUS

	numShowKinds = int(ShowEngine) + 1
)

var showNames = [numShowKinds]string{
	"ShowOther", "ShowMasterStatus", "ShowBinlog", "ShowSlave", "ShowProcesslist",
	"ShowWarnings", "ShowStatus", "ShowGlobalStatus", "ShowVariables", "ShowGlobalVariables",
	"ShowCreate", "ShowTables", "ShowColumns", "ShowDatabases", "ShowGrants", "ShowProfile",
	"ShowEngine",
}

// String returns the constant's name, e.g. "ShowWarnings".
func (s ShowKind) String() string {
	if int(s) < numShowKinds {
		return showNames[s]
	}
	return "ShowKind(" + itoa(int(s)) + ")"
}

// Hint is a routing hint given in a comment before the statement's first token.
type Hint uint8

// The hints.
const (
	HintNone        Hint = iota
	HintForceMaster      // /*FORCE_MASTER*/ (or FORCE_PRIMARY)
	HintForceSlave       // /*FORCE_SLAVE*/ (or FORCE_REPLICA)
	HintForceNode        // /*FORCE_NODE='name'*/: Result.NodeName locates the name
)

var hintNames = [...]string{"HintNone", "HintForceMaster", "HintForceSlave", "HintForceNode"}

// String returns the constant's name, e.g. "HintForceMaster".
func (h Hint) String() string {
	if int(h) < len(hintNames) {
		return hintNames[h]
	}
	return "Hint(" + itoa(int(h)) + ")"
}

// Result is what Classify found. It is a flat value without pointers, so returning it costs
// a copy and no allocation; byte ranges into the statement are offsets, valid only for the
// slice that was classified.
//
// For a multi-statement text, Kind, Show, Inner, InnerFlags and Name describe the first
// statement; Flags and Kinds collect all of them, and Autocommit is the last one set.
type Result struct {
	Kind  Kind
	Flags Flags
	Show  ShowKind // for Kind == Show, and for DESCRIBE tbl (ShowColumns)
	Hint  Hint
	// NodeName is [start, end) of the node name in the statement for HintForceNode,
	// without its quotes.
	NodeName [2]int32
	// Autocommit is the value of a SetAutocommit: 1, 0, or -1 when it is not a literal
	// (an expression, DEFAULT, a variable). ON/OFF/TRUE/FALSE/1/0, quoted or not, are literals.
	Autocommit int8
	// Inner is, for Explain, the explained statement's kind (Show for DESCRIBE tbl, Unknown
	// for EXPLAIN FOR CONNECTION); for Analyze, the kind of the statement that ran (equal
	// to Kind); for Prepare, the kind of the prepared text when it is a string literal
	// (PREPARE s FROM 'SELECT …'), else Unknown.
	Inner Kind
	// InnerFlags are, for Prepare from a string literal, the flags of the prepared text.
	InnerFlags Flags
	// Name is [start, end) of the object a statement names, without backquotes: the
	// statement name for Prepare, Execute and Deallocate; the database for Use; the
	// savepoint for Savepoint, RollbackTo and ReleaseSavepoint; the file's name (the string
	// literal, without its quotes, escapes as written) for LoadData with LoadLocal. Zero when
	// absent.
	Name [2]int32
	// Kinds holds the kind of every statement in the text (one bit for a single statement).
	Kinds KindSet
	// Statements counts the statements of the text (an empty one between two ';' counts;
	// trailing whitespace and comments do not), saturating at 65535.
	Statements uint16
	// Splits is a hash of where each statement ends: two readings of one text that split it
	// differently differ here.
	Splits uint32
	// Depends tells what in the text another server or sql_mode would read otherwise
	// (ClassifyFor); zero when every reading is this one.
	Depends Depends
}

// itoa formats small non-negative numbers for String methods without importing strconv.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
