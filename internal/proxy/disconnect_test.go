package proxy_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/testutil"
)

// TestDisconnectRollsBack: a client that goes away inside a transaction (with COM_QUIT or by
// closing its socket) leaves no transaction open on the primary: sluice closes the node
// connection, and the server rolls back.
func TestDisconnectRollsBack(t *testing.T) {
	s := startSluice(t, primaryReads)
	admin, err := testutil.Cluster(t).AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	def := open(t, dsn(s.rw, "app", "app", "test", ""))
	mustExec(t, def, "CREATE TABLE IF NOT EXISTS t_leak (id INT PRIMARY KEY)")
	for i := 0; i < 20; i++ {
		q := rawConnect(t, s.rw, "app", "app")
		for _, st := range []string{"USE test", "BEGIN", "INSERT INTO t_leak VALUES (" + itoa(i+1000) + ")"} {
			if err := q.Exec(st); err != nil {
				t.Fatal(err)
			}
		}
		// The primary's thread that holds this transaction (CONNECTION_ID() in an expression
		// runs where the transaction is; alone, it is sluice's id). Only its transaction is
		// watched: INNODB_TRX also lists other work.
		thread := query(t, q, "SELECT CONNECTION_ID() + 0")
		if i%2 == 0 {
			q.SetSeq(0)
			_ = q.WritePacketFlush([]byte{1})
		}
		q.Close()
		start := time.Now()
		for {
			var n int
			if err := admin.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = "+thread).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if time.Since(start) > 15*time.Second {
				t.Fatalf("round %d: the transaction of thread %s is still open after 15 s", i, thread)
			}
			// More than 100 ms between polls: InnoDB refreshes the INNODB_TRX table only when
			// it was not read for 100 ms (CACHE_MIN_IDLE_TIME_US), so faster polling keeps
			// showing the transaction of the first poll for ever.
			time.Sleep(150 * time.Millisecond)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
