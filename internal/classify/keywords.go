package classify

// kwID names a keyword the classifier looks for. Words are matched whole and without regard
// to case; anything else is kwNone.
type kwID uint8

const (
	kwNone             kwID = iota
	kwAggregate             // AGGREGATE
	kwAlgorithm             // ALGORITHM
	kwAll                   // ALL
	kwAlter                 // ALTER
	kwAnalyze               // ANALYZE
	kwAnd                   // AND
	kwAs                    // AS
	kwAtomic                // ATOMIC
	kwBackup                // BACKUP
	kwBegin                 // BEGIN
	kwBinary                // BINARY
	kwBinlog                // BINLOG
	kwCache                 // CACHE
	kwCall                  // CALL
	kwCase                  // CASE
	kwChain                 // CHAIN
	kwChange                // CHANGE
	kwCharacter             // CHARACTER
	kwCharset               // CHARSET
	kwCheck                 // CHECK
	kwChecksum              // CHECKSUM
	kwClone                 // CLONE
	kwClose                 // CLOSE
	kwColumns               // COLUMNS
	kwCommit                // COMMIT
	kwConsistent            // CONSISTENT
	kwCount                 // COUNT
	kwCreate                // CREATE
	kwCurrentRole           // CURRENT_ROLE
	kwCurrentUser           // CURRENT_USER
	kwCurrval               // CURRVAL
	kwData                  // DATA
	kwDatabases             // DATABASES
	kwDeallocate            // DEALLOCATE
	kwDeclare               // DECLARE
	kwDefault               // DEFAULT
	kwDefiner               // DEFINER
	kwDelete                // DELETE
	kwDesc                  // DESC
	kwDescribe              // DESCRIBE
	kwDo                    // DO
	kwDrop                  // DROP
	kwEnd                   // END
	kwEngine                // ENGINE
	kwErrors                // ERRORS
	kwEvent                 // EVENT
	kwEvents                // EVENTS
	kwExecute               // EXECUTE
	kwExplain               // EXPLAIN
	kwExport                // EXPORT
	kwExtended              // EXTENDED
	kwFetch                 // FETCH
	kwFields                // FIELDS
	kwFlush                 // FLUSH
	kwFor                   // FOR
	kwFormat                // FORMAT
	kwFoundRows             // FOUND_ROWS
	kwFrom                  // FROM
	kwFull                  // FULL
	kwFulltext              // FULLTEXT
	kwFunction              // FUNCTION
	kwGet                   // GET
	kwGetLock               // GET_LOCK
	kwGlobal                // GLOBAL
	kwGrant                 // GRANT
	kwGrants                // GRANTS
	kwGroupReplication      // GROUP_REPLICATION
	kwHandler               // HANDLER
	kwHelp                  // HELP
	kwIf                    // IF
	kwIgnore                // IGNORE
	kwImmediate             // IMMEDIATE
	kwImport                // IMPORT
	kwIn                    // IN
	kwIndex                 // INDEX
	kwIndexes               // INDEXES
	kwInnodb                // INNODB
	kwInsert                // INSERT
	kwInstall               // INSTALL
	kwInstance              // INSTANCE
	kwInto                  // INTO
	kwIsFreeLock            // IS_FREE_LOCK
	kwIsUsedLock            // IS_USED_LOCK
	kwIterate               // ITERATE
	kwKeys                  // KEYS
	kwKill                  // KILL
	kwLastInsertId          // LAST_INSERT_ID
	kwLastval               // LASTVAL
	kwLeave                 // LEAVE
	kwLoad                  // LOAD
	kwLocal                 // LOCAL
	kwLock                  // LOCK
	kwLog                   // LOG
	kwLogs                  // LOGS
	kwLoop                  // LOOP
	kwMaster                // MASTER
	kwNames                 // NAMES
	kwNext                  // NEXT
	kwNextval               // NEXTVAL
	kwNo                    // NO
	kwNoWriteToBinlog       // NO_WRITE_TO_BINLOG
	kwNonblocking           // NONBLOCKING
	kwNot                   // NOT
	kwOffline               // OFFLINE
	kwOnline                // ONLINE
	kwOnly                  // ONLY
	kwOpen                  // OPEN
	kwOptimize              // OPTIMIZE
	kwOr                    // OR
	kwPackage               // PACKAGE
	kwPartitions            // PARTITIONS
	kwPassword              // PASSWORD
	kwPersist               // PERSIST
	kwPersistOnly           // PERSIST_ONLY
	kwPrepare               // PREPARE
	kwPrevious              // PREVIOUS
	kwProcedure             // PROCEDURE
	kwProcesslist           // PROCESSLIST
	kwProfile               // PROFILE
	kwProfiles              // PROFILES
	kwPurge                 // PURGE
	kwRead                  // READ
	kwRelaylog              // RELAYLOG
	kwRelease               // RELEASE
	kwReleaseAllLocks       // RELEASE_ALL_LOCKS
	kwReleaseLock           // RELEASE_LOCK
	kwRename                // RENAME
	kwRepair                // REPAIR
	kwRepeat                // REPEAT
	kwReplace               // REPLACE
	kwReplica               // REPLICA
	kwReplicas              // REPLICAS
	kwReset                 // RESET
	kwResignal              // RESIGNAL
	kwRestart               // RESTART
	kwReturn                // RETURN
	kwRevoke                // REVOKE
	kwRole                  // ROLE
	kwRollback              // ROLLBACK
	kwRowCount              // ROW_COUNT
	kwSavepoint             // SAVEPOINT
	kwSchemas               // SCHEMAS
	kwSelect                // SELECT
	kwSequence              // SEQUENCE
	kwSession               // SESSION
	kwSet                   // SET
	kwSetval                // SETVAL
	kwShare                 // SHARE
	kwShow                  // SHOW
	kwShutdown              // SHUTDOWN
	kwSignal                // SIGNAL
	kwSlave                 // SLAVE
	kwSlaves                // SLAVES
	kwSpatial               // SPATIAL
	kwSql                   // SQL
	kwSqlCalcFoundRows      // SQL_CALC_FOUND_ROWS
	kwStage                 // STAGE
	kwStart                 // START
	kwStatement             // STATEMENT
	kwStatus                // STATUS
	kwStop                  // STOP
	kwStorage               // STORAGE
	kwTable                 // TABLE
	kwTables                // TABLES
	kwTemporary             // TEMPORARY
	kwTo                    // TO
	kwTransaction           // TRANSACTION
	kwTrigger               // TRIGGER
	kwTruncate              // TRUNCATE
	kwUninstall             // UNINSTALL
	kwUnique                // UNIQUE
	kwUnlock                // UNLOCK
	kwUpdate                // UPDATE
	kwUse                   // USE
	kwUser                  // USER
	kwValue                 // VALUE
	kwValues                // VALUES
	kwVariables             // VARIABLES
	kwWarnings              // WARNINGS
	kwWhile                 // WHILE
	kwWith                  // WITH
	kwWork                  // WORK
	kwWrite                 // WRITE
	kwXa                    // XA
	kwXml                   // XML
)

