package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// abortedCounts is what each node says of connections that ended without a goodbye: its
// Aborted_clients, and the "Aborted connection" warnings in its error log (MariaDB logs one
// per such connection at log_warnings >= 2, its default).
type abortedCounts map[string][2]int

// nodeAborted reads the counts of every node of the test cluster, once they have held still
// for a moment: a server counts a connection when its thread ends, a little after the client
// closed it.
func nodeAborted(t *testing.T) abortedCounts {
	t.Helper()
	c := testutil.Cluster(t)
	read := func() abortedCounts {
		out := abortedCounts{}
		for _, n := range c.Nodes {
			db, err := c.AdminDB(n.Name)
			if err != nil {
				t.Fatal(err)
			}
			var name string
			var v int
			if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Aborted_clients'").Scan(&name, &v); err != nil {
				t.Fatalf("%s: %v", n.Name, err)
			}
			log, err := os.ReadFile(filepath.Join(n.Dir, "error.log"))
			if err != nil {
				t.Fatal(err)
			}
			out[n.Name] = [2]int{v, bytes.Count(log, []byte("Aborted connection"))}
		}
		return out
	}
	last := read()
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		now := read()
		if fmt.Sprint(now) == fmt.Sprint(last) {
			return now
		}
		last = now
	}
	return last
}

// rise is what the nodes counted between before and after, by node.
func rise(before, after abortedCounts) abortedCounts {
	out := abortedCounts{}
	for n, a := range after {
		b := before[n]
		out[n] = [2]int{a[0] - b[0], a[1] - b[1]}
	}
	return out
}

// shortSessions runs n client sessions on dsn one after the other, each its own connection:
// connect, a read, a transaction, close (go-sql-driver says goodbye: COM_QUIT).
func shortSessions(t *testing.T, dsn string, n int, write bool) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(0) // every session's connection is closed when it ends
	ctx := context.Background()
	for i := range n {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		var id int
		if err := conn.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if write {
			if _, err := conn.ExecContext(ctx, "INSERT INTO goodbye (n) VALUES (?)", i); err != nil {
				t.Fatalf("session %d: %v", i, err)
			}
			// Read back (consistency session waits for the replica, or reads the primary).
			if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM goodbye WHERE n = ?", i).Scan(&id); err != nil {
				t.Fatalf("session %d: %v", i, err)
			}
		}
		if err := conn.Close(); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
}

// vanish runs n sessions on dsn that each start reading a large result and vanish in the
// middle of it (the context's end makes go-sql-driver close its socket at once).
func vanish(t *testing.T, dsn string, n int) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(0)
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		// 16 MB: more than the sockets' buffers take at once, so the node is still writing.
		rows, err := db.QueryContext(ctx, "SELECT REPEAT('x', 1000000) FROM seq_1_to_16")
		if err != nil {
			cancel()
			t.Fatalf("session %d: %v", i, err)
		}
		if !rows.Next() {
			t.Fatalf("session %d: no row: %v", i, rows.Err())
		}
		cancel()
		_ = rows.Close()
	}
}

// total is the sum of rises over the nodes.
func total(r abortedCounts) [2]int {
	var out [2]int
	for _, v := range r {
		out[0] += v[0]
		out[1] += v[1]
	}
	return out
}

