package gtid

import "strings"

// The SQL that reads a node's GTID positions, identity and replication status, in each server
// family's words. It lives here, beside the positions it reads, so that the monitor and the
// binlog streamer (the product) and the sandbox (the test clusters) run the same text without
// either importing the other. Plain strings in, plain values out: each caller runs them over
// its own kind of connection.

// StateQuery returns one row: version, @@read_only, the node's binlog position, the position
// it has applied, and (MariaDB) the position replicated from its source. MariaDB:
// @@gtid_binlog_pos, @@gtid_current_pos, @@gtid_slave_pos. MySQL: @@gtid_executed twice, then an empty string.
func StateQuery(f Flavor) string {
	if f == MariaDB {
		return "SELECT @@version, @@global.read_only, @@global.gtid_binlog_pos, @@global.gtid_current_pos, @@global.gtid_slave_pos"
	}
	return "SELECT @@version, @@global.read_only, @@global.gtid_executed, @@global.gtid_executed, ''"
}

// PositionQuery returns one row: the GTID position of everything the node has written to its
// binlog (on a primary: every committed transaction).
func PositionQuery(f Flavor) string {
	if f == MariaDB {
		return "SELECT @@global.gtid_binlog_pos"
	}
	return "SELECT @@global.gtid_executed"
}

// IdentityQuery returns one row: the node's own identity in GTIDs (MariaDB @@server_id, MySQL
// @@server_uuid) and its binlog position, for OwnGTIDs.
func IdentityQuery(f Flavor) string {
	if f == MariaDB {
		return "SELECT @@server_id, @@gtid_binlog_pos"
	}
	return "SELECT @@server_uuid, @@gtid_executed"
}

// ReplicaStatusQuery returns the replication status: no row on a node that does not replicate.
// On MariaDB, one row per replication connection, the named ones of multi-source replication
// too (SHOW SLAVE STATUS shows only the default one): a node replicating over a named
// connection replicates (the figures shown are the first row's).
func ReplicaStatusQuery(f Flavor) string {
	if f == MariaDB {
		return "SHOW ALL SLAVES STATUS"
	}
	return "SHOW REPLICA STATUS"
}

// OwnGTIDs returns the GTIDs of pos that the node with identity id wrote itself (a transaction
// that did not come from its source): MariaDB domain-server-seq whose server is id, MySQL
// uuid:intervals whose uuid is id. On a replica, any is a write that did not replicate.
func OwnGTIDs(f Flavor, id, pos string) []string {
	var own []string
	for _, g := range strings.Split(pos, ",") {
		g = strings.TrimSpace(g)
		mine := false
		if f == MariaDB {
			parts := strings.Split(g, "-")
			mine = len(parts) == 3 && parts[1] == id
		} else {
			mine = id != "" && strings.HasPrefix(strings.ToLower(g), strings.ToLower(id)+":")
		}
		if mine {
			own = append(own, g)
		}
	}
	return own
}
