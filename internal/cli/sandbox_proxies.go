package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sluicedb/sluice/internal/app"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/sandbox"
)

// sluice sandbox --proxies N: N sluice nodes in this process, in front of one cluster, sharing
// their configuration through an etcd the sandbox starts (README: The sandbox, A cluster of
// sluice nodes). Proxy pK (K = 1..N) is in zone zones[(K-1) % len(zones)] and listens on
//
//	rw:    --rw + 2(K-1)          6033, 6035, 6037, ...
//	ro:    --ro + 2(K-1)          6034, 6036, 6038, ...
//	admin: --admin-port + (K-1)   6080, 6081, 6082, ...
//
// (a flag at 0: free ports for every proxy; --admin-port -1: no admin API). The cluster's
// nodes get the zones round-robin too (primary zones[0], replica1 zones[1], ...), and endpoint
// rw reads from the proxy's own zone first (nearest_zone).

// Limits and names of the sluice-nodes mode.
const (
	maxProxies      = 32
	defaultZones    = "az1,az2"
	sandboxPrefix   = "/sluice/sandbox/"
	etcdDirName     = "etcd"
	proxyRWStep     = 2 // rw and ro ports interleave: pK's rw and ro are --rw/--ro + 2(K-1)
	proxyFileFormat = "sluice-%s.yaml"
)

// proxyPlan is one sluice node of the sandbox: its name, zone, ports (0: a free one, chosen
// once the cluster is up; admin -1: none) and bootstrap file.
type proxyPlan struct {
	name, zone    string
	rw, ro, admin int
	path          string
}

// planProxies lays out n proxies over zones from the port flags' values (rw, ro, admin as
// given: 0 = free ports, admin -1 = none), and checks that no two of the fixed ports, nor the
// cluster's node ports (base, base+1, ... when base is not 0), are the same, and that the
// ports of p2..pN are free (p1's are sandbox.Up's to check, with the nodes').
func planProxies(n int, zones []string, rw, ro, admin, base, nodes int) ([]proxyPlan, error) {
	plans := make([]proxyPlan, n)
	owner := map[int]string{}
	claim := func(port int, what string) error {
		if port <= 0 {
			return nil
		}
		if port > 65535 {
			return fmt.Errorf("%s would be port %d: out of range; choose lower --rw, --ro or --admin-port, or fewer --proxies", what, port)
		}
		if o, ok := owner[port]; ok {
			return fmt.Errorf("port %d would serve both %s and %s: pK listens on --rw + 2(K-1), --ro + 2(K-1) and --admin-port + (K-1); choose them further apart", port, o, what)
		}
		owner[port] = what
		return nil
	}
	if base > 0 {
		for i := range nodes {
			if err := claim(base+i, "cluster node "+strconv.Itoa(i)+" (--base-port)"); err != nil {
				return nil, err
			}
		}
	}
	var busy []sandbox.BusyPort
	for k := range n {
		p := proxyPlan{name: "p" + strconv.Itoa(k+1), zone: zones[k%len(zones)], admin: -1}
		if rw > 0 {
			p.rw = rw + proxyRWStep*k
		}
		if ro > 0 {
			p.ro = ro + proxyRWStep*k
		}
		if admin >= 0 {
			p.admin = 0
			if admin > 0 {
				p.admin = admin + k
			}
		}
		for _, c := range []struct {
			port int
			use  sandbox.PortUse
			what string
		}{{p.rw, sandbox.PortRW, "endpoint rw"}, {p.ro, sandbox.PortRO, "endpoint ro"}, {p.admin, sandbox.PortAdmin, "admin API"}} {
			if err := claim(c.port, p.name+"'s "+c.what); err != nil {
				return nil, err
			}
			if k > 0 && c.port > 0 && !sandbox.PortFree(c.port) {
				busy = append(busy, sandbox.BusyPort{Port: c.port, Use: c.use, Name: p.name + "'s " + c.what})
			}
		}
		plans[k] = p
	}
	if len(busy) > 0 {
		return nil, &sandbox.PortsInUseError{Busy: busy}
	}
	return plans, nil
}

// portOf is the port of a 127.0.0.1:PORT address ("" or none: -1).
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return -1
	}
	return n
}

// settlePorts gives p1 the ports sandbox.Up chose for it (sluice.yaml's), and the proxies
// planned on free ports free ones that none of the others uses (the cluster's nodes listen
// by now, so no free port is theirs).
func settlePorts(plans []proxyPlan, c *sandbox.Cluster) error {
	plans[0].rw, plans[0].ro = portOf(c.RW), portOf(c.RO)
	if plans[0].admin >= 0 {
		plans[0].admin = portOf(c.Admin)
	}
	taken := map[int]bool{}
	for _, p := range plans {
		for _, port := range []int{p.rw, p.ro, p.admin} {
			if port > 0 {
				taken[port] = true
			}
		}
	}
	for i := range plans {
		for _, port := range []*int{&plans[i].rw, &plans[i].ro, &plans[i].admin} {
			if *port != 0 {
				continue
			}
			for try := 0; ; try++ {
				free, err := sandbox.FreePorts(1)
				if err != nil {
					return err
				}
				if !taken[free[0]] {
					*port = free[0]
					taken[free[0]] = true
					break
				}
				if try > 100 {
					return errors.New("cannot find a free port on 127.0.0.1 for the sluice nodes")
				}
			}
		}
	}
	return nil
}

