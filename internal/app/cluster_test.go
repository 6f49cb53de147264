package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/store"
	"github.com/sluicedb/sluice/internal/topology"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestStoreOthers: each node's Others is the sum of what the other members published for it
// by name; this sluice's own record, names it does not have and free slots count nothing, and a
// member that left takes its counts with it.
func TestStoreOthers(t *testing.T) {
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{
		{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary},
		{Name: "replica1", Address: "127.0.0.1:2", Role: topology.Replica},
		{Name: "replica2", Address: "127.0.0.1:3", Role: topology.Replica},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	others := func() []int64 {
		snap := topo.Snapshot()
		out := make([]int64, len(snap.Load))
		for i, l := range snap.Load {
			out[i] = l.Others.Load()
		}
		return out
	}
	ms := []store.Member{
		{Name: "a", Instance: "i-a", Connections: map[string]int64{"primary": 1, "replica1": 4, "replica2": 1}},
		{Name: "b", Instance: "i-b", Connections: map[string]int64{"replica1": 2, "replica3": 9}},
		{Name: "self", Instance: "i-self", Connections: map[string]int64{"replica1": 100, "replica2": 100}},
		{Name: "c", Instance: "i-c"}, // nothing published yet
	}
	storeOthers(topo.Snapshot(), ms, "i-self")
	if got := others(); fmt.Sprint(got) != "[1 6 1]" {
		t.Fatalf("others = %v, want [1 6 1] (own record skipped, replica3 unknown)", got)
	}
	storeOthers(topo.Snapshot(), ms[1:], "i-self") // a's lease ended
	if got := others(); fmt.Sprint(got) != "[0 2 0]" {
		t.Fatalf("a left: others = %v, want [0 2 0]", got)
	}
	if err := topo.SetDraining(2, true); err != nil {
		t.Fatal(err)
	}
	if err := topo.RemoveNode(2); err != nil {
		t.Fatal(err)
	}
	storeOthers(topo.Snapshot(), ms, "i-self")
	if got := others(); fmt.Sprint(got) != "[1 6 0]" {
		t.Fatalf("replica2 removed: others = %v, want [1 6 0]", got)
	}
	storeOthers(topo.Snapshot(), nil, "i-self")
	if got := others(); fmt.Sprint(got) != "[0 0 0]" {
		t.Fatalf("no members: others = %v", got)
	}
}

// startEtcd starts an etcd server for the test (skipped where there is none, but for CI).
func startEtcd(t *testing.T) *sandbox.Etcd {
	t.Helper()
	if _, err := sandbox.EtcdBinary(); err != nil && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	e, err := sandbox.StartEtcd(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return e
}

// runOpen opens sluice from its file at path (app.Open, as serve does) and runs it until the
// test ends or stop is called.
func runOpen(t *testing.T, path string) (a *App, stop func()) {
	t.Helper()
	a, err := Open(context.Background(), path, "", "test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("%s did not start: %v", path, err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", path, err)
			}
		}
	}
	t.Cleanup(stop)
	return a, stop
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// TestConnectionsFromCluster: two sluice nodes on one etcd. Each sees the other's published
// connections (never its own twice), and a read-only endpoint with least-connections counted
// over the cluster binds B's new sessions away from the replica A is busy on, where counted by
// B alone it would not; once A leaves, its connections no longer count. The nodes' own counts
// are set by hand (no database here: internal/proxy's TestLeastConnectionsFromCluster holds
// real sessions).
func TestConnectionsFromCluster(t *testing.T) {
	e := startEtcd(t)
	dir := t.TempDir()
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/conns/}, clear_secrets: true}\n", e.ClientAddr)
	shared := strings.Replace(offline, "    mode: read-only\n", "    mode: read-only\n    balance: least-connections\n    connections_from: cluster\n", 1) +
		"timeouts: {connect: 200ms}\n"
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, stopA := runOpen(t, write("a.yaml", "name: a\n"+st+shared)) // seeds the store
	b, _ := runOpen(t, write("b.yaml", "name: b\n"+st))
	sa, sb := a.topo.Snapshot(), b.topo.Snapshot()
	sa.Load[1].Conns.Store(5) // A: 5 on replica1, 1 on replica2
	sa.Load[2].Conns.Store(1)
	sb.Load[2].Conns.Store(2) // B: 2 on replica2
	others := func(s *topology.Snapshot) string {
		return fmt.Sprint(s.Load[0].Others.Load(), s.Load[1].Others.Load(), s.Load[2].Others.Load())
	}
	waitFor(t, "B sees A's connections", func() bool { return others(b.topo.Snapshot()) == "0 5 1" })
	waitFor(t, "A sees B's connections", func() bool { return others(a.topo.Snapshot()) == "0 0 2" })

	bind := func() int {
		rs, _ := b.proxy.EndpointSettings("ro")
		return routeBind(&rs.Routing, b.topo.Snapshot())
	}
	// Over the cluster: replica1 0+5, replica2 2+1.
	if n := bind(); n != 2 {
		t.Fatalf("cluster counts: B bound a session to node %d, want replica2 (3 connections against 5)", n)
	}
	setFrom := func(from string) {
		t.Helper()
		if _, err := b.PatchEndpoint("ro", map[string]json.RawMessage{"connections_from": json.RawMessage(`"` + from + `"`)}); err != nil {
			t.Fatal(err)
		}
	}
	setFrom("proxy") // B's own: replica1 0, replica2 2
	if n := bind(); n != 1 {
		t.Fatalf("proxy counts: B bound a session to node %d, want replica1 (B holds none there)", n)
	}
	setFrom("cluster")
	waitFor(t, "A applies B's change", func() bool {
		rs, _ := a.proxy.EndpointSettings("ro")
		return rs.Routing.Policy.Name() == "least-connections" && a.config().Endpoints[1].ConnectionsFrom == "cluster"
	})
	if n := bind(); n != 2 {
		t.Fatalf("cluster counts again: node %d, want replica2", n)
	}

	stopA() // its registration goes, and its connections with it
	waitFor(t, "B drops A's connections", func() bool { return others(b.topo.Snapshot()) == "0 0 0" })
	if n := bind(); n != 1 {
		t.Fatalf("A gone: B bound a session to node %d, want replica1 (0 against 2)", n)
	}
}

