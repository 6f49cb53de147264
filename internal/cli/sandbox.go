package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluicedb/sluice/internal/app"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/sandbox"
)

const sandboxUsage = `Usage:
  sluice sandbox [FLAGS]                 start a primary + replicas cluster in a temp directory and
                                         the proxy in front of it; Ctrl-C stops both and removes it
  sluice sandbox up --dir DIR [FLAGS]    start a cluster in DIR and leave it running
  sluice sandbox down --dir DIR          stop every node and remove DIR
  sluice sandbox status --dir DIR        show each node: state, GTID position, replication, lag
  sluice sandbox stop NODE --dir DIR     kill one node (SIGKILL, like a crash)
  sluice sandbox start NODE --dir DIR    start a stopped node again
  sluice sandbox pause NODE --dir DIR    stop a replica's SQL thread (it falls behind)
  sluice sandbox resume NODE --dir DIR   start it again
  sluice sandbox lag NODE SECONDS --dir DIR   delay a replica by SECONDS (MASTER_DELAY; 0 = off)
  sluice sandbox switchover NODE --dir DIR    make replica NODE the primary (planned switchover)

NODE is primary, replica1, replica2, ... --dir defaults to $SLUICE_SANDBOX_DIR.
The cluster needs MariaDB 10.6+ (mariadbd) or MySQL 8.0+ (mysqld) installed; it listens on
127.0.0.1 only, with accounts app/app (for clients and the proxy) and sluice_monitor/monitor.
Run 'sluice sandbox SUBCOMMAND --help' for the flags of one subcommand.
`

// envSandboxDir names the environment variable that supplies --dir.
const envSandboxDir = "SLUICE_SANDBOX_DIR"

func runSandbox(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return sandboxRun(args, stdout, stderr)
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "up":
		return sandboxUp(rest, stdout, stderr)
	case "down":
		return sandboxDown(rest, stdout, stderr)
	case "status":
		return sandboxStatus(rest, stdout, stderr)
	case "stop", "start", "pause", "resume":
		return sandboxNodeOp(sub, rest, stdout, stderr)
	case "lag":
		return sandboxLag(rest, stdout, stderr)
	case "switchover":
		return sandboxSwitchover(rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "sluice sandbox: unknown subcommand %q\n\n%s", sub, sandboxUsage)
		return 2
	}
}

// sandboxFlags is a FlagSet for one sandbox subcommand, with its usage text.
type sandboxFlags struct {
	*flag.FlagSet
	stdout io.Writer
}

