package proxy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/testutil"
)

// TestPrimaryKilledMidQuery: the primary dies while a statement runs; the client gets an error
// promptly (no hang), new connections fail with a clear error while it is down, and sessions
// work again once it is back.
func TestPrimaryKilledMidQuery(t *testing.T) {
	s := startSluice(t, nil)
	c := testutil.Cluster(t)
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	errc := make(chan error, 1)
	go func() {
		var x int
		errc <- db.QueryRow("/*FORCE_MASTER*/ SELECT SLEEP(30)").Scan(&x)
	}()
	time.Sleep(300 * time.Millisecond)
	ctx := context.Background()
	if err := c.Stop(ctx, "primary"); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = c.Start(ctx, "primary")
		}
	}()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("statement succeeded on a killed primary")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client hangs after the primary was killed")
	}
	down := open(t, dsn(s.rw, "app", "app", "", ""))
	start := time.Now()
	err := down.Ping()
	if err == nil {
		t.Fatal("ping succeeded with the primary down")
	}
	if me := mysqlErr(t, err); me.Number != 1105 {
		t.Errorf("connecting while the primary is down: %v", me)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("connection error took %s", d)
	}
	if err := c.Start(ctx, "primary"); err != nil {
		t.Fatal(err)
	}
	restarted = true
	if err := c.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("after the primary came back: %v", err)
	}
}

// TestReplicaKilledMidResult: once part of a replica's answer reached the client, a failure of
// that replica closes the client's connection, as a server dying mid-answer does; no error
// packet follows the partial answer (before, sluice wrote a 2013 error after it and went on).
func TestReplicaKilledMidResult(t *testing.T) {
	s := startSluice(t, nil)
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	c := conn(t, db)
	rows, err := c.QueryContext(ctx, "/*FORCE_NODE='replica1'*/ SELECT seq, REPEAT('x', 200) FROM test.seq_1_to_5000000")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000 && rows.Next(); i++ {
	}
	if err := cl.Stop(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Start(ctx, "replica1"); err != nil {
			t.Error(err)
		}
		if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Error(err)
		}
	}()
	for rows.Next() {
	}
	err = rows.Err()
	if err == nil {
		t.Fatal("the result ended normally although its replica was killed")
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		t.Fatalf("an error packet followed part of a result: %v", err)
	}
	rows.Close()
	var one int
	if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err == nil {
		t.Fatal("the connection went on after a broken answer")
	}
}
