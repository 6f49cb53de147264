package binlog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestMain(m *testing.M) {
	// One replica is enough; TLS so a stream can be tested over it.
	os.Exit(testutil.Main(m, sandbox.Options{Replicas: 1, TLS: true}))
}

// follower is one Run against a node of the cluster, its reports on channels.
type follower struct {
	positions chan posAt
	states    chan stateCall
	stop      func() time.Duration
}

type posAt struct {
	pos string
	at  time.Time
}

// follow streams node name as user until the test ends.
func follow(t *testing.T, c *sandbox.Cluster, name, user, password string, edit func(*Options)) *follower {
	t.Helper()
	n, err := c.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Address: n.Address, User: user, Password: password, Flavor: flavorOf(c), Logger: testLogger(t)}
	if edit != nil {
		edit(&o)
	}
	f := &follower{positions: make(chan posAt, 4096), states: make(chan stateCall, 64)}
	f.stop = runFor(t, o,
		func(pos string) {
			select {
			case f.positions <- posAt{pos, time.Now()}:
			default:
				t.Errorf("%s: position dropped: the test did not read them", name)
			}
		},
		func(streaming bool, err error) {
			select {
			case f.states <- stateCall{time.Now(), streaming, err}:
			default:
			}
		})
	return f
}

func flavorOf(c *sandbox.Cluster) gtid.Flavor {
	if c.Flavor == "mysql" {
		return gtid.MySQL
	}
	return gtid.MariaDB
}

func testLogger(t *testing.T) *slog.Logger {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("test", t.Name())
}