// maxKwLen is the length of the longest keyword (SQL_CALC_FOUND_ROWS); longer words are never looked up.
const maxKwLen = 19

// lookup returns the keyword w spells in any case, or kwNone. It folds w into a stack buffer
// and lets the compiler's string switch (binary search by length and content) find it;
// string(buf[:n]) in a switch does not allocate.
func lookup(w []byte) kwID {
	if len(w) < 2 || len(w) > maxKwLen {
		return kwNone
	}
	var buf [maxKwLen]byte
	for i, c := range w {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(w)]) {
	case "AGGREGATE":
		return kwAggregate
	case "ALGORITHM":
		return kwAlgorithm
	case "ALL":
		return kwAll
	case "ALTER":
		return kwAlter
	case "ANALYZE":
		return kwAnalyze
	case "AND":
		return kwAnd
	case "AS":
		return kwAs
	case "ATOMIC":
		return kwAtomic
	case "BACKUP":
		return kwBackup
	case "BEGIN":
		return kwBegin
	case "BINARY":
		return kwBinary
	case "BINLOG":
		return kwBinlog
	case "CACHE":
		return kwCache
	case "CALL":
		return kwCall
	case "CASE":
		return kwCase
	case "CHAIN":
		return kwChain
	case "CHANGE":
		return kwChange
	case "CHARACTER":
		return kwCharacter
	case "CHARSET":
		return kwCharset
	case "CHECK":
		return kwCheck
	case "CHECKSUM":
		return kwChecksum
	case "CLONE":
		return kwClone
	case "CLOSE":
		return kwClose
	case "COLUMNS":
		return kwColumns
	case "COMMIT":
		return kwCommit
	case "CONSISTENT":
		return kwConsistent
	case "COUNT":
		return kwCount
	case "CREATE":
		return kwCreate
	case "CURRENT_ROLE":
		return kwCurrentRole
	case "CURRENT_USER":
		return kwCurrentUser
	case "CURRVAL":
		return kwCurrval
	case "DATA":
		return kwData
	case "DATABASES":
		return kwDatabases
	case "DEALLOCATE":
		return kwDeallocate
	case "DECLARE":
		return kwDeclare
	case "DEFAULT":
		return kwDefault
	case "DEFINER":
		return kwDefiner
	case "DELETE":
		return kwDelete
	case "DESC":
		return kwDesc
	case "DESCRIBE":
		return kwDescribe
	case "DO":
		return kwDo
	case "DROP":
		return kwDrop
	case "END":
		return kwEnd
	case "ENGINE":
		return kwEngine
	case "ERRORS":
		return kwErrors
	case "EVENT":
		return kwEvent
	case "EVENTS":
		return kwEvents
	case "EXECUTE":
		return kwExecute
	case "EXPLAIN":
		return kwExplain
	case "EXPORT":
		return kwExport
	case "EXTENDED":
		return kwExtended
	case "FETCH":
		return kwFetch
	case "FIELDS":
		return kwFields
	case "FLUSH":
		return kwFlush
	case "FOR":
		return kwFor
	case "FORMAT":
		return kwFormat
	case "FOUND_ROWS":
		return kwFoundRows
	case "FROM":
		return kwFrom
	case "FULL":
		return kwFull
	case "FULLTEXT":
		return kwFulltext
	case "FUNCTION":
		return kwFunction
	case "GET":
		return kwGet
	case "GET_LOCK":
		return kwGetLock
	case "GLOBAL":
		return kwGlobal
	case "GRANT":
		return kwGrant
	case "GRANTS":
		return kwGrants
	case "GROUP_REPLICATION":
		return kwGroupReplication
	case "HANDLER":
		return kwHandler
	case "HELP":
		return kwHelp
	case "IF":
		return kwIf
	case "IGNORE":
		return kwIgnore
	case "IMMEDIATE":
		return kwImmediate
	case "IMPORT":
		return kwImport
	case "IN":
		return kwIn
	case "INDEX":
		return kwIndex
	case "INDEXES":
		return kwIndexes
	case "INNODB":
		return kwInnodb
	case "INSERT":
		return kwInsert
	case "INSTALL":
		return kwInstall
	case "INSTANCE":
		return kwInstance
	case "INTO":
		return kwInto
	case "IS_FREE_LOCK":
		return kwIsFreeLock
	case "IS_USED_LOCK":
		return kwIsUsedLock
	case "ITERATE":
		return kwIterate
	case "KEYS":
		return kwKeys
	case "KILL":
		return kwKill
	case "LASTVAL":
		return kwLastval
	case "LAST_INSERT_ID":
		return kwLastInsertId
	case "LEAVE":
		return kwLeave
	case "LOAD":
		return kwLoad
	case "LOCAL":
		return kwLocal
	case "LOCK":
		return kwLock
	case "LOG":
		return kwLog
	case "LOGS":
		return kwLogs
	case "LOOP":
		return kwLoop
	case "MASTER":
		return kwMaster
	case "NAMES":
		return kwNames
	case "NEXT":
		return kwNext
	case "NEXTVAL":
		return kwNextval
	case "NO":
		return kwNo
	case "NONBLOCKING":
		return kwNonblocking
	case "NOT":
		return kwNot
	case "NO_WRITE_TO_BINLOG":
		return kwNoWriteToBinlog
	case "OFFLINE":
		return kwOffline
	case "ONLINE":
		return kwOnline
	case "ONLY":
		return kwOnly
	case "OPEN":
		return kwOpen
	case "OPTIMIZE":
		return kwOptimize
	case "OR":
		return kwOr
	case "PACKAGE":
		return kwPackage
	case "PARTITIONS":
		return kwPartitions
	case "PASSWORD":
		return kwPassword
	case "PERSIST":
		return kwPersist
	case "PERSIST_ONLY":
		return kwPersistOnly
	case "PREPARE":
		return kwPrepare
	case "PREVIOUS":
		return kwPrevious
	case "PROCEDURE":
		return kwProcedure
	case "PROCESSLIST":
		return kwProcesslist
	case "PROFILE":
		return kwProfile
	case "PROFILES":
		return kwProfiles
	case "PURGE":
		return kwPurge
	case "READ":
		return kwRead
	case "RELAYLOG":
		return kwRelaylog
	case "RELEASE":
		return kwRelease
	case "RELEASE_ALL_LOCKS":
		return kwReleaseAllLocks
	case "RELEASE_LOCK":
		return kwReleaseLock
	case "RENAME":
		return kwRename
	case "REPAIR":
		return kwRepair
	case "REPEAT":
		return kwRepeat
	case "REPLACE":
		return kwReplace
	case "REPLICA":
		return kwReplica
	case "REPLICAS":
		return kwReplicas
	case "RESET":
		return kwReset
	case "RESIGNAL":
		return kwResignal
	case "RESTART":
		return kwRestart
	case "RETURN":
		return kwReturn
	case "REVOKE":
		return kwRevoke
	case "ROLE":
		return kwRole
	case "ROLLBACK":
		return kwRollback
	case "ROW_COUNT":
		return kwRowCount
	case "SAVEPOINT":
		return kwSavepoint
	case "SCHEMAS":
		return kwSchemas
	case "SELECT":
		return kwSelect
	case "SEQUENCE":
		return kwSequence
	case "SESSION":
		return kwSession
	case "SET":
		return kwSet
	case "SETVAL":
		return kwSetval
	case "SHARE":
		return kwShare
	case "SHOW":
		return kwShow
	case "SHUTDOWN":
		return kwShutdown
	case "SIGNAL":
		return kwSignal
	case "SLAVE":
		return kwSlave
	case "SLAVES":
		return kwSlaves
	case "SPATIAL":
		return kwSpatial
	case "SQL":
		return kwSql
	case "SQL_CALC_FOUND_ROWS":
		return kwSqlCalcFoundRows
	case "STAGE":
		return kwStage
	case "START":
		return kwStart
	case "STATEMENT":
		return kwStatement
	case "STATUS":
		return kwStatus
	case "STOP":
		return kwStop
	case "STORAGE":
		return kwStorage
	case "TABLE":
		return kwTable
	case "TABLES":
		return kwTables
	case "TEMPORARY":
		return kwTemporary
	case "TO":
		return kwTo
	case "TRANSACTION":
		return kwTransaction
	case "TRIGGER":
		return kwTrigger
	case "TRUNCATE":
		return kwTruncate
	case "UNINSTALL":
		return kwUninstall
	case "UNIQUE":
		return kwUnique
	case "UNLOCK":
		return kwUnlock
	case "UPDATE":
		return kwUpdate
	case "USE":
		return kwUse
	case "USER":
		return kwUser
	case "VALUE":
		return kwValue
	case "VALUES":
		return kwValues
	case "VARIABLES":
		return kwVariables
	case "WARNINGS":
		return kwWarnings
	case "WHILE":
		return kwWhile
	case "WITH":
		return kwWith
	case "WORK":
		return kwWork
	case "WRITE":
		return kwWrite
	case "XA":
		return kwXa
	case "XML":
		return kwXml
	}
	return kwNone
}

// scanWords are the keywords the classifier looks for after a statement's head, where most
// words are table and column names. scanFilter rejects most of those names before lookup.
var scanWords = [...]string{
	"FOR", "LOCK", "INTO", "GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS", "IS_FREE_LOCK", "IS_USED_LOCK",
	"LAST_INSERT_ID", "ROW_COUNT", "FOUND_ROWS", "NEXTVAL", "LASTVAL", "SETVAL", "SQL_CALC_FOUND_ROWS", "NEXT",
	"PREVIOUS", "SELECT", "VALUES", "TABLE", "UPDATE", "DELETE", "INSERT", "REPLACE",
	"BEGIN", "CASE", "END",
}

// scanFilter[n] has bit letterBit(c) set when some scan word of length n starts with c.
var scanFilter = func() (f [maxKwLen + 1]uint32) {
	for _, w := range scanWords {
		f[len(w)] |= letterBit(w[0])
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
