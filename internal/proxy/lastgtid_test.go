package proxy

import (
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// TestLastGTIDFromOK: the GTID of a session's commit is read from the node's OK packet, as
// MariaDB sends it (last_gtid in the system-variable tracker, recorded from 10.11: an autocommit
// INSERT and a COMMIT) and as MySQL does (session_track_gtids=OWN_GTID, tracker type 3), and a
// statement without one leaves it as it was.
func TestLastGTIDFromOK(t *testing.T) {
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	mysqlGTID := uuid + ":23"
	ownGTID := append([]byte{mysql.SessionTrackGTIDs, byte(2 + len(mysqlGTID)), 0, byte(len(mysqlGTID))}, mysqlGTID...)
	for _, tc := range []struct {
		name string
		ok   []byte // the node's OK payload
		want string
	}{
		{"MariaDB autocommit INSERT", []byte("\x00\x01\x0b\x02\x40\x00\x00\x00\x13\x00\x11\x09last_gtid\x060-1-25"), "0-1-25"},
		{"MariaDB COMMIT", []byte("\x00\x00\x00\x02\x40\x00\x00\x00\x13\x00\x11\x09last_gtid\x060-1-26"), "0-1-26"},
		{"MySQL OWN_GTID", append([]byte{0, 1, 0, 2, 0x40, 0, 0, 0, byte(len(ownGTID))}, ownGTID...), mysqlGTID},
		{"no state: kept", []byte{0, 0, 0, 2, 0, 0, 0}, "9-9-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := &memConn{}
			r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
			r.s.lastGTID = append(r.s.lastGTID[:0], "9-9-9"...)
			primary.load(packets(1, tc.ok))
			r.client.load(packets(0, append([]byte{mysql.ComQuery}, "INSERT INTO t VALUES (1)"...)))
			if _, err := r.command(); err != nil {
				t.Fatal(err)
			}
			if got := string(r.s.lastGTID); got != tc.want {
				t.Fatalf("last GTID %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLastGTIDLostInClassicEOF: a statement that commits and returns rows (INSERT … RETURNING)
// to a client without DEPRECATE_EOF ends with a classic EOF that flags a state change but
// cannot carry the GTID (mariadb-facts.md §1): the session's last commit is then unknown, and
// its reads at consistency session go to the primary, until a later commit says its GTID.
func TestLastGTIDLostInClassicEOF(t *testing.T) {
	primary := &memConn{}
	r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
	r.s.conns[0].Caps &^= mysql.ClientDeprecateEOF
	r.s.gtidTracked = true
	r.s.lastGTID = append(r.s.lastGTID[:0], "0-1-24"...)
	// One column, its definition, the classic EOF after it, one row, the final EOF with
	// status 0x4002 (autocommit, session state changed).
	primary.load(packets(1, []byte{1}, benchColumn, []byte{0xfe, 0, 0, 2, 0}, []byte("\x011"), []byte{0xfe, 0, 0, 2, 0x40}))
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, "INSERT INTO t VALUES (1) RETURNING id"...)))
	if _, err := r.command(); err != nil {
		t.Fatal(err)
	}
	if !r.s.gtidUnknown {
		t.Fatal("the GTID of a commit answered by a classic EOF is not marked unknown")
	}
	primary.load(packets(1, []byte("\x00\x01\x0b\x02\x40\x00\x00\x00\x13\x00\x11\x09last_gtid\x060-1-26")))
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, "INSERT INTO t VALUES (2)"...)))
	if _, err := r.command(); err != nil {
		t.Fatal(err)
	}
	if r.s.gtidUnknown || string(r.s.lastGTID) != "0-1-26" {
		t.Fatalf("after a commit that says its GTID: unknown %v, last %q", r.s.gtidUnknown, r.s.lastGTID)
	}
}
