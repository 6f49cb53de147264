// Package backend is sluice's client side towards the nodes: it dials a node, performs the
// handshake and authentication (mysql_native_password and caching_sha2_password, including the
// RSA exchange), and hands the session a ready connection whose capabilities mirror what the
// proxy's own client negotiated.
//
// Files by concern:
//
//   - conn.go: Options, Dial, the Conn, and the commands a Conn runs itself (Exec, Command).
//   - handshake.go: the login in named steps: capability negotiation (MariaDB's extended
//     capabilities and CLIENT_MYSQL included), the TLS upgrade, the auth exchange.
//   - sync.go: session-state sync. A session describes what every one of its node connections
//     must carry (State: schema, COM_SET_OPTION, replayable SET statements, an epoch counting its
//     resets); a Conn knows what it carries (Fingerprint) and Sync sends only the difference,
//     nothing and no allocation when it is in line. A replica connection is opened read-only
//     (Options.ReadOnly) and Sync keeps it so: the guard runs again after anything replayed.
//   - uservars.go: what a connection pool carries from one connection to the next besides
//     tracked state: ReadUserVars reads named user variables (type, character set, collation,
//     value, bounded by MaxUserVarBytes) and LAST_INSERT_ID() in one round trip, AppendRestore
//     writes the one statement that recreates them on another connection. Checked against a
//     live server in livetest.
//   - stmtcache.go: the prepared statements a connection keeps idle for its next session under
//     transaction pooling (TakeStmt, KeepStmt; bounded by KeepStmts, least recently used closed
//     first; forgotten when the node's session is reset).
//   - query.go: Query, a small text-protocol query decoded into strings, bounded in size, for
//     the control plane (the monitor). Statements the proxy forwards never pass through it.
//   - quit.go: the goodbye. Quit (COM_QUIT, then close) for a connection closed on purpose
//     between two commands, QuitPending for one an answer may still come on (read first,
//     bounded), WriteQuit for a goroutine that does not own the connection; Close only for one
//     that broke. The node then counts none in Aborted_clients.
//
// Errors: a node's refusal is a *mysql.SQLError (wrapped in a *SyncError when Sync sent it);
// ErrDiverged and Query's ErrResultTooLarge leave the connection usable; anything else is a
// transport or protocol error after which the connection is closed (Dial words those as
// *ConnectError).
//
// A Conn is used by one goroutine at a time; nothing in this package starts goroutines.
package backend
