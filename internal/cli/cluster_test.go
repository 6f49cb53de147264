package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// Several sluice processes (real ones: `sluice serve`, killed and restarted) sharing their
// configuration through a real etcd (Debian's etcd-server), in front of the test cluster.

const (
	clusterAppPW = "SLUICE_TEST_APP_PASSWORD"
	clusterMonPW = "SLUICE_TEST_MONITOR_PASSWORD"
)

// proxyNode is one sluice process of a test cluster.
type proxyNode struct {
	name, zone string
	boot       string // its own file
	ports      map[string]int
	admin      string
	cmd        *exec.Cmd
	exited     chan error
	logs       *syncBuffer
}

func (n *proxyNode) addr(endpoint string) string {
	return "127.0.0.1:" + strconv.Itoa(n.ports[endpoint])
}

// proxyCluster is etcd and the sluice nodes.
type proxyCluster struct {
	t      *testing.T
	etcd   *sandbox.Etcd
	prefix string
	nodes  []*proxyNode
	link   *link
}

// link is a TCP relay to etcd that can be cut (every connection closed, new ones refused) and
// healed.
type link struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newLink(t *testing.T, target string) *link {
	l := &link{t: t, target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.addr = ln.Addr().String()
	l.serve(ln)
	t.Cleanup(l.cut)
	return l
}

func (l *link) serve(ln net.Listener) {
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", l.target)
			if err != nil {
				c.Close()
				continue
			}
			l.mu.Lock()
			l.conns = append(l.conns, c, u)
			l.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
}

// cut closes the link: its listener and every connection through it.
func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		l.ln.Close()
		l.ln = nil
	}
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// heal listens again on the same address.
func (l *link) heal() {
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		l.t.Fatal(err)
	}
	l.serve(ln)
}

// clusterEndpoints: rw at global (the cross-node torture), latest (the cross-node window), near
// (nearest_zone) and split (the weights the propagation test changes).
var clusterEndpoints = []string{"rw", "latest", "near", "split", "sess"}

// sharedConfig is the configuration the nodes share, for the test cluster c: passwords as
// ${NAME} references each sluice resolves from its own environment; replica1 in az1 with the
// primary, replica2 in az2.
func sharedConfig(c *sandbox.Cluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "users:\n  - name: %s\n    password: ${%s}\n", sandbox.AppUser, clusterAppPW)
	b.WriteString("backends:\n")
	for _, n := range c.Nodes {
		zone := "az1"
		if n.Name == "replica2" {
			zone = "az2"
		}
		fmt.Fprintf(&b, "  - {name: %s, address: %q, role: %s, zone: %s}\n", n.Name, n.Address, n.Role, zone)
	}
	fmt.Fprintf(&b, "monitor:\n  user: %s\n  password: ${%s}\n  interval: 250ms\n", sandbox.MonitorUser, clusterMonPW)
	b.WriteString(`endpoints:
  - {name: rw, listen: "127.0.0.1:0", read_weights: {primary: 0, replica1: 100, replica2: 100}, consistency: global}
  - {name: latest, listen: "127.0.0.1:0", read_weights: {primary: 0, replica1: 100, replica2: 100}, consistency: latest}
  - {name: near, listen: "127.0.0.1:0", read_weights: {primary: 0, replica1: 100, replica2: 100}, nearest_zone: true}
  - {name: split, listen: "127.0.0.1:0", read_weights: {primary: 0, replica1: 100, replica2: 100}, balance: weighted}
  - {name: sess, listen: "127.0.0.1:0", read_weights: {primary: 0, replica1: 100, replica2: 100}, consistency: session}
`)
	return b.String()
}