// TestPatchConnectionsFromCluster: a sluice without a store refuses connections_from: cluster,
// and says why; the endpoint keeps its policy.
func TestPatchConnectionsFromCluster(t *testing.T) {
	a, _, _ := offlineApp(t, offline)
	_, err := a.PatchEndpoint("rw", map[string]json.RawMessage{"balance": json.RawMessage(`"least-connections"`),
		"connections_from": json.RawMessage(`"cluster"`)})
	if err == nil || !strings.Contains(err.Error(), "cluster needs store.etcd: the counts come from the other sluice nodes") {
		t.Fatalf("PATCH connections_from cluster without a store: %v", err)
	}
	if rs, _ := a.proxy.EndpointSettings("rw"); rs.Routing.Policy.Name() != "least-active" {
		t.Errorf("policy now %s", rs.Routing.Policy.Name())
	}
}

// TestPeerLinksEndWithRun: the links streaming commits to the other nodes are the cluster's
// goroutines too: none is left once Run returned.
func TestPeerLinksEndWithRun(t *testing.T) {
	e := startEtcd(t)
	dir := t.TempDir()
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/links/}, clear_secrets: true}\nadmin: {listen: 127.0.0.1:0}\n", e.ClientAddr)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, stopA := runOpen(t, write("a.yaml", "name: a\n"+st+offline+"timeouts: {connect: 200ms}\n"))
	b, stopB := runOpen(t, write("b.yaml", "name: b\n"+st))
	links := func(x *App) int {
		x.cluster.peers.mu.Lock()
		defer x.cluster.peers.mu.Unlock()
		return len(x.cluster.peers.links)
	}
	waitFor(t, "each node links to the other", func() bool { return links(a) == 1 && links(b) == 1 })
	stopA()
	stopB()
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, ").streamTo(") {
		t.Fatalf("a peer link still runs after Run returned:\n%s", stacks)
	}
}

// TestPeerSecretHeals: a node whose peer secret is no longer the store's (the key deleted and
// made anew by a node started since) is refused by its peers, reads the secret again, and its
// links stream again, instead of being refused for as long as it runs.
func TestPeerSecretHeals(t *testing.T) {
	e := startEtcd(t)
	dir := t.TempDir()
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/heal/}, clear_secrets: true}\nadmin: {listen: 127.0.0.1:0}\n", e.ClientAddr)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, _ := runOpen(t, write("a.yaml", "name: a\n"+st+offline+"timeouts: {connect: 200ms}\n"))
	waitFor(t, "A knows the secret", func() bool { return a.PeerSecret() != "" })
	stale := strings.Repeat("0", 64)
	a.cluster.peers.secret.Store(&stale)
	b, _ := runOpen(t, write("b.yaml", "name: b\n"+st))
	waitFor(t, "B knows the secret", func() bool { return b.PeerSecret() != "" })
	waitFor(t, "A reads the secret again once B refuses it", func() bool { return a.PeerSecret() == b.PeerSecret() })
}