func newSandboxFlags(name, usage string, stdout, stderr io.Writer) *sandboxFlags {
	fs := flag.NewFlagSet("sandbox "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	return &sandboxFlags{FlagSet: fs, stdout: stdout}
}

// dirFlag adds --dir, defaulting to $SLUICE_SANDBOX_DIR.
func (f *sandboxFlags) dirFlag() *string {
	return f.String("dir", os.Getenv(envSandboxDir), "sandbox directory (default $"+envSandboxDir+")")
}

// parse parses flags that may come before, between or after the positional arguments
// ("stop replica1 --dir D" reads naturally; the flag package alone stops at "replica1"), and
// checks the number of positional arguments. It returns the exit code to use when it fails:
// 0 after --help, 2 for bad usage.
func (f *sandboxFlags) parse(args []string, positional ...string) ([]string, int, bool) {
	var pos []string
	for {
		if code, ok := parseFlags(f.FlagSet, args, f.stdout); !ok {
			return nil, code, false
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) != len(positional) {
		switch {
		case len(positional) == 0:
			fmt.Fprintf(f.Output(), "sluice %s: unexpected arguments %q\n", f.Name(), pos)
		case len(pos) < len(positional):
			fmt.Fprintf(f.Output(), "sluice %s: missing %s (usage: sluice %s %s)\n", f.Name(),
				strings.Join(positional[len(pos):], " "), f.Name(), strings.Join(positional, " "))
		default:
			fmt.Fprintf(f.Output(), "sluice %s: too many arguments %q (usage: sluice %s %s)\n", f.Name(),
				pos[len(positional):], f.Name(), strings.Join(positional, " "))
		}
		return nil, 2, false
	}
	return pos, 0, true
}

// needDir reports a missing --dir as a usage error.
func (f *sandboxFlags) needDir(dir string) bool {
	if dir == "" {
		fmt.Fprintf(f.Output(), "sluice %s: --dir is required (or set $%s)\n", f.Name(), envSandboxDir)
		return false
	}
	return true
}

// fail prints err as one "sluice sandbox SUB: ..." line (plus any log lines the error
// carries) and returns exit code 1.
func fail(stderr io.Writer, sub string, err error) int {
	msg := strings.TrimPrefix(err.Error(), "sandbox: ")
	if sub != "" {
		sub = " " + sub // "sluice sandbox up: ...", but "sluice sandbox: ..." without one
	}
	fmt.Fprintf(stderr, "sluice sandbox%s: %s\n", sub, msg)
	return 1
}

// portFlags names, by sandbox.PortUse, the flags of a command that choose the cluster's ports.
type portFlags [4]string

var (
	runPortFlags = portFlags{sandbox.PortNode: "--base-port", sandbox.PortRW: "--rw", sandbox.PortRO: "--ro", sandbox.PortAdmin: "--admin-port"}
	upPortFlags  = portFlags{sandbox.PortNode: "--base-port", sandbox.PortRW: "--rw-port", sandbox.PortRO: "--ro-port", sandbox.PortAdmin: "--admin-port"}
)

// explainPorts words Up's ports-in-use error with the flags that choose those ports; other
// errors are returned as they are.
func explainPorts(err error, flags portFlags) error {
	var inUse *sandbox.PortsInUseError
	if !errors.As(err, &inUse) {
		return err
	}
	var ports, names []string
	for _, b := range inUse.Busy {
		ports = append(ports, b.String())
		if f := flags[b.Use]; !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	if len(ports) == 1 {
		return fmt.Errorf("port %s is already in use on 127.0.0.1: stop what uses it, or choose another with %s (0 = a free port)",
			ports[0], names[0])
	}
	return fmt.Errorf("ports %s are already in use on 127.0.0.1: stop what uses them, or choose others with %s (0 = free ports)",
		strings.Join(ports, ", "), strings.Join(names, ", "))
}

// signalContext is cancelled by SIGINT or SIGTERM: an interrupted Up then cleans up after itself.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// clusterFlags are the flags that shape a new cluster, shared by `sandbox` and `sandbox up`.
type clusterFlags struct {
	replicas, basePort, maxConns, adminPort int
	tls, pfs, writable, proxyProtocol       bool
}

func (c *clusterFlags) register(f *sandboxFlags) {
	f.IntVar(&c.replicas, "replicas", sandbox.DefaultReplicas, "number of replicas")
	f.IntVar(&c.basePort, "base-port", 23306, "port of the primary; replica N listens on base+N (0 = free ports)")
	f.BoolVar(&c.tls, "tls", false, "self-signed TLS certificate on every node (DIR/tls)")
	f.BoolVar(&c.pfs, "performance-schema", false, "performance_schema=ON")
	f.BoolVar(&c.writable, "writable-replicas", false, "leave read_only OFF on the replicas (MariaDB's default), so that a misrouted write shows")
	f.BoolVar(&c.proxyProtocol, "proxy-protocol", false, "nodes take the PROXY protocol from 127.0.0.1 (proxy_protocol_networks; MariaDB) and sluice.yaml's backends send it: the nodes see each client's address")
	f.IntVar(&c.maxConns, "max-connections", sandbox.DefaultMaxConnections, "max_connections of every node")
	f.IntVar(&c.adminPort, "admin-port", 6080, "port of the admin API written to sluice.yaml, on 127.0.0.1 (0 = a free port, -1 = none)")
}

func (c *clusterFlags) options(dir string, rw, ro int, log io.Writer) sandbox.Options {
	return sandbox.Options{
		Dir:               dir,
		Replicas:          c.replicas,
		BasePort:          c.basePort,
		ProxyPorts:        [2]int{rw, ro},
		AdminPort:         c.adminPort,
		TLS:               c.tls,
		PerformanceSchema: c.pfs,
		WritableReplicas:  c.writable,
		ProxyProtocol:     c.proxyProtocol,
		MaxConnections:    c.maxConns,
		Log:               log,
	}
}

// loopbackPort reads a proxy listen flag given as PORT or 127.0.0.1:PORT (or localhost:PORT):
// the sandbox only ever listens on loopback.
func loopbackPort(name, v string) (int, error) {
	host, port := "", v
	if strings.Contains(v, ":") {
		var err error
		if host, port, err = net.SplitHostPort(v); err != nil {
			return 0, fmt.Errorf("--%s %q: %v", name, v, err)
		}
		if host != "127.0.0.1" && host != "localhost" {
			return 0, fmt.Errorf("--%s %q: the sandbox listens on 127.0.0.1 only", name, v)
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("--%s %q: not a port", name, v)
	}
	return p, nil
}

const runUsage = sandboxUsage + `
Without a subcommand (sluice sandbox [--replicas N] [--base-port P] [--rw ADDR] [--ro ADDR]
[--admin-port P] [--proxies N [--zones LIST]]),
it starts a primary and N replicas in a fresh temporary directory, then runs sluice in front
of them with the generated configuration until SIGINT or SIGTERM; then it stops the proxy and
the cluster and removes the directory.

With --proxies N (N > 1) it runs N sluice nodes, p1 ... pN, that share their configuration
through an etcd it starts too (Debian package etcd-server): pK is in zone K of --zones
(round-robin), as are the cluster's nodes (primary in the first zone, replica1 in the
second, ...), and endpoint rw reads from the proxy's own zone first (nearest_zone). pK
listens on rw --rw + 2(K-1), ro --ro + 2(K-1) and admin --admin-port + (K-1): 6033/6034/6080,
6035/6036/6081, 6037/6038/6082, ... Each has its own file, DIR/sluice-pK.yaml.
`

// sandboxRun is `sluice sandbox` without a subcommand: cluster and proxy in one process, until
// SIGINT or SIGTERM.
func sandboxRun(args []string, stdout, stderr io.Writer) int {
	// Captured until the cluster is down: a second Ctrl-C must not leave servers behind.
	ctx, stop := signalContext()
	defer stop()
	return sandboxRunContext(ctx, args, stdout, stderr)
}

// sandboxRunContext is sandboxRun until ctx ends.
func sandboxRunContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags("", runUsage, stdout, stderr)
	var cf clusterFlags
	cf.register(f)
	rwFlag := f.String("rw", "6033", "read-write endpoint: PORT or 127.0.0.1:PORT (0 = a free port); with --proxies, p1's (pK's: + 2(K-1))")
	roFlag := f.String("ro", "6034", "read-only endpoint: PORT or 127.0.0.1:PORT (0 = a free port); with --proxies, p1's (pK's: + 2(K-1))")
	proxies := f.Int("proxies", 1, "number of sluice nodes, sharing their configuration through an etcd the sandbox starts when more than 1")
	zonesFlag := f.String("zones", "", "with --proxies: comma-separated zones of the sluice nodes and the cluster's nodes, round-robin (default "+defaultZones+")")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	rw, err := loopbackPort("rw", *rwFlag)
	var ro int
	if err == nil {
		ro, err = loopbackPort("ro", *roFlag)
	}
	var zones []string
	if err == nil {
		zones, err = proxyZones(*proxies, *zonesFlag)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice sandbox: %v\n", err)
		return 2
	}
	if *proxies > 1 {
		return runClusterAndProxies(ctx, cf.options("", rw, ro, stderr), *proxies, zones, stdout, stderr)
	}
	return runClusterAndProxy(ctx, cf.options("", rw, ro, stderr), stdout, stderr)
}

// proxyZones checks --proxies and reads --zones for it: nil for one proxy (which --zones
// does not go with), else the zones (default az1,az2).
func proxyZones(proxies int, list string) ([]string, error) {
	if proxies < 1 || proxies > maxProxies {
		return nil, fmt.Errorf("--proxies %d: want 1 to %d sluice nodes", proxies, maxProxies)
	}
	if proxies == 1 {
		if list != "" {
			return nil, errors.New("--zones places several sluice nodes: use it with --proxies N (N > 1)")
		}
		return nil, nil
	}
	if list == "" {
		list = defaultZones
	}
	var zones []string
	for z := range strings.SplitSeq(list, ",") {
		z = strings.TrimSpace(z)
		if z == "" || strings.Trim(z, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
			return nil, fmt.Errorf("--zones %q: want comma-separated zone names of letters, digits, '.', '_' and '-'", list)
		}
		if slices.Contains(zones, z) {
			return nil, fmt.Errorf("--zones %q: zone %s is named twice", list, z)
		}
		zones = append(zones, z)
	}
	return zones, nil
}

// runClusterAndProxy is sluice sandbox with one proxy: the cluster, and sluice in front of it
// with the generated sluice.yaml, until ctx ends.
func runClusterAndProxy(ctx context.Context, o sandbox.Options, stdout, stderr io.Writer) int {
	return withCluster(ctx, o, stderr, func(c *sandbox.Cluster) error {
		ready := func() { printConnectInfo(stdout, c, selfCommand()) }
		return runProxy(ctx, filepath.Join(c.Dir, sandbox.ConfigFile), stderr, ready)
	})
}

// runProxy runs sluice with the configuration at path until ctx ends; ready is called once
// every endpoint listens.
func runProxy(ctx context.Context, path string, stderr io.Writer, ready func()) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	local, err := config.ParseLocal(path, data)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, path, "", version(), NewLogger(local.Log, stderr))
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-a.Ready():
			ready()
		case <-ctx.Done():
		}
	}()
	return a.Run(ctx)
}