// TestNodesSeeGoodbye: every node connection sluice closes says goodbye (COM_QUIT), so the
// nodes count none of them in Aborted_clients and log no "Aborted connection" warning for
// them: through a whole life of sluice — the monitor's and the binlog streams' connections,
// 200 short client sessions on an endpoint with pool_mode session and 200 on one with
// pool_mode off, idle sessions holding connections to a replica that is drained, a reload that
// turns pooling off, and the shutdown with idle sessions and pooled connections left — the
// nodes count no more than they do for direct clients doing the same (go-sql-driver, which
// closes properly: none).
func TestNodesSeeGoodbye(t *testing.T) {
	c := testutil.Cluster(t)
	primary, err := c.AdminDB(c.Primary().Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE DATABASE IF NOT EXISTS test", "CREATE TABLE IF NOT EXISTS test.goodbye (id INT AUTO_INCREMENT PRIMARY KEY, n INT)"} {
		if _, err := primary.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitCaughtUp(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		db, err := c.AdminDB(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		var lw int
		if err := db.QueryRow("SELECT @@log_warnings").Scan(&lw); err != nil {
			t.Fatal(err)
		}
		if lw < 2 {
			t.Fatalf("%s: log_warnings=%d: aborted connections are not logged", n.Name, lw)
		}
	}

	// Direct clients doing the same: the bound.
	before := nodeAborted(t)
	for _, n := range c.Nodes {
		shortSessions(t, c.DSN(n.Name, sandbox.AppUser, sandbox.AppPassword, "test")+"?timeout=5s", 50, n.Role == sandbox.RolePrimary)
	}
	direct := rise(before, nodeAborted(t))
	// Clients that vanish in the middle of a result: the node counts each (it fails to write
	// the rest).
	before = nodeAborted(t)
	vanish(t, c.DSN("replica1", sandbox.AppUser, sandbox.AppPassword, "test")+"?timeout=5s", 5)
	directVanished := total(rise(before, nodeAborted(t)))

	before = nodeAborted(t)
	adminAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	roPoolOff := func(data []byte) []byte {
		return bytes.Replace(data, []byte("mode: read-only\n"), []byte("mode: read-only\n    pool_mode: off\n"), 1)
	}
	addr, cmd, exited, logs, path := startServeEdited(t, roPoolOff, "admin: {listen: '"+adminAddr+"', token: s3cret}\n")
	_, mustCtl := ctlAt(t, adminAddr, "s3cret", logs)
	var ro struct{ Address string }
	if err := json.Unmarshal([]byte(mustCtl("-o", "json", "endpoint", "ro")), &ro); err != nil || ro.Address == "" {
		t.Fatalf("the ro endpoint's address: %v %+v", err, ro)
	}
	rwDSN := sandbox.AppUser + ":" + sandbox.AppPassword + "@tcp(" + addr + ")/test?timeout=5s"
	roDSN := sandbox.AppUser + ":" + sandbox.AppPassword + "@tcp(" + ro.Address + ")/test?timeout=5s"
	shortSessions(t, rwDSN, 200, true)
	shortSessions(t, roDSN, 200, false)

	// Clients that vanish in the middle of a result, on both endpoints: sluice reads the rest
	// of the answer from the node before its goodbye (closing a socket with unread data would
	// reset it, which the node counts too).
	mid := nodeAborted(t)
	vanish(t, rwDSN, 5)
	vanish(t, roDSN, 5)
	throughVanished := total(rise(mid, nodeAborted(t)))
	t.Logf("clients that vanished in the middle of a result: the nodes counted %v for 5 direct ones, %v for 10 through sluice", directVanished, throughVanished)
	if throughVanished != [2]int{} {
		t.Errorf("10 clients that vanished in the middle of a result through sluice: the nodes counted %v (Aborted_clients, warnings); want none (direct: %v for 5)", throughVanished, directVanished)
	}

	// Idle sessions holding node connections, on both endpoints: a drain of a replica takes
	// theirs there (and the pool's idle ones), the shutdown the rest.
	var idle []*sql.DB
	defer func() {
		for _, db := range idle {
			db.Close()
		}
	}()
	hold := func(dsn string, n int) {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, db)
		var wg sync.WaitGroup
		var failed error
		var mu sync.Mutex
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
		for range n {
			wg.Go(func() {
				var id int
				// The sleep keeps each connection busy while the others open: n of them, kept idle.
				if err := db.QueryRow("SELECT @@server_id, SLEEP(0.2)").Scan(&id, new(int)); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if failed != nil {
			t.Fatal(failed)
		}
	}
	hold(rwDSN, 6)
	hold(roDSN, 6)
	time.Sleep(1500 * time.Millisecond) // idle long enough for the drain to release them
	mustCtl("drain", "replica1", "--timeout", "5s")
	mustCtl("undrain", "replica1")

	// A reload that turns pooling off on rw: its pooled connections are closed.
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("mode: read-write\n"), []byte("mode: read-write\n    pool_mode: off\n"), 1)
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	mustCtl("reload")
	shortSessions(t, rwDSN, 20, true)
	hold(rwDSN, 4)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("sluice exited with %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("sluice did not exit after SIGTERM\n%s", logs.String())
	}
	// The nodes end sluice's threads a moment after it closed their connections (a binlog
	// dump's when it next writes): counted once all are gone.
	for _, n := range c.Nodes {
		db, err := c.AdminDB(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			var left int
			if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER IN (?, ?)", sandbox.AppUser, sandbox.MonitorUser).Scan(&left); err != nil {
				t.Fatal(err)
			}
			return left == 0
		}, n.Name+"'s threads of sluice to end")
	}
	through := rise(before, nodeAborted(t))
	t.Logf("Aborted_clients, Aborted connection warnings: direct %v, through sluice %v", direct, through)
	for _, n := range c.Nodes {
		d, s := direct[n.Name], through[n.Name]
		if s[0] > d[0] || s[1] > d[1] {
			t.Errorf("%s: through sluice Aborted_clients rose by %d and the error log gained %d \"Aborted connection\" warnings; direct clients: %d and %d",
				n.Name, s[0], s[1], d[0], d[1])
		}
	}
	if t.Failed() {
		for _, n := range c.Nodes {
			log, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
			var aborted []string
			for _, l := range strings.Split(string(log), "\n") {
				if strings.Contains(l, "Aborted connection") {
					aborted = append(aborted, l)
				}
			}
			aborted = aborted[max(0, len(aborted)-through[n.Name][1]):]
			t.Logf("%s's error log, the warnings of sluice's connections:\n%s", n.Name, strings.Join(aborted, "\n"))
		}
	}
}
