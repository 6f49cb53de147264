package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// oneValue is a node's one-row, one-column text result v (DEPRECATE_EOF), sequence from 1.
func oneValue(v string) []byte {
	return packets(1, []byte{1}, benchColumn, append([]byte{byte(len(v))}, v...), []byte{0xfe, 0, 0, 2, 0, 0, 0})
}

// TestReplicaReadWaitsForTheSessionsCommit: at consistency session, a read sent to a replica
// first asks it to reach the session's last commit, in the flavour's words (MariaDB
// MASTER_GTID_WAIT, MySQL WAIT_FOR_EXECUTED_GTID_SET, with the endpoint's timeout); the read
// runs there when it did, and on the primary when it did not. The wait and the read go to the
// replica in one write (one round trip); a read whose wait timed out has its answer dropped.
func TestReplicaReadWaitsForTheSessionsCommit(t *testing.T) {
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	for _, tc := range []struct {
		name, version, last, wait, reached string
		onReplica                          bool
	}{
		{"MariaDB, reached", "10.11.19-MariaDB", "0-1-25", "SELECT MASTER_GTID_WAIT('0-1-25', 0.010000)", "0", true},
		{"MariaDB, timed out", "10.11.19-MariaDB", "0-1-25", "SELECT MASTER_GTID_WAIT('0-1-25', 0.010000)", "-1", false},
		{"MySQL, reached", "8.0.36", uuid + ":23", "SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuid + ":23', 0.010000)", "0", true},
		{"MySQL, timed out", "8.0.36", uuid + ":23", "SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuid + ":23', 0.010000)", "1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary, replica := &memConn{}, &memConn{}
			r := newTwoNodeSession(t, []int{0, 100}, primary, replica)
			set := *r.s.ep.route.Settings()
			set.Consistency, set.ConsistencyTimeout = route.SessionConsistency, 10*time.Millisecond
			if err := r.s.ep.route.Update(set); err != nil {
				t.Fatal(err)
			}
			r.s.conns[1].Handshake.ServerVersion = tc.version
			r.s.reads.tracked = true
			r.s.reads.last = append(r.s.reads.last[:0], tc.last...)
			replica.load(append(oneValue(tc.reached), oneValue("replica")...))
			primary.load(oneValue("primary"))
			r.client.load(packets(0, append([]byte{mysql.ComQuery}, "SELECT v FROM t"...)))
			if _, err := r.command(); err != nil {
				t.Fatal(err)
			}
			_ = r.s.client.Flush()
			wait, read := strings.Index(string(replica.out), tc.wait), strings.Index(string(replica.out), "SELECT v FROM t")
			if wait < 0 || read < wait || replica.writes != 1 {
				t.Fatalf("the replica was sent %q in %d writes, want %q and the read after it, in one", replica.out, replica.writes, tc.wait)
			}
			got := "primary"
			if strings.Contains(string(r.client.out), "replica") {
				got = "replica"
			}
			if want := map[bool]string{true: "replica", false: "primary"}[tc.onReplica]; got != want {
				t.Fatalf("the read was answered by the %s, want the %s", got, want)
			}
			if !tc.onReplica && r.s.view.lastRoute().reason != route.ReasonConsistency {
				t.Fatalf("reason %s, want %s", r.s.view.lastRoute().reason, route.ReasonConsistency)
			}
		})
	}
}
