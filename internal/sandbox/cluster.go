package sandbox

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Accounts the sandbox creates on the primary; they replicate to every replica.
const (
	AppUser         = "app" // @127.0.0.1 and @localhost; ALL WITH GRANT OPTION, minus what would let it write on a read_only replica
	AppPassword     = "app"
	MonitorUser     = "sluice_monitor" // PROCESS, the replication-monitoring privileges and REPLICATION SLAVE (binlog streams); no SELECT
	MonitorPassword = "monitor"
	ReplUser        = "repl" // @127.0.0.1, REPLICATION SLAVE
	ReplPassword    = "repl"
	// AdminUser exists on every node separately (created at bootstrap, never replicated),
	// as @localhost: reachable only over the node's unix socket. Its password is random per
	// cluster and kept in sandbox.json (mode 0600).
	AdminUser = "sandbox_admin"
)

// Node roles.
const (
	RolePrimary = "primary"
	RoleReplica = "replica"
)

// File names in the cluster directory.
const (
	StateFile  = "sandbox.json"
	ConfigFile = "sluice.yaml"
)

// Node is one server of the cluster.
type Node struct {
	Name    string `json:"name"`    // primary, replica1, replica2, ...
	Role    string `json:"role"`    // primary | replica
	Address string `json:"address"` // 127.0.0.1:PORT
	Port    int    `json:"port"`
	PID     int    `json:"pid"` // 0 after Stop
	Socket  string `json:"socket"`
	Dir     string `json:"dir"`
	Zone    string `json:"zone,omitempty"` // backends[].zone in sluice.yaml (Options.Zones); "": none
}

// cnf is the node's option file; its path on the server's command line identifies the
// process as ours.
func (n *Node) cnf() string { return filepath.Join(n.Dir, cnfName) }

// Cluster is a running sandbox, as written to DIR/sandbox.json. Its methods are safe for
// concurrent use; the exported fields other than Node.PID and Node.Role (Switchover) never
// change after Up.
type Cluster struct {
	Dir     string `json:"dir"`
	Flavor  string `json:"flavor"`  // mariadb | mysql
	Version string `json:"version"` // @@version of the primary
	Nodes   []Node `json:"nodes"`
	RW      string `json:"rw"` // proxy endpoint addresses written into sluice.yaml
	RO      string `json:"ro"`
	Admin   string `json:"admin,omitempty"` // the admin API's address written into sluice.yaml; "": none

	AdminUser     string `json:"admin_user"`
	AdminPassword string `json:"admin_password"`
	TLS           bool   `json:"tls"`
	CertFile      string `json:"cert_file,omitempty"` // self-signed, also the CA to trust
	KeyFile       string `json:"key_file,omitempty"`
	// ProxyProtocol: the nodes take PROXY headers from sluice's address, and sluice.yaml's
	// backends send them (proxy_protocol: v2).
	ProxyProtocol bool   `json:"proxy_protocol,omitempty"`
	Server        string `json:"server"`             // the mariadbd/mysqld binary, reused by Start
	RunUser       string `json:"run_user,omitempty"` // OS user the servers run as when started by root

	mu     sync.Mutex              // guards Nodes[i].PID, exited and the state file
	fl     *flavor                 // SQL spelling for Flavor
	exited map[int]<-chan struct{} // pid -> closed on exit, for servers this process started
}

// Open reads DIR/sandbox.json, written by Up in this or another process.
func Open(dir string) (*Cluster, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(abs, StateFile))
	if err != nil {
		return nil, fmt.Errorf("sandbox: open %s: %w (is it a sandbox directory?)", abs, err)
	}
	c := &Cluster{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("sandbox: read %s: %w", filepath.Join(abs, StateFile), err)
	}
	primaries := 0
	for _, n := range c.Nodes {
		if n.Role == RolePrimary {
			primaries++
		}
	}
	if primaries != 1 {
		return nil, fmt.Errorf("sandbox: %s: want one primary node, found %d", filepath.Join(abs, StateFile), primaries)
	}
	c.fl = flavorFor(c.Flavor, c.Server)
	c.exited = map[int]<-chan struct{}{}
	return c, nil
}

// save writes sandbox.json atomically, so a concurrent Open never reads half a file. Mode
// 0600: it holds the administrator password.
func (c *Cluster) save() error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(c.Dir, StateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// Node returns the node called name (primary, replica1, ...).
func (c *Cluster) Node(name string) (*Node, error) {
	for i := range c.Nodes {
		if c.Nodes[i].Name == name {
			return &c.Nodes[i], nil
		}
	}
	names := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		names[i] = n.Name
	}
	return nil, fmt.Errorf("sandbox: no node %q (nodes: %s)", name, strings.Join(names, ", "))
}

