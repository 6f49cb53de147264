package proxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestPreAuthPacketBound: before login, a client cannot make sluice buffer more than a small
// bound. A handshake response that announces 1 MiB is refused after the bound, and the
// connection closed, while the client is still sending.
func TestPreAuthPacketBound(t *testing.T) {
	s := startSluice(t, nil)
	for _, claimed := range []int{1 << 20, smysql.MaxPacketPayload - 1} {
		nc, err := net.DialTimeout("tcp", s.rw, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := smysql.NewConn(nc, 0, 0)
		if _, err := c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		hdr := []byte{byte(claimed), byte(claimed >> 8), byte(claimed >> 16), 1}
		if _, err := nc.Write(hdr); err != nil {
			t.Fatal(err)
		}
		// Send up to the claimed size in 64 KiB pieces; sluice closes the connection well before.
		chunk := make([]byte, 64<<10)
		sent := 0
		for sent < claimed {
			k, err := nc.Write(chunk[:min(len(chunk), claimed-sent)])
			sent += k
			if err != nil {
				break
			}
		}
		// Whatever went out, sluice has closed the connection (EOF or a reset, not a timeout).
		if _, err := io.ReadAll(nc); err != nil && os.IsTimeout(err) {
			t.Fatalf("claimed %d: the connection is still open: %v", claimed, err)
		}
		if sent > 8<<20 {
			t.Errorf("claimed %d: sluice took %d bytes of an unauthenticated packet", claimed, sent)
		}
		nc.Close()
	}
	// A normal login still works.
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	// COM_CHANGE_USER is a login too: a 1 MiB one is not buffered; the connection closes.
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	nc := via.NetConn()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte{0, 0, 0x10, 0, smysql.ComChangeUser}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(nc); err != nil && os.IsTimeout(err) {
		t.Fatal("a 1 MiB COM_CHANGE_USER is still being read")
	}
}

// TestCachingSHA2HidesUnknownUsers: with caching_sha2_password, an unknown user gets the same
// first answer as a known one whose password sluice has not cached (full authentication), not
// an immediate 1045 that tells the two apart.
func TestCachingSHA2HidesUnknownUsers(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Users = append(c.Users, config.User{Name: "sha2", Password: "sha2pw", AuthPlugin: smysql.AuthCachingSHA2})
	})
	first := func(user string) []byte {
		nc, err := net.DialTimeout("tcp", s.rw, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := smysql.NewConn(nc, 0, 0)
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		hs, err := smysql.ParseHandshake(p)
		if err != nil {
			t.Fatal(err)
		}
		resp := smysql.AppendHandshakeResponse(nil, &smysql.HandshakeResponse{
			Capabilities: smysql.ClientProtocol41 | smysql.ClientSecureConnection | smysql.ClientPluginAuth |
				smysql.ClientLongPassword | smysql.ClientPluginAuthLenencClientData,
			MaxPacketSize: 1 << 24, Charset: 45, User: user,
			AuthResponse: smysql.CachingSHA2Scramble("guess", hs.Nonce), AuthPlugin: smysql.AuthCachingSHA2,
		})
		if err := c.WritePacketFlush(resp); err != nil {
			t.Fatal(err)
		}
		if p, err = c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), p...)
	}
	known, unknown := first("sha2"), first("nobody")
	if !bytes.Equal(known, unknown) {
		t.Fatalf("known user: % x, unknown user: % x", known, unknown)
	}
	if !bytes.Equal(known, []byte{smysql.AuthMoreDataHeader, smysql.CachingSHA2FullAuth}) {
		t.Fatalf("first answer % x, want full authentication", known)
	}
}

