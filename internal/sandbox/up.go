package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Timeouts of the slow steps. Generous: on a loaded host (load average 3-8) a fresh cluster
// took up to 15 s in the reference runs, and CI machines can be slower still.
const (
	bootstrapTimeout = 3 * time.Minute
	readyTimeout     = 2 * time.Minute
	catchUpTimeout   = time.Minute
	stopGrace        = 30 * time.Second
	bindRetries      = 5
)

// errPortInUse marks a node that died because its port was taken after we checked it.
var errPortInUse = errors.New("port already in use")

// Up creates and starts a cluster in o.Dir and returns when every replica has caught up with
// the primary. It writes DIR/sandbox.json (for Open) and DIR/sluice.yaml (for the proxy).
// On error nothing is left running, and whatever Up created in o.Dir is removed; the error
// carries the last lines of the failing node's logs.
func Up(ctx context.Context, o Options) (_ *Cluster, err error) {
	if err := o.normalize(); err != nil {
		return nil, err
	}
	// Every port first, before looking for a server or creating anything: a port in use is
	// the commonest reason a cluster cannot come up, and finding it after the nodes started
	// (the admin API's, which only the proxy binds) wasted their start and their cleanup.
	nodes := o.Replicas + 1
	ports, proxy, err := choosePorts(o, nodes)
	if err != nil {
		return nil, err
	}
	admin := adminPort(o.AdminPort, ports, proxy)
	want := make([]BusyPort, 0, nodes+3)
	for i, p := range ports {
		want = append(want, BusyPort{Port: p, Use: PortNode, Name: nodeName(i)})
	}
	want = append(want, BusyPort{Port: proxy[0], Use: PortRW, Name: "endpoint rw"}, BusyPort{Port: proxy[1], Use: PortRO, Name: "endpoint ro"})
	if admin > 0 {
		if slices.Contains(ports, admin) || slices.Contains(proxy[:], admin) {
			return nil, fmt.Errorf("sandbox: admin port %d is also a node's or an endpoint's (nodes %v, endpoints %v)", admin, ports, proxy)
		}
		want = append(want, BusyPort{Port: admin, Use: PortAdmin, Name: "admin API"})
	}
	if err := checkPortsFree(want); err != nil {
		return nil, err
	}
	fl, err := findFlavor()
	if err != nil {
		return nil, err
	}
	if o.ProxyProtocol && !fl.mariadb() {
		return nil, fmt.Errorf("sandbox: the PROXY protocol needs MariaDB (proxy_protocol_networks); %s has none", fl.server)
	}
	began := time.Now()
	logf := func(format string, a ...any) { fmt.Fprintf(o.Log, "sandbox: "+format+"\n", a...) }
	created, err := prepareDir(o.Dir)
	if err != nil {
		return nil, err
	}

	u := &upper{o: o, fl: fl, logf: logf, created: created}
	defer func() {
		if err != nil {
			u.cleanup()
			if ctx.Err() != nil {
				// One line instead of every node's "context canceled".
				err = fmt.Errorf("sandbox: interrupted, nothing left running: %w", ctx.Err())
			}
		}
	}()
	c, err := u.layout(ports, proxy, admin)
	if err != nil {
		return nil, err
	}
	logf("%s: %s, %d replica(s) in %s", fl.name, fl.server, o.Replicas, o.Dir)
	if err := u.bootstrap(ctx); err != nil {
		return nil, err
	}
	logf("bootstrapped in %s", time.Since(began).Round(time.Millisecond))
	if o.beforeStart != nil {
		o.beforeStart(append([]int(nil), ports...))
	}
	if err := u.startAll(ctx); err != nil {
		return nil, err
	}
	logf("servers up in %s", time.Since(began).Round(time.Millisecond))
	if err := c.setupAccounts(ctx); err != nil {
		return nil, err
	}
	if err := c.setupReplication(ctx); err != nil {
		return nil, err
	}
	if err := c.WaitCaughtUp(ctx, catchUpTimeout); err != nil {
		return nil, err
	}
	c.mu.Lock()
	err = c.save()
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, ConfigFile), []byte(c.yaml()), 0o644); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	logf("%s %s up in %s: primary %s, rw %s, ro %s", c.Flavor, c.Version,
		time.Since(began).Round(time.Millisecond), c.Primary().Address, c.RW, c.RO)
	return c, nil
}

