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
		{"no state: kept", []byte{0, 0, 0, 2, 0, 0, 0}, "0-1-20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := &memConn{}
			r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
			r.s.lastGTID = append(r.s.lastGTID[:0], "0-1-20"...)
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

// TestMergeGTID: a session's commits position keeps one MariaDB GTID per domain (the latest),
// so that a read waits for every domain the session wrote in; a MySQL GTID replaces it.
func TestMergeGTID(t *testing.T) {
	var last, scratch []byte
	for _, tc := range []struct{ g, want string }{
		{"0-1-100", "0-1-100"},
		{"0-1-101", "0-1-101"},
		{"5-1-1", "0-1-101,5-1-1"},
		{"0-2-102", "0-2-102,5-1-1"},
		{"5-1-2", "0-2-102,5-1-2"},
		{"10-1-7", "0-2-102,5-1-2,10-1-7"},
		{"1-1-3", "0-2-102,5-1-2,10-1-7,1-1-3"},
		{"3e11fa47-71ca-11e1-9e33-c80aa9429562:23", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"},
	} {
		last, scratch = mergeGTID(last, scratch, []byte(tc.g))
		if string(last) != tc.want {
			t.Fatalf("after %s: %q, want %q", tc.g, last, tc.want)
		}
	}
	last, scratch = mergeGTID(nil, nil, []byte("0-1-1"))
	if n := testing.AllocsPerRun(100, func() { last, scratch = mergeGTID(last, scratch, []byte("0-1-2")) }); n != 0 {
		t.Fatalf("mergeGTID allocates %.1f times per commit", n)
	}
}

// TestFailedStatementMayHaveCommitted: an ERR from the primary to a statement that can commit
// first (a DDL's implicit commit, a procedure's earlier statements) carries no GTID, so the
// session's last commit is unknown; an ERR to a plain read changes nothing.
func TestFailedStatementMayHaveCommitted(t *testing.T) {
	for _, tc := range []struct {
		stmt    string
		unknown bool
	}{
		{"CREATE TABLE t (a INT)", true},
		{"CALL p()", true},
		{"SELECT * FROM missing", false},
	} {
		primary := &memConn{}
		r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
		r.s.gtidTracked = true
		primary.load(packets(1, []byte("\xff\x1a\x04#42S01Table 't' already exists")))
		r.client.load(packets(0, append([]byte{mysql.ComQuery}, tc.stmt...)))
		if _, err := r.command(); err != nil {
			t.Fatal(err)
		}
		if r.s.gtidUnknown != tc.unknown {
			t.Errorf("%s answered by an ERR: last commit unknown %v, want %v", tc.stmt, r.s.gtidUnknown, tc.unknown)
		}
	}
}
