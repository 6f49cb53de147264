package topology

import (
	"strconv"
	"strings"
)

// A node's replication status as SHOW SLAVE/REPLICA STATUS gives it, and how to read it from a
// row of either server family (the query itself is gtid.ReplicaStatusQuery). The sandbox
// reports with it; the monitor polls with it.

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
