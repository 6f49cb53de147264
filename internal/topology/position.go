package topology

import (
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/gtid"
)

// The queries that read a node's position and replication state, and how to read their
// results, for both server families. The sandbox reports with them; the monitor polls with
// them. They take and return plain values (no connection), so either can run them its own way.

// StateQuery returns one row: version, @@read_only, the node's binlog position, the position
// it has applied, and (MariaDB) the position replicated from its source. MariaDB:
// @@gtid_binlog_pos, @@gtid_current_pos, @@gtid_slave_pos. MySQL: @@gtid_executed twice, then an empty string.
func StateQuery(f gtid.Flavor) string {
	if f == gtid.MariaDB {
		return "SELECT @@version, @@global.read_only, @@global.gtid_binlog_pos, @@global.gtid_current_pos, @@global.gtid_slave_pos"
	}
	return "SELECT @@version, @@global.read_only, @@global.gtid_executed, @@global.gtid_executed, ''"
}

// PositionQuery returns one row: the GTID position of everything the node has written to its
// binlog (on a primary: every committed transaction).
func PositionQuery(f gtid.Flavor) string {
	if f == gtid.MariaDB {
		return "SELECT @@global.gtid_binlog_pos"
	}
	return "SELECT @@global.gtid_executed"
}

// IdentityQuery returns one row: the node's own identity in GTIDs (MariaDB @@server_id, MySQL
// @@server_uuid) and its binlog position, for OwnGTIDs.
func IdentityQuery(f gtid.Flavor) string {
	if f == gtid.MariaDB {
		return "SELECT @@server_id, @@gtid_binlog_pos"
	}
	return "SELECT @@server_uuid, @@gtid_executed"
}

// ReplicaStatusQuery returns the replication status: no row on a node that does not replicate.
// On MariaDB, one row per replication connection, the named ones of multi-source replication
// too (SHOW SLAVE STATUS shows only the default one): a node replicating over a named
// connection replicates (the figures shown are the first row's).
func ReplicaStatusQuery(f gtid.Flavor) string {
	if f == gtid.MariaDB {
		return "SHOW ALL SLAVES STATUS"
	}
	return "SHOW REPLICA STATUS"
}

// OwnGTIDs returns the GTIDs of pos that the node with identity id wrote itself (a transaction
// that did not come from its source): MariaDB domain-server-seq whose server is id, MySQL
// uuid:intervals whose uuid is id. On a replica, any is a write that did not replicate.
func OwnGTIDs(f gtid.Flavor, id, pos string) []string {
	var own []string
	for _, g := range strings.Split(pos, ",") {
		g = strings.TrimSpace(g)
		mine := false
		if f == gtid.MariaDB {
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

// ReplicaStatus is the part of SHOW SLAVE/REPLICA STATUS sluice reads.
type ReplicaStatus struct {
	// IORunning and SQLRunning: Yes, No or Connecting.
	IORunning  string
	SQLRunning string
	// SecondsBehind is nil when the server reports NULL: whenever the SQL thread is stopped or
	// the IO thread is not connected. NULL is not "no lag".
	SecondsBehind *int64
	SQLDelay      int    // configured MASTER_DELAY
	RemainingWait *int64 // SQL_Remaining_Delay, while the SQL thread waits for the delay
	LastError     string // Last_IO_Error and Last_SQL_Error, joined
	Source        string // host:port it replicates from
	// IOErrno and SQLErrno: Last_IO_Errno and Last_SQL_Errno (0: none).
	IOErrno, SQLErrno int
	// IOError and SQLError: Last_IO_Error and Last_SQL_Error.
	IOError, SQLError string
}

// Failure is the error replication stopped with ("" when it did not): a thread that is not
// running (No; not Connecting, which retries by itself) with an error number. A thread stopped
// by an operator (STOP SLAVE SQL_THREAD) has none, and is only behind.
func (s *ReplicaStatus) Failure() string {
	if s == nil {
		return ""
	}
	var errs []string
	if s.SQLRunning != "Yes" && s.SQLErrno != 0 {
		errs = append(errs, "SQL thread: "+strconv.Itoa(s.SQLErrno)+" "+s.SQLError)
	}
	if s.IORunning == "No" && s.IOErrno != 0 {
		errs = append(errs, "IO thread: "+strconv.Itoa(s.IOErrno)+" "+s.IOError)
	}
	return strings.Join(errs, "; ")
}

// Column reads one column of a result row by name: its value, and false when it is NULL or
// absent.
type Column func(name string) (string, bool)

// ParseReplicaStatus reads a SHOW SLAVE STATUS (MariaDB, MySQL before 8.0.22) or SHOW REPLICA
// STATUS (MySQL 8) row.
func ParseReplicaStatus(col Column) ReplicaStatus {
	get := func(names ...string) string {
		for _, n := range names {
			if v, ok := col(n); ok {
				return v
			}
		}
		return ""
	}
	num := func(names ...string) *int64 {
		for _, n := range names {
			if v, ok := col(n); ok {
				if x, err := strconv.ParseInt(v, 10, 64); err == nil {
					return &x
				}
			}
		}
		return nil
	}
	s := ReplicaStatus{
		IORunning:     get("Slave_IO_Running", "Replica_IO_Running"),
		SQLRunning:    get("Slave_SQL_Running", "Replica_SQL_Running"),
		SecondsBehind: num("Seconds_Behind_Master", "Seconds_Behind_Source"),
		RemainingWait: num("SQL_Remaining_Delay"),
	}
	if d := num("SQL_Delay"); d != nil {
		s.SQLDelay = int(*d)
	}
	if host := get("Master_Host", "Source_Host"); host != "" {
		s.Source = host + ":" + get("Master_Port", "Source_Port")
	}
	if n := num("Last_IO_Errno"); n != nil {
		s.IOErrno = int(*n)
	}
	if n := num("Last_SQL_Errno"); n != nil {
		s.SQLErrno = int(*n)
	}
	s.IOError, s.SQLError = get("Last_IO_Error"), get("Last_SQL_Error")
	var errs []string
	for _, e := range []string{s.IOError, s.SQLError} {
		if e != "" {
			errs = append(errs, e)
		}
	}
	s.LastError = strings.Join(errs, "; ")
	return s
}

// CheckQuery returns one row for the monitor's check: version, read-only (MySQL: read_only or
// super_read_only), server id, binlog position, applied position.
func CheckQuery(f gtid.Flavor) string {
	if f == gtid.MariaDB {
		return "SELECT @@version, @@global.read_only, @@server_id, @@global.gtid_binlog_pos, @@global.gtid_current_pos"
	}
	return "SELECT @@version, @@global.read_only OR @@global.super_read_only, @@server_id, @@global.gtid_executed, @@global.gtid_executed"
}

// ThreadsQuery returns the rows Threads_connected and Threads_running (Variable_name, Value).
const ThreadsQuery = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_connected', 'Threads_running')"
