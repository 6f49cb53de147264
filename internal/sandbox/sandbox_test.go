package sandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/gtid"
)

// needServer skips when no server is installed, except on CI, where a missing server must fail
// the run rather than silently skip every integration test.
func needServer(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// tempDir is a short directory under os.TempDir: unix socket paths must stay under ~104
// bytes, and as root the servers can run as "mysql" only if it can reach the directory
// (t.TempDir's parent is 0700).
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sluice-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	// MkdirTemp makes it 0700; opening it lets root run the servers as "mysql", the usual case.
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// leftovers lists processes whose command line mentions dir (Linux only).
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		out = append(out, strings.TrimSuffix(filepath.Base(filepath.Dir(p)), "/")+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return out
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestCluster brings one cluster up and runs every control operation against it in order; one
// cluster keeps the package fast.
func TestCluster(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	dir := filepath.Join(tempDir(t), "c")

	// Take replica1's free port after Up checked it: Up must notice the bind failure and
	// retry that node on another port.
	var grabbed net.Listener
	o := Options{Dir: dir, TLS: true, Log: logWriter{t}, beforeStart: func(ports []int) {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[1]))
		if err != nil {
			t.Errorf("grab port %d: %v", ports[1], err)
			return
		}
		grabbed = l
	}}
	began := time.Now()
	c, err := Up(ctx, o)
	if grabbed != nil {
		defer grabbed.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Up took %s (%s %s)", time.Since(began).Round(time.Millisecond), c.Flavor, c.Version)
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = c.Down(context.Background())
		}
	})
	if grabbed != nil && c.Nodes[1].Port == grabbed.Addr().(*net.TCPAddr).Port {
		t.Errorf("replica1 kept the port we occupied: %d", c.Nodes[1].Port)
	}
	if len(c.Nodes) != 3 || c.Primary().Name != "primary" || len(c.Replicas()) != 2 || c.Replicas()[1].Name != "replica2" {
		t.Fatalf("unexpected nodes: %+v", c.Nodes)
	}

	app := func(node string) *sql.DB { return openDB(t, c.DSN(node, AppUser, AppPassword, "gotest")) }
	primary := app("primary")

	t.Run("Open", func(t *testing.T) {
		c2, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range c2.Nodes {
			if n != c.Nodes[i] {
				t.Errorf("node %d: got %+v, want %+v", i, n, c.Nodes[i])
			}
		}
		y, err := os.ReadFile(filepath.Join(dir, ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"  - name: replica2\n    address: " + c.Nodes[2].Address + "\n    role: replica\n",
			"    listen: " + c.RW + "\n    mode: read-write\n    read_weights: {primary: 0, replica1: 100, replica2: 100}\n",
			"    listen: " + c.RO + "\n    mode: read-only\n    read_weights: {replica1: 100, replica2: 100}\n",
			"monitor:\n  user: sluice_monitor\n  password: monitor\n",
		} {
			if !strings.Contains(string(y), want) {
				t.Errorf("sluice.yaml lacks %q:\n%s", want, y)
			}
		}
		st, err := os.Stat(filepath.Join(dir, StateFile))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("sandbox.json: %v, mode %v", err, st.Mode())
		}
	})

	t.Run("ReplicatesWrites", func(t *testing.T) {
		for _, q := range []string{
			"CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR(32))",
			"INSERT INTO kv VALUES (1, 'one')",
		} {
			if _, err := primary.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := c.WaitCaughtUp(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Replicas() {
			var v string
			if err := app(r.Name).QueryRow("SELECT v FROM kv WHERE k = 1").Scan(&v); err != nil || v != "one" {
				t.Errorf("%s: got %q, %v", r.Name, v, err)
			}
		}
	})

	t.Run("ReplicaRefusesAppWrites", func(t *testing.T) {
		_, err := app("replica1").Exec("INSERT INTO kv VALUES (100, 'forbidden')")
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1290 {
			t.Fatalf("write on replica: got %v, want error 1290 (read-only)", err)
		}
	})

	t.Run("MonitorAccount", func(t *testing.T) {
		mon := openDB(t, c.DSN("replica1", MonitorUser, MonitorPassword, ""))
		rows, err := mon.Query(gtid.ReplicaStatusQuery(c.fl.family()))
		if err != nil {
			t.Fatal(err)
		}
		if got := scanAll(rows); len(got) != 1 {
			t.Errorf("replica status as monitor: %d rows", len(got))
		}
		if _, err := mon.Exec("SHOW PROCESSLIST"); err != nil {
			t.Error(err)
		}
	})

	t.Run("TLS", func(t *testing.T) {
		pem, err := os.ReadFile(c.CertFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			t.Fatal("cert.pem holds no certificate")
		}
		if err := mysql.RegisterTLSConfig("sandbox-test", &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
		db := openDB(t, c.DSN("replica2", AppUser, AppPassword, "")+"?tls=sandbox-test")
		var name, cipher string
		if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil || cipher == "" {
			t.Fatalf("TLS session: cipher %q, %v", cipher, err)
		}
		rows, err := openDB(t, c.DSN("replica2", MonitorUser, MonitorPassword, "")).Query(gtid.ReplicaStatusQuery(c.fl.family()))
		if err != nil {
			t.Fatal(err)
		}
		if st := scanAll(rows); len(st) != 1 || st[0]["Master_SSL_Allowed"] != "Yes" {
			t.Errorf("replication link without TLS: %v", st)
		}
	})

	t.Run("AdminNotOverTCP", func(t *testing.T) {
		db := openDB(t, c.DSN("primary", c.AdminUser, c.AdminPassword, ""))
		if err := db.Ping(); err == nil {
			t.Fatal("the administrator account logged in over TCP")
		}
	})

	t.Run("PauseResume", func(t *testing.T) {
		if err := c.Pause(ctx, "replica1"); err != nil {
			t.Fatal(err)
		}
		if _, err := primary.Exec("INSERT INTO kv VALUES (2, 'two')"); err != nil {
			t.Fatal(err)
		}
		st := status(t, c, "replica1")
		if st.SQLRunning != "No" || st.SecondsBehind != nil {
			t.Errorf("paused replica1: SQL running %q, behind %v", st.SQLRunning, st.SecondsBehind)
		}
		err := c.WaitCaughtUp(ctx, 500*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "replica1") || strings.Contains(err.Error(), "replica2") {
			t.Errorf("WaitCaughtUp with replica1 paused: %v", err)
		}
		if err := c.Resume(ctx, "replica1"); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitCaughtUp(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if st := status(t, c, "replica1"); st.SQLRunning != "Yes" || st.SlavePos != status(t, c, "primary").BinlogPos {
			t.Errorf("resumed replica1: %+v", st)
		}
	})

	t.Run("Lag", func(t *testing.T) {
		if err := c.Lag(ctx, "replica2", 2); err != nil {
			t.Fatal(err)
		}
		if st := status(t, c, "replica2"); st.SQLDelay != 2 {
			t.Errorf("SQL_Delay = %d, want 2", st.SQLDelay)
		}
		if _, err := primary.Exec("INSERT INTO kv VALUES (3, 'three')"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := app("replica2").QueryRow("SELECT COUNT(*) FROM kv WHERE k = 3").Scan(&n); err != nil || n != 0 {
			t.Errorf("delayed replica2 already has the row (%d, %v)", n, err)
		}
		if err := c.WaitCaughtUp(ctx, 15*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.Lag(ctx, "replica2", 0); err != nil {
			t.Fatal(err)
		}
		if st := status(t, c, "replica2"); st.SQLDelay != 0 {
			t.Errorf("SQL_Delay = %d after Lag 0", st.SQLDelay)
		}
	})

	t.Run("StopStart", func(t *testing.T) {
		old := c.Nodes[2].PID
		if err := c.Stop(ctx, "replica2"); err != nil {
			t.Fatal(err)
		}
		if alive(old, c.Nodes[2].cnf()) {
			t.Fatal("replica2 still running after Stop")
		}
		if st := status(t, c, "replica2"); st.Up {
			t.Errorf("stopped replica2 reported up: %+v", st)
		}
		if _, err := primary.Exec("INSERT INTO kv VALUES (4, 'four')"); err != nil {
			t.Fatal(err)
		}
		// Only running replicas count.
		if err := c.WaitCaughtUp(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, "replica2"); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, "replica2"); err == nil {
			t.Error("second Start of a running node succeeded")
		}
		c2, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if pid := c2.Nodes[2].PID; pid == old || pid != c.Nodes[2].PID || !alive(pid, c.Nodes[2].cnf()) {
			t.Errorf("sandbox.json pid %d (old %d, now %d)", pid, old, c.Nodes[2].PID)
		}
		if err := c.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := app("replica2").QueryRow("SELECT v FROM kv WHERE k = 4").Scan(&v); err != nil || v != "four" {
			t.Errorf("restarted replica2: got %q, %v", v, err)
		}
	})

	t.Run("Down", func(t *testing.T) {
		// Down through a second handle, as `sluice sandbox down` does.
		c2, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if err := c2.Down(ctx); err != nil {
			t.Fatal(err)
		}
		downed = true
		t.Logf("Down took %s", time.Since(began).Round(time.Millisecond))
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists: %v", dir, err)
		}
		if l := leftovers(t, dir); len(l) > 0 {
			t.Errorf("processes left running: %v", l)
		}
	})
}

func status(t *testing.T, c *Cluster, name string) NodeStatus {
	t.Helper()
	all, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name == name {
			if s.Error != "" {
				t.Errorf("%s: %s", name, s.Error)
			}
			return s
		}
	}
	t.Fatalf("no status for %s", name)
	return NodeStatus{}
}

// A port that is in use is found before anything is created or started.
func TestUpPortInUse(t *testing.T) {
	needServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := filepath.Join(tempDir(t), "c")
	_, err = Up(context.Background(), Options{Dir: dir, BasePort: port - 1, Replicas: 1})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("got %v, want a port-in-use error naming %d", err, port)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created: %v", dir, err)
	}
}

// A node that fails to start (its port taken after the check) fails Up with its log, and
// the nodes that did start are killed.
func TestUpNodeFailsCleansUp(t *testing.T) {
	needServer(t)
	var base int
	for range 20 {
		free, err := FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		if p := free[0]; p < 65000 && PortFree(p+1) && PortFree(p+2) {
			base = p
			break
		}
	}
	if base == 0 {
		t.Skip("no three consecutive free ports")
	}
	root := tempDir(t)
	dir := filepath.Join(root, "c")
	var grabbed net.Listener
	_, err := Up(context.Background(), Options{Dir: dir, BasePort: base, Log: logWriter{t},
		beforeStart: func(ports []int) { grabbed, _ = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[2])) }})
	if grabbed != nil {
		defer grabbed.Close()
	}
	if err == nil {
		t.Fatal("Up succeeded with replica2's port taken")
	}
	t.Logf("error (expected):\n%v", err)
	if !strings.Contains(err.Error(), "replica2") || !strings.Contains(err.Error(), "Bind on TCP/IP port") {
		t.Errorf("error does not name replica2 and the bind failure: %v", err)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("processes left running: %v", l)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists: %v", dir, err)
	}
}

