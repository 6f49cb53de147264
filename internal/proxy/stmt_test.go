package proxy_test

import (
	"bytes"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestPreparedStatements(t *testing.T) {
	s := startSluice(t, primaryReads)
	db := open(t, dsn(s.rw, "app", "app", "test", "parseTime=true"))
	db.SetMaxOpenConns(2)
	mustExec(t, db, "DROP TABLE IF EXISTS t_ps")
	mustExec(t, db, `CREATE TABLE t_ps (id INT PRIMARY KEY, i BIGINT, u BIGINT UNSIGNED, f DOUBLE, d DECIMAL(20,5),
		s VARCHAR(50), b BLOB, t DATETIME(6), n INT NULL)`)
	ins, err := db.Prepare("INSERT INTO t_ps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	when := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	for i := 1; i <= 50; i++ {
		var n any
		if i%2 == 0 {
			n = i
		}
		if _, err := ins.Exec(i, -int64(i)*1e12, uint64(1<<63)+uint64(i), float64(i)/3, fmt.Sprintf("%d.12345", i),
			strings.Repeat("é", i%10), bytes.Repeat([]byte{0, byte(i)}, i), when, n); err != nil {
			t.Fatal(err)
		}
	}
	sel, err := db.Prepare("SELECT i, u, f, d, s, b, t, n FROM t_ps WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close()
	for i := 1; i <= 50; i++ {
		var (
			iv int64
			uv uint64
			fv float64
			dv string
			sv string
			bv []byte
			tv time.Time
			nv sql.NullInt64
		)
		if err := sel.QueryRow(i).Scan(&iv, &uv, &fv, &dv, &sv, &bv, &tv, &nv); err != nil {
			t.Fatal(err)
		}
		if iv != -int64(i)*1e12 || uv != uint64(1<<63)+uint64(i) || dv != fmt.Sprintf("%d.12345", i) ||
			sv != strings.Repeat("é", i%10) || !bytes.Equal(bv, bytes.Repeat([]byte{0, byte(i)}, i)) ||
			!tv.Equal(when) || nv.Valid != (i%2 == 0) {
			t.Fatalf("row %d: %v %v %v %v %q %x %v %v", i, iv, uv, fv, dv, sv, bv, tv, nv)
		}
	}
	// Errors in prepare and execute come back as the server words them.
	_, err = db.Prepare("SELECT * FROM no_such_table WHERE id = ?")
	if me := mysqlErr(t, err); me.Number != 1146 {
		t.Fatal(me)
	}
	if _, err := ins.Exec(1, 0, 0, 0, "0", "", nil, when, nil); mysqlErr(t, err).Number != 1062 {
		t.Fatalf("duplicate key: %v", err)
	}
	// Transactions driven by prepared statements.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE t_ps SET n = ? WHERE id = ?", 99, 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var nv sql.NullInt64
	if err := db.QueryRow("SELECT n FROM t_ps WHERE id = ?", 1).Scan(&nv); err != nil || nv.Valid {
		t.Fatalf("rollback did not undo: %v %v", nv, err)
	}
}

// TestPreparedStatementIDs: clients see sluice's ids, unknown ids get the server's error, and
// the session survives.
func TestPreparedStatementIDs(t *testing.T) {
	s := startSluice(t, nil)
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	prep := func(q string) uint32 {
		ps := command(t, via, append([]byte{smysql.ComStmtPrepare}, q...), "single")
		if ps[0][0] != 0 {
			t.Fatalf("prepare %q: %v", q, smysql.ParseERR(ps[0]))
		}
		id := uint32(ps[0][1]) | uint32(ps[0][2])<<8 | uint32(ps[0][3])<<16 | uint32(ps[0][4])<<24
		params := int(ps[0][7]) | int(ps[0][8])<<8
		cols := int(ps[0][5]) | int(ps[0][6])<<8
		// Skip the definitions.
		skip := params + cols
		if via.Caps&smysql.ClientDeprecateEOF == 0 {
			if params > 0 {
				skip++
			}
			if cols > 0 {
				skip++
			}
		}
		for i := 0; i < skip; i++ {
			if _, err := via.ReadPacket(); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	a, b := prep("SELECT 1"), prep("SELECT 2")
	if a != 1 || b != 2 {
		t.Fatalf("statement ids %d, %d; want sluice's own 1, 2", a, b)
	}
	exec := func(id uint32) [][]byte {
		return command(t, via, []byte{smysql.ComStmtExecute, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24), 0, 1, 0, 0, 0}, "result")
	}
	if r := exec(b); smysql.IsERR(r[0]) {
		t.Fatal(smysql.ParseERR(r[0]))
	}
	r := exec(77)
	if e := smysql.ParseERR(r[0]); e.Code != 1243 || !strings.Contains(e.Message, "(77)") {
		t.Fatalf("unknown statement: %v", e)
	}
	// Close, then executing the closed id fails the same way.
	via.SetSeq(0)
	if err := via.WritePacketFlush([]byte{smysql.ComStmtClose, byte(a), 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if e := smysql.ParseERR(exec(a)[0]); e.Code != 1243 {
		t.Fatalf("closed statement: %v", e)
	}
	// Long data: sent in pieces, used by the next EXECUTE.
	id := prep("SELECT LENGTH(?), MD5(?)")
	for _, param := range []byte{0, 1} {
		for i := 0; i < 3; i++ {
			via.SetSeq(0)
			p := []byte{smysql.ComStmtSendLongData, byte(id), 0, 0, 0, param, 0}
			p = append(p, bytes.Repeat([]byte("x"), 100000)...)
			if err := via.WritePacketFlush(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	// EXECUTE: flags 0, iterations 1, null bitmap 0, new-params-bound 1, types BLOB, BLOB, no values.
	res := command(t, via, []byte{smysql.ComStmtExecute, byte(id), 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfc, 0, 0xfc, 0}, "result")
	if smysql.IsERR(res[0]) {
		t.Fatal(smysql.ParseERR(res[0]))
	}
	// The binary row carries LENGTH as a 4-byte integer and the MD5 as text.
	sum := md5.Sum(bytes.Repeat([]byte("x"), 300000))
	want := append([]byte{0xe0, 0x93, 0x04, 0, 32}, hex.EncodeToString(sum[:])...)
	if !bytes.Contains(bytes.Join(res, nil), want) {
		t.Fatalf("long data did not reach the statement: %q", res)
	}
	if got := query(t, via, "SELECT 'still here'"); got != "still here" {
		t.Fatal(got)
	}
}

func TestTLS(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Users = append(c.Users, config.User{Name: "tlsonly", Password: "app", RequireTLS: true, AuthPlugin: smysql.AuthCachingSHA2},
			config.User{Name: "tlsnative", Password: "app", RequireTLS: true})
	})
	c := testutil.Cluster(t)
	admin, err := c.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, admin, "CREATE USER IF NOT EXISTS 'tlsonly'@'127.0.0.1' IDENTIFIED BY 'app'")
	mustExec(t, admin, "GRANT SELECT ON *.* TO 'tlsonly'@'127.0.0.1'")
	cipher := func(d string) (string, error) {
		db := open(t, d)
		var name, v string
		err := db.QueryRow("SHOW STATUS LIKE 'Ssl_cipher'").Scan(&name, &v)
		return v, err
	}
	// A TLS client sees a TLS session (the node link is TLS too), a plain one does not.
	if v, err := cipher(dsn(s.rw, "app", "app", "", "tls=skip-verify")); err != nil || v == "" {
		t.Fatalf("Ssl_cipher over TLS = %q, %v", v, err)
	}
	if v, err := cipher(dsn(s.rw, "app", "app", "", "")); err != nil || v != "" {
		t.Fatalf("Ssl_cipher without TLS = %q, %v", v, err)
	}
	// caching_sha2_password full authentication over TLS (no RSA), and require_tls.
	if _, err := cipher(dsn(s.rw, "tlsonly", "app", "", "tls=skip-verify")); err != nil {
		t.Fatal(err)
	}
	if _, err := cipher(dsn(s.rw, "tlsonly", "app", "", "")); mysqlErr(t, err).Number != 1045 {
		t.Fatalf("require_tls user without TLS: %v", err)
	}
	// Nor by a change of user on a plain connection: refused, and the session stays app's.
	mustExec(t, admin, "CREATE USER IF NOT EXISTS 'tlsnative'@'127.0.0.1' IDENTIFIED BY 'app'")
	mustExec(t, admin, "GRANT SELECT ON *.* TO 'tlsnative'@'127.0.0.1'")
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	if r := changeUserRaw(t, via, "tlsnative", "app"); !smysql.IsERR(r) || smysql.ParseERR(r).Code != 1045 {
		t.Fatalf("change user to a require_tls user without TLS: % x", r)
	}
	if got := query(t, via, "SELECT SUBSTRING_INDEX(CURRENT_USER(), '@', 1)"); got != "app" {
		t.Fatalf("after the refused change of user: %q", got)
	}
	// An endpoint with tls: required refuses plain clients.
	req := startSluice(t, func(c *config.Config) { c.Endpoints[0].TLS = "required" })
	if _, err := cipher(dsn(req.rw, "app", "app", "", "")); mysqlErr(t, err).Number != 3159 {
		t.Fatalf("plain client on a TLS-only endpoint: %v", err)
	}
	if _, err := cipher(dsn(req.rw, "app", "app", "", "tls=skip-verify")); err != nil {
		t.Fatal(err)
	}
}

// TestCompressedClient: a client that negotiates the compressed protocol gets the same results,
// text and binary, small and large.
func TestCompressedClient(t *testing.T) {
	s := startSluice(t, primaryReads)
	db := open(t, dsn(s.rw, "app", "app", "test", "compress=true"))
	db.SetMaxOpenConns(1)
	var n int
	var sum string
	if err := db.QueryRow("SELECT COUNT(*), SUM(LENGTH(REPEAT('x', seq))) FROM seq_1_to_20000").Scan(&n, &sum); err != nil || n != 20000 {
		t.Fatalf("%d %s %v", n, sum, err)
	}
	rows, err := db.Query("SELECT seq, REPEAT('y', 500) FROM seq_1_to_20000")
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for rows.Next() {
		var id int
		var pad string
		if err := rows.Scan(&id, &pad); err != nil || len(pad) != 500 {
			t.Fatal(err)
		}
		count++
	}
	rows.Close()
	if count != 20000 {
		t.Fatalf("%d rows", count)
	}
	var v string
	big := strings.Repeat("z", 3<<20)
	if err := db.QueryRow("SELECT ?", big).Scan(&v); err != nil || v != big {
		t.Fatalf("prepared 3 MiB round trip: %d bytes, %v", len(v), err)
	}
	if _, err := db.Exec("SELECT * FROM no_such_table"); mysqlErr(t, err).Number != 1146 {
		t.Fatal(err)
	}
}

// TestCompressedNodeLinks: backend_compress compresses sluice's own connections to the nodes.
func TestCompressedNodeLinks(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		primaryReads(c)
		c.BackendCompress = true
	})
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	var name, v string
	if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Compression'").Scan(&name, &v); err != nil || v != "ON" {
		t.Fatalf("Compression on the node link = %q, %v", v, err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM seq_1_to_50000").Scan(&n); err != nil || n != 50000 {
		t.Fatal(n, err)
	}
	var x string
	if err := db.QueryRow("SELECT ?", strings.Repeat("q", 1<<20)).Scan(&x); err != nil || len(x) != 1<<20 {
		t.Fatal(len(x), err)
	}
}