func clientName(c *sandbox.Cluster) string {
	if c.Flavor == sandbox.FlavorMySQL {
		return "mysql"
	}
	return "mariadb"
}

func hostPort(addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, ""
	}
	return h, p
}

// printConnectInfo is sluice sandbox's banner once the proxy serves; self is how its commands
// call sluice (selfCommand).
func printConnectInfo(w io.Writer, c *sandbox.Cluster, self string) {
	cli := clientName(c)
	fmt.Fprintf(w, "\nsluice sandbox: %s %s, %d replica(s), in %s (removed on exit)\n", c.Flavor, c.Version, len(c.Replicas()), c.Dir)
	printNodes(w, c)
	rwh, rwp := hostPort(c.RW)
	roh, rop := hostPort(c.RO)
	fmt.Fprintf(w, "\nConnect through sluice:\n")
	fmt.Fprintf(w, "  read-write:  %s -h%s -P%s -u%s -p%s\n", cli, rwh, rwp, sandbox.AppUser, sandbox.AppPassword)
	fmt.Fprintf(w, "  read-only:   %s -h%s -P%s -u%s -p%s\n", cli, roh, rop, sandbox.AppUser, sandbox.AppPassword)
	fmt.Fprintln(w, consistencyLine)
	if c.Admin != "" {
		fmt.Fprintf(w, "Admin API:     http://%s (%s ctl --admin %s status)\n", c.Admin, self, c.Admin)
	}
	fmt.Fprintf(w, "\nFrom another terminal: %s sandbox status --dir %s (also stop|start|pause|resume|lag)\n", self, c.Dir)
	fmt.Fprintf(w, "Press Ctrl-C to stop.\n")
}