// startProxyCluster starts etcd and n sluice nodes (zones az1, az2, az1, ...); node 1's file
// seeds the store.
func startProxyCluster(t *testing.T, n int) *proxyCluster {
	t.Helper()
	if _, err := sandbox.EtcdBinary(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err) // CI installs it (scripts/test.sh)
		}
		t.Skip(err)
	}
	c := testutil.Cluster(t)
	e, err := sandbox.StartEtcd(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	var id [4]byte
	_, _ = rand.Read(id[:])
	pc := &proxyCluster{t: t, etcd: e, prefix: "/sluice/test-" + hex.EncodeToString(id[:]) + "/"}
	// The last node reaches etcd through a link the test can cut: a partition of that node alone.
	pc.link = newLink(t, e.ClientAddr)
	shared := sharedConfig(c)
	for i := range n {
		zone := "az1"
		if i%2 == 1 {
			zone = "az2"
		}
		node := &proxyNode{name: "p" + strconv.Itoa(i+1), zone: zone, ports: map[string]int{}}
		ports, err := sandbox.FreePorts(len(clusterEndpoints) + 1)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "name: %s\nzone: %s\nadmin: {listen: \"127.0.0.1:%d\"}\nlog: {level: info}\nlisten:\n", node.name, zone, ports[0])
		for j, ep := range clusterEndpoints {
			node.ports[ep] = ports[j+1]
			fmt.Fprintf(&b, "  %s: \"127.0.0.1:%d\"\n", ep, node.ports[ep])
		}
		etcdAddr := e.ClientAddr
		if i == n-1 {
			etcdAddr = pc.link.addr
		}
		fmt.Fprintf(&b, "store:\n  etcd:\n    endpoints: [%q]\n    prefix: %s\n    dial_timeout: 1s\n  cache_file: %q\n", etcdAddr, pc.prefix,
			filepath.Join(t.TempDir(), node.name+".cache.json"))
		if i == 0 {
			b.WriteString(shared)
		}
		node.boot = filepath.Join(t.TempDir(), node.name+".yaml")
		if err := os.WriteFile(node.boot, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		pc.nodes = append(pc.nodes, node)
		pc.start(node)
	}
	t.Cleanup(func() {
		for _, n := range pc.nodes {
			if n.cmd != nil {
				_ = n.cmd.Process.Kill()
				pc.checkLog(n)
			}
		}
	})
	return pc
}

// checkLog fails the test when node's log shows a crash or, under -race, a data race.
func (pc *proxyCluster) checkLog(n *proxyNode) {
	log := n.logs.String()
	for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
		if i := strings.Index(log, bad); i >= 0 {
			pc.t.Errorf("%s's log has %q:\n%s", n.name, bad, log[i:min(len(log), i+4000)])
		}
	}
}

// start runs node's sluice process and waits until its admin API and endpoints answer.
func (pc *proxyCluster) start(n *proxyNode) {
	t := pc.t
	t.Helper()
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			env = append(env, e)
		}
	}
	n.cmd = exec.Command(os.Args[0])
	n.cmd.Env = append(env, childArgs+"="+strings.Join([]string{"serve", "--config", n.boot}, "\n"),
		clusterAppPW+"="+sandbox.AppPassword, clusterMonPW+"="+sandbox.MonitorPassword)
	n.logs = new(syncBuffer)
	n.cmd.Stderr = n.logs
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.exited = make(chan error, 1)
	cmd := n.cmd
	go func() { n.exited <- cmd.Wait() }()
	for _, ep := range clusterEndpoints {
		waitListen(t, n.addr(ep), n.logs)
	}
	data, err := os.ReadFile(n.boot)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), "admin: {listen: \"")
	n.admin, _, _ = strings.Cut(rest, "\"")
}

// kill ends node's process at once (SIGKILL).
func (pc *proxyCluster) kill(n *proxyNode) {
	_ = n.cmd.Process.Kill()
	<-n.exited
	pc.checkLog(n)
	n.cmd = nil
}

// api sends an admin request to node and decodes the answer into v (when not nil); it returns
// the HTTP status.
func api(t *testing.T, n *proxyNode, method, path string, body any, v any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+n.admin+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.name, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if s, ok := v.(*string); ok {
		*s = string(data)
	} else if v != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s on %s: %v: %s", method, path, n.name, err, data)
		}
	}
	return resp.StatusCode
}

// weightOf is node's read weight for backend on endpoint ep, as its API says.
func weightOf(t *testing.T, n *proxyNode, ep, backend string) int {
	t.Helper()
	var e struct {
		Settings struct {
			ReadWeights map[string]int `json:"read_weights"`
		}
	}
	if code := api(t, n, "GET", "/v1/endpoints/"+ep, nil, &e); code != 200 {
		t.Fatalf("GET /v1/endpoints/%s on %s: %d", ep, n.name, code)
	}
	return e.Settings.ReadWeights[backend]
}

// storeOf is node's /v1/proxy store section.
type storeView struct {
	Connected       bool     `json:"connected"`
	Revision        int64    `json:"revision"`
	Applied         int64    `json:"applied_revision"`
	Refused         string   `json:"refused"`
	RefusedRevision int64    `json:"refused_revision"`
	PendingRestart  []string `json:"pending_restart"`
	PeersStreaming  int      `json:"peers_streaming"`
	CommitWaits     uint64   `json:"commit_waits"`
	Timeouts        uint64   `json:"commit_wait_timeouts"`
}

