package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/sandbox"
)

// lockedBuffer is an io.Writer that a test reads while another goroutine writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestSandboxProxyZones: --proxies goes with zones (default az1,az2), --zones only with it.
func TestSandboxProxyZones(t *testing.T) {
	for _, c := range []struct {
		n       int
		list    string
		want    []string
		wantErr string
	}{
		{1, "", nil, ""},
		{3, "", []string{"az1", "az2"}, ""},
		{2, "eu-1a, eu-1b,eu-1c", []string{"eu-1a", "eu-1b", "eu-1c"}, ""},
		{1, "az1", nil, "use it with --proxies N"},
		{0, "", nil, "--proxies 0"},
		{2, "az1,,az2", nil, "zone names"},
		{2, "az 1", nil, "zone names"},
		{2, "az1,az1", nil, "named twice"},
	} {
		got, err := proxyZones(c.n, c.list)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("proxyZones(%d, %q): %v, want an error with %q", c.n, c.list, err, c.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("proxyZones(%d, %q) = %q, %v; want %q", c.n, c.list, got, err, c.want)
		}
	}
}

// TestSandboxPlanProxies: pK listens on --rw + 2(K-1), --ro + 2(K-1), --admin-port + (K-1), in
// zone K round-robin; ports that would collide, with each other or the cluster's nodes, are
// refused before anything starts, and so is a port of p2..pN in use.
func TestSandboxPlanProxies(t *testing.T) {
	plans, err := planProxies(3, []string{"az1", "az2"}, 46033, 46034, 46080, 43306, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plans {
		got = append(got, fmt.Sprintf("%s %s %d %d %d", p.name, p.zone, p.rw, p.ro, p.admin))
	}
	if want := "[p1 az1 46033 46034 46080 p2 az2 46035 46036 46081 p3 az1 46037 46038 46082]"; fmt.Sprint(got) != want {
		t.Errorf("plans %v, want %s", got, want)
	}
	plans, err = planProxies(2, []string{"a"}, 0, 0, -1, 0, 3)
	if err != nil || plans[1].rw != 0 || plans[1].ro != 0 || plans[1].admin != -1 {
		t.Errorf("free ports, no admin: %+v, %v", plans, err)
	}
	for _, c := range []struct {
		rw, ro, admin, base int
		want                string
	}{
		{46033, 46035, 46080, 0, "port 46035 would serve both p1's endpoint ro and p2's endpoint rw"},
		{46033, 46034, 46034 + 2, 0, "port 46036 would serve both p1's admin API and p2's endpoint ro"},
		{46033, 46034, 46080, 46080, "would serve both cluster node 0 (--base-port) and p1's admin API"},
		{65533, 65534, 46080, 0, "out of range"},
	} {
		_, err := planProxies(3, []string{"a"}, c.rw, c.ro, c.admin, c.base, 3)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rw %d ro %d admin %d base %d: %v, want %q", c.rw, c.ro, c.admin, c.base, err, c.want)
		}
	}
	busy := holdPort(t)
	_, err = planProxies(2, []string{"a"}, 46033, busy-2, 46080, 0, 3)
	var inUse *sandbox.PortsInUseError
	if !errors.As(err, &inUse) || len(inUse.Busy) != 1 || inUse.Busy[0].Port != busy || inUse.Busy[0].Use != sandbox.PortRO {
		t.Fatalf("p2's ro port %d in use: %v", busy, err)
	}
	if msg := explainPorts(err, runPortFlags).Error(); !strings.Contains(msg, "(p2's endpoint ro)") || !strings.Contains(msg, "--ro") {
		t.Errorf("explained: %s", msg)
	}
}

// holdPort listens on a free port of 127.0.0.1 (sandbox.FreePorts': 20000 or above) for the
// test's duration.
func holdPort(t *testing.T) int {
	t.Helper()
	for {
		free, err := sandbox.FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(free[0]))
		if err != nil {
			continue
		}
		t.Cleanup(func() { l.Close() })
		return free[0]
	}
}