// printUpInfo is sluice sandbox up's report of the cluster it left running; self is how its
// commands call sluice (selfCommand).
func printUpInfo(w io.Writer, c *sandbox.Cluster, self string) {
	fmt.Fprintf(w, "sluice sandbox: %s %s up in %s\n", c.Flavor, c.Version, c.Dir)
	printNodes(w, c)
	cfgPath := filepath.Join(c.Dir, sandbox.ConfigFile)
	fmt.Fprintf(w, "\nProxy endpoints in %s: rw %s, ro %s\n", cfgPath, c.RW, c.RO)
	fmt.Fprintf(w, "  run the proxy:   %s serve --config %s\n", self, cfgPath)
	fmt.Fprintln(w, "  "+consistencyLine)
	if c.Admin != "" {
		fmt.Fprintf(w, "  admin API:       http://%s (%s ctl --config %s status)\n", c.Admin, self, cfgPath)
	}
	h, p := hostPort(c.Primary().Address)
	fmt.Fprintf(w, "  primary direct:  %s -h%s -P%s -u%s -p%s\n", clientName(c), h, p, sandbox.AppUser, sandbox.AppPassword)
	fmt.Fprintf(w, "  stop it all:     %s sandbox down --dir %s\n", self, c.Dir)
}

// selfCommand is how the commands the sandbox suggests call sluice: the running executable's
// full path, since it is often not on PATH (scripts/sandbox.sh builds it into .cache/bin).
func selfCommand() string {
	p, err := os.Executable()
	return commandFor(p, err)
}

// commandFor is selfCommand for the executable path p (or os.Executable's error): "sluice"
// when p is unknown or a `go run` (or go test) build's, which is removed when it exits; else p,
// quoted for a POSIX shell when it needs to be.
func commandFor(p string, err error) string {
	if err != nil || p == "" || strings.Contains(p, string(filepath.Separator)+"go-build") {
		return "sluice"
	}
	return shellQuote(p)
}

