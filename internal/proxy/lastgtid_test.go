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
			r.s.reads.last = append(r.s.reads.last[:0], "0-1-20"...)
			primary.load(packets(1, tc.ok))
			r.client.load(packets(0, append([]byte{mysql.ComQuery}, "INSERT INTO t VALUES (1)"...)))
			if _, err := r.command(); err != nil {
				t.Fatal(err)
			}
			if got := string(r.s.reads.last); got != tc.want {
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
	r.s.reads.tracked = true
	r.s.reads.last = append(r.s.reads.last[:0], "0-1-24"...)
	// One column, its definition, the classic EOF after it, one row, the final EOF with
	// status 0x4002 (autocommit, session state changed).
	primary.load(packets(1, []byte{1}, benchColumn, []byte{0xfe, 0, 0, 2, 0}, []byte("\x011"), []byte{0xfe, 0, 0, 2, 0x40}))
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, "INSERT INTO t VALUES (1) RETURNING id"...)))
	if _, err := r.command(); err != nil {
		t.Fatal(err)
	}
	if !r.s.reads.unknown {
		t.Fatal("the GTID of a commit answered by a classic EOF is not marked unknown")
	}
	primary.load(packets(1, []byte("\x00\x01\x0b\x02\x40\x00\x00\x00\x13\x00\x11\x09last_gtid\x060-1-26")))
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, "INSERT INTO t VALUES (2)"...)))
	if _, err := r.command(); err != nil {
		t.Fatal(err)
	}
	if r.s.reads.unknown || string(r.s.reads.last) != "0-1-26" {
		t.Fatalf("after a commit that says its GTID: unknown %v, last %q", r.s.reads.unknown, r.s.reads.last)
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
		r.s.reads.tracked = true
		primary.load(packets(1, []byte("\xff\x1a\x04#42S01Table 't' already exists")))
		r.client.load(packets(0, append([]byte{mysql.ComQuery}, tc.stmt...)))
		if _, err := r.command(); err != nil {
			t.Fatal(err)
		}
		if r.s.reads.unknown != tc.unknown {
			t.Errorf("%s answered by an ERR: last commit unknown %v, want %v", tc.stmt, r.s.reads.unknown, tc.unknown)
		}
	}
}

// TestCommitWithoutGTID: the server's answer, not the statement's text, says whether a commit's
// GTID is known. A commit that changed rows and whose OK says no GTID (tracking turned off by
// dynamic SQL that sluice cannot read, EXECUTE IMMEDIATE CONCAT(…)) leaves the session's last
// commit unknown, so that its reads at consistency session go to the primary; statements that
// change nothing (a read, a SET, an UPDATE that matched no row, a read-only transaction) do not;
// an OK that says a GTID again brings the session back.
func TestCommitWithoutGTID(t *testing.T) {
	okOf := func(affected byte, status uint16, gtid string) []byte {
		p := []byte{0, affected, 0, byte(status), byte(status >> 8), 0, 0}
		if gtid != "" {
			p[4] |= 0x40 // SESSION_STATE_CHANGED: no info, then last_gtid in the variables tracker
			data := append(append([]byte{9}, "last_gtid"...), byte(len(gtid)))
			data = append(data, gtid...)
			p = append(append(p, 0, byte(2+len(data)), mysql.SessionTrackSystemVariables, byte(len(data))), data...)
		}
		return p
	}
	const autocommit, inTrans = 0x0002, 0x0003
	type step struct {
		stmt    string
		ok      []byte
		unknown bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"tracking turned off by dynamic SQL, then a write", []step{
			{"INSERT INTO t VALUES (1)", okOf(1, autocommit, "0-1-30"), false},
			{"EXECUTE IMMEDIATE CONCAT('SET SESSION session_tr', 'ack_system_variables = ''''')", okOf(0, autocommit, ""), true},
			{"INSERT INTO t VALUES (2)", okOf(1, autocommit, ""), true},
			{"SELECT 1", okOf(0, autocommit, ""), true},
			{"INSERT INTO t VALUES (3)", okOf(1, autocommit, "0-1-32"), false},
			{"SELECT 1", okOf(0, autocommit, ""), false},
			{"INSERT INTO t VALUES (4)", okOf(1, autocommit, ""), true},
		}},
		{"nothing written: nothing lost", []step{
			{"UPDATE t SET a = 1 WHERE 0", okOf(0, autocommit, ""), false},
			{"SET @a = 1", okOf(0, autocommit, ""), false},
			{"BEGIN", okOf(0, inTrans, ""), false},
			{"SELECT 1", okOf(0, inTrans, ""), false},
			{"COMMIT", okOf(0, autocommit, ""), false},
		}},
		{"a transaction that wrote commits without a GTID", []step{
			{"BEGIN", okOf(0, inTrans, ""), false},
			{"UPDATE t SET a = 2", okOf(3, inTrans, ""), false},
			{"COMMIT", okOf(0, autocommit, ""), true},
			{"UPDATE t SET a = 3", okOf(1, autocommit, "0-1-40"), false},
		}},
		{"a transaction that wrote commits with its GTID", []step{
			{"BEGIN", okOf(0, inTrans, ""), false},
			{"INSERT INTO t VALUES (4)", okOf(1, inTrans, ""), false},
			{"COMMIT", okOf(0, autocommit, "0-1-41"), false},
			{"SELECT 1", okOf(0, autocommit, ""), false},
		}},
		{"a DDL without its GTID", []step{
			{"CREATE TABLE t2 (a INT)", okOf(0, autocommit, ""), true},
			{"CREATE TABLE t3 (a INT)", okOf(0, autocommit, "0-1-50"), false},
			{"CREATE TEMPORARY TABLE tt (a INT)", okOf(0, autocommit, ""), false},
		}},
		{"a procedure or dynamic SQL without a GTID", []step{
			{"CALL p()", okOf(0, autocommit, ""), true},
			{"INSERT INTO t VALUES (5)", okOf(1, autocommit, "0-1-60"), false},
			{"EXECUTE IMMEDIATE CONCAT('INSERT INTO t ', 'VALUES (6)')", okOf(1, autocommit, ""), true},
			{"CALL p()", okOf(0, autocommit, "0-1-61"), false},
			{"BEGIN", okOf(0, inTrans, ""), false},
			{"CALL p()", okOf(0, inTrans, ""), false},
			{"COMMIT", okOf(0, autocommit, ""), true},
		}},
		{"tracking set by the client: unknown until a GTID", []step{
			{"SET SESSION session_track_system_variables = 'last_gtid'", okOf(0, autocommit, ""), true},
			{"SELECT 1", okOf(0, autocommit, ""), true},
			{"INSERT INTO t VALUES (7)", okOf(1, autocommit, "0-1-70"), false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := &memConn{}
			r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
			r.s.reads.tracked = true
			for _, st := range tc.steps {
				primary.load(packets(1, st.ok))
				r.client.load(packets(0, append([]byte{mysql.ComQuery}, st.stmt...)))
				if _, err := r.command(); err != nil {
					t.Fatalf("%s: %v", st.stmt, err)
				}
				if r.s.reads.unknown != st.unknown {
					t.Fatalf("after %s (OK % x): last commit unknown %v, want %v", st.stmt, st.ok, r.s.reads.unknown, st.unknown)
				}
			}
		})
	}
}