func TestOptionsValidation(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 100)
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "Dir is required"},
		{Options{Dir: "/tmp/x", Replicas: -1}, "Replicas"},
		{Options{Dir: "/tmp/x", BasePort: 65535}, "BasePort"},
		{Options{Dir: long}, "too long"},
		{Options{Dir: "/tmp/x", MaxConnections: 1}, "MaxConnections"},
		{Options{Dir: "/tmp/x", Zones: []string{"az1", ""}}, `zone ""`},
		{Options{Dir: "/tmp/x", Zones: []string{"az 1"}}, `zone "az 1"`},
	} {
		err := tc.o.normalize()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
	o := Options{Dir: "rel"}
	if err := o.normalize(); err != nil || !filepath.IsAbs(o.Dir) || o.Replicas != 2 || o.MaxConnections != 200 || o.BufferPoolMB != 64 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}

func TestYAML(t *testing.T) {
	c := &Cluster{Dir: "/d", RW: "127.0.0.1:6033", RO: "127.0.0.1:6034", Nodes: []Node{
		{Name: "primary", Role: RolePrimary, Address: "127.0.0.1:23306"},
		{Name: "replica1", Role: RoleReplica, Address: "127.0.0.1:23307"},
		{Name: "replica2", Role: RoleReplica, Address: "127.0.0.1:23308"},
	}}
	want := `# written by sluice sandbox for the cluster in /d
users:
  - name: app
    password: app
backends:
  - name: primary
    address: 127.0.0.1:23306
    role: primary
  - name: replica1
    address: 127.0.0.1:23307
    role: replica
  - name: replica2
    address: 127.0.0.1:23308
    role: replica
monitor:
  user: sluice_monitor
  password: monitor
endpoints:
  - name: rw
    listen: 127.0.0.1:6033
    mode: read-write
    read_weights: {primary: 0, replica1: 100, replica2: 100}
    balance: least-active
    consistency: session
  - name: ro
    listen: 127.0.0.1:6034
    mode: read-only
    read_weights: {replica1: 100, replica2: 100}
    balance: least-active
log: {format: text, level: info}
`
	if got := c.yaml(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestYAMLZones: with zones (Options.Zones) every backend names its zone, and endpoint rw reads
// from the proxy's own zone first; ro is as without.
func TestYAMLZones(t *testing.T) {
	c := &Cluster{Dir: "/d", RW: "127.0.0.1:6033", RO: "127.0.0.1:6034", Nodes: []Node{
		{Name: "primary", Role: RolePrimary, Address: "127.0.0.1:23306", Zone: "az1"},
		{Name: "replica1", Role: RoleReplica, Address: "127.0.0.1:23307", Zone: "az2"},
		{Name: "replica2", Role: RoleReplica, Address: "127.0.0.1:23308", Zone: "az1"},
	}}
	got := c.yaml()
	for _, want := range []string{
		"  - name: primary\n    address: 127.0.0.1:23306\n    role: primary\n    zone: az1\n",
		"  - name: replica1\n    address: 127.0.0.1:23307\n    role: replica\n    zone: az2\n",
		"  - name: replica2\n    address: 127.0.0.1:23308\n    role: replica\n    zone: az1\n",
		"    consistency: session\n    nearest_zone: true\n  - name: ro\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sluice.yaml:\n%s\nlacks:\n%s", got, want)
		}
	}
	if n := strings.Count(got, "nearest_zone"); n != 1 {
		t.Errorf("nearest_zone %d times, want once (rw):\n%s", n, got)
	}
}

