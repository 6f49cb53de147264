package classify

// kwID names a keyword the classifier looks for. Words are matched whole and without regard
// to case; anything else is kwNone. To add a keyword, add its constant (named after its
// spelling: kwFooBar for FOO_BAR) and its entry in keywords; kwSlots builds itself.
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
	kwCollation             // COLLATION
	kwColumns               // COLUMNS
	kwCommit                // COMMIT
	kwConsistent            // CONSISTENT
	kwConnectionID          // CONNECTION_ID
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
	kwDual                  // DUAL
	kwEnd                   // END
	kwEngine                // ENGINE
	kwEngines               // ENGINES
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
	kwPlugins               // PLUGINS
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
	kwTriggers              // TRIGGERS
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
	kwView                  // VIEW
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

// keywords spells each keyword, indexed by its kwID.
var keywords = [...]string{
	kwAggregate:        "AGGREGATE",
	kwAlgorithm:        "ALGORITHM",
	kwAll:              "ALL",
	kwAlter:            "ALTER",
	kwAnalyze:          "ANALYZE",
	kwAnd:              "AND",
	kwAs:               "AS",
	kwAtomic:           "ATOMIC",
	kwBackup:           "BACKUP",
	kwBegin:            "BEGIN",
	kwBinary:           "BINARY",
	kwBinlog:           "BINLOG",
	kwCache:            "CACHE",
	kwCall:             "CALL",
	kwCase:             "CASE",
	kwChain:            "CHAIN",
	kwChange:           "CHANGE",
	kwCharacter:        "CHARACTER",
	kwCharset:          "CHARSET",
	kwCheck:            "CHECK",
	kwChecksum:         "CHECKSUM",
	kwClone:            "CLONE",
	kwClose:            "CLOSE",
	kwCollation:        "COLLATION",
	kwColumns:          "COLUMNS",
	kwCommit:           "COMMIT",
	kwConsistent:       "CONSISTENT",
	kwConnectionID:     "CONNECTION_ID",
	kwCount:            "COUNT",
	kwCreate:           "CREATE",
	kwCurrentRole:      "CURRENT_ROLE",
	kwCurrentUser:      "CURRENT_USER",
	kwCurrval:          "CURRVAL",
	kwData:             "DATA",
	kwDatabases:        "DATABASES",
	kwDeallocate:       "DEALLOCATE",
	kwDeclare:          "DECLARE",
	kwDefault:          "DEFAULT",
	kwDefiner:          "DEFINER",
	kwDelete:           "DELETE",
	kwDesc:             "DESC",
	kwDescribe:         "DESCRIBE",
	kwDo:               "DO",
	kwDrop:             "DROP",
	kwDual:             "DUAL",
	kwEnd:              "END",
	kwEngine:           "ENGINE",
	kwEngines:          "ENGINES",
	kwErrors:           "ERRORS",
	kwEvent:            "EVENT",
	kwEvents:           "EVENTS",
	kwExecute:          "EXECUTE",
	kwExplain:          "EXPLAIN",
	kwExport:           "EXPORT",
	kwExtended:         "EXTENDED",
	kwFetch:            "FETCH",
	kwFields:           "FIELDS",
	kwFlush:            "FLUSH",
	kwFor:              "FOR",
	kwFormat:           "FORMAT",
	kwFoundRows:        "FOUND_ROWS",
	kwFrom:             "FROM",
	kwFull:             "FULL",
	kwFulltext:         "FULLTEXT",
	kwFunction:         "FUNCTION",
	kwGet:              "GET",
	kwGetLock:          "GET_LOCK",
	kwGlobal:           "GLOBAL",
	kwGrant:            "GRANT",
	kwGrants:           "GRANTS",
	kwGroupReplication: "GROUP_REPLICATION",
	kwHandler:          "HANDLER",
	kwHelp:             "HELP",
	kwIf:               "IF",
	kwIgnore:           "IGNORE",
	kwImmediate:        "IMMEDIATE",
	kwImport:           "IMPORT",
	kwIn:               "IN",
	kwIndex:            "INDEX",
	kwIndexes:          "INDEXES",
	kwInnodb:           "INNODB",
	kwInsert:           "INSERT",
	kwInstall:          "INSTALL",
	kwInstance:         "INSTANCE",
	kwInto:             "INTO",
	kwIsFreeLock:       "IS_FREE_LOCK",
	kwIsUsedLock:       "IS_USED_LOCK",
	kwIterate:          "ITERATE",
	kwKeys:             "KEYS",
	kwKill:             "KILL",
	kwLastInsertId:     "LAST_INSERT_ID",
	kwLastval:          "LASTVAL",
	kwLeave:            "LEAVE",
	kwLoad:             "LOAD",
	kwLocal:            "LOCAL",
	kwLock:             "LOCK",
	kwLog:              "LOG",
	kwLogs:             "LOGS",
	kwLoop:             "LOOP",
	kwMaster:           "MASTER",
	kwNames:            "NAMES",
	kwNext:             "NEXT",
	kwNextval:          "NEXTVAL",
	kwNo:               "NO",
	kwNoWriteToBinlog:  "NO_WRITE_TO_BINLOG",
	kwNonblocking:      "NONBLOCKING",
	kwNot:              "NOT",
	kwOffline:          "OFFLINE",
	kwOnline:           "ONLINE",
	kwOnly:             "ONLY",
	kwOpen:             "OPEN",
	kwOptimize:         "OPTIMIZE",
	kwOr:               "OR",
	kwPackage:          "PACKAGE",
	kwPartitions:       "PARTITIONS",
	kwPassword:         "PASSWORD",
	kwPersist:          "PERSIST",
	kwPersistOnly:      "PERSIST_ONLY",
	kwPlugins:          "PLUGINS",
	kwPrepare:          "PREPARE",
	kwPrevious:         "PREVIOUS",
	kwProcedure:        "PROCEDURE",
	kwProcesslist:      "PROCESSLIST",
	kwProfile:          "PROFILE",
	kwProfiles:         "PROFILES",
	kwPurge:            "PURGE",
	kwRead:             "READ",
	kwRelaylog:         "RELAYLOG",
	kwRelease:          "RELEASE",
	kwReleaseAllLocks:  "RELEASE_ALL_LOCKS",
	kwReleaseLock:      "RELEASE_LOCK",
	kwRename:           "RENAME",
	kwRepair:           "REPAIR",
	kwRepeat:           "REPEAT",
	kwReplace:          "REPLACE",
	kwReplica:          "REPLICA",
	kwReplicas:         "REPLICAS",
	kwReset:            "RESET",
	kwResignal:         "RESIGNAL",
	kwRestart:          "RESTART",
	kwReturn:           "RETURN",
	kwRevoke:           "REVOKE",
	kwRole:             "ROLE",
	kwRollback:         "ROLLBACK",
	kwRowCount:         "ROW_COUNT",
	kwSavepoint:        "SAVEPOINT",
	kwSchemas:          "SCHEMAS",
	kwSelect:           "SELECT",
	kwSequence:         "SEQUENCE",
	kwSession:          "SESSION",
	kwSet:              "SET",
	kwSetval:           "SETVAL",
	kwShare:            "SHARE",
	kwShow:             "SHOW",
	kwShutdown:         "SHUTDOWN",
	kwSignal:           "SIGNAL",
	kwSlave:            "SLAVE",
	kwSlaves:           "SLAVES",
	kwSpatial:          "SPATIAL",
	kwSql:              "SQL",
	kwSqlCalcFoundRows: "SQL_CALC_FOUND_ROWS",
	kwStage:            "STAGE",
	kwStart:            "START",
	kwStatement:        "STATEMENT",
	kwStatus:           "STATUS",
	kwStop:             "STOP",
	kwStorage:          "STORAGE",
	kwTable:            "TABLE",
	kwTables:           "TABLES",
	kwTemporary:        "TEMPORARY",
	kwTo:               "TO",
	kwTransaction:      "TRANSACTION",
	kwTrigger:          "TRIGGER",
	kwTriggers:         "TRIGGERS",
	kwTruncate:         "TRUNCATE",
	kwUninstall:        "UNINSTALL",
	kwUnique:           "UNIQUE",
	kwUnlock:           "UNLOCK",
	kwUpdate:           "UPDATE",
	kwUse:              "USE",
	kwUser:             "USER",
	kwValue:            "VALUE",
	kwValues:           "VALUES",
	kwVariables:        "VARIABLES",
	kwView:             "VIEW",
	kwWarnings:         "WARNINGS",
	kwWhile:            "WHILE",
	kwWith:             "WITH",
	kwWork:             "WORK",
	kwWrite:            "WRITE",
	kwXa:               "XA",
	kwXml:              "XML",
}

