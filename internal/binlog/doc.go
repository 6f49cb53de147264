// Package binlog follows a node's binlog as a replica would, and reports the node's GTID
// position after every transaction it writes: the real-time source of node positions for the
// session and global consistency levels, where polling (the monitor, once a second) is too
// slow. The caller runs one stream per node (Run) and falls back to the polled position while
// a node's stream does not work (SHOW NODES: source "stream" or "poll").
//
// Decisions, each checked on MariaDB 10.11 (see the research facts, section 5):
//
//   - The stream is go-mysql's BinlogSyncer (github.com/go-mysql-org/go-mysql/replication), at
//     the exact version go.mod pins. Its own reconnecting is off: a broken stream restarts from
//     the node's current position (read with SELECT @@gtid_binlog_pos / @@gtid_executed on the
//     same node, as the same user), with backoff, and the caller is told.
//   - Raw mode: go-mysql does not decode rows or table maps. Only GTID events are decoded, with
//     go-mysql's decoders into one reused value; the MariaDB position is a per-domain slice kept
//     sorted, printed into a reused buffer: one string allocation per transaction.
//   - A position, not a set, on MariaDB: each domain's last GTID, the way @@gtid_binlog_pos is.
//     A replica's binlog may interleave domains differently from its primary's, so each event
//     moves only its own domain.
//   - The account needs REPLICATION SLAVE. Without it MariaDB answers COM_REGISTER_SLAVE with
//     ERROR 1045 "Access denied" right after a login that worked: reported as
//     ErrNoReplicationGrant, and retried only every 30 s.
//   - ERROR 1236 (the start position is not in the binlog): restart from the current position.
//     ERROR 4052 (another replica registered with our server_id, which made the node drop us):
//     register with another id. Ids are derived per process in a range real servers do not use.
//   - go-mysql logs in through a relay of ours (authguard.go) that reads the login, TLS or not,
//     and ends it where go-mysql would send the password to a node that may not read it
//     (caching_sha2_password's full authentication without verified TLS or the configured key,
//     mysql_clear_password, dialog, sha256_password), and passes nothing in such a login that it
//     does not recognise: a node added through the API cannot harvest the monitor's password.
//     After the login it passes the node's packets up to 64 MiB each (go-mysql reads a packet
//     whole), and a go-mysql panic on a malformed packet fails the attempt, not sluice.
//   - Every wait is bounded: connects (5 s), reads (3 heartbeats), backoff (5 s). Ending the
//     context before the dump runs closes the syncer's sockets at once, so Run returns
//     promptly, leaving no goroutine behind.
//   - Goodbyes (goodbye.go): the node counts no stream's connection as an aborted client. A
//     running dump is ended by KILL QUERY of its thread from a connection that says goodbye
//     (the node then ends it itself; bounded by 1 s, then closed as before), and the relay
//     sends COM_QUIT where go-mysql closes a connection without one.
package binlog
