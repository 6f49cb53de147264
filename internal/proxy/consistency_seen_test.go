package proxy_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestConsistencyWaitsOncePerPosition: at every level that waits, a replica that a wait found at
// a position is not asked again for it. After one write, a run of reads of it through one
// connection costs the replicas about one statement per read (the reads), plus one wait per
// replica — not two per read as when every read waited first. Each read still sees the write.
func TestConsistencyWaitsOncePerPosition(t *testing.T) {
	cl := testutil.Cluster(t)
	ctx := context.Background()
	replicaSelects := replicaSelectCounter(t)
	for _, level := range []string{config.ConsistencySession, config.ConsistencyLatest, config.ConsistencyGlobal} {
		t.Run(level, func(t *testing.T) {
			s := startSluice(t, consistencyAt(level))
			db := open(t, dsn(s.rw, "app", "app", "test", ""))
			c := conn(t, db)
			table := "test.seen_" + level
			for _, q := range []string{"DROP TABLE IF EXISTS " + table, "CREATE TABLE " + table + " (id INT PRIMARY KEY, v INT)"} {
				if _, err := c.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			const reads = 200
			for round := range 3 {
				if _, err := c.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?)", round, round); err != nil {
					t.Fatal(err)
				}
				before, start := replicaSelects(), time.Now()
				onReplicas := 0
				for i := range reads {
					var v int
					if err := c.QueryRowContext(ctx, "SELECT v FROM "+table+" WHERE id = ?", round).Scan(&v); err != nil {
						t.Fatalf("round %d read %d: %v", round, i, err)
					}
					if v != round {
						t.Fatalf("round %d read %d: v=%d", round, i, v)
					}
					var node string
					if err := c.QueryRowContext(ctx, "/*PROXY_INTERNAL*/ SHOW LAST ROUTE").Scan(&node, new(string), new(string), new(string)); err != nil {
						t.Fatal(err)
					}
					if node == "replica1" || node == "replica2" {
						onReplicas++
					}
				}
				got := replicaSelects() - before - monitorSelects(time.Since(start))
				// The reads, a wait per replica per position; a global read's position reading
				// is on the primary (not counted); the monitor's checks are taken off.
				t.Logf("round %d: %d of %d reads on the replicas, %d statements there (%.2f per read)", round, onReplicas, reads, got, float64(got)/float64(onReplicas))
				if onReplicas < reads*9/10 {
					t.Fatalf("only %d of %d reads went to the replicas", onReplicas, reads)
				}
				if limit := int64(onReplicas) * 12 / 10; got > limit {
					t.Errorf("round %d: %d statements on the replicas for %d reads there (limit %d): the reads waited each time", round, got, onReplicas, limit)
				}
			}
		})
	}
}

// TestConsistencyWaitsFollowedAcrossSessions: when many reads on different connections need a
// position no wait has confirmed yet, they follow the one wait in flight on their replica
// instead of each sending one: after each write, 8 connections read at once, and the replicas
// run about one wait per replica per write besides the reads — with every read seeing the write.
func TestConsistencyWaitsFollowedAcrossSessions(t *testing.T) {
	cl := testutil.Cluster(t)
	ctx := context.Background()
	replicaSelects := replicaSelectCounter(t)
	s := startSluice(t, consistencyAt(config.ConsistencyLatest))
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	writer := conn(t, db)
	const table, readers, rounds, each = "test.followed", 8, 30, 5
	for _, q := range []string{"DROP TABLE IF EXISTS " + table, "CREATE TABLE " + table + " (id INT PRIMARY KEY, v INT)",
		"INSERT INTO " + table + " VALUES (1, 0)"} {
		if _, err := writer.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	conns := make([]*sql.Conn, readers)
	for i := range conns {
		conns[i] = conn(t, db)
	}
	before, start := replicaSelects(), time.Now()
	stale, onReplicas := 0, 0
	for round := 1; round <= rounds; round++ {
		if _, err := writer.ExecContext(ctx, "UPDATE "+table+" SET v = ? WHERE id = 1", round); err != nil {
			t.Fatal(err)
		}
		type result struct{ stale, replicas int }
		results := make(chan result, readers)
		begin := make(chan struct{})
		for _, c := range conns {
			go func() {
				var r result
				defer func() { results <- r }()
				<-begin
				for range each {
					var v int
					if err := c.QueryRowContext(ctx, "SELECT v FROM "+table+" WHERE id = 1").Scan(&v); err != nil {
						t.Error(err)
						return
					}
					if v != round {
						r.stale++
					}
					if node, _, _ := lastRoute(t, c); node == "replica1" || node == "replica2" {
						r.replicas++
					}
				}
			}()
		}
		close(begin)
		for range readers {
			r := <-results
			stale += r.stale
			onReplicas += r.replicas
		}
	}
	got := replicaSelects() - before - monitorSelects(time.Since(start))
	reads := readers * rounds * each
	t.Logf("%d reads (%d on the replicas), %d stale; %d statements on the replicas (%.3f per replica read)", reads, onReplicas, stale, got, float64(got)/float64(onReplicas))
	if stale != 0 {
		t.Fatalf("%d of %d reads did not see the write before them", stale, reads)
	}
	if onReplicas < reads*9/10 {
		t.Fatalf("only %d of %d reads on the replicas", onReplicas, reads)
	}
	// The reads, a wait per replica per write (2 x rounds), the monitor's checks: 8 waits per
	// write (each reader its own) would be 1.2 per read.
	if limit := int64(onReplicas) * 11 / 10; got > limit {
		t.Errorf("%d statements on the replicas for %d reads there (limit %d): the readers did not follow each other's waits", got, onReplicas, limit)
	}
}

// monitorSelects is how many SELECTs the monitor's checks (consistencyAt: every 200 ms; two
// SELECTs per check of a node) may have run on the two replicas in d, rounded up: what a count
// of the replicas' Com_select over d takes off before judging the reads' cost.
// replicaSelectCounter returns a function that sums the replicas' Com_select (the statements
// sluice's reads and waits cost them), on admin connections closed with the test.
func replicaSelectCounter(t *testing.T) func() int64 {
	cl := testutil.Cluster(t)
	var admins []*sql.DB
	for _, r := range []string{"replica1", "replica2"} {
		db, err := cl.AdminDB(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		admins = append(admins, db)
	}
	return func() int64 {
		var sum int64
		for _, db := range admins {
			var name string
			var v int64
			if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&name, &v); err != nil {
				t.Fatal(err)
			}
			sum += v
		}
		return sum
	}
}

func monitorSelects(d time.Duration) int64 {
	return (int64(d/(200*time.Millisecond)) + 2) * 2 * 2
}
