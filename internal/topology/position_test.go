package topology

import (
	"reflect"
	"testing"
)

func columns(m map[string]*string) Column {
	return func(name string) (string, bool) {
		v, ok := m[name]
		if !ok || v == nil {
			return "", false
		}
		return *v, true
	}
}

func str(s string) *string { return &s }

func TestParseReplicaStatus(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		row  map[string]*string
		want ReplicaStatus
	}{
		{"MariaDB, replicating", map[string]*string{
			"Slave_IO_Running": str("Yes"), "Slave_SQL_Running": str("Yes"), "Seconds_Behind_Master": str("3"),
			"SQL_Delay": str("0"), "SQL_Remaining_Delay": nil, "Last_IO_Error": str(""), "Last_SQL_Error": str(""),
			"Master_Host": str("127.0.0.1"), "Master_Port": str("3306"),
		}, ReplicaStatus{IORunning: "Yes", SQLRunning: "Yes", SecondsBehind: i(3), Source: "127.0.0.1:3306"}},
		{"MariaDB, SQL thread stopped: lag NULL", map[string]*string{
			"Slave_IO_Running": str("Yes"), "Slave_SQL_Running": str("No"), "Seconds_Behind_Master": nil,
			"Last_SQL_Error": str("Duplicate entry '1' for key 'PRIMARY'"),
			"Last_SQL_Errno": str("1062"),
		}, ReplicaStatus{IORunning: "Yes", SQLRunning: "No", LastError: "Duplicate entry '1' for key 'PRIMARY'",
			SQLErrno: 1062, SQLError: "Duplicate entry '1' for key 'PRIMARY'"}},
		{"MySQL 8 names, delayed", map[string]*string{
			"Replica_IO_Running": str("Yes"), "Replica_SQL_Running": str("Yes"), "Seconds_Behind_Source": str("61"),
			"SQL_Delay": str("60"), "SQL_Remaining_Delay": str("12"), "Last_IO_Error": str("error connecting"),
			"Last_SQL_Error": str("x"), "Source_Host": str("127.0.0.1"), "Source_Port": str("3307"),
		}, ReplicaStatus{IORunning: "Yes", SQLRunning: "Yes", SecondsBehind: i(61), SQLDelay: 60, RemainingWait: i(12),
			LastError: "error connecting; x", Source: "127.0.0.1:3307", IOError: "error connecting", SQLError: "x"}},
	} {
		if got := ParseReplicaStatus(columns(tc.row)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestReplicaFailure: replication that stopped with an error is a failure; a thread an operator
// stopped (no error), or an IO thread still retrying its connection, is not.
func TestReplicaFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   *ReplicaStatus
		want string
	}{
		{"not a replica", nil, ""},
		{"running", &ReplicaStatus{IORunning: "Yes", SQLRunning: "Yes"}, ""},
		{"SQL thread paused by an operator", &ReplicaStatus{IORunning: "Yes", SQLRunning: "No"}, ""},
		{"SQL thread stopped by an error", &ReplicaStatus{IORunning: "Yes", SQLRunning: "No", SQLErrno: 1062, SQLError: "Duplicate entry"},
			"SQL thread: 1062 Duplicate entry"},
		{"IO thread retrying (the primary is down)", &ReplicaStatus{IORunning: "Connecting", SQLRunning: "Yes", IOErrno: 2003, IOError: "Can't connect"}, ""},
		{"IO thread stopped by an error (RESET MASTER on the primary)", &ReplicaStatus{IORunning: "No", SQLRunning: "Yes", IOErrno: 1236, IOError: "not in the master's binlog"},
			"IO thread: 1236 not in the master's binlog"},
		{"an old error, the thread running again", &ReplicaStatus{IORunning: "Yes", SQLRunning: "Yes", SQLErrno: 1062}, ""},
	} {
		if got := tc.st.Failure(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
