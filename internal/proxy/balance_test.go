package proxy_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestLeastConnectionsFromProxy: with balance least-connections counted by this sluice, each new
// session's first read goes to the replica where sluice holds fewer connections (ties to the one
// listed first): replica1, replica2, replica1, replica2.
func TestLeastConnectionsFromProxy(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			c.Endpoints[i].Balance = config.BalanceLeastConnections
		}
	})
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	var got []string
	for range 4 {
		c := conn(t, db) // held until the test ends: its replica connection counts
		if _, err := c.ExecContext(context.Background(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		node, _, _ := lastRoute(t, c)
		got = append(got, node)
	}
	want := []string{"replica1", "replica2", "replica1", "replica2"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reads of new sessions went to %v, want %v", got, want)
		}
	}
}

// TestLeastConnectionsFromNodes: counted from the nodes (Threads_connected, polled by the
// monitor), connections sluice does not hold count too: with idle direct clients on replica1,
// reads go to replica2, and the other way round.
func TestLeastConnectionsFromNodes(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Monitor.Interval.Duration = 100 * time.Millisecond
		for i := range c.Endpoints {
			c.Endpoints[i].Balance = config.BalanceLeastConnections
			c.Endpoints[i].ConnectionsFrom = config.ConnectionsFromNodes
		}
	})
	cl := testutil.Cluster(t)
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	for _, busy := range []string{"replica1", "replica2"} {
		other := map[string]string{"replica1": "replica2", "replica2": "replica1"}[busy]
		direct := open(t, cl.DSN(busy, sandbox.AppUser, sandbox.AppPassword, ""))
		direct.SetMaxIdleConns(20)
		var held []*sql.Conn
		for range 20 {
			held = append(held, conn(t, direct))
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			c := conn(t, db)
			if _, err := c.ExecContext(context.Background(), "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			node, _, _ := lastRoute(t, c)
			c.Close()
			if node == other {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("with 20 direct clients on %s, reads still go to %s", busy, node)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, c := range held {
			c.Close()
		}
		direct.Close()
	}
}

// TestNearestZone: a sluice in az2 reads from the az2 replica only, and from the others while it
// is down.
func TestNearestZone(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Zone = "az2"
		zones := map[string]string{"primary": "az1", "replica1": "az1", "replica2": "az2"}
		for i := range c.Backends {
			c.Backends[i].Zone = zones[c.Backends[i].Name]
		}
		for i := range c.Endpoints {
			c.Endpoints[i].NearestZone = true
			c.Endpoints[i].Balance = config.BalanceWeighted
		}
	})
	cl := testutil.Cluster(t)
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	reads := func() map[string]int {
		c := conn(t, db)
		defer c.Close()
		got := map[string]int{}
		for range 10 {
			if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			node, _, _ := lastRoute(t, c)
			got[node]++
		}
		return got
	}
	if got := reads(); got["replica2"] != 10 {
		t.Fatalf("sluice in az2: reads went %v, want all on replica2", got)
	}
	if err := cl.Stop(ctx, "replica2"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cl.Start(ctx, "replica2"); err != nil {
			t.Error(err)
		}
		if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Error(err)
		}
	}()
	if got := reads(); got["replica1"] != 10 {
		t.Fatalf("az2's replica down: reads went %v, want all on replica1", got)
	}
}