func storeOf(t *testing.T, n *proxyNode) storeView {
	t.Helper()
	var p struct {
		Store *storeView `json:"store"`
	}
	if code := api(t, n, "GET", "/v1/proxy", nil, &p); code != 200 || p.Store == nil {
		t.Fatalf("GET /v1/proxy on %s: %d, store %v", n.name, code, p.Store)
	}
	return *p.Store
}

// eventually polls cond every 5 ms until it holds or d passes; it returns how long it took.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// portOf is the port of the node a read through addr ran on.
func readPort(t *testing.T, db *sql.DB) int {
	t.Helper()
	var p int
	if err := db.QueryRow("SELECT @@port").Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func nodePort(t *testing.T, name string) int {
	t.Helper()
	n, err := testutil.Cluster(t).Node(name)
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(n.Address)
	port, _ := strconv.Atoi(p)
	return port
}

// TestProxyCluster: three sluice processes in two zones share one configuration in etcd.
func TestProxyCluster(t *testing.T) {
	pc := startProxyCluster(t, 3)
	p1, p2, p3 := pc.nodes[0], pc.nodes[1], pc.nodes[2]
	app := func(n *proxyNode, ep string) *sql.DB {
		db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/test?interpolateParams=true", sandbox.AppUser, sandbox.AppPassword, n.addr(ep)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}

	t.Run("members", func(t *testing.T) {
		for _, n := range pc.nodes {
			eventually(t, 10*time.Second, n.name+" lists 3 live nodes", func() bool {
				var info struct {
					Members []struct {
						Name, Zone string
						Self       bool
					}
				}
				if api(t, n, "GET", "/v1/cluster", nil, &info) != 200 || len(info.Members) != 3 {
					return false
				}
				for i, m := range info.Members {
					if m.Name != pc.nodes[i].name || m.Zone != pc.nodes[i].zone || m.Self != (m.Name == n.name) {
						t.Fatalf("%s lists %+v", n.name, info.Members)
					}
				}
				return true
			})
		}
	})

	t.Run("propagation", func(t *testing.T) {
		// 100 weight changes through p1's API; the time from its answer until p2 and p3 both
		// show the change.
		var took []time.Duration
		for i := range 100 {
			w := 1 + i%50
			if i%2 == 1 {
				w += 50
			}
			if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica1": w}}, nil); code != 200 {
				t.Fatalf("change %d: PATCH answered %d", i, code)
			}
			start := time.Now()
			for _, n := range []*proxyNode{p2, p3} {
				defer func() {
					if t.Failed() {
						t.Logf("%s's log:\n%s", n.name, n.logs.String())
					}
				}()
				eventually(t, 5*time.Second, fmt.Sprintf("%s shows replica1 at %d", n.name, w), func() bool { return weightOf(t, n, "split", "replica1") == w })
			}
			took = append(took, time.Since(start))
		}
		p50, p99, mx := percentile(took, 0.5), percentile(took, 0.99), slices.Max(took)
		t.Logf("propagation from p1's answer to p2 and p3 showing it, 100 changes: p50 %v, p99 %v, max %v", p50, p99, mx)
		if p99 > time.Second {
			t.Errorf("p99 %v, want under 1 s", p99)
		}
		// The read split follows on the other nodes: replica1 at 0, every read through p3 on
		// replica2.
		if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica1": 0}}, nil); code != 200 {
			t.Fatalf("PATCH answered %d", code)
		}
		eventually(t, 5*time.Second, "p3 shows replica1 at 0", func() bool { return weightOf(t, p3, "split", "replica1") == 0 })
		db := app(p3, "split")
		want := nodePort(t, "replica2")
		for range 20 {
			if p := readPort(t, db); p != want {
				t.Fatalf("a read through p3 ran on port %d, want replica2's %d", p, want)
			}
		}
	})

	t.Run("nearest zone per node", func(t *testing.T) {
		// p1 and p3 run in az1 (with replica1), p2 in az2 (with replica2).
		for _, n := range pc.nodes {
			want := nodePort(t, "replica1")
			if n.zone == "az2" {
				want = nodePort(t, "replica2")
			}
			db := app(n, "near")
			for range 10 {
				if p := readPort(t, db); p != want {
					t.Fatalf("%s (%s): a read ran on port %d, want %d (its zone's replica)", n.name, n.zone, p, want)
				}
			}
		}
	})

	t.Run("conflicts", func(t *testing.T) {
		// A change made on a revision that is no longer the stored one gets 409 and changes
		// nothing.
		var sc struct {
			Revision int64
			Config   string
		}
		if api(t, p2, "GET", "/v1/config", nil, &sc) != 200 {
			t.Fatal("GET /v1/config")
		}
		if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"max_connections": 1000}, nil); code != 200 {
			t.Fatalf("PATCH: %d", code)
		}
		var msg string
		if code := api(t, p2, "PUT", "/v1/config", map[string]any{"config": sc.Config, "revision": sc.Revision}, &msg); code != 409 {
			t.Fatalf("an import on stale revision %d: %d %s, want 409", sc.Revision, code, msg)
		}
		// Concurrent changes through p1 and p2: each answered 200 or 409, and all nodes end on
		// the same revision and weights.
		var ok, conflict atomic.Int32
		for round := range 20 {
			var wg sync.WaitGroup
			for i, n := range []*proxyNode{p1, p2} {
				wg.Go(func() {
					w := 10 + round*2 + i
					var msg string
					switch code := api(t, n, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica2": w}}, &msg); code {
					case 200:
						ok.Add(1)
					case 409:
						conflict.Add(1)
					default:
						t.Errorf("PATCH on %s: %d %s", n.name, code, msg)
					}
				})
			}
			wg.Wait()
		}
		t.Logf("concurrent changes: %d applied, %d refused with 409", ok.Load(), conflict.Load())
		if ok.Load() < 20 {
			t.Errorf("%d changes applied in 20 rounds of 2: every round should apply one", ok.Load())
		}
		pc.converged(t)
	})

	t.Run("unreadable configuration refused", func(t *testing.T) {
		// A configuration this sluice cannot read (a key from a newer version) is refused by
		// every node as it arrives: the one in force stays, and each says so.
		var sc struct {
			Revision int64
			Config   string
		}
		api(t, p1, "GET", "/v1/config", nil, &sc)
		before := weightOf(t, p3, "split", "replica2")
		pc.putRaw(t, map[string]any{"format": 1, "writer": "newer", "config": sc.Config + "future_setting: 1\n"})
		for _, n := range pc.nodes {
			eventually(t, 5*time.Second, n.name+" refuses it", func() bool { return strings.Contains(storeOf(t, n).Refused, "future_setting") })
		}
		// Each node publishes its refusal: the others' view says who runs what, and why.
		eventually(t, 5*time.Second, "p1 sees p2 and p3 refuse it", func() bool {
			var info struct {
				Members []struct {
					Name    string
					Refused string
				}
			}
			api(t, p1, "GET", "/v1/cluster", nil, &info)
			n := 0
			for _, m := range info.Members {
				if m.Name != "p1" && strings.Contains(m.Refused, "future_setting") {
					n++
				}
			}
			return n == 2
		})
		pc.putRaw(t, map[string]any{"format": 2, "writer": "newer", "version": "v9", "config": strings.ReplaceAll(sc.Config, "replica2: "+strconv.Itoa(before), "replica2: 77")})
		for _, n := range pc.nodes {
			eventually(t, 5*time.Second, n.name+" refuses format 2", func() bool { return strings.Contains(storeOf(t, n).Refused, "format 2") })
			if w := weightOf(t, n, "split", "replica2"); w != before {
				t.Errorf("%s applied a refused configuration: replica2 at %d, want %d", n.name, w, before)
			}
		}
		// A change made here on the revision in force conflicts with the newer stored one: an
		// old node cannot overwrite what it cannot read.
		var msg string
		if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"max_connections": 999}, &msg); code != 409 {
			t.Errorf("a change over an unreadable stored configuration: %d %s, want 409", code, msg)
		}
		// A readable configuration stored again puts every node back in step.
		pc.putRaw(t, map[string]any{"format": 1, "writer": "test", "config": sc.Config})
		pc.converged(t)
		for _, n := range pc.nodes {
			if st := storeOf(t, n); st.Refused != "" {
				t.Errorf("%s still refuses: %s", n.name, st.Refused)
			}
		}
	})

	t.Run("restart-only setting pending everywhere", func(t *testing.T) {
		// An import through p2 that changes a setting only a restart applies reaches every
		// node's configuration, and each lists it as pending its restart.
		var sc struct {
			Revision int64
			Config   string
		}
		api(t, p2, "GET", "/v1/config", nil, &sc)
		var msg string
		if code := api(t, p2, "PUT", "/v1/config", map[string]any{"config": sc.Config + "timeouts: {connect: 3s}\n", "revision": sc.Revision}, &msg); code != 200 {
			t.Fatalf("import: %d %s", code, msg)
		}
		for _, n := range pc.nodes {
			eventually(t, 5*time.Second, n.name+" lists timeouts as pending a restart", func() bool {
				return slices.Contains(storeOf(t, n).PendingRestart, "timeouts")
			})
		}
		pc.converged(t)
		// A password in clear is not stored (the nodes' files do not say clear_secrets).
		clear := strings.Replace(sc.Config, "${"+clusterAppPW+"}", "hunter2", 1)
		st := storeOf(t, p2)
		if code := api(t, p2, "PUT", "/v1/config", map[string]any{"config": clear, "revision": st.Applied}, &msg); code != 400 || !strings.Contains(msg, "in clear") {
			t.Errorf("an import with a clear password: %d %s, want 400", code, msg)
		}
	})

	crossNode(t, pc, app)
}

