package backend

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

func initDB(db string) []byte { return append([]byte{mysql.ComInitDB}, db...) }

func setOption(o uint16) []byte { return []byte{mysql.ComSetOption, byte(o), byte(o >> 8)} }

// drain empties the node's record of what it received so far, after the dial.
func drain(t *testing.T, bc *Conn, got <-chan []byte, want ...[]byte) {
	t.Helper()
	expectPackets(t, bc, got, want...)
}

// TestSyncSendsTheDifference: Sync sends exactly what the connection lacks, in order, with the
// guard last on a read-only connection, and nothing when it is in line.
func TestSyncSendsTheDifference(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		name := "read-write"
		if readOnly {
			name = "read-only"
		}
		t.Run(name, func(t *testing.T) {
			addr, got := commandNode(t, mariaDBHandshake(), nil)
			bc := testDial(t, addr, Options{Database: "a", Epoch: 7, ReadOnly: readOnly})
			var guard [][]byte
			if readOnly {
				guard = [][]byte{query(ReadOnlyGuard)}
			}
			drain(t, bc, got, guard...)

			st := &State{DB: "b", Options: 1, Epoch: 7, Stmts: [][]byte{[]byte("SET NAMES latin1"), []byte("SET SESSION sql_mode=''")}}
			if err := bc.Sync(st); err != nil {
				t.Fatal(err)
			}
			if fp := bc.Fingerprint(); fp != st.Fingerprint() || fp != (Fingerprint{DB: "b", Options: 1, Epoch: 7, Applied: 2}) {
				t.Fatalf("fingerprint %+v, state %+v", fp, st.Fingerprint())
			}
			expectPackets(t, bc, got, append([][]byte{initDB("b"), setOption(1), query("SET NAMES latin1"), query("SET SESSION sql_mode=''")}, guard...)...)

			// In line: nothing at all.
			if err := bc.Sync(st); err != nil {
				t.Fatal(err)
			}
			expectPackets(t, bc, got)

			// One more statement: that one (and the guard).
			st.Stmts = append(st.Stmts, []byte("SET SESSION TRANSACTION READ WRITE"))
			if err := bc.Sync(st); err != nil {
				t.Fatal(err)
			}
			expectPackets(t, bc, got, append([][]byte{query("SET SESSION TRANSACTION READ WRITE")}, guard...)...)

			// The schema only; an empty schema leaves the connection's as it is.
			st.DB = "c"
			if err := bc.Sync(st); err != nil {
				t.Fatal(err)
			}
			st.DB = ""
			if err := bc.Sync(st); err != nil {
				t.Fatal(err)
			}
			expectPackets(t, bc, got, initDB("c"))
			if fp := bc.Fingerprint(); fp.DB != "c" {
				t.Fatalf("fingerprint %+v", fp)
			}

			// The option only.
			st.Options = 0
			if err := bc.Sync(st); err != nil {
				t.Fatal(err)
			}
			expectPackets(t, bc, got, setOption(0))
		})
	}
}

// TestSyncDiverged: a connection of another epoch is refused before anything is sent.
func TestSyncDiverged(t *testing.T) {
	addr, got := commandNode(t, mariaDBHandshake(), nil)
	bc := testDial(t, addr, Options{Database: "a", Epoch: 1, ReadOnly: true})
	drain(t, bc, got, query(ReadOnlyGuard))
	for _, st := range []*State{
		{DB: "b", Options: 1, Epoch: 2, Stmts: [][]byte{[]byte("SET NAMES utf8mb4")}},
		{DB: "b", Epoch: 0},
	} {
		if err := bc.Sync(st); !errors.Is(err, ErrDiverged) {
			t.Fatalf("Sync(%+v) = %v, want ErrDiverged", st, err)
		}
	}
	// More statements applied than the state has: the state went back, which only a reset does.
	st := &State{DB: "a", Epoch: 1, Stmts: [][]byte{[]byte("SET NAMES utf8mb4")}}
	bc.Adopt(st)
	st.Stmts = st.Stmts[:0]
	if err := bc.Sync(st); !errors.Is(err, ErrDiverged) {
		t.Fatalf("Sync = %v, want ErrDiverged", err)
	}
	expectPackets(t, bc, got)
}

