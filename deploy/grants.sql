-- The accounts sluice needs on MariaDB 10.5 and later (checked on 10.11). Run it on the
-- primary, as an administrator: replication copies the accounts to the replicas.
-- Change the passwords, and '%' to the address sluice connects from.
-- internal/cli's TestDeployGrants runs this file against a real cluster and runs sluice with
-- these accounts: keep DEPLOYING.md's copy the same (the test compares them).

-- The monitor account (monitor.user): every monitor.interval it reads @@version,
-- @@read_only, @@server_id, @@gtid_binlog_pos, @@gtid_current_pos (no privilege),
-- SHOW SLAVE STATUS (SLAVE MONITOR) and SHOW GLOBAL STATUS (no privilege); it streams each
-- node's binlog for GTID positions as they are written (REPLICATION SLAVE: it can read every
-- row change, so keep this account as secret as a replication account); and with
-- accounts.from_primary it reads the primary's accounts (the column grant on global_priv).
CREATE USER 'sluice_monitor'@'%' IDENTIFIED BY 'monitor-password';
GRANT SLAVE MONITOR, REPLICATION SLAVE ON *.* TO 'sluice_monitor'@'%';
GRANT SELECT (User, Host, Priv) ON mysql.global_priv TO 'sluice_monitor'@'%';

-- An application account (users[].name): sluice logs in to every node as the client's own
-- user, so it needs exactly what the application needs. Never READ_ONLY ADMIN (part of ALL
-- PRIVILEGES on 10.11) or SUPER: they let a write through a replica's read_only.
CREATE USER 'app'@'%' IDENTIFIED BY 'app-password';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES,
  LOCK TABLES, EXECUTE ON appdb.* TO 'app'@'%';
