// Package relay carries one response from a node to the client: the answer to one command,
// packet by packet, decoding only what carries state, with one flush at its end.
//
// A session sends the client's command to a node (Send for a command it holds whole, Forward
// for one it streams from the client's read buffer), then calls Response, which reads the
// node's answer and writes it to the client. Response returns a plain Result the session
// applies (the final server status, whether an ERR ended the response and which, whether the
// node announced that it closes the connection, whether any byte reached the client). Sending
// and relaying are two calls because the session has its own work between them: the answer to
// a consistency wait it pipelined ahead of the command is read first, and a prepared
// statement's command is streamed with the node's statement id in place of the client's.
//
// # What is decoded
//
// Rows and column definitions are copied as they are (mysql.Conn.CopyPacket), never decoded.
// Decoded are only:
//
//   - the first packet of each result: OK, ERR, LOCAL INFILE request (0xfb), or the column
//     count of a result set;
//   - every packet that ends a result or the response: the OK (or the OK in the place of EOF
//     under CLIENT_DEPRECATE_EOF) and the classic EOF, for the server status (transaction
//     state, more results, a cursor opened) and the session-state block (schema, variables,
//     GTID of a commit). Each of them goes by the Observer the caller passes, in order, so that
//     a multi-statement's OKs are each seen;
//   - an ERR, for its code: a few codes mean the node is closing the connection.
//
// Two rewrites keep the client from seeing the split: under transaction splitting
// (Options.TxPending) a status without SERVER_STATUS_IN_TRANS gets it, since the client's
// transaction is open on the primary while its reads run outside any on a replica; and a client
// without CLIENT_SESSION_TRACK never gets the session-state block the node connection (which
// always tracks) carries.
//
// # What is refused
//
//   - A LOCAL INFILE request reaches the client only for a LOAD DATA LOCAL the client sent
//     (Options.Infile), once per response, and only for the file the statement named: a node
//     must not turn the upload of one file into a read of another. Any other request gets the
//     empty packet that sends no file, and the client a clear ERR. The client's file packets
//     each come within Options.Stall.
//   - An OK of 16 MiB or more is out of step (no server sends one): an error, not a read of
//     up to 1 GiB into memory.
//   - A truncated or malformed packet from the node is a node error, never a panic.
//
// # Errors
//
// Response, Send and Forward return *Error for a broken connection, saying whose (the
// client's or the node's) and how far the command got (Partial, Answered): the session's one
// failure mapping decides from it what the client sees. Options.Redirect turns the primary's
// read-only refusal, met before anything reached the client, into *ReadOnlyError: the statement
// did nothing, and the session may send it to a new primary.
//
// # Allocation and ownership
//
// The relay allocates nothing per response on its paths that succeed: Options and the mysql.OK
// given to the Observer are values, and the OK rewritten for a client without
// CLIENT_SESSION_TRACK (and the ERR of a refused LOCAL INFILE request) is built in the
// client's connection's scratch buffer (mysql.Conn.Scratch): the caller must not hold a packet
// it read from that connection with ReadPacket across a call. The functions are called from
// the session's goroutine, which owns both connections for the call.
package relay