// TestSyncRefused: a statement the node refuses is a SyncError wrapping the node's error; the
// fingerprint counts what was applied before it, and a read-only connection is guarded anyway.
func TestSyncRefused(t *testing.T) {
	refuse := func(c *mysql.Conn, _ uint32, p []byte) {
		switch string(p[1:]) {
		case "SET SESSION bogus=1", "nodb":
			_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1193, "HY000", "Unknown system variable 'bogus'")))
		default:
			writeOK(c)
		}
	}
	t.Run("statement", func(t *testing.T) {
		addr, got := commandNode(t, mariaDBHandshake(), refuse)
		bc := testDial(t, addr, Options{ReadOnly: true})
		drain(t, bc, got, query(ReadOnlyGuard))
		st := &State{Stmts: [][]byte{[]byte("SET SESSION a=1"), []byte("SET SESSION bogus=1"), []byte("SET SESSION b=1")}}
		err := bc.Sync(st)
		var syncErr *SyncError
		var se *mysql.SQLError
		if !errors.As(err, &syncErr) || !errors.As(err, &se) || se.Code != 1193 ||
			syncErr.Command != mysql.ComQuery || syncErr.Stmt != "SET SESSION bogus=1" {
			t.Fatalf("got %#v", err)
		}
		if fp := bc.Fingerprint(); fp.Applied != 1 {
			t.Fatalf("fingerprint %+v, want 1 applied", fp)
		}
		expectPackets(t, bc, got, query("SET SESSION a=1"), query("SET SESSION bogus=1"), query(ReadOnlyGuard))
	})
	t.Run("schema", func(t *testing.T) {
		addr, got := commandNode(t, mariaDBHandshake(), refuse)
		bc := testDial(t, addr, Options{})
		err := bc.Sync(&State{DB: "nodb", Options: 1})
		var syncErr *SyncError
		if !errors.As(err, &syncErr) || syncErr.Command != mysql.ComInitDB || syncErr.Stmt != "nodb" || syncErr.Err.Code != 1193 {
			t.Fatalf("got %#v", err)
		}
		if fp := bc.Fingerprint(); fp != (Fingerprint{}) {
			t.Fatalf("fingerprint %+v", fp)
		}
		expectPackets(t, bc, got, initDB("nodb"))
	})
	t.Run("transport error: as it is", func(t *testing.T) {
		addr, _ := commandNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ uint32, p []byte) {
			_ = c.Close()
		})
		bc := testDial(t, addr, Options{})
		err := bc.Sync(&State{Stmts: [][]byte{[]byte("SET NAMES utf8mb4")}})
		var syncErr *SyncError
		var se *mysql.SQLError
		if err == nil || errors.As(err, &syncErr) || errors.As(err, &se) {
			t.Fatalf("got %#v, want a transport error", err)
		}
	})
}

// TestAdoptAndMarkReset: what the node ran itself moves the fingerprint without a word sent;
// a reset forgets the statements (not the schema or the option) and makes the guard due.
func TestAdoptAndMarkReset(t *testing.T) {
	addr, got := commandNode(t, mariaDBHandshake(), nil)
	bc := testDial(t, addr, Options{Database: "a", Epoch: 1, ReadOnly: true})
	drain(t, bc, got, query(ReadOnlyGuard))

	st := &State{DB: "b", Options: 1, Epoch: 1}
	bc.Adopt(st) // a relayed USE b and COM_SET_OPTION
	if fp := bc.Fingerprint(); fp != st.Fingerprint() {
		t.Fatalf("fingerprint %+v, want %+v", fp, st.Fingerprint())
	}
	if err := bc.Sync(st); err != nil {
		t.Fatal(err)
	}
	expectPackets(t, bc, got) // nothing: no statement ran, no guard due

	st.Stmts = append(st.Stmts, []byte("SET SESSION TRANSACTION READ WRITE"))
	bc.Adopt(st) // a relayed SET: the guard is due
	if err := bc.Sync(st); err != nil {
		t.Fatal(err)
	}
	expectPackets(t, bc, got, query(ReadOnlyGuard))

	bc.MarkReset(2) // a relayed COM_RESET_CONNECTION
	if fp := bc.Fingerprint(); fp != (Fingerprint{DB: "b", Options: 1, Epoch: 2}) {
		t.Fatalf("fingerprint after reset %+v", fp)
	}
	if err := bc.Sync(st); !errors.Is(err, ErrDiverged) {
		t.Fatalf("Sync with the old epoch = %v", err)
	}
	st = &State{DB: "b", Options: 1, Epoch: 2}
	if bc.Fingerprint() != st.Fingerprint() {
		t.Fatal("fingerprints differ")
	}
	if err := bc.Sync(st); err != nil { // fingerprints equal, the guard due all the same
		t.Fatal(err)
	}
	expectPackets(t, bc, got, query(ReadOnlyGuard))

	st.Stmts = append(st.Stmts, []byte("SET NAMES utf8mb4"))
	bc.MarkReset(2)
	if err := bc.Sync(st); err != nil {
		t.Fatal(err)
	}
	expectPackets(t, bc, got, query("SET NAMES utf8mb4"), query(ReadOnlyGuard))

	// A read-write connection: a reset leaves nothing to guard.
	addr2, got2 := commandNode(t, mariaDBHandshake(), nil)
	rw := testDial(t, addr2, Options{})
	rw.MarkReset(5)
	if err := rw.Sync(&State{Epoch: 5}); err != nil {
		t.Fatal(err)
	}
	expectPackets(t, rw, got2)
}

