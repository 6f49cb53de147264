package proxy_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// Binary prepared statements under pool_mode transaction: the node statements stay prepared on
// the node connection between sessions (backend.StmtCache), and a session binds to one another
// session left there instead of preparing the text again.

// rawPrepare prepares q through via and returns sluice's id and the column count.
func rawPrepare(t *testing.T, via *backend.Conn, q string) (uint32, int) {
	t.Helper()
	ps := command(t, via, append([]byte{smysql.ComStmtPrepare}, q...), "single")
	if ps[0][0] != 0 {
		t.Fatalf("prepare %q: %v", q, smysql.ParseERR(ps[0]))
	}
	id := binary.LittleEndian.Uint32(ps[0][1:])
	cols, params := int(binary.LittleEndian.Uint16(ps[0][5:])), int(binary.LittleEndian.Uint16(ps[0][7:]))
	skip := params + cols
	if via.Caps&smysql.ClientDeprecateEOF == 0 {
		if params > 0 {
			skip++
		}
		if cols > 0 {
			skip++
		}
	}
	for range skip {
		if _, err := via.ReadPacket(); err != nil {
			t.Fatal(err)
		}
	}
	return id, cols
}

// param is one parameter of an EXECUTE: its type and its value as the binary protocol writes it.
type param struct {
	typ   byte
	value []byte
}

func intParam(n int64) param {
	return param{typ: 0x08, value: binary.LittleEndian.AppendUint64(nil, uint64(n))} // MYSQL_TYPE_LONGLONG
}

func strParam(s string) param {
	return param{typ: 0xfe, value: append([]byte{byte(len(s))}, s...)} // MYSQL_TYPE_STRING
}

// rawExecute executes statement id with params, sending their types only when typed (an
// EXECUTE without them relies on the types of the statement's last EXECUTE that sent them), and
// returns the response's packets.
func rawExecute(t *testing.T, via *backend.Conn, id uint32, typed bool, params ...param) [][]byte {
	t.Helper()
	p := binary.LittleEndian.AppendUint32([]byte{smysql.ComStmtExecute}, id)
	p = append(p, 0, 1, 0, 0, 0) // no cursor, one iteration
	if len(params) > 0 {
		p = append(p, make([]byte, (len(params)+7)/8)...) // no NULLs
		if typed {
			p = append(p, 1)
			for _, x := range params {
				p = append(p, x.typ, 0)
			}
		} else {
			p = append(p, 0)
		}
		for _, x := range params {
			p = append(p, x.value...)
		}
	}
	return command(t, via, p, "result")
}

// binaryRows returns the rows of a binary result set of cols columns, each column's value as a
// string: length-encoded strings as they are, BIGINTs (8 bytes) in decimal. An ERR fails the
// test.
func binaryRows(t *testing.T, res [][]byte, cols int, ints ...bool) [][]string {
	t.Helper()
	if smysql.IsERR(res[0]) {
		t.Fatalf("EXECUTE: %v", smysql.ParseERR(res[0]))
	}
	if n, _, _, _ := smysql.ReadLenEncInt(res[0]); int(n) != cols {
		t.Fatalf("%d columns, want %d", n, cols)
	}
	var rows [][]string
	for _, p := range res[1+cols:] {
		if p[0] != 0x00 {
			continue // an EOF
		}
		b := p[1+(cols+7+2)/8:]
		var row []string
		for i := range cols {
			if i < len(ints) && ints[i] {
				row = append(row, strconv.FormatInt(int64(binary.LittleEndian.Uint64(b)), 10))
				b = b[8:]
				continue
			}
			v, rest, err := smysql.ReadLenEncString(b)
			if err != nil {
				t.Fatal(err)
			}
			row, b = append(row, string(v)), b[rest:]
		}
		rows = append(rows, row)
	}
	return rows
}

