package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// Regression tests for what the client stacks of tests/clients found: the layout of OK packets
// for clients without CLIENT_SESSION_TRACK (mysqlnd, PyMySQL), MariaDB's extended column
// metadata (mysql2's JSON columns), and CALLs of procedures that open cursors.

// rawClient is a client connection that negotiates exactly the capabilities it is given, as
// the client libraries do that sluice's own client side (which always tracks session state)
// cannot stand in for.
type rawClient struct {
	*smysql.Conn
	nc   net.Conn
	caps uint32
}

func dialRaw(t testing.TB, addr string, caps, mcaps uint32) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := smysql.NewConn(nc, 0, 0)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	hs, err := smysql.ParseHandshake(p)
	if err != nil {
		t.Fatal(err)
	}
	caps &= hs.Capabilities | smysql.ClientLongPassword
	if mcaps != 0 && hs.Capabilities&smysql.ClientLongPassword == 0 {
		caps &^= smysql.ClientLongPassword
		mcaps &= hs.MariaDBCapabilities
	} else {
		mcaps = 0
	}
	resp := smysql.AppendHandshakeResponse(nil, &smysql.HandshakeResponse{
		Capabilities: caps | smysql.ClientConnectWithDB, MaxPacketSize: 1 << 24, Charset: 45,
		User: "app", AuthResponse: smysql.NativeScramble("app", hs.Nonce), Database: "test",
		AuthPlugin: smysql.AuthNativePassword, MariaDBCapabilities: mcaps,
	})
	if err := c.WritePacketFlush(resp); err != nil {
		t.Fatal(err)
	}
	if p, err = c.ReadPacket(); err != nil {
		t.Fatal(err)
	}
	if !smysql.IsOK(p) {
		t.Fatalf("login: % x", p)
	}
	return &rawClient{Conn: c, nc: nc, caps: caps}
}

// query sends a COM_QUERY and returns every packet of the response, through the last result
// set (following SERVER_MORE_RESULTS_EXISTS), copied.
func (c *rawClient) query(t testing.TB, q string) [][]byte {
	t.Helper()
	return c.command(t, q, append([]byte{smysql.ComQuery}, q...))
}

// execute prepares q (without parameters), executes it without a cursor and returns the
// packets of the EXECUTE's response, as query does.
func (c *rawClient) execute(t testing.TB, q string) [][]byte {
	t.Helper()
	id := c.prepare(t, q)
	return c.command(t, q, append(append([]byte{smysql.ComStmtExecute}, id...), 0, 1, 0, 0, 0))
}