// TestReplicaGuardStays: a replica connection is read-only whenever a client statement runs on
// it, whatever the client sets, resets or batches.
func TestReplicaGuardStays(t *testing.T) {
	s := startSluice(t, nil)
	ctx := context.Background()
	// Endpoint rw: session state set on the primary is replayed on a replica, and the guard
	// comes back after it.
	for _, set := range []string{"SET SESSION TRANSACTION READ WRITE", "SET SESSION tx_read_only = 0", "SET @@session.tx_read_only = OFF"} {
		db := open(t, dsn(s.rw, "app", "app", "test", ""))
		db.SetMaxOpenConns(1)
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, set); err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		var primary, replica int
		if err := c.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT @@session.tx_read_only").Scan(&primary); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "/*FORCE_NODE='replica1'*/ SELECT @@session.tx_read_only").Scan(&replica); err != nil {
			t.Fatal(err)
		}
		if primary != 0 || replica != 1 {
			t.Errorf("after %s: tx_read_only %d on the primary, %d on the replica; want 0 and 1", set, primary, replica)
		}
		c.Close()
	}
	// Endpoint rw: SET SESSION TRANSACTION READ WRITE inside a read-only transaction runs on
	// the transaction's replica; the guard comes back right after it.
	{
		db := open(t, dsn(s.rw, "app", "app", "test", ""))
		c := conn(t, db)
		for _, q := range []string{"START TRANSACTION READ ONLY", "SET SESSION TRANSACTION READ WRITE"} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		node, role, _ := lastRoute(t, c)
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		if role != "replica" {
			t.Fatalf("the read-only transaction ran on %s (%s)", node, role)
		}
		var ro int
		if err := c.QueryRowContext(ctx, "/*FORCE_NODE='"+node+"'*/ SELECT @@session.tx_read_only").Scan(&ro); err != nil || ro != 1 {
			t.Errorf("tx_read_only on %s after SET SESSION TRANSACTION READ WRITE in its transaction: %d %v", node, ro, err)
		}
	}
	// Endpoint ro: turning the guard off is refused, alone or in a batch.
	ro := open(t, dsn(s.ro, "app", "app", "test", "multiStatements=true"))
	ro.SetMaxOpenConns(1)
	for _, q := range []string{
		"SET SESSION TRANSACTION READ WRITE",
		"SET TRANSACTION READ WRITE",
		"SET tx_read_only = 0",
		"START TRANSACTION READ WRITE",
		"SELECT 1; SET SESSION TRANSACTION READ WRITE; SELECT 2",
		"SELECT 1; INSERT INTO t_never (id) VALUES (1)",
		"SELECT 1; CREATE TABLE t_never (id INT)",
		"PREPARE s FROM 'SET SESSION TRANSACTION READ WRITE'",
		"PREPARE w FROM 'INSERT INTO t_never (id) VALUES (3)'",
		"PREPARE g FROM 'SET GLOBAL read_only = 0'",
		"PREPARE v FROM @q",
		"SET STATEMENT tx_read_only = 0 FOR SELECT 1",
	} {
		_, err := ro.ExecContext(ctx, q)
		if me := mysqlErr(t, err); me.Number != 1290 || !strings.Contains(me.Message, "sluice endpoint") {
			t.Errorf("%s on the read-only endpoint: %v", q, err)
		}
	}
	// COM_RESET_CONNECTION on the read-only endpoint resets the replica connection; the guard
	// is back before the next statement.
	via := rawConnect(t, s.ro, "app", "app")
	defer via.Close()
	if ps := command(t, via, []byte{smysql.ComResetConnection}, "single"); !smysql.IsOK(ps[0]) {
		t.Fatalf("reset: % x", ps[0])
	}
	if got := query(t, via, "SELECT @@session.tx_read_only"); got != "1" {
		t.Fatalf("tx_read_only after COM_RESET_CONNECTION on the read-only endpoint: %s", got)
	}
}

// TestOversizedStatement: a statement larger than the node's max_allowed_packet (48 MiB in the
// sandbox) gets the node's own error 1153, as directly, and hurts no other session; before, the
// client's connection was dropped without it.
func TestOversizedStatement(t *testing.T) {
	s := startSluice(t, primaryReads)
	c := testutil.Cluster(t)
	q := "SELECT LENGTH('" + strings.Repeat("x", 49<<20) + "')"
	// The server closes the connection after its ERR while the client may still be writing,
	// so even directly the client sometimes sees its write fail instead: of three tries, at
	// least one gets 1153, and none gets anything but 1153 or a broken connection.
	for _, addr := range []string{c.Primary().Address, s.rw} {
		got1153 := false
		for try := 0; try < 3; try++ {
			db := open(t, dsn(addr, "app", "app", "", "maxAllowedPacket=67108864"))
			var n int
			err := db.QueryRow(q).Scan(&n)
			var me *mysql.MySQLError
			var ne *net.OpError
			switch {
			case errors.As(err, &me) && me.Number == 1153:
				got1153 = true
			case errors.As(err, &ne), errors.Is(err, mysql.ErrInvalidConn):
				// A broken connection: the driver's write failed, or its read found the
				// connection closed after the ERR it had no time to read.
			default:
				t.Fatalf("%s: %v, want error 1153", addr, err)
			}
			db.Close()
		}
		if !got1153 {
			t.Fatalf("%s: no error 1153 in three tries", addr)
		}
	}
	other := open(t, dsn(s.rw, "app", "app", "", ""))
	var one int
	if err := other.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("another session after the oversized statement: %v", err)
	}
}