// shellQuote returns s as one word of a POSIX shell: as it is when nothing in it is special,
// else in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+:@%,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// consistencyLine says what the sandbox's endpoints promise a read (sluice.yaml's consistency).
const consistencyLine = "Reads: rw on the replicas at consistency session (a client reads its own writes back); ro on its replica, eventual."

func printNodes(w io.Writer, c *sandbox.Cluster) {
	zoned := slices.ContainsFunc(c.Nodes, func(n sandbox.Node) bool { return n.Zone != "" })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if zoned {
		fmt.Fprintln(tw, "  NODE\tROLE\tZONE\tADDRESS\tPID\tSOCKET")
	} else {
		fmt.Fprintln(tw, "  NODE\tROLE\tADDRESS\tPID\tSOCKET")
	}
	for _, n := range c.Nodes {
		if zoned {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\n", n.Name, n.Role, n.Zone, n.Address, n.PID, n.Socket)
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", n.Name, n.Role, n.Address, n.PID, n.Socket)
		}
	}
	tw.Flush()
}

const upUsage = `Usage: sluice sandbox up --dir DIR [--replicas N] [--base-port P] [--rw-port P] [--ro-port P] [FLAGS]

Creates a primary and N replicas in DIR (which must be empty or absent), waits until the
replicas have caught up, prints the nodes and exits; the servers keep running until
'sluice sandbox down --dir DIR'. DIR/sluice.yaml configures the proxy for them.
`

func sandboxUp(args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags("up", upUsage, stdout, stderr)
	dir := f.dirFlag()
	var cf clusterFlags
	cf.register(f)
	rw := f.Int("rw-port", 6033, "port of the read-write endpoint written to sluice.yaml (0 = a free port)")
	ro := f.Int("ro-port", 6034, "port of the read-only endpoint written to sluice.yaml (0 = a free port)")
	if _, code, ok := f.parse(args); !ok {
		return code
	}
	if !f.needDir(*dir) {
		return 2
	}
	ctx, stop := signalContext()
	defer stop()
	c, err := sandbox.Up(ctx, cf.options(*dir, *rw, *ro, stderr))
	if err != nil {
		return fail(stderr, "up", explainPorts(err, upPortFlags))
	}
	printUpInfo(stdout, c, selfCommand())
	return 0
}

// openDir parses the flags of a subcommand that works on an existing cluster and opens it.
func openDir(f *sandboxFlags, dir *string, args []string, positional ...string) (*sandbox.Cluster, []string, int) {
	pos, code, ok := f.parse(args, positional...)
	if !ok {
		return nil, nil, code
	}
	if !f.needDir(*dir) {
		return nil, nil, 2
	}
	c, err := sandbox.Open(*dir)
	if err != nil {
		return nil, nil, fail(f.Output(), strings.TrimPrefix(f.Name(), "sandbox "), err)
	}
	return c, pos, 0
}