// prepare prepares q and returns the statement id as sent on the wire.
func (c *rawClient) prepare(t testing.TB, q string) []byte {
	t.Helper()
	c.SetSeq(0)
	if err := c.WritePacketFlush(append([]byte{smysql.ComStmtPrepare}, q...)); err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if smysql.IsERR(p) || len(p) < 12 {
		t.Fatalf("PREPARE %s: % x", q, p)
	}
	id := append([]byte(nil), p[1:5]...)
	columns, params := int(p[5])|int(p[6])<<8, int(p[7])|int(p[8])<<8
	for _, n := range []int{params, columns} {
		if n == 0 {
			continue
		}
		if c.caps&smysql.ClientDeprecateEOF == 0 {
			n++
		}
		for range n {
			if _, err := c.ReadPacket(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return id
}

func (c *rawClient) command(t testing.TB, q string, payload []byte) [][]byte {
	t.Helper()
	c.SetSeq(0)
	if err := c.WritePacketFlush(payload); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	read := func() []byte {
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatalf("%s: reading the response: %v (after %d packets)", q, err, len(out))
		}
		p = append([]byte(nil), p...)
		out = append(out, p)
		return p
	}
	deprecateEOF := c.caps&smysql.ClientDeprecateEOF != 0
	for {
		p := read()
		var status uint16
		switch {
		case smysql.IsERR(p):
			return out
		case p[0] == 0x00:
			ok, err := smysql.ParseOK(p, c.caps)
			if err != nil {
				t.Fatalf("%s: OK % x: %v", q, p, err)
			}
			status = ok.Status
		default:
			n, _, _, err := smysql.ReadLenEncInt(p)
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				read()
			}
			if !deprecateEOF {
				read()
			}
			for {
				p = read()
				if smysql.IsERR(p) {
					return out
				}
				if smysql.IsEOF(p, len(p)) {
					break
				}
			}
			if status, err = smysql.TerminatorStatus(p, c.caps); err != nil {
				t.Fatal(err)
			}
		}
		if status&smysql.StatusMoreResultsExists == 0 {
			return out
		}
	}
}

// clientCaps are what mysqlnd and PyMySQL ask for: no CLIENT_SESSION_TRACK.
const clientCaps = smysql.ClientLongPassword | smysql.ClientFoundRows | smysql.ClientLongFlag |
	smysql.ClientLocalFiles | smysql.ClientProtocol41 | smysql.ClientTransactions |
	smysql.ClientSecureConnection | smysql.ClientMultiStatements | smysql.ClientMultiResults |
	smysql.ClientPSMultiResults | smysql.ClientPluginAuth

// TestOKInfoLikeDirect: the OK packets of DML with an info string reach a client without
// CLIENT_SESSION_TRACK byte for byte as the server sends them (the info length-encoded), even
// though sluice's node connection tracks session state and the server adds a block to them.
func TestOKInfoLikeDirect(t *testing.T) {
	s := startSluice(t, primaryReads)
	c := testutil.Cluster(t)
	statements := []string{
		"DROP TABLE IF EXISTS test.t_okinfo",
		"CREATE TABLE test.t_okinfo (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO test.t_okinfo VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"INSERT INTO test.t_okinfo VALUES (4, 'd')",
		"UPDATE test.t_okinfo SET v = 'x' WHERE id < 3",
		"INSERT INTO test.t_okinfo VALUES (1, 'a'), (5, 'e') ON DUPLICATE KEY UPDATE v = 'y'",
		"INSERT IGNORE INTO test.t_okinfo VALUES (1, 'a'), (6, 'f')",
		"ALTER TABLE test.t_okinfo ADD COLUMN w INT",
		"BEGIN",
		"DELETE FROM test.t_okinfo WHERE id > 4",
		"COMMIT",
		"SET @a = 1; UPDATE test.t_okinfo SET v = 'z'; SELECT 1",
		"DROP TABLE test.t_okinfo",
	}
	for _, tc := range []struct {
		name string
		caps uint32
	}{
		{"classic EOF", clientCaps},
		{"DEPRECATE_EOF", clientCaps | smysql.ClientDeprecateEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][][][]byte
			for i, addr := range []string{c.Primary().Address, s.rw} {
				rc := dialRaw(t, addr, tc.caps, 0)
				for _, q := range statements {
					got[i] = append(got[i], rc.query(t, q))
				}
			}
			for k, q := range statements {
				d, v := got[0][k], got[1][k]
				if len(d) != len(v) {
					t.Errorf("%s: %d packets directly, %d through sluice", q, len(d), len(v))
					continue
				}
				for j := range d {
					if !bytes.Equal(d[j], v[j]) {
						t.Errorf("%s: packet %d\ndirect % x\nsluice % x", q, j, d[j], v[j])
					}
				}
			}
		})
	}
}

