// Package proxy is sluice's front end: listeners, the accept loop, and one session per client
// connection, which authenticates the client, reads its commands, sends each to a node and
// relays the node's response back byte for byte, decoding only the packets that carry state
// (the first packet of a response and its terminators).
//
// Where things live:
//
//   - proxy.go: Proxy (what all endpoints share), Options, endpoints, Serve, Shutdown.
//   - session.go: the session, its command loop, the idle watch.
//   - login.go, auth.go: the client's login (greeting, TLS, authentication), COM_CHANGE_USER.
//   - dispatch.go: the one path every statement takes (route, acquire, sync, deferred BEGIN,
//     relay, after-effects), replica retry, respond (the options the relay gets, the Result
//     the session applies), and fail, the one place that decides what the client sees when a
//     command fails.
//   - nodeset.go: nodeSet, the owner of a session's node connections (one per node, opened
//     through a dial hook: where pools plug in), its home and current node, the session state
//     they carry (synced through backend.Conn.Sync) and the kill targets other goroutines read;
//     nodes.go: dialing a node as the client, the session's home connection; drain.go and
//     switchover.go: the node set leaving drained or removed nodes and following the primary.
//   - state.go: what a statement leaves behind (transaction state, pins, replayed SETs).
//   - stmt.go: binary prepared statements (sluice's own ids, lazy prepare per connection,
//     long data, cursors, bulk execute).
//   - relay.go: what the session follows of each OK/EOF the relay passes (session.OK, a
//     relay.Observer). Relaying itself (result sets, OK/EOF rewrites, LOCAL INFILE, the
//     read-only refusal) is package relay's.
//   - kill.go: KILL with sluice's connection ids; internal.go: /*PROXY_INTERNAL*/ statements.
//
// Routing decisions are route's (pure), node state is topology's, node connections and their
// session state are backend's: the session glues them together per command.
package proxy