// upper carries what Up needs between its steps, and what a failed Up must undo.
type upper struct {
	o       Options
	fl      *flavor
	logf    func(string, ...any)
	created bool // Up created o.Dir (so cleanup removes it, not just its contents)
	run     runAs
	c       *Cluster
	cfgs    []nodeConfig
}

func nodeName(i int) string {
	if i == 0 {
		return RolePrimary
	}
	return "replica" + strconv.Itoa(i)
}

// choosePorts returns the node ports and the two proxy ports, all distinct.
func choosePorts(o Options, nodes int) (ports []int, proxy [2]int, err error) {
	need := 0
	if o.BasePort == 0 {
		need += nodes
	}
	for _, p := range o.ProxyPorts {
		if p == 0 {
			need++
		}
	}
	free, err := FreePorts(need)
	if err != nil {
		return nil, proxy, err
	}
	next := func() int { p := free[0]; free = free[1:]; return p }
	for i := range nodes {
		if o.BasePort == 0 {
			ports = append(ports, next())
		} else {
			ports = append(ports, o.BasePort+i)
		}
	}
	for i, p := range o.ProxyPorts {
		if p == 0 {
			p = next()
		}
		proxy[i] = p
	}
	seen := map[int]bool{}
	for _, p := range append(append([]int(nil), ports...), proxy[:]...) {
		if seen[p] {
			return nil, proxy, fmt.Errorf("sandbox: port %d is used twice (nodes %v, proxy %v)", p, ports, proxy)
		}
		seen[p] = true
	}
	return ports, proxy, nil
}

// adminPort is the admin listener's port for port (0: a free one not among the others; -1,
// or no free port: none, -1).
func adminPort(port int, nodes []int, proxy [2]int) int {
	if port != 0 {
		return port
	}
	for {
		free, err := FreePorts(1)
		if err != nil {
			return -1
		}
		if !slices.Contains(nodes, free[0]) && !slices.Contains(proxy[:], free[0]) {
			return free[0]
		}
	}
}

// layout creates the directory tree, TLS files, option files and init files, and writes a
// first sandbox.json, so a cluster whose Up was interrupted can still be taken Down.
func (u *upper) layout(ports []int, proxy [2]int, admin int) (*Cluster, error) {
	o := u.o
	var note string
	u.run, note = chooseUser(o.Dir)
	if note != "" {
		u.logf("%s", note)
	}
	adminAddr := "" // no admin listener
	if admin > 0 {
		adminAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(admin))
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	c := &Cluster{
		Dir:           o.Dir,
		Flavor:        u.fl.name,
		RW:            net.JoinHostPort("127.0.0.1", strconv.Itoa(proxy[0])),
		RO:            net.JoinHostPort("127.0.0.1", strconv.Itoa(proxy[1])),
		Admin:         adminAddr,
		AdminUser:     AdminUser,
		AdminPassword: hex.EncodeToString(secret),
		TLS:           o.TLS,
		ProxyProtocol: o.ProxyProtocol,
		Server:        u.fl.server,
		RunUser:       u.run.name,
		fl:            u.fl,
		exited:        map[int]<-chan struct{}{},
	}
	u.c = c
	if o.TLS {
		var err error
		c.CertFile, c.KeyFile, err = writeSelfSigned(filepath.Join(o.Dir, "tls"))
		if err != nil {
			return nil, fmt.Errorf("sandbox: TLS: %w", err)
		}
	}
	for i, port := range ports {
		name := nodeName(i)
		dir := filepath.Join(o.Dir, name)
		role := RolePrimary
		if i > 0 {
			role = RoleReplica
		}
		c.Nodes = append(c.Nodes, Node{
			Name:    name,
			Role:    role,
			Address: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Port:    port,
			Socket:  filepath.Join(dir, socketName),
			Dir:     dir,
		})
		if len(o.Zones) > 0 {
			c.Nodes[i].Zone = o.Zones[i%len(o.Zones)]
		}
		for _, d := range []string{dir, filepath.Join(dir, "data"), filepath.Join(dir, "tmp")} {
			if err := os.MkdirAll(d, 0o750); err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
		}
		cfg := nodeConfig{
			user:              u.run.name,
			dir:               dir,
			port:              port,
			serverID:          i + 1,
			replica:           i > 0,
			writable:          i > 0 && o.WritableReplicas,
			bufferPoolMB:      o.BufferPoolMB,
			maxConnections:    o.MaxConnections,
			performanceSchema: o.PerformanceSchema,
			certFile:          c.CertFile,
			keyFile:           c.KeyFile,
			proxyProtocol:     o.ProxyProtocol,
		}
		u.cfgs = append(u.cfgs, cfg)
		if err := os.WriteFile(filepath.Join(dir, cnfName), []byte(u.fl.cnf(cfg)), 0o644); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, initName), []byte(u.fl.initSQL(c.AdminUser, c.AdminPassword)), 0o600); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := u.run.chownTree(o.Dir); err != nil {
		return nil, fmt.Errorf("sandbox: give %s to OS user %s: %w", o.Dir, u.run.name, err)
	}
	if err := c.save(); err != nil {
		return nil, err
	}
	return c, nil
}