// kwSlots is an open-addressing hash table of keyword IDs, indexed by kwHash: 1 KiB, so
// that it stays in the first-level cache next to the keyword strings. It is built once;
// lookups only read it.
var kwSlots = func() (t [1 << kwHashBits]kwID) {
	for id, w := range keywords {
		if w == "" {
			continue
		}
		h := kwHash([]byte(w))
		for t[h] != kwNone {
			h = (h + 1) & (1<<kwHashBits - 1)
		}
		t[h] = kwID(id)
	}
	return t
}()

// kwHashBits sizes kwSlots at 1024 slots for about 200 keywords, which keeps every keyword
// within two slots of its hash (TestKeywordTable checks).
const kwHashBits = 10

// kwHash hashes a word by its length and four of its bytes, ASCII letters folded to one
// case: cheaper than hashing every byte, and spread enough for the keyword set.
func kwHash(w []byte) uint32 {
	n := len(w)
	a, b, m, z := uint32(w[0]|0x20), uint32(w[1]|0x20), uint32(w[n/2]|0x20), uint32(w[n-1]|0x20)
	return (uint32(n)*0x9E3779B1 ^ a*0x85EBCA77 ^ b*0x165667B1 ^ m*0x27D4EB2F ^ z*0xC2B2AE3D) >> (32 - kwHashBits)
}

// lookup returns the keyword w spells in any case, or kwNone.
func lookup(w []byte) kwID {
	if len(w) < 2 || len(w) > maxKwLen {
		return kwNone
	}
	for h := kwHash(w); ; h = (h + 1) & (1<<kwHashBits - 1) {
		id := kwSlots[h]
		if id == kwNone {
			return kwNone
		}
		if k := keywords[id]; len(k) == len(w) && eqFold(w, k) {
			return id
		}
	}
}
