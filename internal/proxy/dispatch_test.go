package proxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestReadsRetriedWhenAReplicaDies: a replica dies under a session that holds a connection to
// it, with a statement prepared there. Every read after that, text or prepared, is answered:
// the one that meets the dead connection first goes to another node, before any byte reached
// the client. (Before, only text reads were retried: an EXECUTE on the dead replica ended the
// session.)
func TestReadsRetriedWhenAReplicaDies(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			c.Endpoints[i].Balance = config.BalanceWeighted
		}
	})
	cl := testutil.Cluster(t)
	ctx := context.Background()
	for _, prepared := range []bool{false, true} {
		db := open(t, dsn(s.rw, "app", "app", "", ""))
		c := conn(t, db)
		stmt, err := c.PrepareContext(ctx, "SELECT @@server_id")
		if err != nil {
			t.Fatal(err)
		}
		read := func() (int, error) {
			var id int
			if prepared {
				return id, stmt.QueryRowContext(ctx).Scan(&id)
			}
			return id, c.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id)
		}
		// Weighted round robin over two replicas: four reads open (and prepare on) both.
		seen := map[int]bool{}
		for i := 0; i < 4; i++ {
			id, err := read()
			if err != nil {
				t.Fatal(err)
			}
			seen[id] = true
		}
		if len(seen) != 2 {
			t.Fatalf("prepared=%v: reads went to servers %v, want both replicas", prepared, seen)
		}
		if err := cl.Stop(ctx, "replica1"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 6; i++ {
			if _, err := read(); err != nil {
				t.Errorf("prepared=%v: read %d after replica1 died: %v", prepared, i, err)
			}
		}
		stmt.Close()
		c.Close()
		db.Close()
		if err := cl.Start(ctx, "replica1"); err != nil {
			t.Fatal(err)
		}
		if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		// The topology probes replica1 back up.
		deadline := time.Now().Add(15 * time.Second)
		for {
			db := open(t, dsn(s.rw, "app", "app", "", ""))
			c := conn(t, db)
			up := false
			for i := 0; i < 4 && !up; i++ {
				if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
					t.Fatal(err)
				}
				node, _, _ := lastRoute(t, c)
				up = node == "replica1"
			}
			c.Close()
			db.Close()
			if up {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("replica1 did not come back into routing")
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// TestEndpointSettingsChangeLive: a change of an endpoint's routing settings reaches a session
// that is already connected, at its next statement.
func TestEndpointSettingsChangeLive(t *testing.T) {
	s := startSluice(t, nil)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	c := conn(t, db)
	if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if node, _, reason := lastRoute(t, c); node == "primary" || reason != "read" {
		t.Fatalf("before: %s (%s), want a replica", node, reason)
	}
	old, ok := s.app.EndpointSettings("rw")
	if !ok {
		t.Fatal("no endpoint rw")
	}
	next := old
	next.Routing.Weights = []int{100, 0, 0} // the primary only
	if err := s.app.UpdateEndpoint("rw", next); err != nil {
		t.Fatal(err)
	}
	defer s.app.UpdateEndpoint("rw", old)
	if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if node, _, reason := lastRoute(t, c); node != "primary" || reason != "read" {
		t.Fatalf("after: %s (%s), want the primary by weight", node, reason)
	}
	ro := next
	ro.Routing.Mode, ro.Routing.Weights = route.ReadOnly, []int{0, 100, 100}
	if err := s.app.UpdateEndpoint("rw", ro); err != nil {
		t.Fatal(err)
	}
	// A change of mode applies to the connections accepted from then on: a session keeps the
	// mode it began under (a read-write session holds the primary, a read-only one its
	// replica), and takes the endpoint's other settings.
	if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatalf("a read-write session after its endpoint became read-only: %v", err)
	}
	if node, _, reason := lastRoute(t, c); node == "primary" || reason != "read" {
		t.Fatalf("the read-write session after the change: %s (%s), want a replica by weight", node, reason)
	}
	fresh := conn(t, open(t, dsn(s.rw, "app", "app", "test", "")))
	if _, err := fresh.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS t_mode (id INT)"); err == nil || !strings.Contains(err.Error(), "1290") {
		t.Fatalf("a write on a connection accepted after the change: %v, want 1290 (read-only)", err)
	}
}

// TestRestartedReplicaKeepsItsReads: a replica restarts under a session that kept a connection to
// it. The next read meets that dead connection: it is replaced once, on the same replica, which
// is healthy, rather than the replica being reported down and the read sent elsewhere.
func TestRestartedReplicaKeepsItsReads(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			if c.Endpoints[i].Name == "rw" {
				c.Endpoints[i].ReadWeights = map[string]int{"replica1": 100}
			}
		}
	})
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	c := conn(t, db)
	if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if node, _, _ := lastRoute(t, c); node != "replica1" {
		t.Fatalf("read went to %s", node)
	}
	if err := cl.Stop(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// A check that ran while replica1 was stopped rightly marks it down until the next one
	// finds it up: the read then goes to the primary. What this test asks is that once sluice
	// sees it up again, the session's broken connection there does not cost the read.
	waitNodes(t, db, func(n map[string]nodeRow) bool { return n["replica1"].state == "up" })
	if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if node, _, reason := lastRoute(t, c); node != "replica1" || reason != "read" {
		t.Fatalf("first read after the restart: %s (%s), want replica1 (read)", node, reason)
	}
}
