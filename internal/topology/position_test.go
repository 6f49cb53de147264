package topology

import (
	"reflect"
	"testing"

	"github.com/sluicedb/sluice/internal/gtid"
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

func TestOwnGTIDs(t *testing.T) {
	if got := OwnGTIDs(gtid.MariaDB, "2", "0-1-100, 0-2-3,1-2-7,1-12-4"); !reflect.DeepEqual(got, []string{"0-2-3", "1-2-7"}) {
		t.Errorf("MariaDB: %v", got)
	}
	if got := OwnGTIDs(gtid.MariaDB, "2", ""); got != nil {
		t.Errorf("empty position: %v", got)
	}
	uuid := "3E11FA47-71CA-11E1-9E33-C80AA9429562"
	pos := "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n8a94f357-aab4-11df-86ab-c80aa9429562:1-100"
	if got := OwnGTIDs(gtid.MySQL, uuid, pos); !reflect.DeepEqual(got, []string{"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}) {
		t.Errorf("MySQL: %v", got)
	}
}