// TestExtendedMetadataLikeDirect: a MariaDB client that asks for extended metadata gets the
// json format marker on a JSON column, as directly, and sluice's own result sets carry the
// (empty) block too, so the client can parse them.
func TestExtendedMetadataLikeDirect(t *testing.T) {
	s := startSluice(t, primaryReads)
	c := testutil.Cluster(t)
	const q = "SELECT JSON_OBJECT('a', 1) AS o, JSON_ARRAY(1, 2) AS a, 1 AS n"
	caps := clientCaps | smysql.ClientDeprecateEOF
	direct := dialRaw(t, c.Primary().Address, caps, smysql.MariaDBClientExtendedMetadata).query(t, q)
	via := dialRaw(t, s.rw, caps, smysql.MariaDBClientExtendedMetadata)
	got := via.query(t, q)
	if smysql.IsERR(direct[0]) {
		t.Fatalf("%s: %v", q, smysql.ParseERR(direct[0]))
	}
	if len(direct) != len(got) {
		t.Fatalf("%d packets directly, %d through sluice", len(direct), len(got))
	}
	for j := range direct {
		if !bytes.Equal(direct[j], got[j]) {
			t.Errorf("packet %d\ndirect % x\nsluice % x", j, direct[j], got[j])
		}
	}
	if !bytes.Contains(direct[1], []byte("\x01\x04json")) {
		t.Errorf("no format=json block in the direct column definition % x: the test no longer tests it", direct[1])
	}
	// sluice's own result: four column definitions, each with an empty extended block.
	route := via.query(t, "/*PROXY_INTERNAL*/ SHOW LAST ROUTE")
	if len(route) != 1+4+1+1 {
		t.Fatalf("SHOW LAST ROUTE: %d packets", len(route))
	}
	for _, def := range route[1:5] {
		p := def
		for range 6 { // catalog, schema, table, org_table, name, org_name
			_, n, err := smysql.ReadLenEncString(p)
			if err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if len(p) != 1+13 || p[0] != 0 || p[1] != 0x0c {
			t.Errorf("column definition % x: want an empty extended block, then the 12 fixed bytes", def)
		}
	}
}

// TestCursorProcedures: a CALL whose procedure opens a cursor is answered in full, through the
// text and the binary protocol (the server leaves SERVER_STATUS_CURSOR_EXISTS in the status of
// its result sets, which must not end the response early).
func TestCursorProcedures(t *testing.T) {
	s := startSluice(t, primaryReads)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	db.SetMaxOpenConns(1)
	mustExec(t, db, "DROP TABLE IF EXISTS t_cursor")
	mustExec(t, db, "CREATE TABLE t_cursor (id INT PRIMARY KEY, v VARCHAR(20))")
	mustExec(t, db, "INSERT INTO t_cursor VALUES (1, 'one'), (2, 'two')")
	mustExec(t, db, "DROP PROCEDURE IF EXISTS p_cursor")
	mustExec(t, db, `CREATE PROCEDURE p_cursor() BEGIN DECLARE v VARCHAR(20);
		DECLARE c CURSOR FOR SELECT t_cursor.v FROM t_cursor ORDER BY id;
		OPEN c; FETCH c INTO v; CLOSE c; SELECT v; END`)
	mustExec(t, db, "DROP PROCEDURE IF EXISTS p_cursor_out")
	mustExec(t, db, `CREATE PROCEDURE p_cursor_out(OUT total INT) BEGIN
		DECLARE done INT DEFAULT 0; DECLARE x INT;
		DECLARE c CURSOR FOR SELECT id FROM t_cursor;
		DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
		SET total = 0; OPEN c; SELECT 'open' AS state;
		l: LOOP FETCH c INTO x; IF done THEN LEAVE l; END IF; SET total = total + x; END LOOP;
		CLOSE c; END`)
	t.Cleanup(func() {
		_, _ = db.Exec("DROP PROCEDURE IF EXISTS p_cursor")
		_, _ = db.Exec("DROP PROCEDURE IF EXISTS p_cursor_out")
		_, _ = db.Exec("DROP TABLE IF EXISTS t_cursor")
	})
	// Byte for byte as directly, for clients with classic EOF packets (where the flag shows)
	// and without.
	c := testutil.Cluster(t)
	for _, caps := range []uint32{clientCaps, clientCaps | smysql.ClientDeprecateEOF} {
		for _, q := range []string{"CALL test.p_cursor()", "CALL test.p_cursor_out(@t)"} {
			direct := dialRaw(t, c.Primary().Address, caps, 0)
			via := dialRaw(t, s.rw, caps, 0)
			for _, protocol := range []string{"text", "binary"} {
				run := (*rawClient).query
				if protocol == "binary" {
					run = (*rawClient).execute
				}
				d, v := run(direct, t, q), run(via, t, q)
				if len(d) != len(v) {
					t.Errorf("%s (%s, DEPRECATE_EOF %v): %d packets directly, %d through sluice", q, protocol,
						caps&smysql.ClientDeprecateEOF != 0, len(d), len(v))
				}
				if d, v := direct.query(t, "SELECT 1"), via.query(t, "SELECT 1"); len(d) != len(v) {
					t.Fatalf("out of step after %s (%s)", q, protocol)
				}
			}
		}
	}
	// And through a driver.
	for _, tc := range []struct {
		name    string
		q       string
		args    []any
		want    string
		prepare bool
	}{
		{"text", "CALL p_cursor()", nil, "one", false},
		{"binary", "CALL p_cursor()", nil, "one", true},
		{"text, handler and OUT", "CALL p_cursor_out(@t)", nil, "open", false},
		{"binary, handler and OUT", "CALL p_cursor_out(?)", []any{nil}, "open", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var rows interface {
				Next() bool
				Scan(...any) error
				Close() error
				Err() error
			}
			if tc.prepare {
				st, err := conn.PrepareContext(ctx, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				rows, err = st.QueryContext(ctx, tc.args...)
				if err != nil {
					t.Fatal(err)
				}
			} else if rows, err = conn.QueryContext(ctx, tc.q); err != nil {
				t.Fatal(err)
			}
			var got string
			for rows.Next() {
				if err := rows.Scan(&got); err != nil {
					t.Fatal(err)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			var n int
			if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_cursor").Scan(&n); err != nil || n != 2 {
				t.Fatalf("the session is out of step after the CALL: %d, %v", n, err)
			}
		})
	}
}

// TestBulkExecuteLikeDirect: MariaDB's COM_STMT_BULK_EXECUTE (Connector/J's useBulkStmts, on by
// default in Connector/J 3) goes through with the answer the server gives, including a bulk that
// fails as a whole on a duplicate key. (It is routed as EXECUTE is: on a read-only endpoint the
// replica already refuses to prepare the write.)
func TestBulkExecuteLikeDirect(t *testing.T) {
	s := startSluice(t, primaryReads)
	c := testutil.Cluster(t)
	// Three rows of (INT, VARCHAR), with the types (SEND_TYPES_TO_SERVER), as Connector/J sends.
	bulk := func(id []byte, keys ...int32) []byte {
		p := append([]byte{smysql.ComStmtBulkExecute}, id...)
		p = append(p, 128, 0, 3, 0, 253, 0)
		for _, k := range keys {
			p = append(p, 0, byte(k), byte(k>>8), byte(k>>16), byte(k>>24))
			p = append(p, 0)
			p = smysql.AppendLenEncString(p, []byte(fmt.Sprint("v", k)))
		}
		return p
	}
	var got [2][][][]byte
	for i, addr := range []string{c.Primary().Address, s.rw} {
		rc := dialRaw(t, addr, clientCaps|smysql.ClientDeprecateEOF, smysql.MariaDBClientStmtBulkOperations)
		rc.query(t, "DROP TABLE IF EXISTS test.t_bulk")
		rc.query(t, "CREATE TABLE test.t_bulk (id INT PRIMARY KEY, v VARCHAR(10))")
		id := rc.prepare(t, "INSERT INTO test.t_bulk VALUES (?, ?)")
		got[i] = append(got[i], rc.command(t, "bulk", bulk(id, 1, 2, 3)))
		got[i] = append(got[i], rc.command(t, "bulk with a duplicate", bulk(id, 4, 1, 5)))
		got[i] = append(got[i], rc.query(t, "SELECT GROUP_CONCAT(id ORDER BY id) FROM test.t_bulk"))
		rc.query(t, "DROP TABLE test.t_bulk")
	}
	for k := range got[0] {
		d, v := got[0][k], got[1][k]
		if len(d) != len(v) {
			t.Fatalf("step %d: %d packets directly, %d through sluice", k, len(d), len(v))
		}
		for j := range d {
			if !bytes.Equal(d[j], v[j]) {
				t.Errorf("step %d packet %d\ndirect % x\nsluice % x", k, j, d[j], v[j])
			}
		}
	}
	if !smysql.IsOK(got[0][0][0]) || !smysql.IsERR(got[0][1][0]) {
		t.Fatalf("the server did not take the bulk as expected: % x / % x", got[0][0][0], got[0][1][0])
	}

}