// TestImportReplacesRefused: a stored configuration this sluice refused (here, a key it does
// not know) makes every change through its API conflict, and retrying cannot help: the 409
// says so, and an import naming the refused revision replaces it (before, the only way back
// was writing to etcd by hand).
func TestImportReplacesRefused(t *testing.T) {
	e := startEtcd(t)
	path := filepath.Join(t.TempDir(), "a.yaml")
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/refused/}, clear_secrets: true}\n", e.ClientAddr)
	if err := os.WriteFile(path, []byte("name: a\n"+st+offline+"timeouts: {connect: 200ms}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _ := runOpen(t, path)
	raw, err := store.Open(store.Options{Endpoints: []string{e.ClientAddr}, Prefix: "/sluice/refused/", DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	good, _ := a.SharedConfig()
	bad, err := raw.Put(context.Background(), []byte(good.Config+"future_setting: 1\n"), good.Revision, "newer", "v9")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "A refuses it", func() bool { return a.storeState().RefusedRevision == bad })
	_, err = a.PatchEndpoint("ro", map[string]json.RawMessage{"max_connections": json.RawMessage("7")})
	if err == nil || !strings.Contains(err.Error(), "--revision "+fmt.Sprint(bad)) {
		t.Fatalf("a change over the refused revision: %v, want a 409 naming the import", err)
	}
	if _, err := a.ImportConfig([]byte(good.Config), bad); err != nil {
		t.Fatalf("import on the refused revision: %v", err)
	}
	if s := a.storeState(); s.Refused != "" || s.Applied <= bad {
		t.Fatalf("after the import: %+v", s)
	}
	if _, err := a.PatchEndpoint("ro", map[string]json.RawMessage{"max_connections": json.RawMessage("7")}); err != nil {
		t.Fatalf("a change after the import: %v", err)
	}
}

// TestStoreStateWaitsForNoChange: GET /v1/proxy's store and SLUICE SHOW CLUSTER answer while a
// change is in flight (holding changeMu, which one does for up to the store's dial timeout when
// etcd does not answer): a client session waits for no etcd.
func TestStoreStateWaitsForNoChange(t *testing.T) {
	e := startEtcd(t)
	path := filepath.Join(t.TempDir(), "a.yaml")
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/state/}, clear_secrets: true}\n", e.ClientAddr)
	if err := os.WriteFile(path, []byte("name: a\n"+st+offline+"timeouts: {connect: 200ms}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _ := runOpen(t, path)
	a.changeMu.Lock()
	defer a.changeMu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.clusterView()
		a.Proxy()
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("SHOW CLUSTER and GET /v1/proxy wait for the change in flight")
	}
}

// TestOpenGarbageStored: a stored value sluice did not write is said at once, not taken for
// etcd being away (30 s of "etcd not reachable yet; retrying", then the real reason).
func TestOpenGarbageStored(t *testing.T) {
	e := startEtcd(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientAddr}, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "/sluice/garbage/config", "not json"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.yaml")
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/garbage/}, clear_secrets: true}\n", e.ClientAddr)
	if err := os.WriteFile(path, []byte("name: a\n"+st+offline), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Open(context.Background(), path, "", "test", slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "not one sluice wrote") {
		t.Fatalf("Open over garbage: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %v to say so", d)
	}
}

// TestNameTaken: a second live sluice under a name already registered is not listed (its
// connections count nowhere, no peer streams to it); its store state says who has the name.
func TestNameTaken(t *testing.T) {
	e := startEtcd(t)
	dir := t.TempDir()
	st := fmt.Sprintf("store: {etcd: {endpoints: ['%s'], prefix: /sluice/twins/}, clear_secrets: true}\n", e.ClientAddr)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, _ := runOpen(t, write("a.yaml", "name: twin\n"+st+offline+"timeouts: {connect: 200ms}\n"))
	waitFor(t, "A registered", func() bool {
		info, err := a.ClusterInfo()
		return err == nil && len(info.Members) == 1 && info.Members[0].Self
	})
	b, _ := runOpen(t, write("b.yaml", "name: twin\n"+st))
	waitFor(t, "B says its name is taken", func() bool {
		return strings.Contains(b.storeState().NameTakenBy, fmt.Sprintf("pid %d", os.Getpid()))
	})
	if s := a.storeState(); s.NameTakenBy != "" {
		t.Errorf("A, registered, says its name is taken by %s", s.NameTakenBy)
	}
}