// bootstrap creates every node's system tables, in parallel (the per-node tmpdir is what
// makes parallel runs reliable).
func (u *upper) bootstrap(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	defer cancel()
	errs := make([]error, len(u.c.Nodes))
	var wg sync.WaitGroup
	for i := range u.c.Nodes {
		n := &u.c.Nodes[i]
		wg.Go(func() {
			initFile := filepath.Join(n.Dir, initName)
			bin, args := u.fl.bootstrapCmd(n.cnf(), initFile)
			logPath := filepath.Join(n.Dir, instLogName)
			err := runGroup(ctx, bin, args, logPath)
			// It holds the admin password; sandbox.json (0600) is the one place that keeps it.
			_ = os.Remove(initFile)
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				errs[i] = fmt.Errorf("sandbox: bootstrap of %s failed (%s %v): %w%s%s", n.Name, filepath.Base(bin), args[1:], err,
					tail(logPath, 0, 12), tail(filepath.Join(n.Dir, errLogName), 0, 12))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startAll starts every node in parallel and waits until each answers. With free ports, a
// node whose port was taken since we picked it gets a new port and another try.
func (u *upper) startAll(ctx context.Context) error {
	errs := make([]error, len(u.c.Nodes))
	var wg sync.WaitGroup
	for i := range u.c.Nodes {
		wg.Go(func() { errs[i] = u.startNode(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (u *upper) startNode(ctx context.Context, i int) error {
	c := u.c
	n := &c.Nodes[i]
	for attempt := 1; ; attempt++ {
		err := c.launch(ctx, n)
		if err == nil {
			u.logf("%s up on %s (pid %d)", n.Name, n.Address, c.pid(n))
			return nil
		}
		if !errors.Is(err, errPortInUse) || u.o.BasePort != 0 || attempt >= bindRetries {
			return err
		}
		free, ferr := FreePorts(1)
		if ferr != nil {
			return errors.Join(err, ferr)
		}
		u.logf("%s: port %d was taken meanwhile, retrying on %d", n.Name, n.Port, free[0])
		cfg := u.cfgs[i]
		cfg.port = free[0]
		u.cfgs[i] = cfg
		if err := os.WriteFile(n.cnf(), []byte(u.fl.cnf(cfg)), 0o644); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		c.mu.Lock()
		n.Port = free[0]
		n.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(free[0]))
		c.mu.Unlock()
	}
}

// cleanup undoes a failed Up: kill every server it may have started (by pid, verified against
// the command line), then remove what it created. It runs on a fresh context because the
// caller's may be the reason Up failed.
func (u *upper) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c := u.c; c != nil {
		var wg sync.WaitGroup
		for i := range c.Nodes {
			n := &c.Nodes[i]
			wg.Go(func() {
				for _, pid := range []int{c.pid(n), pidFromFile(n)} {
					if err := kill(ctx, pid, n.cnf()); err != nil {
						u.logf("cleanup: %s: %v", n.Name, err)
					}
				}
			})
		}
		wg.Wait()
	}
	if u.created {
		_ = os.RemoveAll(u.o.Dir)
		return
	}
	entries, _ := os.ReadDir(u.o.Dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(u.o.Dir, e.Name()))
	}
}

// pidFromFile reads the pid the server wrote itself: it covers a server whose start was
// interrupted before we recorded its pid.
func pidFromFile(n *Node) int {
	b, err := os.ReadFile(filepath.Join(n.Dir, pidName))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	return pid
}
