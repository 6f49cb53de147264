package mysql

// Capability flags (the protocol's CLIENT_* bits).
const (
	ClientLongPassword               uint32 = 1 << 0 // also CLIENT_MYSQL: unset by MariaDB servers that send extended capabilities
	ClientFoundRows                  uint32 = 1 << 1
	ClientLongFlag                   uint32 = 1 << 2
	ClientConnectWithDB              uint32 = 1 << 3
	ClientNoSchema                   uint32 = 1 << 4
	ClientCompress                   uint32 = 1 << 5
	ClientODBC                       uint32 = 1 << 6
	ClientLocalFiles                 uint32 = 1 << 7
	ClientIgnoreSpace                uint32 = 1 << 8
	ClientProtocol41                 uint32 = 1 << 9
	ClientInteractive                uint32 = 1 << 10
	ClientSSL                        uint32 = 1 << 11
	ClientIgnoreSIGPIPE              uint32 = 1 << 12
	ClientTransactions               uint32 = 1 << 13
	ClientReserved                   uint32 = 1 << 14
	ClientSecureConnection           uint32 = 1 << 15
	ClientMultiStatements            uint32 = 1 << 16
	ClientMultiResults               uint32 = 1 << 17
	ClientPSMultiResults             uint32 = 1 << 18
	ClientPluginAuth                 uint32 = 1 << 19
	ClientConnectAttrs               uint32 = 1 << 20
	ClientPluginAuthLenencClientData uint32 = 1 << 21
	ClientCanHandleExpiredPasswords  uint32 = 1 << 22
	ClientSessionTrack               uint32 = 1 << 23
	ClientDeprecateEOF               uint32 = 1 << 24
	ClientOptionalResultsetMetadata  uint32 = 1 << 25
	ClientZstdCompression            uint32 = 1 << 26
	ClientQueryAttributes            uint32 = 1 << 27
)

// MariaDB's extended capabilities (the MARIADB_CLIENT_* bits 32 and up, here shifted down by 32):
// a MariaDB server that clears CLIENT_MYSQL offers them in the last four reserved bytes of its
// handshake, and a client that clears CLIENT_MYSQL too answers in the same place of its response.
const (
	MariaDBClientProgress           uint32 = 1 << 0 // progress reports as 0xff packets with code 0xffff
	MariaDBClientComMulti           uint32 = 1 << 1
	MariaDBClientStmtBulkOperations uint32 = 1 << 2 // COM_STMT_BULK_EXECUTE
	MariaDBClientExtendedMetadata   uint32 = 1 << 3 // a type-info block in each column definition (json, uuid, ...)
	MariaDBClientCacheMetadata      uint32 = 1 << 4 // EXECUTE may omit column definitions
	MariaDBClientBulkUnitResults    uint32 = 1 << 5
)

// Server status flags, carried in OK and EOF packets.
const (
	StatusInTrans            uint16 = 1 << 0
	StatusAutocommit         uint16 = 1 << 1
	StatusMoreResultsExists  uint16 = 1 << 3
	StatusNoGoodIndexUsed    uint16 = 1 << 4
	StatusNoIndexUsed        uint16 = 1 << 5
	StatusCursorExists       uint16 = 1 << 6
	StatusLastRowSent        uint16 = 1 << 7
	StatusDBDropped          uint16 = 1 << 8
	StatusNoBackslashEscapes uint16 = 1 << 9
	StatusMetadataChanged    uint16 = 1 << 10
	StatusQueryWasSlow       uint16 = 1 << 11
	StatusPSOutParams        uint16 = 1 << 12
	StatusInTransReadonly    uint16 = 1 << 13
	StatusSessionStateChange uint16 = 1 << 14
)

// Command bytes (the first byte of a client's command packet).
const (
	ComSleep            byte = 0x00
	ComQuit             byte = 0x01
	ComInitDB           byte = 0x02
	ComQuery            byte = 0x03
	ComFieldList        byte = 0x04
	ComCreateDB         byte = 0x05
	ComDropDB           byte = 0x06
	ComRefresh          byte = 0x07
	ComShutdown         byte = 0x08
	ComStatistics       byte = 0x09
	ComProcessInfo      byte = 0x0a
	ComConnect          byte = 0x0b
	ComProcessKill      byte = 0x0c
	ComDebug            byte = 0x0d
	ComPing             byte = 0x0e
	ComTime             byte = 0x0f
	ComDelayedInsert    byte = 0x10
	ComChangeUser       byte = 0x11
	ComBinlogDump       byte = 0x12
	ComTableDump        byte = 0x13
	ComConnectOut       byte = 0x14
	ComRegisterSlave    byte = 0x15
	ComStmtPrepare      byte = 0x16
	ComStmtExecute      byte = 0x17
	ComStmtSendLongData byte = 0x18
	ComStmtClose        byte = 0x19
	ComStmtReset        byte = 0x1a
	ComSetOption        byte = 0x1b
	ComStmtFetch        byte = 0x1c
	ComDaemon           byte = 0x1d
	ComBinlogDumpGTID   byte = 0x1e
	ComResetConnection  byte = 0x1f
	// ComStmtBulkExecute is MariaDB's COM_STMT_BULK_EXECUTE (MARIADB_CLIENT_STMT_BULK_OPERATIONS):
	// one command with many rows of parameters, answered by one OK or ERR.
	ComStmtBulkExecute byte = 0xfa
)

// Packet header bytes.
const (
	iOK          byte = 0x00
	iLocalInFile byte = 0xfb
	iEOF         byte = 0xfe
	iERR         byte = 0xff
)

// Authentication plugin names.
const (
	AuthNativePassword     = "mysql_native_password"
	AuthCachingSHA2        = "caching_sha2_password"
	AuthClearPassword      = "mysql_clear_password"
	AuthSHA256Password     = "sha256_password"
	cachingSHA2FastOK      = 3
	cachingSHA2FullAuth    = 4
	cachingSHA2RequestKey  = 2
	authMoreDataHeader     = 0x01
	authSwitchHeader       = 0xfe
	maxPacketPayload       = 1<<24 - 1
	defaultMaxPacketClient = 1 << 30
)

// Exported forms of the caching_sha2_password protocol bytes, for the proxy's server side.
const (
	CachingSHA2FastOK     = cachingSHA2FastOK
	CachingSHA2FullAuth   = cachingSHA2FullAuth
	CachingSHA2RequestKey = cachingSHA2RequestKey
	AuthMoreDataHeader    = authMoreDataHeader
	MaxPacketPayload      = maxPacketPayload
)

// Session-state change types in an OK packet (SESSION_TRACK).
const (
	SessionTrackSystemVariables            byte = 0
	SessionTrackSchema                     byte = 1
	SessionTrackStateChange                byte = 2
	SessionTrackGTIDs                      byte = 3
	SessionTrackTransactionCharacteristics byte = 4
	SessionTrackTransactionState           byte = 5
)