// TestSandboxBootstraps: each proxy's file holds its own settings and the store with
// clear_secrets; p1's also the shared configuration, which parses with them as one whole
// (zones on the backends, nearest_zone on rw); the others' hold local keys only.
func TestSandboxBootstraps(t *testing.T) {
	dir := t.TempDir()
	c := &sandbox.Cluster{Dir: dir, RW: "127.0.0.1:6033", RO: "127.0.0.1:6034", Admin: "127.0.0.1:6080", Nodes: []sandbox.Node{
		{Name: "primary", Role: sandbox.RolePrimary, Address: "127.0.0.1:23306", Zone: "az1"},
		{Name: "replica1", Role: sandbox.RoleReplica, Address: "127.0.0.1:23307", Zone: "az2"}}}
	// sluice.yaml as sandbox.Up writes it for a zoned cluster.
	yaml := "users:\n  - name: app\n    password: app\nbackends:\n" +
		"  - {name: primary, address: 127.0.0.1:23306, role: primary, zone: az1}\n" +
		"  - {name: replica1, address: 127.0.0.1:23307, role: replica, zone: az2}\n" +
		"monitor: {user: sluice_monitor, password: monitor}\nendpoints:\n" +
		"  - {name: rw, listen: 127.0.0.1:6033, mode: read-write, read_weights: {primary: 0, replica1: 100}, nearest_zone: true}\n" +
		"  - {name: ro, listen: 127.0.0.1:6034, mode: read-only, read_weights: {replica1: 100}}\n" +
		"admin:\n  listen: 127.0.0.1:6080\nlog: {format: text, level: info}\n"
	if err := os.WriteFile(filepath.Join(dir, sandbox.ConfigFile), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	plans := []proxyPlan{{name: "p1", zone: "az1", rw: 6033, ro: 6034, admin: 6080}, {name: "p2", zone: "az2", rw: 6035, ro: 6036, admin: -1}}
	if err := writeBootstraps(c, plans, "127.0.0.1:2379"); err != nil {
		t.Fatal(err)
	}
	for i, p := range plans {
		if want := filepath.Join(dir, "sluice-"+p.name+".yaml"); p.path != want {
			t.Errorf("%s's file %s, want %s", p.name, p.path, want)
		}
		data, err := os.ReadFile(p.path)
		if err != nil {
			t.Fatal(err)
		}
		local, err := config.ParseLocal(p.path, data)
		if err != nil {
			t.Fatalf("%s:\n%s\n%v", p.name, data, err)
		}
		if local.Name != p.name || local.Zone != p.zone || local.Listen["rw"] != fmt.Sprintf("127.0.0.1:%d", p.rw) ||
			local.Listen["ro"] != fmt.Sprintf("127.0.0.1:%d", p.ro) || !local.Store.ClearSecrets ||
			fmt.Sprint(local.Store.Etcd.Endpoints) != "[127.0.0.1:2379]" || local.Store.Etcd.Prefix != sandboxPrefix {
			t.Errorf("%s's local settings: %+v\n%s", p.name, local, data)
		}
		if wantAdmin := map[bool]string{true: "127.0.0.1:6080", false: ""}[p.admin > 0]; local.Admin.Listen != wantAdmin {
			t.Errorf("%s's admin %q, want %q", p.name, local.Admin.Listen, wantAdmin)
		}
		shared, ok, err := config.SharedPart(p.path, data)
		if err != nil || ok != (i == 0) {
			t.Fatalf("%s's shared part: %v, %v (want one only in p1's)", p.name, ok, err)
		}
		if i > 0 {
			continue
		}
		cfg, err := config.ParseShared(p.path, data, "etcd:/sluice/sandbox/config", shared)
		if err != nil {
			t.Fatalf("p1's file does not parse as one configuration:\n%s\n%v", data, err)
		}
		if cfg.Backend("replica1").Zone != "az2" || !cfg.Endpoint("rw").NearestZone {
			t.Errorf("p1's shared part lost the zones:\n%s", shared)
		}
	}
}

// TestSandboxProxies runs sluice sandbox --proxies 3 --zones az1,az2 in this process, on free
// ports: each proxy serves (and reads from its own zone's replica), GET /v1/cluster lists the
// three with their zones, a change through p2's admin API is in force on p3 within 2 s; and
// once its context ends, nothing it started is left running, and its directory is gone.
func TestSandboxProxies(t *testing.T) {
	for _, check := range []func() error{sandbox.Available, func() error { _, err := sandbox.EtcdBinary(); return err }} {
		if err := check(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal(err) // CI installs both: a missing one is a failure there, not a skip
			}
			t.Skip(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- sandboxRunContext(ctx, []string{"--proxies", "3", "--zones", "az1,az2", "--replicas", "2",
			"--base-port", "0", "--rw", "0", "--ro", "0", "--admin-port", "0"}, &stdout, &stderr)
	}()
	defer func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}()
	deadline := time.After(4 * time.Minute)
	for !strings.Contains(stdout.String(), "Press Ctrl-C to stop.") {
		select {
		case code := <-done:
			t.Fatalf("the sandbox exited (%d) before its proxies served", code)
		case <-deadline:
			t.Fatal("the sandbox's proxies did not all serve within 4 minutes")
		case <-time.After(100 * time.Millisecond):
		}
	}
	banner := stdout.String()
	dir := regexp.MustCompile(`in (\S+) \(removed on exit\)`).FindStringSubmatch(banner)
	rows := regexp.MustCompile(`(?m)^  (p\d)\s+(\S+)\s+(127\.0\.0\.1:\d+)\s+(127\.0\.0\.1:\d+)\s+(127\.0\.0\.1:\d+)\s+(\S+)$`).FindAllStringSubmatch(banner, -1)
	if dir == nil || len(rows) != 3 {
		t.Fatalf("banner without the directory or 3 proxies:\n%s", banner)
	}
	for _, want := range []string{"ctl --admin " + rows[0][5] + " cluster", "share their configuration through etcd at 127.0.0.1:"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	c, err := sandbox.Open(dir[1])
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{}
	replicaIn := map[string]int{} // zone -> port of its replica
	for _, n := range c.Nodes {
		zoneOf[n.Name] = n.Zone
		if n.Role == sandbox.RoleReplica {
			replicaIn[n.Zone] = n.Port
		}
	}
	if fmt.Sprint(zoneOf) != "map[primary:az1 replica1:az2 replica2:az1]" {
		t.Errorf("node zones %v, want primary and replica2 in az1, replica1 in az2", zoneOf)
	}
	wantZone := map[string]string{"p1": "az1", "p2": "az2", "p3": "az1"}
	for _, r := range rows {
		name, zone, rw := r[1], r[2], r[3]
		if zone != wantZone[name] {
			t.Errorf("%s in zone %s, want %s", name, zone, wantZone[name])
		}
		db, err := sql.Open("mysql", sandbox.AppUser+":"+sandbox.AppPassword+"@tcp("+rw+")/")
		if err != nil {
			t.Fatal(err)
		}
		// A read through rw goes to the replica of the proxy's own zone (nearest_zone), once the
		// monitor has seen the nodes.
		var port int
		for end := time.Now().Add(10 * time.Second); ; {
			err = db.QueryRow("SELECT @@port").Scan(&port)
			if err == nil && port == replicaIn[zone] || time.Now().After(end) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		db.Close()
		if err != nil || port != replicaIn[zone] {
			t.Errorf("%s (%s): a read through rw %s answered from port %d (%v), want %d (its zone's replica)", name, zone, rw, port, err, replicaIn[zone])
		}
	}

	var info admin.ClusterInfo
	for end := time.Now().Add(5 * time.Second); ; {
		info = admin.ClusterInfo{}
		err := getJSON("http://"+rows[0][5]+"/v1/cluster", &info)
		if err == nil && len(info.Members) == 3 || time.Now().After(end) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var members []string
	for _, m := range info.Members {
		members = append(members, m.Name+":"+m.Zone+":"+m.Admin)
	}
	if want := fmt.Sprintf("[p1:az1:%s p2:az2:%s p3:az1:%s]", rows[0][5], rows[1][5], rows[2][5]); fmt.Sprint(members) != want {
		t.Errorf("GET /v1/cluster on p1: members %v, want %s", members, want)
	}

	req, _ := http.NewRequest(http.MethodPatch, "http://"+rows[1][5]+"/v1/endpoints/rw", strings.NewReader(`{"read_weights": {"replica1": 50}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH /v1/endpoints/rw on p2: %s", resp.Status)
	}
	changed := time.Now()
	for {
		var ep admin.Endpoint
		if err := getJSON("http://"+rows[2][5]+"/v1/endpoints/rw", &ep); err != nil {
			t.Fatal(err)
		}
		if ep.Settings.ReadWeights["replica1"] == 50 {
			break
		}
		if time.Since(changed) > 2*time.Second {
			t.Fatalf("p3's rw read_weights still %v 2 s after the change through p2", ep.Settings.ReadWeights)
		}
		time.Sleep(50 * time.Millisecond)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after its context ended, want 0", code)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the sandbox did not stop within 3 minutes of its context's end")
	}
	if _, err := os.Stat(dir[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there (%v)", dir[1], err)
	}
	if left := processesIn(dir[1]); len(left) > 0 {
		t.Errorf("left running: %q", left)
	}
}

// getJSON GETs url and decodes its 200 answer into v.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// processesIn lists the processes whose command line mentions dir (Linux; none elsewhere).
func processesIn(dir string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		out = append(out, filepath.Base(filepath.Dir(p))+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return out
}