// streaming waits for the stream to report that it works, failing on a failure report.
func (f *follower) streaming(t *testing.T) {
	t.Helper()
	select {
	case s := <-f.states:
		if !s.streaming {
			t.Fatalf("stream failed: %v", s.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not start within 10 s")
	}
}

// reach waits until the stream reports want, and returns when that report arrived.
func (f *follower) reach(t *testing.T, want string, within time.Duration) time.Time {
	t.Helper()
	timeout := time.After(within)
	var last string
	for {
		select {
		case p := <-f.positions:
			last = p.pos
			if p.pos == want {
				return p.at
			}
		case <-timeout:
			t.Fatalf("position %q not reported within %s (last reported: %q)", want, within, last)
		}
	}
}

// quiet fails if the stream reports a position that contains want within d.
func (f *follower) quiet(t *testing.T, fl gtid.Flavor, want string, d time.Duration) {
	t.Helper()
	w, err := gtid.Parse(fl, want)
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.After(d)
	for {
		select {
		case p := <-f.positions:
			if got, err := gtid.Parse(fl, p.pos); err == nil && got.Contains(w) {
				t.Fatalf("reported %q before it was applied", p.pos)
			}
		case <-timeout:
			return
		}
	}
}

func adminDB(t *testing.T, c *sandbox.Cluster, name string) *sql.DB {
	t.Helper()
	db, err := c.AdminDB(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func positionOf(t *testing.T, db *sql.DB, fl gtid.Flavor) string {
	t.Helper()
	q := "SELECT @@global.gtid_binlog_pos"
	if fl == gtid.MySQL {
		q = "SELECT @@global.gtid_executed"
	}
	var pos string
	if err := db.QueryRow(q).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

func mustExec(t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func tlsConfig(t *testing.T, c *sandbox.Cluster) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(c.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in ", c.CertFile)
	}
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// TestStreamReportsWrites: the sandbox's monitor account streams the primary and a replica (the
// replica over TLS); each write on the primary is reported by the primary's stream at once with
// the position @@gtid_binlog_pos shows there, and by the replica's once the replica applied it.
func TestStreamReportsWrites(t *testing.T) {
	c := testutil.Cluster(t)
	fl := flavorOf(c)
	primary := adminDB(t, c, "primary")
	replica := adminDB(t, c, "replica1")
	mustExec(t, primary, "CREATE DATABASE IF NOT EXISTS binlogtest",
		"CREATE TABLE IF NOT EXISTS binlogtest.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	if err := c.WaitCaughtUp(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}

	ps := follow(t, c, "primary", sandbox.MonitorUser, sandbox.MonitorPassword, nil)
	rs := follow(t, c, "replica1", sandbox.MonitorUser, sandbox.MonitorPassword, func(o *Options) { o.TLS = tlsConfig(t, c) })
	ps.streaming(t)
	rs.streaming(t)
	// Each stream first reports the position it started from: the node's.
	now := positionOf(t, primary, fl)
	ps.reach(t, now, time.Second)
	rs.reach(t, now, time.Second)

	var fromPrimary, fromReplica []time.Duration
	for i := range 10 {
		mustExec(t, primary, fmt.Sprintf("INSERT INTO binlogtest.t (v) VALUES (%d)", i))
		ok := time.Now()
		want := positionOf(t, primary, fl)
		fromPrimary = append(fromPrimary, ps.reach(t, want, time.Second).Sub(ok))
		fromReplica = append(fromReplica, rs.reach(t, want, 5*time.Second).Sub(ok))
		if got := positionOf(t, replica, fl); got != want {
			t.Errorf("the replica's stream reported %q; the replica's own position is %q", want, got)
		}
	}
	t.Logf("from the INSERT's OK to its GTID on the primary's stream: %s", summary(fromPrimary))
	t.Logf("from the INSERT's OK to its GTID on the replica's stream: %s", summary(fromReplica))

	t.Run("NotBeforeApplied", func(t *testing.T) {
		if err := c.Pause(context.Background(), "replica1"); err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				_ = c.Resume(context.Background(), "replica1")
			}
		}()
		mustExec(t, primary, "INSERT INTO binlogtest.t (v) VALUES (100)")
		want := positionOf(t, primary, fl)
		ps.reach(t, want, time.Second)
		rs.quiet(t, fl, want, 500*time.Millisecond) // received by the IO thread, not applied
		if err := c.Resume(context.Background(), "replica1"); err != nil {
			t.Fatal(err)
		}
		resumed = true
		rs.reach(t, want, 5*time.Second)
	})
}

// TestStreamDomains: several replication domains, printed as the node prints them.
func TestStreamDomains(t *testing.T) {
	c := testutil.Cluster(t)
	fl := flavorOf(c)
	if fl != gtid.MariaDB {
		t.Skip("replication domains are MariaDB's")
	}
	primary := adminDB(t, c, "primary")
	replica := adminDB(t, c, "replica1")
	mustExec(t, primary, "CREATE DATABASE IF NOT EXISTS binlogtest",
		"CREATE TABLE IF NOT EXISTS binlogtest.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	ps := follow(t, c, "primary", sandbox.MonitorUser, sandbox.MonitorPassword, nil)
	rs := follow(t, c, "replica1", sandbox.MonitorUser, sandbox.MonitorPassword, nil)
	ps.streaming(t)
	rs.streaming(t)

	conn, err := primary.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Domains 10 and 2: numeric order and text order differ.
	for _, d := range []int{10, 2, 0, 10} {
		mustExec(t, conn, fmt.Sprintf("SET SESSION gtid_domain_id = %d", d), "INSERT INTO binlogtest.t (v) VALUES (1)")
		want := positionOf(t, primary, fl)
		ps.reach(t, want, time.Second)
		rs.reach(t, want, 5*time.Second)
		if got := positionOf(t, replica, fl); got != want {
			t.Errorf("replica position %q, primary %q", got, want)
		}
	}
	mustExec(t, conn, "SET SESSION gtid_domain_id = 0")
}

// TestStreamStopsPromptly: ending the context stops Run at once, leaves no goroutine behind,
// and the node's dump thread goes away.
func TestStreamStopsPromptly(t *testing.T) {
	c := testutil.Cluster(t)
	admin := adminDB(t, c, "primary")
	if err := admin.Ping(); err != nil {
		t.Fatal(err)
	}
	dumps := func() int {
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND LIKE 'Binlog Dump%'", sandbox.MonitorUser).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	dumpsBefore := dumps()
	before := runtime.NumGoroutine()
	for range 3 {
		f := follow(t, c, "primary", sandbox.MonitorUser, sandbox.MonitorPassword, nil)
		f.streaming(t)
		if took := f.stop(); took > 300*time.Millisecond {
			t.Errorf("Run took %s to return after its context ended", took)
		} else {
			t.Logf("Run returned %s after its context ended", took)
		}
	}
	settled(t, before)
	deadline := time.Now().Add(5 * time.Second)
	for dumps() > dumpsBefore {
		if time.Now().After(deadline) {
			t.Fatalf("%d binlog dump threads left on the primary (%d before)", dumps(), dumpsBefore)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStreamNeedsGrant: an account without REPLICATION SLAVE logs in but cannot stream; the
// failure says so, and is retried slowly. The failed attempt's connections say goodbye: the
// node counts no aborted client for them.
func TestStreamNeedsGrant(t *testing.T) {
	c := testutil.Cluster(t)
	primary := adminDB(t, c, "primary")
	pn, err := c.Node("primary")
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, primary, "CREATE USER IF NOT EXISTS 'binlog_nogrant'@'127.0.0.1' IDENTIFIED BY 'pw'",
		"GRANT PROCESS ON *.* TO 'binlog_nogrant'@'127.0.0.1'")
	t.Cleanup(func() {
		if _, err := primary.Exec("DROP USER IF EXISTS 'binlog_nogrant'@'127.0.0.1'"); err != nil {
			t.Error(err)
		}
	})
	a0, w0 := abortedOn(t, primary, pn)
	f := follow(t, c, "primary", "binlog_nogrant", "pw", nil)
	var first stateCall
	select {
	case first = <-f.states:
	case <-time.After(10 * time.Second):
		t.Fatal("no state reported within 10 s")
	}
	if first.streaming || !errors.Is(first.err, ErrNoReplicationGrant) {
		t.Fatalf("state %v %v, want the missing grant", first.streaming, first.err)
	}
	if !strings.Contains(first.err.Error(), "the monitor account needs REPLICATION SLAVE to stream the binlog") {
		t.Errorf("unclear message: %v", first.err)
	}
	t.Logf("reported: %v", first.err)
	select {
	case s := <-f.states:
		t.Fatalf("retried after %s (%v), want 30 s", s.at.Sub(first.at).Round(time.Millisecond), s.err)
	case <-time.After(2 * time.Second):
	}
	if took := f.stop(); took > 300*time.Millisecond {
		t.Errorf("Run took %s to return while waiting to retry", took)
	}
	if a1, w1 := abortedOn(t, primary, pn); a1 != a0 || len(w1) != len(w0) {
		t.Errorf("a refused stream: Aborted_clients rose by %d, the error log gained %d warnings:\n%s",
			a1-a0, len(w1)-len(w0), strings.Join(w1[len(w0):], "\n"))
	}
}

// TestStreamDuplicateServerID: two streams registered with one server id: the node drops the
// first (ERROR 4052), which registers again with another id; both then report writes.
func TestStreamDuplicateServerID(t *testing.T) {
	c := testutil.Cluster(t)
	fl := flavorOf(c)
	primary := adminDB(t, c, "primary")
	mustExec(t, primary, "CREATE DATABASE IF NOT EXISTS binlogtest",
		"CREATE TABLE IF NOT EXISTS binlogtest.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	const id = 0x51ab_cdef
	same := func(o *Options) { o.ServerID = id }
	a := follow(t, c, "primary", sandbox.MonitorUser, sandbox.MonitorPassword, same)
	a.streaming(t)
	b := follow(t, c, "primary", sandbox.MonitorUser, sandbox.MonitorPassword, same)
	b.streaming(t)
	select {
	case s := <-a.states:
		if s.streaming || !errors.Is(s.err, errServerIDTaken) {
			t.Fatalf("first stream: %v %v, want the server id taken", s.streaming, s.err)
		}
		t.Logf("reported: %v", s.err)
	case <-time.After(5 * time.Second):
		t.Fatal("the first stream was not told its id was taken")
	}
	a.streaming(t)
	mustExec(t, primary, "INSERT INTO binlogtest.t (v) VALUES (4052)")
	want := positionOf(t, primary, fl)
	a.reach(t, want, time.Second)
	b.reach(t, want, time.Second)
	select {
	case s := <-b.states:
		t.Errorf("second stream: %v %v", s.streaming, s.err)
	case s := <-a.states:
		t.Errorf("first stream again: %v %v", s.streaming, s.err)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestStreamReconnects: a node restart breaks the stream; it comes back by itself, from the
// node's position then.
func TestStreamReconnects(t *testing.T) {
	c := testutil.Cluster(t)
	fl := flavorOf(c)
	f := follow(t, c, "replica1", sandbox.MonitorUser, sandbox.MonitorPassword, nil)
	f.streaming(t)
	if err := c.Stop(context.Background(), "replica1"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-f.states:
		if s.streaming {
			t.Fatal("streaming reported while the node is down")
		}
		t.Logf("reported: %v", s.err)
	case <-time.After(5 * time.Second):
		t.Fatal("the stream's failure was not reported within 5 s")
	}
	primary := adminDB(t, c, "primary")
	mustExec(t, primary, "CREATE DATABASE IF NOT EXISTS binlogtest",
		"CREATE TABLE IF NOT EXISTS binlogtest.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"INSERT INTO binlogtest.t (v) VALUES (2)")
	want := positionOf(t, primary, fl)
	if err := c.Start(context.Background(), "replica1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for started := false; !started; {
		select {
		case s := <-f.states:
			started = s.streaming
		case <-deadline:
			t.Fatal("the stream did not come back within 30 s of the node's restart")
		}
	}
	f.reach(t, want, 10*time.Second)
}

// summary prints durations as min / median / max and all of them.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.2f", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("min %s, median %s, max %s (ms: %s)", s[0], s[len(s)/2], s[len(s)-1], strings.Join(parts, " "))
}

// abortedOn is node n's Aborted_clients (asked over admin) and the "Aborted connection"
// warnings of its error log.
func abortedOn(t *testing.T, admin *sql.DB, n *sandbox.Node) (aborted int, warnings []string) {
	t.Helper()
	var name string
	if err := admin.QueryRow("SHOW GLOBAL STATUS LIKE 'Aborted_clients'").Scan(&name, &aborted); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(n.Dir, "error.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "Aborted connection") {
			warnings = append(warnings, l)
		}
	}
	return aborted, warnings
}

// TestStreamEndsCleanly: a stream that stops (its context ends: sluice stops, or the node is
// removed) leaves nothing the node counts as an aborted client: Aborted_clients and the
// "Aborted connection" warnings of its error log do not rise over three streams started and
// stopped (the position read's connection says goodbye; the dump is ended by KILL QUERY from a
// connection that says goodbye, and the node closes it). Before, 4 for the three: the position
// reads' connections closed without COM_QUIT ("error reading"), and a dump closed under it,
// counted at the node's next heartbeat ("error writing").
func TestStreamEndsCleanly(t *testing.T) {
	c := testutil.Cluster(t)
	admin := adminDB(t, c, "primary")
	n, err := c.Node("primary")
	if err != nil {
		t.Fatal(err)
	}
	dumps := func() int {
		var n int
		if err := admin.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND LIKE 'Binlog Dump%'", sandbox.MonitorUser).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	counts := func() (int, []string) { return abortedOn(t, admin, n) }
	dumpsBefore := dumps()
	a0, w0 := counts()
	for range 3 {
		f := follow(t, c, "primary", sandbox.MonitorUser, sandbox.MonitorPassword, nil)
		f.streaming(t)
		if took := f.stop(); took > 300*time.Millisecond {
			t.Errorf("Run took %s to return after its context ended", took)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for dumps() > dumpsBefore {
		if time.Now().After(deadline) {
			t.Fatalf("%d binlog dump threads left on the primary (%d before)", dumps(), dumpsBefore)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A dump closed under it would be counted at the node's next heartbeat (1 s).
	time.Sleep(1500 * time.Millisecond)
	a1, w1 := counts()
	if a1 != a0 || len(w1) != len(w0) {
		t.Errorf("three streams started and stopped: Aborted_clients rose by %d, the error log gained %d warnings:\n%s",
			a1-a0, len(w1)-len(w0), strings.Join(w1[len(w0):], "\n"))
	}
}
