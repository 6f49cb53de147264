package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Options describes the cluster Up creates.
type Options struct {
	Dir        string // required; created if missing; must be empty or absent
	Replicas   int    // default 2
	BasePort   int    // 0 = free ports; P = primary on P, replicaK on P+K
	ProxyPorts [2]int // ports written into sluice.yaml for endpoints rw and ro; 0 = free ports
	// AdminPort is the admin API's port written into sluice.yaml (loopback, no token); 0 = a
	// free port, -1 = no admin listener.
	AdminPort         int
	TLS               bool // self-signed cert+key in DIR/tls, ssl_cert/ssl_key on every node
	PerformanceSchema bool // performance_schema=ON (go-sql-driver's connection-attribute tests need it)
	// WritableReplicas leaves read_only OFF on the replicas (MariaDB's default, and common in
	// practice), so that a write misrouted to a replica is seen instead of refused by the server.
	WritableReplicas bool
	// ProxyProtocol lets every node take the PROXY protocol header from sluice's address
	// (proxy_protocol_networks, MariaDB only) and sets proxy_protocol on the backends of
	// sluice.yaml: the nodes then see each client's own address, not sluice's.
	ProxyProtocol bool
	// Zones, when set, places the nodes in zones for sluice.yaml: node i (the primary first)
	// gets backends[].zone Zones[i % len(Zones)], and endpoint rw reads from the proxy's own
	// zone first (nearest_zone: true). For several sluice nodes in different zones (sluice
	// sandbox --proxies N --zones LIST). Names: letters, digits, '.', '_' and '-'.
	Zones          []string
	MaxConnections int       // default 200
	BufferPoolMB   int       // innodb_buffer_pool_size per node in MiB; default 64 (small, so nodes start fast)
	Log            io.Writer // progress lines; nil = discard

	// beforeStart, when set (tests only), runs after the ports are chosen and checked and
	// before any server starts, so a test can occupy a port in that window.
	beforeStart func(ports []int)
}

// Defaults used when the corresponding Options field is zero.
const (
	DefaultReplicas       = 2
	DefaultMaxConnections = 200
	DefaultBufferPoolMB   = 64
)

// maxSocketPath is the longest unix socket path the kernel accepts (sun_path is 108 bytes on
// Linux including the NUL, 104 on the BSDs; the smaller bound keeps us portable).
const maxSocketPath = 103

// normalize fills defaults and rejects options that cannot work, before anything is created.
func (o *Options) normalize() error {
	if o.Dir == "" {
		return errors.New("sandbox: Options.Dir is required")
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	o.Dir = abs
	if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.Replicas < 0 || o.Replicas > 64 {
		return fmt.Errorf("sandbox: Replicas must be between 1 and 64, got %d", o.Replicas)
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxConnections < 10 {
		return fmt.Errorf("sandbox: MaxConnections must be at least 10, got %d", o.MaxConnections)
	}
	if o.BufferPoolMB == 0 {
		o.BufferPoolMB = DefaultBufferPoolMB
	}
	if o.BufferPoolMB < 8 {
		return fmt.Errorf("sandbox: BufferPoolMB must be at least 8, got %d", o.BufferPoolMB)
	}
	if o.BasePort < 0 || (o.BasePort > 0 && o.BasePort+o.Replicas > 65535) {
		return fmt.Errorf("sandbox: BasePort %d out of range for %d nodes", o.BasePort, o.Replicas+1)
	}
	if o.AdminPort < -1 || o.AdminPort > 65535 {
		return fmt.Errorf("sandbox: admin port %d out of range", o.AdminPort)
	}
	for _, p := range o.ProxyPorts {
		if p < 0 || p > 65535 {
			return fmt.Errorf("sandbox: proxy port %d out of range", p)
		}
	}
	for _, z := range o.Zones {
		if !validZone(z) {
			return fmt.Errorf("sandbox: zone %q: want a name of letters, digits, '.', '_' and '-'", z)
		}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	// The longest socket path belongs to the replica with the longest name.
	sock := filepath.Join(o.Dir, fmt.Sprintf("replica%d", o.Replicas), socketName)
	if len(sock) > maxSocketPath {
		return fmt.Errorf("sandbox: Dir %s is too long: the socket path %s would exceed %d bytes (unix socket limit); use a shorter directory",
			o.Dir, sock, maxSocketPath)
	}
	return nil
}

// prepareDir creates Dir or checks that it is empty, and reports whether it created it, so a
// failed Up can remove exactly what it made.
func prepareDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("sandbox: %w", err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("sandbox: %w", err)
	case len(entries) > 0:
		return false, fmt.Errorf("sandbox: directory %s is not empty (run 'sluice sandbox down --dir %s' if it holds an old sandbox)", dir, dir)
	}
	return false, nil
}

// validZone reports whether z is a zone name the sandbox writes as it is into sluice.yaml.
func validZone(z string) bool {
	if z == "" || len(z) > 64 {
		return false
	}
	for _, r := range z {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