// nodePrepares is how many PREPAREs the node connection under via's session has run
// (max_per_node 1: every session's).
func nodePrepares(t *testing.T, via *backend.Conn) int {
	t.Helper()
	n, err := strconv.Atoi(query(t, via, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'COM_STMT_PREPARE'"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTxPoolStmtReuse: two sessions share one node connection (max_per_node 1) and prepare the
// same text and texts of their own; executed interleaved, with parameters of different types
// (A an integer, B a string) and then without types (each relying on its own), every result is
// right and no EXECUTE prepares its text again: each binds to the node statement the other
// session (or itself) left on the connection.
func TestTxPoolStmtReuse(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.txstmt (id BIGINT PRIMARY KEY, s VARCHAR(20))")
	mustExec(t, direct, "REPLACE INTO test.txstmt VALUES (1, 'one'), (2, 'two'), (3, 'three'), (12, 'twelve')")
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	a, b := rawConnect(t, s.rw, "app", "app"), rawConnect(t, s.rw, "app", "app")
	defer a.Close()
	defer b.Close()

	const shared = "SELECT s FROM test.txstmt WHERE id = ?"
	sa, _ := rawPrepare(t, a, shared)
	sb, _ := rawPrepare(t, b, shared)
	byName, _ := rawPrepare(t, a, "SELECT id FROM test.txstmt WHERE s = ?")
	count, _ := rawPrepare(t, b, "SELECT COUNT(*) FROM test.txstmt WHERE id > ?")
	before := nodePrepares(t, a)

	one := func(res [][]byte, want string, ints ...bool) {
		t.Helper()
		rows := binaryRows(t, res, 1, ints...)
		if len(rows) != 1 || rows[0][0] != want {
			t.Fatalf("rows %q, want %q", rows, want)
		}
	}
	one(rawExecute(t, a, sa, true, intParam(1)), "one")
	one(rawExecute(t, b, sb, true, strParam("2")), "two")
	one(rawExecute(t, a, byName, true, strParam("three")), "3", true)
	one(rawExecute(t, b, count, true, intParam(2)), "2", true)
	for i := range 10 {
		// Without types: A's integer and B's string, each sent again by sluice where the node
		// statement last had the other's.
		one(rawExecute(t, a, sa, false, intParam(1+int64(i%2))), []string{"one", "two"}[i%2])
		one(rawExecute(t, b, sb, false, strParam("12")), "twelve")
		one(rawExecute(t, a, byName, false, strParam("one")), "1", true)
		one(rawExecute(t, b, count, false, intParam(0)), "4", true)
		// And with types the other way round.
		one(rawExecute(t, b, sb, true, intParam(3)), "three")
		one(rawExecute(t, b, sb, false, intParam(1)), "one")
		one(rawExecute(t, b, sb, true, strParam("2")), "two")
	}
	if ta, tb := query(t, a, "SELECT CONNECTION_ID()+0"), query(t, b, "SELECT CONNECTION_ID()+0"); ta != tb {
		t.Fatalf("A on node thread %s, B on %s: not one node connection", ta, tb)
	}
	if after := nodePrepares(t, a); after != before {
		t.Errorf("the node prepared %d statements during 74 EXECUTEs, want none (every text is prepared there)", after-before)
	}

	// A statement the client closes stays on the connection: the other session's EXECUTE of
	// the same text, and a new session's PREPARE and EXECUTE of it, prepare once (the client's
	// PREPARE is answered by the node).
	a.SetSeq(0)
	if err := a.WritePacketFlush(binary.LittleEndian.AppendUint32([]byte{smysql.ComStmtClose}, sa)); err != nil {
		t.Fatal(err)
	}
	before = nodePrepares(t, b)
	one(rawExecute(t, b, sb, true, intParam(2)), "two")
	c := rawConnect(t, s.rw, "app", "app")
	defer c.Close()
	sc, _ := rawPrepare(t, c, shared)
	one(rawExecute(t, c, sc, true, intParam(3)), "three")
	one(rawExecute(t, b, sb, false, intParam(1)), "one")
	if after := nodePrepares(t, b); after != before+1 {
		t.Errorf("%d PREPAREs on the node, want 1 (C's own)", after-before)
	}
}

// TestTxPoolStmtCacheBound: a session that prepares more texts than a node connection keeps
// idle (backend.DefaultStmtCache) leaves no more than that many on the node once it lets the
// connection go; the texts evicted are prepared again when executed, with right results.
func TestTxPoolStmtCacheBound(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	a := rawConnect(t, s.rw, "app", "app")
	defer a.Close()
	global := func() int {
		n, err := strconv.Atoi(query(t, a, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'PREPARED_STMT_COUNT'"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	g0 := global()
	const extra = 10
	n := backend.DefaultStmtCache + extra
	ids := make([]uint32, n)
	for i := range ids {
		ids[i], _ = rawPrepare(t, a, fmt.Sprintf("SELECT CAST(? AS SIGNED) + %d", i))
	}
	// Every PREPARE above went to the connection and was let go of with it: the node keeps
	// the last DefaultStmtCache.
	if g := global() - g0; g != backend.DefaultStmtCache {
		t.Fatalf("%d statements prepared on the node, want %d", g, backend.DefaultStmtCache)
	}
	before := nodePrepares(t, a)
	for i, id := range ids {
		res := rawExecute(t, a, id, true, intParam(1000))
		if rows := binaryRows(t, res, 1, true); len(rows) != 1 || rows[0][0] != strconv.Itoa(1000+i) {
			t.Fatalf("statement %d: %q", i, rows)
		}
	}
	// The first `extra` were evicted: prepared again, each evicting the oldest left; and so
	// every one after them had been evicted too by the time it ran (least recently used).
	if p := nodePrepares(t, a) - before; p != n {
		t.Errorf("%d PREPAREs executing %d statements, want %d", p, n, n)
	}
	if g := global() - g0; g != backend.DefaultStmtCache {
		t.Fatalf("%d statements on the node after executing, want %d", g, backend.DefaultStmtCache)
	}
	// Executed again in the order they were last used, the newest ones are still there.
	before = nodePrepares(t, a)
	for i := n - backend.DefaultStmtCache/2; i < n; i++ {
		res := rawExecute(t, a, ids[i], false, intParam(1))
		if rows := binaryRows(t, res, 1, true); len(rows) != 1 || rows[0][0] != strconv.Itoa(1+i) {
			t.Fatalf("statement %d: %q", i, rows)
		}
	}
	if p := nodePrepares(t, a) - before; p != 0 {
		t.Errorf("%d PREPAREs for statements the connection keeps", p)
	}
}

// TestTxPoolStmtAltered: a table altered between EXECUTEs. A session whose statement was
// prepared before gets what it gets on its own connection (the node re-prepares it, and the
// result carries the new columns) or the server's error for a statement to re-prepare, never
// rows of another shape than the result announces; a session that prepares after binds to no
// node statement of the old shape (it is closed), and reuses its own.
func TestTxPoolStmtAltered(t *testing.T) {
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	mustExec(t, direct, "DROP TABLE IF EXISTS test.txstmt_alter")
	mustExec(t, direct, "CREATE TABLE test.txstmt_alter (id BIGINT PRIMARY KEY, s VARCHAR(20))")
	mustExec(t, direct, "INSERT INTO test.txstmt_alter VALUES (1, 'one')")
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	a, b := rawConnect(t, s.rw, "app", "app"), rawConnect(t, s.rw, "app", "app")
	defer a.Close()
	defer b.Close()
	const q = "SELECT * FROM test.txstmt_alter WHERE id = ?"
	sa, cols := rawPrepare(t, a, q)
	if rows := binaryRows(t, rawExecute(t, a, sa, true, intParam(1)), cols, true); len(rows) != 1 || rows[0][1] != "one" {
		t.Fatalf("before: %q", rows)
	}
	mustExec(t, direct, "ALTER TABLE test.txstmt_alter ADD COLUMN x VARCHAR(20) NOT NULL DEFAULT 'ex'")

	sb, colsB := rawPrepare(t, b, q)
	if colsB != 3 {
		t.Fatalf("B prepared after the ALTER: %d columns", colsB)
	}
	before := nodePrepares(t, b)
	for range 3 {
		if rows := binaryRows(t, rawExecute(t, b, sb, true, intParam(1)), 3, true); len(rows) != 1 || rows[0][2] != "ex" {
			t.Fatalf("B after the ALTER: %q", rows)
		}
	}
	if p := nodePrepares(t, b) - before; p != 0 {
		t.Errorf("B's EXECUTEs prepared %d times: its own statement was not reused", p)
	}
	for range 3 {
		res := rawExecute(t, a, sa, false, intParam(1))
		if smysql.IsERR(res[0]) {
			if e := smysql.ParseERR(res[0]); e.Code != smysql.ErrNeedReprepare {
				t.Fatalf("A after the ALTER: %v", e)
			}
			continue
		}
		if rows := binaryRows(t, res, 3, true); len(rows) != 1 || rows[0][2] != "ex" {
			t.Fatalf("A after the ALTER: %q", rows)
		}
	}
	// The node statement of the old shape is not bound for a session told of the new one.
	sc, _ := rawPrepare(t, b, q)
	if rows := binaryRows(t, rawExecute(t, b, sc, true, intParam(1)), 3, true); len(rows) != 1 || !bytes.Equal([]byte(rows[0][2]), []byte("ex")) {
		t.Fatalf("B's second statement: %q", rows)
	}
}

// TestTxPoolStmtLongData: a session's long data (COM_STMT_SEND_LONG_DATA) never reaches another
// session's EXECUTE of the same text, though A's EXECUTE runs on the node statement B prepared.
// (MariaDB forgets a statement's long data once an EXECUTE used it; sluice does not rely on
// that: a node statement sent long data is closed when let go of, not kept for another.)
func TestTxPoolStmtLongData(t *testing.T) {
	s := startSluice(t, poolConfig("transaction", 1, 2*time.Second))
	a, b := rawConnect(t, s.rw, "app", "app"), rawConnect(t, s.rw, "app", "app")
	defer a.Close()
	defer b.Close()
	const q = "SELECT CONCAT('[', ?, ']')"
	sa, _ := rawPrepare(t, a, q)
	sb, _ := rawPrepare(t, b, q) // the node statement A's EXECUTE takes next
	for round := range 3 {
		a.SetSeq(0)
		long := binary.LittleEndian.AppendUint32([]byte{smysql.ComStmtSendLongData}, sa)
		long = append(append(long, 0, 0), bytes.Repeat([]byte("L"), 1000+round)...)
		if err := a.WritePacketFlush(long); err != nil {
			t.Fatal(err)
		}
		// Types BLOB, no value: the long data is the value.
		res := rawExecute(t, a, sa, true, param{typ: 0xfc})
		if rows := binaryRows(t, res, 1); len(rows) != 1 || rows[0][0] != "["+string(bytes.Repeat([]byte("L"), 1000+round))+"]" {
			t.Fatalf("A's long data: %.40q", rows)
		}
		if rows := binaryRows(t, rawExecute(t, b, sb, true, strParam("b")), 1); len(rows) != 1 || rows[0][0] != "[b]" {
			t.Fatalf("B after A's long data: %.40q", rows)
		}
		// B's statement, if A's EXECUTE took it, was not left with A's long data either way.
		if rows := binaryRows(t, rawExecute(t, a, sa, true, strParam("a")), 1); len(rows) != 1 || rows[0][0] != "[a]" {
			t.Fatalf("A without long data: %.40q", rows)
		}
	}
}
