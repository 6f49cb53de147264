package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestSwitchoverUnderLoad: a planned switchover (sandbox switchover replica1) under a write and
// read load through the read-write endpoint. Autocommit writers and readers see no error, every
// acknowledged write is on the new primary afterwards, a transaction open on the old primary at
// the switch gets a clear error (and is not half-committed), a session with a temporary table
// is closed with an error, the old primary takes reads again once it replicates, and SHOW NODES
// names the new primary. The longest stall a statement saw is logged. Then back again.
func TestSwitchoverUnderLoad(t *testing.T) {
	s := startSluice(t, func(c *config.Config) { c.Monitor.Interval.Duration = 200 * time.Millisecond })
	cl := testutil.Cluster(t)
	ctx := context.Background()
	// However it ends, the cluster is left as the other tests expect it: node primary the
	// primary, replicas writable (a switchover leaves the old primary read-only).
	t.Cleanup(func() {
		if p := cl.Primary().Name; p != "primary" {
			if err := cl.Switchover(ctx, "primary", 30*time.Second); err != nil {
				t.Errorf("switching back from %s: %v", p, err)
			}
		}
		for _, r := range cl.Replicas() {
			db, err := cl.AdminDB(r.Name)
			if err == nil {
				_, err = db.Exec("SET GLOBAL read_only = OFF")
				db.Close()
			}
			if err != nil {
				t.Errorf("%s: read_only off: %v", r.Name, err)
			}
		}
	})
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, db, "DROP TABLE IF EXISTS test.switch_acks")
	mustExec(t, db, "CREATE TABLE test.switch_acks (w INT, n INT, PRIMARY KEY (w, n))")
	// The readers below may read on a replica: the table must be there first.
	if err := cl.WaitCaughtUp(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["primary"].role == "primary" && n["replica1"].state == "up" })

	// A transaction open on the old primary, and a session pinned there by a temporary table.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO test.switch_acks VALUES (-1, 1)"); err != nil {
		t.Fatal(err)
	}
	pinned, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	if _, err := pinned.ExecContext(ctx, "CREATE TEMPORARY TABLE test.switch_tmp (a INT)"); err != nil {
		t.Fatal(err)
	}
	// A session with autocommit off (PyMySQL's default), and one that stays idle throughout.
	manual, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	for _, q := range []string{"SET autocommit = 0", "INSERT INTO test.switch_acks VALUES (-3, 1)", "COMMIT"} {
		if _, err := manual.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	idle, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := idle.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	const writers, readers = 4, 4
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		acked    = make([]int, writers)
		longest  time.Duration
		statemts atomic.Int64
	)
	record := func(start time.Time, err error) {
		d := time.Since(start)
		statemts.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if d > longest {
			longest = d
		}
		if err != nil && len(errs) < 10 {
			errs = append(errs, err)
		}
	}
	for w := range writers {
		wg.Go(func() {
			for n := 1; !stop.Load(); n++ {
				start := time.Now()
				_, err := db.Exec("INSERT INTO test.switch_acks VALUES (?, ?)", w, n)
				record(start, err)
				if err != nil {
					return
				}
				acked[w] = n
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for !stop.Load() {
				var n int
				start := time.Now()
				err := db.QueryRow("SELECT COUNT(*) FROM test.switch_acks WHERE w = 0").Scan(&n)
				record(start, err)
				if err != nil {
					return
				}
			}
		})
	}
	time.Sleep(time.Second)
	start := time.Now()
	if err := cl.Switchover(ctx, "replica1", 30*time.Second); err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatal(err)
	}
	t.Logf("sandbox switchover took %s", time.Since(start).Round(time.Millisecond))
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["replica1"].role == "primary" })
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d statements across the switchover, longest %s", statemts.Load(), longest.Round(time.Millisecond))
	for _, err := range errs {
		t.Errorf("a client saw an error across the switchover: %v", err)
	}

	// Every acknowledged write is on the new primary.
	newPrimary, err := cl.AdminDB("replica1")
	if err != nil {
		t.Fatal(err)
	}
	defer newPrimary.Close()
	for w, n := range acked {
		var got int
		if err := newPrimary.QueryRow("SELECT COUNT(*) FROM test.switch_acks WHERE w = ? AND n <= ?", w, n).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("writer %d: %d writes acknowledged, %d on the new primary", w, n, got)
		}
		if n == 0 {
			t.Errorf("writer %d wrote nothing", w)
		}
	}

	// The transaction open at the switch: a clear error, nothing of it committed.
	_, err = tx.Exec("INSERT INTO test.switch_acks VALUES (-1, 2)")
	if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1213 {
		t.Errorf("statement in a transaction open across the switchover: %v, want error 1213", err)
	}
	_ = tx.Rollback()
	var half int
	if err := newPrimary.QueryRow("SELECT COUNT(*) FROM test.switch_acks WHERE w = -1").Scan(&half); err != nil || half != 0 {
		t.Errorf("rows of the interrupted transaction on the new primary: %d (%v), want 0", half, err)
	}
	// The pinned session: closed, with an error saying why.
	_, err = pinned.ExecContext(ctx, "INSERT INTO test.switch_tmp VALUES (1)")
	if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1927 {
		t.Errorf("pinned session after the switchover: %v, want error 1927", err)
	}
	// Autocommit stays off in the moved session: a row inserted and rolled back is not there.
	var autocommit int
	if err := manual.QueryRowContext(ctx, "SELECT @@autocommit").Scan(&autocommit); err != nil || autocommit != 0 {
		t.Errorf("autocommit %d (%v) after the session moved, want 0", autocommit, err)
	}
	for _, q := range []string{"INSERT INTO test.switch_acks VALUES (-3, 2)", "ROLLBACK"} {
		if _, err := manual.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var kept int
	if err := newPrimary.QueryRow("SELECT COUNT(*) FROM test.switch_acks WHERE w = -3").Scan(&kept); err != nil || kept != 1 {
		t.Errorf("rows of the autocommit-off session on the new primary: %d (%v), want 1 (the rolled-back one absent)", kept, err)
	}
	// New sessions write to the new primary; the old one replicates and takes reads again.
	mustExec(t, db, "INSERT INTO test.switch_acks VALUES (-2, 1)")
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["primary"].role == "replica" && n["primary"].state == "up" })
	// The old primary restarts (the usual next step of a switchover): the session that stayed
	// idle all along, whose home connection was there, is not lost.
	time.Sleep(time.Second) // past the idle probe: its watch runs
	if err := cl.Stop(ctx, "primary"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx, "primary"); err != nil {
		t.Fatal(err)
	}
	if err := idle.PingContext(ctx); err != nil {
		t.Errorf("idle session after the old primary restarted: ping: %v", err)
	} else if _, err := idle.ExecContext(ctx, "INSERT INTO test.switch_acks VALUES (-4, 1)"); err != nil {
		t.Errorf("idle session after the old primary restarted: write: %v", err)
	}
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["primary"].role == "replica" && n["primary"].state == "up" })

	// And back, so that the cluster is as the other tests expect it.
	if err := cl.Switchover(ctx, "primary", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["primary"].role == "primary" && n["replica1"].state == "up" })
	mustExec(t, db, "INSERT INTO test.switch_acks VALUES (-2, 2)")
}

// waitNodes waits up to 10 s until SHOW NODES satisfies ok.
func waitNodes(t testing.TB, db *sql.DB, ok func(map[string]nodeRow) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := showNodes(t, db)
		if ok(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("SHOW NODES did not get there within 10 s: %s", fmt.Sprint(n))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