// writeBootstraps writes each proxy's own file, DIR/sluice-pK.yaml: its local settings
// (config.LocalKeys) and the store; p1's also holds the shared part of the cluster's
// sluice.yaml, which p1, started first, stores in etcd (the others read it from there).
func writeBootstraps(c *sandbox.Cluster, plans []proxyPlan, etcdAddr string) error {
	path := filepath.Join(c.Dir, sandbox.ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	shared, ok, err := config.SharedPart(path, data)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s holds no shared configuration", path)
	}
	local, err := config.ParseLocal(path, data)
	if err != nil {
		return err
	}
	for i := range plans {
		p := &plans[i]
		p.path = filepath.Join(c.Dir, fmt.Sprintf(proxyFileFormat, p.name))
		var b strings.Builder
		fmt.Fprintf(&b, "# sluice node %s of the sandbox in %s (sluice sandbox --proxies): its own settings.\n", p.name, c.Dir)
		fmt.Fprintf(&b, "# The rest of the configuration is shared through etcd (%s at %sconfig)", etcdAddr, sandboxPrefix)
		if i == 0 {
			b.WriteString(";\n# below it, the shared part, which this node stores there when etcd holds none yet.\n")
		} else {
			b.WriteString(".\n")
		}
		fmt.Fprintf(&b, "name: %s\nzone: %s\n", p.name, p.zone)
		fmt.Fprintf(&b, "listen: {rw: 127.0.0.1:%d, ro: 127.0.0.1:%d}\n", p.rw, p.ro)
		if p.admin > 0 {
			fmt.Fprintf(&b, "admin: {listen: 127.0.0.1:%d}\n", p.admin)
		}
		fmt.Fprintf(&b, "log: {format: %s, level: %s}\n", local.Log.Format, local.Log.Level)
		fmt.Fprintf(&b, "store:\n  etcd: {endpoints: [%s], prefix: %s}\n", etcdAddr, sandboxPrefix)
		b.WriteString("  # The sandbox's passwords (users app/app, monitor sluice_monitor/monitor) are in clear in its\n" +
			"  # configuration: a local sandbox may keep them so in etcd. Elsewhere, write password_hash or a\n" +
			"  # ${NAME} reference instead.\n" +
			"  clear_secrets: true\n")
		if i == 0 {
			b.WriteString("\n# The shared configuration.\n")
			b.Write(shared)
		}
		if err := os.WriteFile(p.path, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runningProxy is a proxy as the banner shows it, once it serves.
type runningProxy struct {
	name, zone, rw, ro, admin string
}

// runProxies runs the sluice nodes of plans in this process until ctx ends: p1 first (it
// seeds the store), then the others; ready is called once every one serves. The first
// failure of any stops them all and is returned.
func runProxies(parent context.Context, plans []proxyPlan, stderr io.Writer, ready func([]runningProxy)) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		running []runningProxy
	)
	failed := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	for _, p := range plans {
		data, err := os.ReadFile(p.path)
		if err == nil {
			var local *config.Config
			if local, err = config.ParseLocal(p.path, data); err == nil {
				var a *app.App
				log := NewLogger(local.Log, stderr).With("proxy", p.name)
				if a, err = app.Open(ctx, p.path, "", version(), log); err == nil {
					wg.Go(func() {
						if err := a.Run(ctx); err != nil {
							failed(fmt.Errorf("%s: %w", p.name, err))
						}
					})
					select {
					case <-a.Ready():
						running = append(running, runningProxy{name: p.name, zone: p.zone,
							rw: a.Addr("rw"), ro: a.Addr("ro"), admin: a.AdminAddr()})
					case <-ctx.Done():
					}
				}
			}
		}
		if err != nil && parent.Err() == nil { // not merely interrupted while it started
			failed(fmt.Errorf("%s: %w", p.name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() == nil {
		ready(running)
	}
	<-ctx.Done()
	wg.Wait()
	return first
}

// runClusterAndProxies is sluice sandbox --proxies N (N > 1): the cluster with its nodes in
// zones, an etcd, and N sluice nodes sharing their configuration through it, until ctx ends;
// then the proxies stop, then etcd, then the cluster, and the directory is removed.
func runClusterAndProxies(ctx context.Context, o sandbox.Options, n int, zones []string, stdout, stderr io.Writer) int {
	// Before anything starts: the proxies' ports must not collide and, for p2..pN, be free
	// (sandbox.Up checks the nodes' and p1's).
	plans, err := planProxies(n, zones, o.ProxyPorts[0], o.ProxyPorts[1], o.AdminPort, o.BasePort, o.Replicas+1)
	if err != nil {
		return fail(stderr, "", explainPorts(err, runPortFlags))
	}
	if _, err := sandbox.EtcdBinary(); err != nil {
		return fail(stderr, "", err)
	}
	o.Zones = zones
	return withCluster(ctx, o, stderr, func(c *sandbox.Cluster) error {
		if err := settlePorts(plans, c); err != nil {
			return err
		}
		etcd, err := sandbox.StartEtcd(ctx, filepath.Join(c.Dir, etcdDirName))
		if err != nil {
			return err
		}
		defer func() {
			fmt.Fprintln(stderr, "sluice sandbox: stopping etcd")
			if err := etcd.Stop(); err != nil {
				fail(stderr, "", fmt.Errorf("stopping etcd: %w", err))
			}
		}()
		if err := writeBootstraps(c, plans, etcd.ClientAddr); err != nil {
			return err
		}
		return runProxies(ctx, plans, stderr, func(ps []runningProxy) {
			printClusterConnectInfo(stdout, c, selfCommand(), etcd.ClientAddr, ps)
		})
	})
}

// printClusterConnectInfo is sluice sandbox --proxies N's banner once every proxy serves.
func printClusterConnectInfo(w io.Writer, c *sandbox.Cluster, self, etcdAddr string, ps []runningProxy) {
	cli := clientName(c)
	fmt.Fprintf(w, "\nsluice sandbox: %s %s, %d replica(s), in %s (removed on exit)\n", c.Flavor, c.Version, len(c.Replicas()), c.Dir)
	printNodes(w, c)
	fmt.Fprintf(w, "\n%d sluice nodes share their configuration through etcd at %s (prefix %s):\n", len(ps), etcdAddr, sandboxPrefix)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROXY\tZONE\tREAD-WRITE\tREAD-ONLY\tADMIN API\tFILE")
	for _, p := range ps {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", p.name, p.zone, p.rw, p.ro, orDash(p.admin),
			filepath.Join(c.Dir, fmt.Sprintf(proxyFileFormat, p.name)))
	}
	tw.Flush()
	fmt.Fprintln(w, "  (pK listens on --rw + 2(K-1), --ro + 2(K-1), --admin-port + (K-1); each reads from its own zone's replicas first)")
	fmt.Fprintf(w, "\nConnect through any of them, e.g. %s:\n", ps[0].name)
	rwh, rwp := hostPort(ps[0].rw)
	roh, rop := hostPort(ps[0].ro)
	fmt.Fprintf(w, "  read-write:  %s -h%s -P%s -u%s -p%s\n", cli, rwh, rwp, sandbox.AppUser, sandbox.AppPassword)
	fmt.Fprintf(w, "  read-only:   %s -h%s -P%s -u%s -p%s\n", cli, roh, rop, sandbox.AppUser, sandbox.AppPassword)
	fmt.Fprintln(w, consistencyLine)
	if i := slices.IndexFunc(ps, func(p runningProxy) bool { return p.admin != "" }); i >= 0 {
		a := ps[i].admin
		fmt.Fprintf(w, "Live sluice nodes:  %s ctl --admin %s cluster\n", self, a)
		fmt.Fprintf(w, "Admin API:          http://%s (%s ctl --admin %s status); a change through any node's applies on all\n", a, self, a)
	}
	fmt.Fprintf(w, "\nFrom another terminal: %s sandbox status --dir %s (also stop|start|pause|resume|lag)\n", self, c.Dir)
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")
}

// withCluster creates the sandbox's temporary directory and cluster (o.Dir is set), runs run
// with it, then takes the cluster down and removes the directory. run's error, or the
// cluster's, becomes the exit code.
func withCluster(ctx context.Context, o sandbox.Options, stderr io.Writer, run func(*sandbox.Cluster) error) int {
	dir, err := os.MkdirTemp("", "sluice-sandbox-")
	if err != nil {
		return fail(stderr, "", err)
	}
	defer os.RemoveAll(dir)
	// MkdirTemp makes 0700; as root, the servers can then run as the "mysql" OS user.
	_ = os.Chmod(dir, 0o755)
	o.Dir = dir

	c, err := sandbox.Up(ctx, o)
	if err != nil {
		return fail(stderr, "", explainPorts(err, runPortFlags))
	}
	defer func() {
		fmt.Fprintln(stderr, "sluice sandbox: stopping the cluster")
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Down(dctx); err != nil {
			fail(stderr, "", err)
		}
	}()
	if err := run(c); err != nil {
		return fail(stderr, "", err)
	}
	return 0
}