// TestLongStatementsRouted: statements longer than the read buffer (16 KiB) are classified and
// routed like short ones, and those too large to hold (over 1 MiB) are routed safely by their
// head: with transaction splitting, a long INSERT opens the deferred transaction (before, it
// was committed outside it, and sluice answered the ROLLBACK itself); a long SELECT with a
// trailing FOR UPDATE goes to the primary; a long INSERT on the read-only endpoint is refused.
func TestLongStatementsRouted(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			if c.Endpoints[i].Mode == "read-write" {
				c.Endpoints[i].TransactionSplit = true
			}
		}
	})
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c := conn(t, db)
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS t_long (id INT PRIMARY KEY, v LONGTEXT)")
	mustExec(t, db, "DELETE FROM t_long")
	long := func(size int) string { return strings.Repeat("x", size) }
	for _, size := range []int{20 << 10, 2 << 20} {
		insert := fmt.Sprintf("INSERT INTO t_long VALUES (%d, '%s')", size, long(size))
		for _, q := range []string{"BEGIN", "SELECT 1", insert, "ROLLBACK"} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%d bytes: %.40s: %v", size, q, err)
			}
		}
		var n int
		if err := c.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT COUNT(*) FROM t_long").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d-byte INSERT in a rolled-back split transaction: %d rows on the primary (%v)", size, n, err)
		}
	}
	// Reads: a 20 KiB SELECT is a read; with FOR UPDATE at its end it is a locking read; over
	// 1 MiB it goes to the primary (sluice cannot see its end).
	for _, tc := range []struct {
		q, role, reason string
	}{
		{"SELECT '" + long(20<<10) + "' IS NOT NULL", "replica", "read"},
		{"SELECT id FROM t_long WHERE v <> '" + long(20<<10) + "' FOR UPDATE", "primary", "locking read"},
		{"SELECT '" + long(2<<20) + "' IS NOT NULL", "primary", "unclassified"},
	} {
		var v any
		if err := c.QueryRowContext(ctx, tc.q).Scan(&v); err != nil && err != sql.ErrNoRows {
			t.Fatalf("%.40s: %v", tc.q, err)
		}
		if _, role, reason := lastRoute(t, c); role != tc.role || reason != tc.reason {
			t.Errorf("%d-byte %.30s…: %s (%s), want %s (%s)", len(tc.q), tc.q, role, reason, tc.role, tc.reason)
		}
	}
	// The read-only endpoint refuses long writes, held or not, and serves long reads it can
	// hold whole; one too long to hold it refuses (TestHugeStatementReadOnly).
	ro := open(t, dsn(s.ro, "app", "app", "test", "maxAllowedPacket=67108864"))
	for _, size := range []int{20 << 10, 2 << 20} {
		_, err := ro.ExecContext(ctx, fmt.Sprintf("INSERT INTO t_long VALUES (1, '%s')", long(size)))
		if me := mysqlErr(t, err); me.Number != 1290 {
			t.Errorf("%d-byte INSERT on the read-only endpoint: %v", size, err)
		}
		var n int
		err = ro.QueryRowContext(ctx, fmt.Sprintf("SELECT LENGTH('%s')", long(size))).Scan(&n)
		if size < 1<<20 && (err != nil || n != size) {
			t.Errorf("%d-byte SELECT on the read-only endpoint: %d, %v", size, n, err)
		}
		if size > 1<<20 && mysqlErr(t, err).Number != 1290 {
			t.Errorf("%d-byte SELECT on the read-only endpoint: %v", size, err)
		}
	}
}

// TestPreparedShapeDiffers: a replica whose table has another shape (an ALTER TABLE applied
// there first) does not run a statement prepared on the primary: the EXECUTE runs on the
// primary. Before, preparing on the replica skipped as many definitions as the primary had
// sent, and the extra column dropped the client.
func TestPreparedShapeDiffers(t *testing.T) {
	s := startSluice(t, nil)
	cl := testutil.Cluster(t)
	ctx := context.Background()
	admin, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, admin, "CREATE TABLE IF NOT EXISTS test.t_shape (id INT PRIMARY KEY, v INT)")
	mustExec(t, admin, "REPLACE INTO test.t_shape VALUES (1, 10)")
	t.Cleanup(func() { _, _ = admin.Exec("DROP TABLE IF EXISTS test.t_shape") })
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, r := range cl.Replicas() {
		rdb, err := cl.AdminDB(r.Name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rdb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"SET SESSION sql_log_bin = 0", "ALTER TABLE test.t_shape ADD COLUMN extra INT DEFAULT 7"} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s on %s: %v", q, r.Name, err)
			}
		}
		c.Close()
		rdb.Close()
	}
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c := conn(t, db)
	st, err := c.PrepareContext(ctx, "SELECT * FROM t_shape WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := 0; i < 4; i++ {
		var id, v int
		if err := st.QueryRowContext(ctx, 1).Scan(&id, &v); err != nil || id != 1 || v != 10 {
			t.Fatalf("execute %d: %d %d %v", i, id, v, err)
		}
		if _, role, reason := lastRoute(t, c); role != "primary" || reason != "fallback: no replica" {
			t.Fatalf("execute %d went to %s (%s)", i, role, reason)
		}
	}
}