// TestSyncInLineDoesNotAllocate: the steady state costs nothing.
func TestSyncInLineDoesNotAllocate(t *testing.T) {
	addr, _ := commandNode(t, mariaDBHandshake(), nil)
	bc := testDial(t, addr, Options{Database: "a", ReadOnly: true})
	st := &State{DB: "a", Options: 1, Stmts: [][]byte{[]byte("SET NAMES utf8mb4")}}
	if err := bc.Sync(st); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if err := bc.Sync(st); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per in-line Sync", n)
	}
}

func BenchmarkSyncInLine(b *testing.B) {
	addr, _ := commandNode(b, mariaDBHandshake(), nil)
	bc := testDial(b, addr, Options{Database: "a", ReadOnly: true})
	st := &State{DB: "a", Options: 1, Stmts: [][]byte{[]byte("SET NAMES utf8mb4"), []byte("SET SESSION sql_mode=''")}}
	if err := bc.Sync(st); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := bc.Sync(st); err != nil {
			b.Fatal(err)
		}
	}
}

// okNode is a scripted node that answers every command with the same OK, without allocating.
func okNode(tb testing.TB) string {
	tb.Helper()
	ok := mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, AlwaysCaps)
	return scriptedNode(tb, mariaDBHandshake(), func(c *mysql.Conn, _ *mysql.HandshakeResponse) {
		writeOK(c)
		_ = c.NetConn().SetDeadline(time.Time{})
		for {
			c.SetSeq(0)
			if _, err := c.ReadPacket(); err != nil {
				return
			}
			if c.WritePacketFlush(ok) != nil {
				return
			}
		}
	})
}

// TestSyncSchemaDoesNotAllocate: a schema or option change is built in the connection's scratch
// buffer: a Sync that sends one costs a round trip and no allocation.
func TestSyncSchemaDoesNotAllocate(t *testing.T) {
	bc := testDial(t, okNode(t), Options{Database: "a"})
	states := [2]*State{{DB: "a", Options: 0}, {DB: "bb", Options: 1}}
	i := 0
	if n := testing.AllocsPerRun(200, func() {
		i++
		if err := bc.Sync(states[i%2]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per Sync", n)
	}
}

// BenchmarkSyncSchema: a schema change on every Sync, a round trip each.
func BenchmarkSyncSchema(b *testing.B) {
	bc := testDial(b, okNode(b), Options{Database: "a"})
	states := [2]*State{{DB: "a"}, {DB: "b"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := bc.Sync(states[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSyncErrorText(t *testing.T) {
	se := mysql.NewError(1049, "42000", "Unknown database 'x'")
	for _, tc := range []struct {
		err  *SyncError
		want string
	}{
		{&SyncError{Command: mysql.ComInitDB, Stmt: "x", Err: se}, `node refused COM_INIT_DB "x": ERROR 1049 (42000): Unknown database 'x'`},
		{&SyncError{Command: mysql.ComSetOption, Err: se}, `node refused COM_SET_OPTION: ERROR 1049 (42000): Unknown database 'x'`},
		{&SyncError{Command: mysql.ComQuery, Stmt: "SET a=1", Err: se}, `node refused session statement "SET a=1": ERROR 1049 (42000): Unknown database 'x'`},
		{&SyncError{Command: mysql.ComQuery, Stmt: "SET a='" + strings.Repeat("y", 100) + "'", Err: se}, `node refused session statement "SET a='` + strings.Repeat("y", 73) + `...": ERROR 1049 (42000): Unknown database 'x'`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestSetOptionAnsweredWithEOF: COM_SET_OPTION's answer is an EOF packet; its status is kept.
func TestSetOptionAnsweredWithEOF(t *testing.T) {
	addr, _ := commandNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ uint32, p []byte) {
		_ = c.WritePacketFlush(mysql.AppendEOF(nil, 0, mysql.StatusAutocommit|mysql.StatusInTrans))
	})
	bc := testDial(t, addr, Options{})
	if err := bc.Sync(&State{Options: 1}); err != nil {
		t.Fatal(err)
	}
	if bc.Status != mysql.StatusAutocommit|mysql.StatusInTrans || bc.Fingerprint().Options != 1 {
		t.Fatalf("status %#x, fingerprint %+v", bc.Status, bc.Fingerprint())
	}
}
