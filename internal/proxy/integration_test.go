package proxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestQueryThroughSluice(t *testing.T) {
	s := startSluice(t, primaryReads)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	mustExec(t, db, "DROP TABLE IF EXISTS t_basic")
	mustExec(t, db, "CREATE TABLE t_basic (id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(20))")
	res, err := db.Exec("INSERT INTO t_basic (v) VALUES ('a'), ('b'), ('c')")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Errorf("rows affected %d, want 3", n)
	}
	if id, _ := res.LastInsertId(); id != 1 {
		t.Errorf("last insert id %d, want 1", id)
	}
	var count int
	if err := db.QueryRow("SELECT COUNT(*) FROM t_basic").Scan(&count); err != nil || count != 3 {
		t.Fatalf("count = %d, %v", count, err)
	}
	// Statements go to the primary: its server_id.
	var sid int
	if err := db.QueryRow("SELECT @@server_id").Scan(&sid); err != nil {
		t.Fatal(err)
	}
	direct := open(t, testutil.Cluster(t).DSN("primary", "app", "app", "test"))
	var psid int
	if err := direct.QueryRow("SELECT @@server_id").Scan(&psid); err != nil {
		t.Fatal(err)
	}
	if sid != psid {
		t.Errorf("server_id through sluice %d, primary's %d", sid, psid)
	}
}

