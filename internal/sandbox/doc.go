// Package sandbox starts and controls a real local MariaDB (or MySQL) cluster: one primary and
// N GTID replicas, each node with its own datadir, socket, pid file and tmpdir under one
// directory, listening on 127.0.0.1 only. It serves two audiences: users who want something to
// point sluice at (`sluice sandbox`), and integration tests that need real servers (see
// internal/testutil).
//
// The cluster is described by DIR/sandbox.json, so a second process (the `sluice sandbox
// stop|start|status ...` subcommands) can Open and control a cluster that another process
// brought Up. Servers run detached in their own session: they outlive the process that
// started them until Down is called, and a Ctrl-C in the terminal does not kill them midway.
//
// Settings and traps come from shared/reference/mariadb-3node.sh (verified on MariaDB 10.11):
// per-node tmpdir (parallel bootstraps sharing /tmp fail now and then), --defaults-file as the
// first option, MASTER_DELAY only after a full STOP SLAVE, NULL Seconds_Behind_Master while
// the SQL thread is stopped.
//
// Nothing here is meant for production data: the servers run with non-durable settings
// (innodb_flush_log_at_trx_commit=2, sync_binlog=0) and well-known passwords.
package sandbox