func TestRedact(t *testing.T) {
	in := `CHANGE MASTER TO MASTER_USER='repl', MASTER_PASSWORD='s\'ecret', MASTER_USE_GTID=slave_pos`
	want := `CHANGE MASTER TO MASTER_USER='repl', MASTER_PASSWORD='***', MASTER_USE_GTID=slave_pos`
	if got := redact(in); got != want {
		t.Errorf("got %s", got)
	}
	if got := redact("CREATE USER 'a'@'b' IDENTIFIED BY 'x'"); got != "CREATE USER 'a'@'b' IDENTIFIED BY '***'" {
		t.Errorf("got %s", got)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string][2]int{
		"10.11.19-MariaDB-0+deb12u1-log": {10, 11},
		"10.6.21-MariaDB":                {10, 6},
		"8.0.36":                         {8, 0},
		"11.4.2-MariaDB":                 {11, 4},
		"garbage":                        {0, 0},
	} {
		if maj, min := parseVersion(in); maj != want[0] || min != want[1] {
			t.Errorf("%s: %d.%d", in, maj, min)
		}
	}
}

// TestWritableReplicas: with WritableReplicas the replicas run with read_only OFF, and
// ReplicaWrites finds a transaction written on a replica itself, and nothing before.
func TestWritableReplicas(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	c, err := Up(ctx, Options{Dir: filepath.Join(tempDir(t), "c"), Replicas: 1, WritableReplicas: true, Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background()) })
	primary := openDB(t, c.DSN("primary", AppUser, AppPassword, ""))
	for _, q := range []string{"CREATE DATABASE w", "CREATE TABLE w.t (id INT PRIMARY KEY)", "INSERT INTO w.t VALUES (1)"} {
		if _, err := primary.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitCaughtUp(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if w, err := c.ReplicaWrites(ctx); err != nil || len(w) != 0 {
		t.Fatalf("before any write on the replica: %v, %v", w, err)
	}
	replica := openDB(t, c.DSN("replica1", AppUser, AppPassword, ""))
	var ro int
	if err := replica.QueryRow("SELECT @@global.read_only").Scan(&ro); err != nil || ro != 0 {
		t.Fatalf("replica read_only = %d, %v; want 0", ro, err)
	}
	if _, err := replica.Exec("INSERT INTO w.t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	w, err := c.ReplicaWrites(ctx)
	if err != nil || len(w) != 1 || !strings.HasPrefix(w[0], "replica1: 0-2-") {
		t.Fatalf("after a write on the replica: %v, %v", w, err)
	}
}

// TestProxyProtocolFiles: under Options.ProxyProtocol every node takes PROXY headers from
// sluice's address only (proxy_protocol_networks), and sluice.yaml's backends send them.
func TestProxyProtocolFiles(t *testing.T) {
	fl := flavorFor(FlavorMariaDB, "mariadbd")
	for _, on := range []bool{false, true} {
		cnf := fl.cnf(nodeConfig{dir: "/d/primary", port: 23306, serverID: 1, bufferPoolMB: 64, maxConnections: 200, proxyProtocol: on})
		if got := strings.Contains(cnf, "\nproxy_protocol_networks=127.0.0.1/32\n"); got != on {
			t.Errorf("ProxyProtocol %v: proxy_protocol_networks line present %v:\n%s", on, got, cnf)
		}
	}
	c := &Cluster{Dir: "/d", RW: "127.0.0.1:6033", RO: "127.0.0.1:6034", ProxyProtocol: true, Nodes: []Node{
		{Name: "primary", Role: RolePrimary, Address: "127.0.0.1:23306"},
		{Name: "replica1", Role: RoleReplica, Address: "127.0.0.1:23307"},
	}}
	want := "backends:\n  - name: primary\n    address: 127.0.0.1:23306\n    role: primary\n    proxy_protocol: v2\n" +
		"  - name: replica1\n    address: 127.0.0.1:23307\n    role: replica\n    proxy_protocol: v2\nmonitor:"
	if got := c.yaml(); !strings.Contains(got, want) {
		t.Errorf("sluice.yaml:\n%s\nwant the backends:\n%s", got, want)
	}
}