func sandboxDown(args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags("down", "Usage: sluice sandbox down --dir DIR\n\nStops every node (SIGTERM, then SIGKILL after 30 s) and removes DIR.\n", stdout, stderr)
	dir := f.dirFlag()
	c, _, code := openDir(f, dir, args)
	if c == nil {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	if err := c.Down(ctx); err != nil {
		return fail(stderr, "down", err)
	}
	fmt.Fprintf(stdout, "sluice sandbox: stopped and removed %s\n", c.Dir)
	return 0
}

func sandboxStatus(args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags("status", "Usage: sluice sandbox status --dir DIR [--json]\n\nShows every node: state, GTID position, replication threads and lag.\n", stdout, stderr)
	dir := f.dirFlag()
	asJSON := f.Bool("json", false, "print JSON instead of a table")
	c, _, code := openDir(f, dir, args)
	if c == nil {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	st, err := c.Status(ctx)
	if err != nil {
		return fail(stderr, "status", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return fail(stderr, "status", err)
		}
		return 0
	}
	printStatus(stdout, st)
	return 0
}

func printStatus(w io.Writer, st []sandbox.NodeStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tSTATE\tGTID\tIO/SQL\tLAG")
	var notes []string
	for _, s := range st {
		state := "up"
		switch {
		case s.Error != "":
			state = "not answering"
			notes = append(notes, s.Name+": "+s.Error)
		case !s.Up:
			state = "down"
		case s.Role == sandbox.RoleReplica && s.SQLRunning != "" && s.SQLRunning != "Yes":
			state = "up, paused"
		}
		threads, lag := "-", "-"
		if s.Up && s.Role == sandbox.RoleReplica {
			threads = orDash(s.IORunning) + "/" + orDash(s.SQLRunning)
			lag = "NULL"
			if s.SecondsBehind != nil {
				lag = strconv.FormatInt(*s.SecondsBehind, 10) + "s"
			}
			if s.SQLDelay > 0 {
				lag += fmt.Sprintf(" (delay %ds)", s.SQLDelay)
			}
		}
		gtid := "-"
		if s.Up {
			gtid = orDash(s.CurrentPos)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Role, s.Address, state, gtid, threads, lag)
		if s.LastError != "" {
			notes = append(notes, s.Name+": "+s.LastError)
		}
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var nodeOpHelp = map[string]string{
	"stop":   "Kills NODE with SIGKILL, like a crash, and waits until the process is gone.",
	"start":  "Starts a stopped NODE again with the same files and waits until it answers; a replica resumes replicating.",
	"pause":  "Stops the replica's SQL thread (STOP SLAVE SQL_THREAD): it keeps receiving but applies nothing.",
	"resume": "Starts the replica's SQL thread again.",
}

func sandboxNodeOp(op string, args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags(op, fmt.Sprintf("Usage: sluice sandbox %s NODE --dir DIR\n\n%s\n", op, nodeOpHelp[op]), stdout, stderr)
	dir := f.dirFlag()
	c, pos, code := openDir(f, dir, args, "NODE")
	if c == nil {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	name := pos[0]
	var err error
	switch op {
	case "stop":
		err = c.Stop(ctx, name)
	case "start":
		err = c.Start(ctx, name)
	case "pause":
		err = c.Pause(ctx, name)
	case "resume":
		err = c.Resume(ctx, name)
	}
	if err != nil {
		return fail(stderr, op, err)
	}
	past := map[string]string{"stop": "stopped", "start": "started", "pause": "paused", "resume": "resumed"}[op]
	fmt.Fprintf(stdout, "sluice sandbox: %s %s\n", past, name)
	return 0
}

func sandboxLag(args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags("lag", "Usage: sluice sandbox lag NODE SECONDS --dir DIR\n\nMakes replica NODE apply each event SECONDS after the primary wrote it (MASTER_DELAY); 0 turns it off.\n", stdout, stderr)
	dir := f.dirFlag()
	c, pos, code := openDir(f, dir, args, "NODE", "SECONDS")
	if c == nil {
		return code
	}
	secs, err := strconv.Atoi(pos[1])
	if err != nil || secs < 0 {
		fmt.Fprintf(stderr, "sluice sandbox lag: SECONDS must be a whole number >= 0, got %q\n", pos[1])
		return 2
	}
	ctx, stop := signalContext()
	defer stop()
	if err := c.Lag(ctx, pos[0], secs); err != nil {
		return fail(stderr, "lag", err)
	}
	if secs == 0 {
		fmt.Fprintf(stdout, "sluice sandbox: %s replicates without delay\n", pos[0])
	} else {
		fmt.Fprintf(stdout, "sluice sandbox: %s now applies events %d s after the primary\n", pos[0], secs)
	}
	return 0
}

func sandboxSwitchover(args []string, stdout, stderr io.Writer) int {
	f := newSandboxFlags("switchover", `Usage: sluice sandbox switchover NODE --dir DIR [--timeout D]

Makes replica NODE the primary, as a planned switchover: the primary goes read-only, NODE
applies everything it wrote, stops replicating and takes writes, and every other node (the old
primary included) replicates from NODE (MASTER_USE_GTID). A sluice in front
follows by itself: statements for the primary wait for NODE (monitor.switchover_timeout).
`, stdout, stderr)
	dir := f.dirFlag()
	timeout := f.Duration("timeout", 30*time.Second, "how long NODE may take to apply what the primary wrote")
	c, pos, code := openDir(f, dir, args, "NODE")
	if c == nil {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	old := c.Primary().Name
	start := time.Now()
	if err := c.Switchover(ctx, pos[0], *timeout); err != nil {
		return fail(stderr, "switchover", err)
	}
	fmt.Fprintf(stdout, "sluice sandbox: %s is the primary (was %s); switched in %s\n", pos[0], old, time.Since(start).Round(time.Millisecond))
	return 0
}