func mustExec(t testing.TB, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestServerErrorsVerbatim(t *testing.T) {
	s := startSluice(t, nil)
	c := testutil.Cluster(t)
	via := open(t, dsn(s.rw, "app", "app", "test", ""))
	direct := open(t, c.DSN("primary", "app", "app", "test"))
	for _, q := range []string{
		"SELECT * FROM no_such_table",
		"SELEC 1",
		"SELECT no_such_column FROM mysql.user",
		"SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'custom failure', MYSQL_ERRNO = 1644",
	} {
		_, e1 := via.Exec(q)
		_, e2 := direct.Exec(q)
		m1, m2 := mysqlErr(t, e1), mysqlErr(t, e2)
		if m1.Number != m2.Number || m1.SQLState != m2.SQLState || m1.Message != m2.Message {
			t.Errorf("%s: through sluice %d %s %q, direct %d %s %q", q, m1.Number, m1.SQLState, m1.Message, m2.Number, m2.SQLState, m2.Message)
		}
	}
	// The session survives its errors.
	var one int
	if err := via.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

func TestAuthentication(t *testing.T) {
	hash := smysql.NativeHash("hashpw")
	s := startSluice(t, func(c *config.Config) {
		c.Users = append(c.Users,
			config.User{Name: "hashed", PasswordHash: fmt.Sprintf("*%X", hash)},
			config.User{Name: "sha2", Password: "sha2pw", AuthPlugin: smysql.AuthCachingSHA2},
			config.User{Name: "ghost", Password: "ghostpw"},
		)
	})
	c := testutil.Cluster(t)
	admin, err := c.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS 'hashed'@'127.0.0.1' IDENTIFIED BY 'hashpw'",
		"GRANT SELECT ON *.* TO 'hashed'@'127.0.0.1'",
		"CREATE USER IF NOT EXISTS 'sha2'@'127.0.0.1' IDENTIFIED BY 'sha2pw'",
		"GRANT SELECT ON *.* TO 'sha2'@'127.0.0.1'",
	} {
		mustExec(t, admin, q)
	}
	connections := func() int {
		var name string
		var n int
		if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE 'Connections'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ping := func(user, pw string) error {
		db, err := sql.Open("mysql", dsn(s.rw, user, pw, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var u string
		err = db.QueryRow("SELECT CURRENT_USER()").Scan(&u)
		if err == nil && !strings.HasPrefix(u, user+"@") {
			t.Errorf("logged in to the node as %q, want %s", u, user)
		}
		return err
	}

	t.Run("wrong password", func(t *testing.T) {
		before := connections()
		err := ping("app", "wrong")
		me := mysqlErr(t, err)
		if me.Number != 1045 || string(me.SQLState[:]) != "28000" || me.Message != "Access denied for user 'app'@'127.0.0.1' (using password: YES)" {
			t.Errorf("got %d %s %q", me.Number, me.SQLState, me.Message)
		}
		me = mysqlErr(t, ping("app", ""))
		if me.Message != "Access denied for user 'app'@'127.0.0.1' (using password: NO)" {
			t.Errorf("empty password: %q", me.Message)
		}
		me = mysqlErr(t, ping("nobody", "x"))
		if me.Number != 1045 || !strings.Contains(me.Message, "'nobody'@") {
			t.Errorf("unknown user: %d %q", me.Number, me.Message)
		}
		// The adminDB pool may have opened one connection of its own for the status query.
		if after := connections(); after-before > 1 {
			t.Errorf("failed logins opened %d connections to the primary", after-before-1)
		}
	})
	t.Run("user configured by hash", func(t *testing.T) {
		if err := ping("hashed", "hashpw"); err != nil {
			t.Fatal(err)
		}
		if me := mysqlErr(t, ping("hashed", "nope")); me.Number != 1045 {
			t.Fatal(me)
		}
	})
	t.Run("caching_sha2_password", func(t *testing.T) {
		// First login: full authentication with the RSA key exchange; then the fast path.
		for i := 0; i < 3; i++ {
			if err := ping("sha2", "sha2pw"); err != nil {
				t.Fatalf("login %d: %v", i, err)
			}
		}
		if me := mysqlErr(t, ping("sha2", "bad")); me.Number != 1045 {
			t.Fatal(me)
		}
		if err := ping("sha2", "sha2pw"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("node refuses a configured user", func(t *testing.T) {
		// "ghost" is in sluice's config but not on the node: the node's own error reaches the client.
		me := mysqlErr(t, ping("ghost", "ghostpw"))
		if me.Number != 1045 {
			t.Fatalf("got %d %q", me.Number, me.Message)
		}
	})
}

func TestHandshakeOptions(t *testing.T) {
	s := startSluice(t, nil)
	t.Run("database", func(t *testing.T) {
		db := open(t, dsn(s.rw, "app", "app", "mysql", ""))
		var cur string
		if err := db.QueryRow("SELECT DATABASE()").Scan(&cur); err != nil || cur != "mysql" {
			t.Fatalf("DATABASE() = %q, %v", cur, err)
		}
		bad := open(t, dsn(s.rw, "app", "app", "no_such_db", ""))
		me := mysqlErr(t, bad.Ping())
		if me.Number != 1049 {
			t.Fatalf("unknown database: %d %q", me.Number, me.Message)
		}
	})
	t.Run("collation", func(t *testing.T) {
		db := open(t, dsn(s.rw, "app", "app", "", "collation=latin1_swedish_ci"))
		var cs string
		if err := db.QueryRow("SELECT @@collation_connection").Scan(&cs); err != nil || cs != "latin1_swedish_ci" {
			t.Fatalf("collation_connection = %q, %v", cs, err)
		}
	})
	t.Run("found rows", func(t *testing.T) {
		for _, tc := range []struct {
			params string
			want   int64
		}{{"", 0}, {"clientFoundRows=true", 1}} {
			db := open(t, dsn(s.rw, "app", "app", "test", tc.params))
			db.SetMaxOpenConns(1)
			mustExec(t, db, "CREATE TABLE IF NOT EXISTS t_found (id INT PRIMARY KEY, v INT)")
			mustExec(t, db, "REPLACE INTO t_found VALUES (1, 1)")
			res, err := db.Exec("UPDATE t_found SET v = 1 WHERE id = 1")
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != tc.want {
				t.Errorf("%q: rows affected %d, want %d", tc.params, n, tc.want)
			}
		}
	})
	t.Run("connection attributes", func(t *testing.T) {
		db := open(t, dsn(s.rw, "app", "app", "", "connectionAttributes=sluice_test:yes"))
		var v string
		err := db.QueryRow("SELECT ATTR_VALUE FROM performance_schema.session_connect_attrs WHERE PROCESSLIST_ID = CONNECTION_ID() AND ATTR_NAME = 'sluice_test'").Scan(&v)
		if err != nil || v != "yes" {
			t.Fatalf("attribute = %q, %v", v, err)
		}
	})
	t.Run("connection ids", func(t *testing.T) {
		db := open(t, dsn(s.rw, "app", "app", "", ""))
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var a, b int64
		if err := conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&b); err != nil {
			t.Fatal(err)
		}
		if a != b || a == 0 {
			t.Fatalf("CONNECTION_ID() %d then %d", a, b)
		}
	})
}

func TestMultiStatementsAndResults(t *testing.T) {
	s := startSluice(t, nil)
	db := open(t, dsn(s.rw, "app", "app", "test", "multiStatements=true"))
	db.SetMaxOpenConns(1)
	mustExec(t, db, "DROP TABLE IF EXISTS t_multi; CREATE TABLE t_multi (id INT); INSERT INTO t_multi VALUES (1),(2)")
	rows, err := db.Query("SELECT id FROM t_multi ORDER BY id; SELECT 'x', 'y'; SELECT COUNT(*) FROM t_multi")
	if err != nil {
		t.Fatal(err)
	}
	var sets [][]string
	for {
		cols, _ := rows.Columns()
		var set []string
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, v := range vals {
				parts = append(parts, string(v))
			}
			set = append(set, strings.Join(parts, ","))
		}
		sets = append(sets, set)
		if !rows.NextResultSet() {
			break
		}
	}
	rows.Close()
	want := "[[1 2] [x,y] [2]]"
	if got := fmt.Sprint(sets); got != want {
		t.Fatalf("result sets %s, want %s", got, want)
	}
	// A stored procedure returning two result sets and an OK.
	mustExec(t, db, "DROP PROCEDURE IF EXISTS p_multi")
	mustExec(t, db, "CREATE PROCEDURE p_multi() BEGIN SELECT 1 AS a; SELECT 2 AS b, 3 AS c; END")
	rows, err = db.Query("CALL p_multi()")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		for rows.Next() {
		}
		n++
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if n != 2 {
		t.Fatalf("CALL returned %d result sets, want 2", n)
	}
	// An error in the middle of a batch ends it with that error.
	_, err = db.Exec("SELECT 1; SELECT * FROM no_such_table; SELECT 3")
	if me := mysqlErr(t, err); me.Number != 1146 {
		t.Fatal(me)
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

func TestUnsupportedCommandKeepsSession(t *testing.T) {
	s := startSluice(t, nil)
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id1, id2 int64
	ctx := context.Background()
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id1); err != nil {
		t.Fatal(err)
	}
	// COM_PROCESS_INFO is not handled: 1047, and the connection stays usable.
	rc := rawConnect(t, s.rw, "app", "app")
	defer rc.Close()
	rc.SetSeq(0)
	if err := rc.WritePacketFlush([]byte{smysql.ComProcessInfo}); err != nil {
		t.Fatal(err)
	}
	p, err := rc.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if !smysql.IsERR(p) {
		t.Fatalf("want ERR, got %x", p)
	}
	if e := smysql.ParseERR(p); e.Code != 1047 || e.State != "08S01" {
		t.Fatalf("got %v", e)
	}
	if err := rc.Exec("SELECT 1"); err != nil {
		t.Fatalf("session unusable after an unknown command: %v", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id2); err != nil || id1 != id2 {
		t.Fatalf("CONNECTION_ID %d then %d, %v", id1, id2, err)
	}
}

// TestLargeResultStreams checks that a 100 000-row result flows through without the proxy
// holding it: the heap stays bounded while the client reads slowly.
func TestLargeResultStreams(t *testing.T) {
	s := startSluice(t, nil)
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rows, err := db.Query("SELECT seq, REPEAT('x', 1000) FROM seq_1_to_100000")
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	n := 0
	for rows.Next() {
		var id int
		var pad sql.RawBytes
		if err := rows.Scan(&id, &pad); err != nil {
			t.Fatal(err)
		}
		n++
		if n%5000 == 0 {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			time.Sleep(2 * time.Millisecond)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 100000 {
		t.Fatalf("%d rows, want 100000", n)
	}
	// 100 MB went through; proxy and client together may hold a few buffers of it.
	if grow := int64(peak) - int64(before.HeapInuse); grow > 32<<20 {
		t.Fatalf("heap grew by %d MiB while streaming", grow>>20)
	}
}

// TestNodeConnectionKilled: when the node's connection dies mid-statement the client gets an
// error at once and its connection is closed, so the driver opens a new one.
func TestNodeConnectionKilled(t *testing.T) {
	s := startSluice(t, nil)
	c := testutil.Cluster(t)
	admin, err := c.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	db.SetMaxOpenConns(1)
	var backendID int64
	// The primary's thread: in an expression, CONNECTION_ID() is the node's (alone, sluice's).
	if err := db.QueryRow("SELECT CONNECTION_ID() + 0").Scan(&backendID); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		var x int
		errc <- db.QueryRow("/*FORCE_MASTER*/ SELECT SLEEP(30)").Scan(&x)
	}()
	time.Sleep(300 * time.Millisecond)
	mustExec(t, admin, fmt.Sprintf("KILL CONNECTION %d", backendID))
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("query succeeded though its node connection was killed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client hangs after its node connection was killed")
	}
	// The pool recovers with a new connection.
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
}

// TestIdleNodeDisconnect: a node that closes an idle session (wait_timeout) closes the client's
// connection too, so the driver's pool discards it instead of failing the next query.
func TestIdleNodeDisconnect(t *testing.T) {
	s := startSluice(t, nil)
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	mustExec(t, db, "SET SESSION wait_timeout = 2")
	time.Sleep(3500 * time.Millisecond)
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("query after the node closed the idle connection: %v", err)
	}
}

func TestMaxConnections(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Endpoints[0].MaxConnections = 2 })
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	for i := 0; i < 2; i++ {
		cn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer cn.Close()
	}
	_, err := db.Conn(context.Background())
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1040 {
		t.Fatalf("third connection: %v", err)
	}
}

func TestConcurrentSessions(t *testing.T) {
	s := startSluice(t, nil)
	db := open(t, dsn(s.rw, "app", "app", "test", "interpolateParams=true"))
	db.SetMaxOpenConns(16)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				var v int
				if err := db.QueryRow("SELECT ?+0", g*1000+i).Scan(&v); err != nil {
					errs <- err
					return
				}
				if v != g*1000+i {
					errs <- fmt.Errorf("got %d want %d", v, g*1000+i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// rawConnect logs in to addr with sluice's own client side, for tests that send commands no
// driver sends.
func rawConnect(t testing.TB, addr, user, password string) *backend.Conn {
	t.Helper()
	bc, err := backend.Dial(context.Background(), backend.Options{
		Address:     addr,
		Credentials: backend.Credentials{User: user, Password: password, HasPassword: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bc
}

// TestMariaDBClient runs the mariadb command-line client through sluice and directly and
// compares what a person sees.
func TestMariaDBClient(t *testing.T) {
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("mariadb client not installed (CI=true: a failure, not a skip)")
		}
		t.Skip("mariadb client not installed")
	}
	s := startSluice(t, primaryReads)
	c := testutil.Cluster(t)
	run := func(addr, stdin string, args ...string) (string, string, int) {
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, append([]string{"--no-defaults", "-h" + host, "-P" + port, "-uapp", "-papp"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	primary := c.Primary().Address
	direct := open(t, c.DSN("primary", "app", "app", ""))
	script := "USE test;\nSELECT DATABASE();\nDROP TABLE t_cli;\nCREATE TABLE t_cli (id INT PRIMARY KEY, v VARCHAR(10));\nREPLACE INTO t_cli VALUES (1,'a'),(2,'b');\nUPDATE t_cli SET v='c' WHERE id > 0;\nSELECT * FROM t_cli ORDER BY id;\nSHOW WARNINGS;\n"
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"script", script, []string{"-vvv", "--table"}},
		{"error", "", []string{"-e", "SELECT * FROM test.no_such_table"}},
		{"syntax error", "", []string{"-e", "SELEC 1"}},
		{"batch", "", []string{"-B", "-e", "SELECT 1 AS a, NULL AS b, 'x\\ty' AS c; SELECT @@version_comment"}},
	} {
		mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.t_cli (id INT)")
		o1, e1, c1 := run(s.rw, tc.stdin, tc.args...)
		mustExec(t, direct, "CREATE TABLE IF NOT EXISTS test.t_cli (id INT)")
		o2, e2, c2 := run(primary, tc.stdin, tc.args...)
		// Timings differ run to run.
		timing := regexp.MustCompile(`\(\d+\.\d+ sec\)`)
		o1, o2 = timing.ReplaceAllString(o1, ""), timing.ReplaceAllString(o2, "")
		if o1 != o2 || e1 != e2 || c1 != c2 {
			t.Errorf("%s: through sluice exit %d:\n%s%s\ndirect exit %d:\n%s%s", tc.name, c1, o1, e1, c2, o2, e2)
		}
	}
	// \s shows the primary's version through sluice.
	o, e, code := run(s.rw, "", "-e", "status")
	if code != 0 {
		t.Fatalf("status: %s", e)
	}
	var version string
	if err := direct.QueryRow("SELECT @@version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(o, version) || !strings.Contains(o, "via TCP/IP") {
		t.Errorf("status through sluice does not show the server version %q:\n%s", version, o)
	}
}

// TestIdleTimeout: timeouts.idle closes a client connection that sent nothing for that long.
func TestIdleTimeout(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Timeouts.Idle.Duration = 1500 * time.Millisecond })
	rc := rawConnect(t, s.rw, "app", "app")
	defer rc.Close()
	if err := rc.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	rc.SetSeq(0)
	_ = rc.WritePacketFlush(append([]byte{smysql.ComQuery}, "SELECT 1"...))
	if _, err := rc.ReadPacket(); err == nil {
		t.Fatal("idle connection still open after timeouts.idle")
	}
	// A busy connection is not cut.
	rc2 := rawConnect(t, s.rw, "app", "app")
	defer rc2.Close()
	for i := 0; i < 5; i++ {
		time.Sleep(500 * time.Millisecond)
		if err := rc2.Exec("SELECT 1"); err != nil {
			t.Fatalf("active connection closed: %v", err)
		}
	}
}

// TestReadTimeout: a node that does not answer within timeouts.read ends the session, for text
// queries and for prepared statements alike.
func TestReadTimeout(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		primaryReads(c)
		c.Timeouts.Read.Duration = time.Second
	})
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, c *sql.Conn) error
	}{
		{"text", func(ctx context.Context, c *sql.Conn) error {
			var v int
			return c.QueryRowContext(ctx, "SELECT SLEEP(4)").Scan(&v)
		}},
		{"prepared", func(ctx context.Context, c *sql.Conn) error {
			st, err := c.PrepareContext(ctx, "SELECT SLEEP(?)")
			if err != nil {
				return err
			}
			defer st.Close()
			var v int
			return st.QueryRowContext(ctx, 4).Scan(&v)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			err = tc.run(ctx, c)
			if err == nil {
				t.Fatal("a statement slower than timeouts.read succeeded")
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("the statement failed after %s, want about timeouts.read (1s): %v", d, err)
			}
			// The pool gets a fresh session that works.
			var one int
			if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Fatalf("after the timeout: %v", err)
			}
		})
	}
}
