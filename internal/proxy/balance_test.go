package proxy_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/app"
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

// TestLeastConnectionsFromCluster: two sluice nodes, A and B, share one etcd. With sessions
// held on replica1 through A, new sessions' reads through B go to replica2, counted over the
// cluster, even while B itself holds more on replica2; counted by B alone (connections_from:
// proxy) they would go to replica1, where B holds none.
func TestLeastConnectionsFromCluster(t *testing.T) {
	cl := testutil.Cluster(t)
	if _, err := sandbox.EtcdBinary(); err != nil && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	ctx := context.Background()
	etcd, err := sandbox.StartEtcd(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcd.Stop() })

	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(cl.Dir, sandbox.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{"rw", "ro"} {
		if data, err = config.EditEndpoint(sandbox.ConfigFile, data, ep, map[string]any{"listen": "127.0.0.1:0", "consistency": nil,
			"balance": config.BalanceLeastConnections, "connections_from": config.ConnectionsFromCluster}); err != nil {
			t.Fatal(err)
		}
	}
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/balance/}, clear_secrets: true}\n", etcd.ClientAddr)
	startNode := func(name, text string) *app.App {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		a, err := app.Open(ctx, path, "", "test", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(runCtx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("sluice %s: %v", name, err)
			}
		})
		select {
		case <-a.Ready():
		case err := <-done:
			t.Fatalf("sluice %s did not start: %v", name, err)
		}
		return a
	}
	a := startNode("a", "name: a\n"+st+string(data)+"timeouts: {shutdown: 5s}\n") // seeds the store
	b := startNode("b", "name: b\n"+st)
	dbA, dbB := open(t, dsn(a.Addr("rw"), "app", "app", "", "")), open(t, dsn(b.Addr("rw"), "app", "app", "", ""))
	// Probes close their session for good (database/sql would keep it idle, holding its node).
	probes := open(t, dsn(b.Addr("rw"), "app", "app", "", ""))
	probes.SetMaxIdleConns(0)
	read := func(c *sql.Conn, stmt string) string {
		t.Helper()
		if _, err := c.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
		node, _, _ := lastRoute(t, c)
		return node
	}

	const k = 6 // sessions held on replica1 through A
	for range k {
		if node := read(conn(t, dbA), "/*FORCE_NODE='replica1'*/ SELECT 1"); node != "replica1" {
			t.Fatalf("A: forced read on %s", node)
		}
	}
	// A publishes its counts each second when they changed; B's members watch delivers them.
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s", what)
			}
		}
	}
	waitUntil("B sees A's sessions on replica1", func() bool {
		ci, err := b.ClusterInfo()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ci.Members {
			if m.Name == "a" && m.Connections["replica1"] == k {
				return true
			}
		}
		return false
	})
	bIdle := func() bool { // B holds no connection to a replica (a closed session's goes soon after)
		for _, n := range b.Nodes() {
			if n.Name != "primary" && n.Connections != 0 {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		waitUntil("B's probe sessions close", bIdle)
		c := conn(t, probes)
		node := read(c, "SELECT 1")
		c.Close()
		if node == "replica2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with %d sessions on replica1 through A, B's reads still go to %s", k, node)
		}
	}
	waitUntil("B's probe session closes", bIdle)
	// Three held sessions of B: replica2, each time (B's own 0, 1, 2 there against A's 6).
	for i := range 3 {
		if node := read(conn(t, dbB), "SELECT 1"); node != "replica2" {
			t.Fatalf("B's session %d read on %s, want replica2", i+1, node)
		}
	}
	// Counted by B alone: replica1, where it holds nothing.
	if _, err := b.PatchEndpoint("rw", map[string]json.RawMessage{"connections_from": json.RawMessage(`"proxy"`)}); err != nil {
		t.Fatal(err)
	}
	if node := read(conn(t, dbB), "SELECT 1"); node != "replica1" {
		t.Fatalf("connections_from proxy: B's read on %s, want replica1", node)
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