// crossNode are TestProxyCluster's subtests that write through one node and read through
// another, and those that cut etcd away.
func crossNode(t *testing.T, pc *proxyCluster, app func(*proxyNode, string) *sql.DB) {
	p1, p2, p3 := pc.nodes[0], pc.nodes[1], pc.nodes[2]
	cl := testutil.Cluster(t)
	ctx := context.Background()
	setup := app(p1, "rw")
	if _, err := setup.Exec("CREATE TABLE IF NOT EXISTS t_xnode (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec("DELETE FROM t_xnode"); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var nextID atomic.Int64
	nextID.Store(1)

	t.Run("global across nodes, a replica paused", func(t *testing.T) {
		// Write through one node, read through another at consistency global: the read sees
		// the row every time, with replica1 paused (its reads would be stale).
		if err := cl.Pause(ctx, "replica1"); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := cl.Resume(ctx, "replica1"); err != nil {
				t.Error(err)
			}
		}()
		const workers, pairs = 4, 500
		var stale, done atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				from, to := pc.nodes[w%3], pc.nodes[(w+1)%3]
				wdb, rdb := app(from, "rw"), app(to, "rw")
				for range pairs {
					id := nextID.Add(1)
					if _, err := wdb.Exec("INSERT INTO t_xnode VALUES (?, 1)", id); err != nil {
						t.Error(err)
						return
					}
					var n int
					if err := rdb.QueryRow("SELECT COUNT(*) FROM t_xnode WHERE id = ?", id).Scan(&n); err != nil {
						t.Error(err)
						return
					}
					if n != 1 {
						stale.Add(1)
					}
					done.Add(1)
				}
			})
		}
		wg.Wait()
		t.Logf("global, write on one node, read on another, replica1 paused: %d stale of %d pairs", stale.Load(), done.Load())
		if stale.Load() != 0 || done.Load() != workers*pairs {
			t.Errorf("%d stale reads of %d pairs (want 0 of %d)", stale.Load(), done.Load(), workers*pairs)
		}
	})

	t.Run("session on one node", func(t *testing.T) {
		// A session's own writes, read back on the replicas through its node: nothing crosses
		// nodes.
		for _, n := range pc.nodes {
			db := app(n, "sess")
			db.SetMaxOpenConns(1)
			for range 100 {
				id := nextID.Add(1)
				if _, err := db.Exec("INSERT INTO t_xnode VALUES (?, 1)", id); err != nil {
					t.Fatal(err)
				}
				var c int
				if err := db.QueryRow("SELECT COUNT(*) FROM t_xnode WHERE id = ?", id).Scan(&c); err != nil || c != 1 {
					t.Fatalf("%s: a session did not read its own write (%d, %v)", n.name, c, err)
				}
			}
		}
	})

	t.Run("latest across nodes", func(t *testing.T) {
		// Write through one node's latest endpoint, read through another's right after the OK:
		// the read finds the row every time. The writing node streams the position of what it
		// acknowledged to the others and holds the OK until they have it (app/peers.go), so
		// the reading node waits for it on a replica without asking the primary.
		const workers, pairs = 4, 500
		var stale, done atomic.Int64
		var mu sync.Mutex
		var firstRead []time.Duration
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				from, to := pc.nodes[w%3], pc.nodes[(w+1)%3]
				wdb, rdb := app(from, "latest"), app(to, "latest")
				for range pairs {
					id := nextID.Add(1)
					if _, err := wdb.Exec("INSERT INTO t_xnode VALUES (?, 1)", id); err != nil {
						t.Error(err)
						return
					}
					start := time.Now()
					var n int
					if err := rdb.QueryRow("SELECT COUNT(*) FROM t_xnode WHERE id = ?", id).Scan(&n); err != nil {
						t.Error(err)
						return
					}
					took := time.Since(start)
					if n != 1 {
						stale.Add(1)
					}
					done.Add(1)
					mu.Lock()
					firstRead = append(firstRead, took)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("latest, write on one node, read on another: %d stale of %d pairs; the read p50 %v, p99 %v",
			stale.Load(), done.Load(), percentile(firstRead, 0.5), percentile(firstRead, 0.99))
		if stale.Load() != 0 || done.Load() != workers*pairs {
			t.Errorf("%d stale reads of %d pairs (want 0 of %d)", stale.Load(), done.Load(), workers*pairs)
		}
		// What the wait for the other nodes costs a write: the same insert through latest
		// (waits) and through sess (session level: does not).
		lat := func(ep string) time.Duration {
			db := app(p1, ep)
			var ds []time.Duration
			for range 300 {
				start := time.Now()
				if _, err := db.Exec("INSERT INTO t_xnode VALUES (?, 1)", nextID.Add(1)); err != nil {
					t.Fatal(err)
				}
				ds = append(ds, time.Since(start))
			}
			return percentile(ds, 0.5)
		}
		t.Logf("a write's latency, p50 of 300: %v at latest (waits for 2 peers), %v at session", lat("latest"), lat("sess"))
	})

	t.Run("a stuck peer does not slow writes", func(t *testing.T) {
		// p3 stopped (SIGSTOP: its connections stay open, it answers nothing): a latest write
		// through p1 waits for it once, up to consistency_timeout (10 ms), then no more until
		// it catches up.
		for _, n := range pc.nodes {
			eventually(t, 10*time.Second, n.name+" streams to both others", func() bool { return storeOf(t, n).PeersStreaming == 2 })
		}
		before := storeOf(t, p1).Timeouts
		if err := p3.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				_ = p3.cmd.Process.Signal(syscall.SIGCONT)
			}
		}()
		db := app(p1, "latest")
		var ds []time.Duration
		for range 50 {
			start := time.Now()
			if _, err := db.Exec("INSERT INTO t_xnode VALUES (?, 1)", nextID.Add(1)); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		after := storeOf(t, p1).Timeouts
		t.Logf("50 latest writes with p3 stopped: p50 %v, max %v, %d waits ended at the timeout", percentile(ds, 0.5), slices.Max(ds), after-before)
		if after-before < 1 || after-before > 3 {
			t.Errorf("%d waits ended at the timeout, want 1 (then p3 is not waited for)", after-before)
		}
		if p50 := percentile(ds, 0.5); p50 > 8*time.Millisecond {
			t.Errorf("writes p50 %v with a stuck peer: they keep waiting for it", p50)
		}
		_ = p3.cmd.Process.Signal(syscall.SIGCONT)
		resumed = true
		// Back, it catches up and is waited for again: a write through p1 read through p3.
		eventually(t, 10*time.Second, "p3 reads a write through p1 right after its OK", func() bool {
			id := nextID.Add(1)
			if _, err := db.Exec("INSERT INTO t_xnode VALUES (?, 1)", id); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := app(p3, "latest").QueryRow("SELECT COUNT(*) FROM t_xnode WHERE id = ?", id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n == 1
		})
	})

	t.Run("partitioned node", func(t *testing.T) {
		// p3 is cut from etcd: it applies no change the others made, says so, refuses changes
		// of its own (503), and goes on serving; once the link is back it catches up.
		before := weightOf(t, p3, "split", "replica2")
		pc.link.cut()
		eventually(t, 10*time.Second, "p3 says it is not connected", func() bool { return !storeOf(t, p3).Connected })
		if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica2": before + 1}}, nil); code != 200 {
			t.Fatalf("PATCH through p1: %d", code)
		}
		eventually(t, 5*time.Second, "p2 applies it", func() bool { return weightOf(t, p2, "split", "replica2") == before+1 })
		var msg string
		if code := api(t, p3, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica2": before + 2}}, &msg); code != 503 {
			t.Errorf("a change through the cut node: %d %s, want 503", code, msg)
		}
		time.Sleep(300 * time.Millisecond)
		if w := weightOf(t, p3, "split", "replica2"); w != before {
			t.Errorf("the cut node has replica2 at %d, want %d (what it had: it can apply nothing)", w, before)
		}
		if w := weightOf(t, p1, "split", "replica2"); w != before+1 {
			t.Errorf("p1 has replica2 at %d after the cut node's refused change, want %d", w, before+1)
		}
		if p := readPort(t, app(p3, "split")); p == 0 {
			t.Error("no read through the cut node")
		}
		pc.link.heal()
		eventually(t, 15*time.Second, "p3 catches up", func() bool { return weightOf(t, p3, "split", "replica2") == before+1 })
		pc.converged(t)
	})

	t.Run("etcd restarted under load", func(t *testing.T) {
		// Reads and writes through every node while etcd is down and back: no client error;
		// changes are refused while it is down, and the configuration converges after.
		stop := make(chan struct{})
		var errs, stmts atomic.Int64
		var wg sync.WaitGroup
		// The load ends with the subtest whatever ends it: a goroutine that logged after its
		// test ended would crash the test binary and leave etcd running.
		var stopOnce sync.Once
		endLoad := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
		defer endLoad()
		for i, n := range pc.nodes {
			wg.Go(func() {
				db := app(n, "rw")
				for {
					select {
					case <-stop:
						return
					default:
					}
					id := 1_000_000*(i+1) + int(nextID.Add(1))
					if _, err := db.Exec("INSERT INTO t_xnode VALUES (?, 2)", id); err != nil {
						errs.Add(1)
						t.Errorf("%s: %v", n.name, err)
					}
					var c int
					if err := db.QueryRow("SELECT COUNT(*) FROM t_xnode WHERE id = ?", id).Scan(&c); err != nil || c != 1 {
						errs.Add(1)
						t.Errorf("%s: read %d, %v", n.name, c, err)
					}
					stmts.Add(2)
				}
			})
		}
		time.Sleep(500 * time.Millisecond)
		if err := pc.etcd.Kill(); err != nil {
			t.Fatal(err)
		}
		for _, n := range pc.nodes {
			eventually(t, 10*time.Second, n.name+" says etcd is away", func() bool { return !storeOf(t, n).Connected })
		}
		var msg string
		if code := api(t, p2, "PATCH", "/v1/endpoints/split", map[string]any{"max_connections": 4321}, &msg); code != 503 {
			t.Errorf("a change while etcd is down: %d %s, want 503", code, msg)
		}
		time.Sleep(time.Second)
		if err := pc.etcd.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for _, n := range pc.nodes {
			eventually(t, 20*time.Second, n.name+" reconnects", func() bool { return storeOf(t, n).Connected })
		}
		if code := api(t, p2, "PATCH", "/v1/endpoints/split", map[string]any{"max_connections": 4322}, &msg); code != 200 {
			t.Errorf("a change after etcd came back: %d %s", code, msg)
		}
		pc.converged(t)
		time.Sleep(500 * time.Millisecond)
		endLoad()
		t.Logf("etcd killed and restarted under load: %d statements, %d client errors", stmts.Load(), errs.Load())
		if errs.Load() != 0 {
			t.Errorf("%d client errors", errs.Load())
		}
	})

	t.Run("drain, remove and add back through different nodes", func(t *testing.T) {
		// A drain through p2 drains replica2 on every node; its removal through p1 waits until
		// no sluice holds a connection to it, then every node removes it; added back through
		// p3, every node reads from it again.
		nodeState := func(n *proxyNode, name string) string {
			var node struct{ State string }
			if api(t, n, "GET", "/v1/nodes/"+name, nil, &node) != 200 {
				return "absent"
			}
			return node.State
		}
		var msg string
		// The propagation test left split with replica1 at 0: removing replica2 would leave it
		// no node to read from, which the configuration refuses (400).
		if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica1": 100}}, &msg); code != 200 {
			t.Fatalf("PATCH: %d %s", code, msg)
		}
		if code := api(t, p2, "POST", "/v1/nodes/replica2/drain", map[string]any{"timeout": "2s"}, &msg); code != 200 {
			t.Fatalf("drain through p2: %d %s", code, msg)
		}
		for _, n := range pc.nodes {
			eventually(t, 5*time.Second, n.name+" drains replica2", func() bool {
				st := nodeState(n, "replica2")
				return st == "draining" || st == "drained"
			})
		}
		r1 := nodePort(t, "replica1")
		for _, n := range pc.nodes {
			if p := readPort(t, app(n, "sess")); p != r1 {
				t.Errorf("%s read on port %d while replica2 is drained everywhere, want replica1's %d", n.name, p, r1)
			}
		}
		eventually(t, 15*time.Second, "replica2 removed through p1", func() bool {
			code := api(t, p1, "DELETE", "/v1/nodes/replica2", nil, &msg)
			if code != 200 && code != 409 {
				t.Fatalf("DELETE through p1: %d %q", code, msg)
			}
			return code == 200
		})
		for _, n := range pc.nodes {
			eventually(t, 5*time.Second, n.name+" removes replica2", func() bool { return nodeState(n, "replica2") == "absent" })
		}
		pc.converged(t)
		rn, err := cl.Node("replica2")
		if err != nil {
			t.Fatal(err)
		}
		weights := map[string]int{}
		for _, ep := range clusterEndpoints {
			weights[ep] = 100
		}
		if code := api(t, p3, "POST", "/v1/nodes", map[string]any{"name": "replica2", "address": rn.Address, "zone": "az2", "read_weights": weights}, &msg); code != 201 {
			t.Fatalf("add back through p3: %d %s", code, msg)
		}
		r2 := nodePort(t, "replica2")
		for _, n := range pc.nodes {
			eventually(t, 15*time.Second, n.name+" reads from replica2 again", func() bool {
				db := app(n, "sess")
				for range 10 {
					if readPort(t, db) == r2 {
						return true
					}
				}
				return false
			})
		}
		pc.converged(t)
		for _, n := range pc.nodes {
			if st := storeOf(t, n); st.Refused != "" {
				t.Errorf("%s refused a stored configuration: %s", n.name, st.Refused)
			}
		}
	})

	t.Run("node killed and restarted", func(t *testing.T) {
		// p3 killed; a change made while it is away; restarted, it runs the current
		// configuration and is listed live again.
		pc.kill(p3)
		w := weightOf(t, p1, "split", "replica2") + 5
		if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica2": w}}, nil); code != 200 {
			t.Fatalf("PATCH: %d", code)
		}
		pc.start(p3)
		if got := weightOf(t, p3, "split", "replica2"); got != w {
			t.Errorf("restarted p3 has replica2 at %d, want %d", got, w)
		}
		eventually(t, 15*time.Second, "p1 lists the restarted p3", func() bool {
			var info struct {
				Members []struct {
					Name string
					PID  int
				}
			}
			api(t, p1, "GET", "/v1/cluster", nil, &info)
			for _, m := range info.Members {
				if m.Name == "p3" && m.PID == p3.cmd.Process.Pid {
					return true
				}
			}
			return false
		})
		pc.converged(t)
	})

	t.Run("node restarted while etcd is down", func(t *testing.T) {
		// With store.cache_file, a node that starts while etcd is unreachable starts from its
		// copy of the configuration it last applied, serves, and catches up once etcd is back.
		w := weightOf(t, p1, "split", "replica2")
		time.Sleep(1200 * time.Millisecond) // the copy is written within a second of a change
		pc.kill(p3)
		if err := pc.etcd.Kill(); err != nil {
			t.Fatal(err)
		}
		pc.start(p3)
		if got := weightOf(t, p3, "split", "replica2"); got != w {
			t.Errorf("p3 started from its copy with replica2 at %d, want %d", got, w)
		}
		if st := storeOf(t, p3); st.Connected {
			t.Error("p3 says it is connected with etcd down")
		}
		if p := readPort(t, app(p3, "split")); p == 0 {
			t.Error("no read through p3")
		}
		if err := pc.etcd.Start(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "p3 reconnects", func() bool { return storeOf(t, p3).Connected })
		if code := api(t, p1, "PATCH", "/v1/endpoints/split", map[string]any{"read_weights": map[string]int{"replica2": w + 1}}, nil); code != 200 {
			t.Fatalf("PATCH after etcd came back: %d", code)
		}
		eventually(t, 10*time.Second, "p3 applies a change made after", func() bool { return weightOf(t, p3, "split", "replica2") == w+1 })
		pc.converged(t)
	})
}

// putRaw writes the stored configuration's key directly, as another sluice version would.
func (pc *proxyCluster) putRaw(t *testing.T, env map[string]any) {
	t.Helper()
	v, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{
		"key":   b64(pc.prefix + "config"),
		"value": b64(string(v)),
	})
	resp, err := http.Post("http://"+pc.etcd.ClientAddr+"/v3/kv/put", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("etcd put: %s", resp.Status)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// converged waits until every node has the stored revision in force and the same
// configuration text.
func (pc *proxyCluster) converged(t *testing.T) {
	t.Helper()
	eventually(t, 10*time.Second, "every node on the same revision", func() bool {
		var texts []string
		var revs []int64
		for _, n := range pc.nodes {
			if n.cmd == nil {
				continue
			}
			var sc struct {
				Revision int64
				Config   string
			}
			if api(t, n, "GET", "/v1/config", nil, &sc) != 200 {
				return false
			}
			st := storeOf(t, n)
			if st.Applied != st.Revision {
				return false
			}
			texts, revs = append(texts, sc.Config), append(revs, sc.Revision)
		}
		return len(slices.Compact(texts)) == 1 && len(slices.Compact(revs)) == 1
	})
}
