// Package proxy is sluice's front end: listeners, the accept loop, and one session per client
// connection, which authenticates the client, reads its commands, sends each to a node and
// relays the node's response back byte for byte, decoding only the packets that carry state
// (the first packet of a response and its terminators).
//
// A session (session.go) keeps the command loop, dispatch, login and the failure mapping; what
// it carries belongs to small owner types, one field each, every one tested without a session:
//
//   - login (login.go, auth.go, authblock.go): who the client is and what it negotiated
//     (greeting, TLS, authentication, COM_CHANGE_USER, the auth block).
//   - reader (reading.go): reads statements as the nodes will (sql_mode bits, dialects).
//   - nodeSet (nodeset.go): the node connections (one per node, opened through a dial hook:
//     where pools plug in), home and current node, the session state they carry (synced
//     through backend.Conn.Sync) and the kill targets other goroutines read; nodes.go dials a
//     node as the client (with a PROXY protocol header naming it, where the node takes one;
//     clientaddr/ tests it on a real cluster); drain.go and switchover.go: leaving drained or removed nodes and
//     following the primary; pool.go: pool_mode session, the node set's dial hook taking a
//     connection from the proxy's pool (internal/pool) and the session's end resetting and
//     giving back what may be reused (the kill targets unpublished first); minidle.go: the
//     pool's top-up to pool.min_idle (the logins it dials as, its plan per node and user).
//   - statements (stmttable.go): binary prepared statements (sluice's ids, bindings per
//     connection, long data, limits); stmt.go: their commands on the wire, and what a session
//     leaves prepared on a node connection for the next one under pool_mode transaction
//     (park, letGo, bindOn's take from backend's per-connection cache, stmtContext).
//   - readTarget (readtarget.go): what a replica read must see under a consistency level (the
//     session's last GTID, the target, the pipelined wait); consistency.go and primarypos.go:
//     asking nodes for positions.
//   - route.Session: transaction state and pins, learnt from each statement's outcome
//     (route.Session.Learn; state.go applies it: replayed SETs, and, for a SET of expressions,
//     evaluate.go's nodeSet.evaluated reads back the values and replays those); every route.Decision is
//     route's, fallbacks included (route.Retry, route.Reroute).
//   - sessionView (control.go): what the session publishes (counts, its last route, what the
//     control plane lists); sessionSettings and lifecycle (session.go): the endpoint's
//     settings under the session's mode, life state and kill switch; idleWatch (idle.go).
//
// Beside them: proxy.go (Proxy, Options, endpoints, Serve, Shutdown, UpdateEndpoint);
// dispatch.go, the one path every statement takes (route, acquire, sync, deferred BEGIN,
// respond: the options package relay gets and the Result the session applies) and fail, the
// one place that decides what the client sees when a command fails; relay.go, what the session
// follows of each OK/EOF the relay passes (session.OK, a relay.Observer); kill.go, KILL with
// sluice's connection ids; internal.go, the statements sluice answers itself (SLUICE SHOW …,
// /*PROXY_INTERNAL*/ SHOW …).
//
// Routing decisions are route's (pure), node state is topology's, node connections and their
// session state are backend's: the session glues them together per command.
package proxy
