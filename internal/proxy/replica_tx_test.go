package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// replica1Reads makes the rw endpoint read from replica1 only.
func replica1Reads(c *config.Config) {
	for i := range c.Endpoints {
		if c.Endpoints[i].Mode == "read-write" {
			for name := range c.Endpoints[i].ReadWeights {
				c.Endpoints[i].ReadWeights[name] = 0
			}
			c.Endpoints[i].ReadWeights["replica1"] = 100
		}
	}
}

// TestSetAutocommitEndsReplicaTransaction: SET autocommit=0 inside a START TRANSACTION READ
// ONLY runs on the replica (everything in the transaction goes there) and is not followed by
// sluice (only the primary's status updates Session.Autocommit). After COMMIT the replica
// connection has autocommit off: the next read there opens an implicit transaction, the status
// says IN_TRANS, TxNode becomes the replica, and the next write is routed to the replica. With
// the read-only guard in place it fails (1792) where a server would have run it; see the second
// subtest for the guard.
func TestSetAutocommitEndsReplicaTransaction(t *testing.T) {
	s := startSluice(t, replica1Reads)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS review_rw (id INT PRIMARY KEY) ENGINE=InnoDB")
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS review_rw") })
	if err := testutil.Cluster(t).WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	c := conn(t, db)
	for _, q := range []string{"START TRANSACTION READ ONLY", "SET autocommit=0", "COMMIT", "SELECT COUNT(*) FROM review_rw"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err := c.ExecContext(ctx, "INSERT INTO review_rw VALUES (1)")
	node, _, reason := lastRoute(t, c)
	_, _ = c.ExecContext(ctx, "ROLLBACK")
	_, _ = c.ExecContext(ctx, "SET autocommit=1")
	if err != nil || node != "primary" {
		t.Fatalf("INSERT after a read in autocommit=0: went to %s (%s), err %v; want the primary", node, reason, err)
	}
}

// TestBeginEndsReplicaTransaction: START TRANSACTION inside a transaction commits it
// and opens a new (read-write) one. When the open transaction is a READ ONLY one on a replica,
// the InTx rule of route.Decide comes before the Begin rule: the new transaction opens on the
// replica, and the write in it is sent there (refused by the guard with 1792, where a server
// runs it).
func TestBeginEndsReplicaTransaction(t *testing.T) {
	s := startSluice(t, replica1Reads)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS review_begin (id INT PRIMARY KEY) ENGINE=InnoDB")
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS review_begin") })
	if err := testutil.Cluster(t).WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	c := conn(t, db)
	for _, q := range []string{"START TRANSACTION READ ONLY", "SELECT COUNT(*) FROM review_begin", "START TRANSACTION"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err := c.ExecContext(ctx, "INSERT INTO review_begin VALUES (1)")
	node, _, reason := lastRoute(t, c)
	_, _ = c.ExecContext(ctx, "ROLLBACK")
	if err != nil || node != "primary" {
		t.Fatalf("INSERT in the transaction opened by START TRANSACTION after a READ ONLY one: went to %s (%s), err %v; want the primary", node, reason, err)
	}
}

// TestExecutedSetReadWriteGuarded: SQL PREPARE/EXECUTE of SET SESSION
// TRANSACTION READ WRITE inside a read-only transaction on a replica is not seen as a
// SetReadWrite (the flag is checked on the EXECUTE's class), so the guard does not run after it,
// and the replica connection stays read-write for the rest of the session.
func TestExecutedSetReadWriteGuarded(t *testing.T) {
	s := startSluice(t, replica1Reads)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c := conn(t, db)
	for _, q := range []string{"START TRANSACTION READ ONLY",
		"PREPARE review_s FROM 'SET SESSION TRANSACTION READ WRITE'", "EXECUTE review_s", "COMMIT"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var ro int
	if err := c.QueryRowContext(ctx, "SELECT @@session.tx_read_only").Scan(&ro); err != nil {
		t.Fatal(err)
	}
	node, _, _ := lastRoute(t, c)
	if node == "replica1" && ro != 1 {
		t.Fatal("the session's replica1 connection is read-write (tx_read_only = 0): its guard did not run after EXECUTE of SET SESSION TRANSACTION READ WRITE")
	}
}