// Primary returns the primary node (the first one until a Switchover).
func (c *Cluster) Primary() *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.Nodes {
		if c.Nodes[i].Role == RolePrimary {
			return &c.Nodes[i]
		}
	}
	return &c.Nodes[0]
}

// Replicas returns the replica nodes in order.
func (c *Cluster) Replicas() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Node, 0, len(c.Nodes)-1)
	for i := range c.Nodes {
		if c.Nodes[i].Role == RoleReplica {
			out = append(out, &c.Nodes[i])
		}
	}
	return out
}

// pid returns a node's recorded pid under the lock (Start and Stop change it).
func (c *Cluster) pid(n *Node) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return n.PID
}

// setPID records a node's new pid and persists it, so another process that Opens the cluster
// signals the right process.
func (c *Cluster) setPID(n *Node, pid int, exited <-chan struct{}) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.PID = pid
	if exited != nil {
		c.exited[pid] = exited
	}
	return c.save()
}

// DSN returns a go-sql-driver DSN over TCP to node name, or "" when there is no such node.
// It carries no parameters; callers add their own with "?".
func (c *Cluster) DSN(name, user, password, db string) string {
	n, err := c.Node(name)
	if err != nil {
		return ""
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net, cfg.Addr = "tcp", n.Address
	cfg.DBName = db
	return cfg.FormatDSN()
}

// AdminDB returns an administrator connection pool to one node, over its unix socket. The
// caller closes it.
func (c *Cluster) AdminDB(name string) (*sql.DB, error) {
	n, err := c.Node(name)
	if err != nil {
		return nil, err
	}
	return c.adminDB(n), nil
}

func (c *Cluster) adminDB(n *Node) *sql.DB {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = c.AdminUser, c.AdminPassword
	cfg.Net, cfg.Addr = "unix", n.Socket
	cfg.Timeout = 5 * time.Second
	// Polling a starting server produces connection errors we handle; the driver's default
	// logger would print them to stderr.
	cfg.Logger = &mysql.NopLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		// NewConnector only fails on an invalid Config, which ours never is.
		panic(err)
	}
	return sql.OpenDB(conn)
}

// zoned reports whether the nodes were placed in zones (Options.Zones).
func (c *Cluster) zoned() bool {
	for _, n := range c.Nodes {
		if n.Zone != "" {
			return true
		}
	}
	return false
}

// yaml renders sluice.yaml for this cluster. Written as text, in exactly the shape the config
// package documents, so the sandbox does not depend on it.
func (c *Cluster) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by sluice sandbox for the cluster in %s\n", c.Dir)
	fmt.Fprintf(&b, "users:\n  - name: %s\n    password: %s\n", AppUser, AppPassword)
	b.WriteString("backends:\n")
	for _, n := range c.Nodes {
		fmt.Fprintf(&b, "  - name: %s\n    address: %s\n    role: %s\n", n.Name, n.Address, n.Role)
		if n.Zone != "" {
			fmt.Fprintf(&b, "    zone: %s\n", n.Zone)
		}
		if c.ProxyProtocol {
			b.WriteString("    proxy_protocol: v2\n")
		}
	}
	fmt.Fprintf(&b, "monitor:\n  user: %s\n  password: %s\n", MonitorUser, MonitorPassword)
	var rw, ro []string
	for _, n := range c.Nodes {
		if n.Role == RolePrimary {
			rw = append(rw, n.Name+": 0")
			continue
		}
		rw = append(rw, n.Name+": 100")
		ro = append(ro, n.Name+": 100")
	}
	b.WriteString("endpoints:\n")
	// Reads on the replicas, and a client reads its own writes back (consistency: session): what
	// a user trying sluice first does must work.
	fmt.Fprintf(&b, "  - name: rw\n    listen: %s\n    mode: read-write\n    read_weights: {%s}\n    balance: least-active\n    consistency: session\n",
		c.RW, strings.Join(rw, ", "))
	if c.zoned() {
		// Each sluice reads from the replicas of its own zone first (its top-level zone).
		b.WriteString("    nearest_zone: true\n")
	}
	fmt.Fprintf(&b, "  - name: ro\n    listen: %s\n    mode: read-only\n    read_weights: {%s}\n    balance: least-active\n",
		c.RO, strings.Join(ro, ", "))
	if c.TLS {
		// The nodes' certificate serves the proxy too, so TLS clients work out of the box.
		fmt.Fprintf(&b, "tls:\n  cert: %s\n  key: %s\n", c.CertFile, c.KeyFile)
	}
	if c.Admin != "" {
		// Loopback only, so no token: sluice ctl --config DIR/sluice.yaml finds it.
		fmt.Fprintf(&b, "admin:\n  listen: %s\n", c.Admin)
	}
	b.WriteString("log: {format: text, level: info}\n")
	return b.String()
}
