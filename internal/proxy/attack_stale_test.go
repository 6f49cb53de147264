package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestAttackStaleRead: at consistency session, a session that wrote through a statement that
// is not a plain write (a stored function called from SET, from a locking read, SELECT … INTO)
// reads what it wrote, with the replicas paused (a read there would be stale).
func TestAttackStaleRead(t *testing.T) {
	ctx := context.Background()
	s := startSluice(t, consistencyAt(config.ConsistencySession))
	attackSetup(t, ctx)
	cl := testutil.Cluster(t)
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"replica1", "replica2"} {
		if err := cl.Pause(ctx, r); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := cl.Resume(ctx, r); err != nil {
				t.Error(err)
			}
		}()
	}
	for _, off := range []bool{false, true} {
		c := conn(t, open(t, dsn(s.rw, "app", "app", "test", "")))
		if off {
			if _, err := c.ExecContext(ctx, "EXECUTE IMMEDIATE CONCAT('SET SESSION session_tr', 'ack_system_variables = ''''')"); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range []string{
			"SET @x = atk.fi()",
			"SELECT atk.fi() FROM DUAL FOR UPDATE",
			"SELECT atk.fi() INTO @x",
			"SELECT atk.fi(), LAST_INSERT_ID()",
			"SELECT atk.fi(), GET_LOCK('atk', 0), RELEASE_LOCK('atk')",
			"DO atk.fi()",
			"SET STATEMENT max_statement_time = 100 FOR SELECT atk.fi() FOR UPDATE",
		} {
			var before, after int
			if err := c.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT COUNT(*) FROM atk.t").Scan(&before); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ExecContext(ctx, w); err != nil {
				t.Errorf("%s: %v", w, err)
				continue
			}
			node, _, reason := lastRoute(t, c)
			if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM atk.t").Scan(&after); err != nil {
				t.Fatal(err)
			}
			rnode, _, rreason := lastRoute(t, c)
			if after != before+1 {
				t.Errorf("tracking off %v: %s (on %s, %s) then a read on %s (%s): %d rows, want %d: a stale read of the session's own write",
					off, w, node, reason, rnode, rreason, after, before+1)
			}
		}
	}
}