// TestClientStallBounded: a client that stops in the middle of a command does not hold its
// session (and the session's node connection) for ever: after timeouts.write the session ends.
func TestClientStallBounded(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Timeouts.Write.Duration = time.Second })
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	query(t, via, "SELECT 1")
	// A COM_QUERY announced as 100 bytes, of which 10 arrive.
	nc := via.NetConn()
	if _, err := nc.Write([]byte{100, 0, 0, 0, smysql.ComQuery, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1', ' '}); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	start := time.Now()
	if _, err := io.ReadAll(nc); err != nil && os.IsTimeout(err) {
		t.Fatal("the session still holds the stalled command after 15 s")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the session ended after %s", d)
	}

	// Pipelined: a whole COM_PING and one byte of the next command's header, then nothing.
	piped := rawConnect(t, s.rw, "app", "app")
	defer piped.Close()
	pnc := piped.NetConn()
	if _, err := pnc.Write([]byte{1, 0, 0, 0, smysql.ComPing, 0x0e}); err != nil {
		t.Fatal(err)
	}
	_ = pnc.SetReadDeadline(time.Now().Add(15 * time.Second))
	start = time.Now()
	if _, err := io.ReadAll(pnc); err != nil && os.IsTimeout(err) {
		t.Fatal("the session still waits for the rest of a pipelined command after 15 s")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the session ended after %s", d)
	}

	// LOAD DATA LOCAL: the client stops after the first packet of its file.
	rc := dialRaw(t, s.rw, clientCaps, 0)
	rc.query(t, "CREATE TABLE IF NOT EXISTS test.t_stall (v VARCHAR(10))")
	rc.SetSeq(0)
	if err := rc.WritePacketFlush(append([]byte{smysql.ComQuery}, "LOAD DATA LOCAL INFILE 'x' INTO TABLE test.t_stall"...)); err != nil {
		t.Fatal(err)
	}
	p, err := rc.ReadPacket()
	if err != nil || len(p) == 0 || p[0] != 0xfb {
		t.Fatalf("no file request: % x %v", p, err)
	}
	if err := rc.WritePacketFlush([]byte("a\n")); err != nil {
		t.Fatal(err)
	}
	_ = rc.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	start = time.Now()
	if _, err := io.ReadAll(rc.nc); err != nil && os.IsTimeout(err) {
		t.Fatal("the session still waits for the rest of the file after 15 s")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the session ended after %s", d)
	}
}

// TestSessionBudget: limits.max_long_data bounds what a session keeps for all its prepared
// statements together, not per statement: long data for a second statement that takes the
// session past it makes that EXECUTE fail with 1153, and a PREPARE past it fails with 1041.
func TestSessionBudget(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Limits.MaxLongData = 1 << 20 })
	rc := dialRaw(t, s.rw, clientCaps|smysql.ClientDeprecateEOF, 0)
	ids := [2][]byte{rc.prepare(t, "SELECT LENGTH(?)"), rc.prepare(t, "SELECT LENGTH(?)")}
	chunk := make([]byte, 600<<10)
	for _, id := range ids {
		rc.SetSeq(0)
		p := append(append([]byte{smysql.ComStmtSendLongData}, id...), 0, 0)
		if err := rc.WritePacketFlush(append(p, chunk...)); err != nil {
			t.Fatal(err)
		}
	}
	// EXECUTE with one parameter bound as a blob (type 0xfc), its value sent as long data.
	execute := func(id []byte) []byte {
		return append(append([]byte{smysql.ComStmtExecute}, id...), 0, 1, 0, 0, 0, 0, 1, 0xfc, 0)
	}
	first := rc.command(t, "execute 1", execute(ids[0]))
	if smysql.IsERR(first[0]) {
		t.Fatalf("the first statement's long data (within the budget) was refused: %v", smysql.ParseERR(first[0]))
	}
	second := rc.command(t, "execute 2", execute(ids[1]))
	if !smysql.IsERR(second[0]) || smysql.ParseERR(second[0]).Code != 1153 {
		t.Fatalf("long data past the session's budget: % x", second[0][:min(len(second[0]), 40)])
	}
	// A PREPARE whose text does not fit what is left.
	big := "SELECT '" + strings.Repeat("x", 1100<<10) + "'"
	r := rc.command(t, "prepare", append([]byte{smysql.ComStmtPrepare}, big...))
	if !smysql.IsERR(r[0]) || smysql.ParseERR(r[0]).Code != smysql.ErrOutOfResources {
		t.Fatalf("a prepare past the session's budget: % x", r[0][:min(len(r[0]), 40)])
	}
	if got := rc.query(t, "SELECT 'still here'"); len(got) < 2 {
		t.Fatal("the session is not usable after the refusals")
	}
}
