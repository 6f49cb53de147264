// Command manyclients measures many mostly idle client connections through one sluice endpoint,
// the way a fleet of application servers each holding a few connections uses a database: it opens
// client connections in steps (-steps 1000,10000: 1000, then 9000 more), and at each step
//
//   - with every connection open and idle (logged in, no statement run yet on the new ones),
//     reads sluice's resident memory (VmRSS of -pid) once it has settled, and, with -heap DIR,
//     saves sluice's heap profile (admin /debug/pprof/heap) as DIR/heap-<step>.pb.gz;
//   - then, for -duration, has every open connection run a point select (text protocol,
//     SELECT c FROM <table> WHERE id = <random>) every -interval, jittered (uniform in
//     [interval/2, 3*interval/2), the first one at a random point of the first interval so the
//     statements are spread, not in waves), while polling the admin API's /v1/pools every
//     -poll for the most node connections open per node.
//
// It prints one JSON object on one line of stdout: per step, the idle RSS (and the baseline
// before the first connection), statements run, errors and the first error's text, the p50,
// p99 and maximum of a statement's latency as the client sees it, and from /v1/pools (deltas
// over the load phase) the node connections created and reused, the waits at
// pool.max_per_node and the time spent in them, and the most connections seen open per node.
//
//	manyclients -addr 127.0.0.1:PORT -admin 127.0.0.1:PORT -pid PID [-steps 1000,10000 -duration 20s -interval 3s
//	            -user app -password app -db sbtest -table sbtest1 -rows 10000 -open-rate 2000 -heap DIR]
//
// bench/run.sh's part "many" runs it against an endpoint with pool_mode: transaction and
// pool.max_per_node: 64. Every connection is one go-sql-driver/mysql connection (no
// database/sql pool), over plain TCP, loopback only. The client itself needs an open file per
// connection: raise ulimit -n.
//
// It exits 1 when any connection or statement failed (after printing the JSON), 2 on bad flags
// or when sluice or its admin API cannot be read.
package main

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// stepResult is one step's measurements. Latencies are in milliseconds, memory in KiB.
type stepResult struct {
	Clients int `json:"clients"`
	// OpenSeconds: the time this step took to open its new connections.
	OpenSeconds float64 `json:"open_seconds"`
	// IdleRSSKiB: sluice's VmRSS with Clients idle connections, settled; KiBPerIdleClient is
	// (IdleRSSKiB - the baseline) / Clients.
	IdleRSSKiB       int64   `json:"idle_rss_kib"`
	KiBPerIdleClient float64 `json:"kib_per_idle_client"`
	// HeapProfile: where sluice's heap profile at idle was saved ("" without -heap);
	// CPUProfile: where its CPU profile of the load phase was (without -cpu: "").
	HeapProfile string `json:"heap_profile,omitempty"`
	CPUProfile  string `json:"cpu_profile,omitempty"`
	// IdleMemstats: where sluice's memory is at the idle point, from its /metrics (the Go
	// collector's go_memstats_*_bytes gauges, named without prefix and suffix: stack_inuse,
	// heap_inuse, heap_alloc, heap_idle, heap_released, sys, next_gc), in KiB.
	IdleMemstats map[string]int64 `json:"idle_memstats,omitempty"`
	// The load phase.
	Seconds    float64 `json:"seconds"`
	Statements int     `json:"statements"`
	QPS        float64 `json:"qps"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	P999       float64 `json:"p999_ms"`
	Max        float64 `json:"max_ms"`
	// From /v1/pools over the load phase (deltas; the open counts are maxima of the polls).
	Created     uint64  `json:"created"`
	Reused      uint64  `json:"reused"`
	Waits       uint64  `json:"waits"`
	WaitSeconds float64 `json:"wait_seconds"`
	// WaitShare: Waits / Statements; when it is at most 1 %, a statement's p99 wait for a
	// pooled connection is 0 (at least 99 % of them took one without waiting).
	WaitShare float64 `json:"wait_share"`
	// MaxOpen: the most node connections seen open per node (summed over users) in any poll;
	// MaxInUse likewise for in use. ClientsPerNodeConn: Clients / the largest MaxOpen.
	MaxOpen            map[string]int `json:"max_open"`
	MaxInUse           map[string]int `json:"max_in_use"`
	Polls              int            `json:"polls"`
	ClientsPerNodeConn float64        `json:"clients_per_node_connection"`
	// CPU over the load phase, in seconds: sluice's (utime + stime of -pid), this tool's
	// (the clients), and the whole machine's busy time (every CPU, /proc/stat); MachineBusy
	// is that busy time's share of CPUs x the load phase (1: every CPU busy all along).
	// SluiceCPUPerStatementUS: sluice's CPU time per statement served, in microseconds.
	SluiceCPUSeconds        float64 `json:"sluice_cpu_s"`
	ClientCPUSeconds        float64 `json:"client_cpu_s"`
	MachineBusySeconds      float64 `json:"machine_busy_cpu_s"`
	CPUs                    int     `json:"cpus"`
	MachineBusy             float64 `json:"machine_busy"`
	SluiceCPUPerStatementUS float64 `json:"sluice_cpu_us_per_statement"`
}

// result is what manyclients prints.
type result struct {
	Addr           string       `json:"addr"`
	IntervalMS     float64      `json:"interval_ms"`
	BaselineRSSKiB int64        `json:"baseline_rss_kib"`
	Steps          []stepResult `json:"steps"`
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// options are the flags.
type options struct {
	addr, admin, token, user, password, db, table, heapDir, cpuDir string
	pid, rows, openRate                                            int
	steps                                                          []int
	duration, interval, poll                                       time.Duration
}

func main() {
	var o options
	var steps string
	flag.StringVar(&o.addr, "addr", "", "host:port of the sluice endpoint (loopback only)")
	flag.StringVar(&o.admin, "admin", "", "host:port of sluice's admin API (loopback only)")
	flag.StringVar(&o.token, "token", "", "admin API token, if it has one")
	flag.IntVar(&o.pid, "pid", 0, "sluice's process id (its VmRSS is read from /proc)")
	flag.StringVar(&steps, "steps", "1000,10000", "client counts, increasing: connections are opened up to each in turn")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "load phase per step")
	flag.DurationVar(&o.interval, "interval", 3*time.Second, "mean time between one client's statements")
	flag.DurationVar(&o.poll, "poll", 200*time.Millisecond, "how often /v1/pools is read during the load")
	flag.StringVar(&o.user, "user", "app", "user name")
	flag.StringVar(&o.password, "password", "app", "password")
	flag.StringVar(&o.db, "db", "sbtest", "database")
	flag.StringVar(&o.table, "table", "sbtest1", "table with an integer primary key id and a column c (sysbench's)")
	flag.IntVar(&o.rows, "rows", 10000, "ids 1..rows exist in the table")
	flag.IntVar(&o.openRate, "open-rate", 2000, "new connections a second at most while opening")
	flag.StringVar(&o.heapDir, "heap", "", "save sluice's heap profile at each step's idle point in this directory")
	flag.StringVar(&o.cpuDir, "cpu", "", "save sluice's CPU profile of each step's load phase in this directory (sluice must not be profiling already: no --cpuprofile)")
	flag.Parse()
	var err error
	if o.steps, err = parseSteps(steps); err != nil {
		fail(2, err)
	}
	switch {
	case o.pid <= 0 || o.rows < 1 || o.openRate < 1 || o.duration <= 0 || o.interval <= 0 || o.poll <= 0:
		fail(2, errors.New("-pid, -rows, -open-rate, -duration, -interval and -poll must be positive"))
	case !identifier.MatchString(o.db) || !identifier.MatchString(o.table):
		fail(2, errors.New("-db and -table must be plain identifiers"))
	}
	for _, a := range []string{o.addr, o.admin} {
		if err := loopback(a); err != nil {
			fail(2, err)
		}
	}
	res, err := run(&o)
	if err != nil {
		fail(2, err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	for _, s := range res.Steps {
		if s.Errors > 0 {
			fmt.Fprintf(os.Stderr, "manyclients: %d client(s): %d error(s); the first: %s\n", s.Clients, s.Errors, s.FirstError)
			os.Exit(1)
		}
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "manyclients:", err)
	os.Exit(code)
}

// parseSteps reads "1000,10000": positive and increasing.
func parseSteps(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("-steps %q: want positive counts in increasing order", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("address %q: refusing a non-loopback address", addr)
	}
	return nil
}

// client is one open connection and what its statements measured in the current load phase.
// Only its own goroutine touches it during a load phase; run reads it after.
type client struct {
	c       driver.Conn
	samples []time.Duration
	errs    int
	first   string
}

func run(o *options) (*result, error) {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", o.addr, o.user, o.password, o.db
	cfg.TLSConfig = "false"
	// Every wait is bounded: the dial and login, and each read and write of a statement.
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 10*time.Second, 10*time.Second, 10*time.Second
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	res := &result{Addr: o.addr, IntervalMS: ms(o.interval)}
	if res.BaselineRSSKiB, err = settledRSS(o.pid); err != nil {
		return nil, err
	}
	var clients []*client
	defer func() {
		for _, c := range clients {
			_ = c.c.Close()
		}
	}()
	for _, n := range o.steps {
		st := stepResult{Clients: n}
		t0 := time.Now()
		opened, errs, first := open(connector, n-len(clients), o.openRate)
		clients = append(clients, opened...)
		st.OpenSeconds = round(time.Since(t0).Seconds())
		if errs > 0 {
			// The step's clients are not all there: its numbers would be another step's.
			st.Errors, st.FirstError = errs, "connect: "+first
			res.Steps = append(res.Steps, st)
			return res, nil
		}
		if st.IdleRSSKiB, err = settledRSS(o.pid); err != nil {
			return nil, err
		}
		st.KiBPerIdleClient = round(float64(st.IdleRSSKiB-res.BaselineRSSKiB) / float64(n))
		if st.IdleMemstats, err = memstats(o); err != nil {
			return nil, err
		}
		if o.heapDir != "" {
			st.HeapProfile = filepath.Join(o.heapDir, fmt.Sprintf("heap-%d.pb.gz", n))
			if err := saveHeap(o, st.HeapProfile); err != nil {
				return nil, err
			}
		}
		if err := load(o, clients, &st); err != nil {
			return nil, err
		}
		res.Steps = append(res.Steps, st)
		if st.Errors > 0 {
			break
		}
	}
	return res, nil
}

// open opens n connections, at most rate a second, 64 at a time.
func open(connector driver.Connector, n, rate int) ([]*client, int, string) {
	var (
		mu    sync.Mutex
		out   = make([]*client, 0, n)
		errs  int
		first string
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, 64)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for range n {
		<-tick.C
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := connector.Connect(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				if first == "" {
					first = err.Error()
				}
				return
			}
			out = append(out, &client{c: c})
		})
	}
	wg.Wait()
	return out, errs, first
}

// load runs the load phase over every open client and fills st's load fields.
func load(o *options, clients []*client, st *stepResult) error {
	before, err := pools(o)
	if err != nil {
		return err
	}
	st.MaxOpen, st.MaxInUse = map[string]int{}, map[string]int{}
	stopPoll := make(chan struct{})
	var pollErr atomic.Value
	var pollWG sync.WaitGroup
	pollWG.Go(func() {
		t := time.NewTicker(o.poll)
		defer t.Stop()
		for {
			select {
			case <-stopPoll:
				return
			case <-t.C:
			}
			ps, err := pools(o)
			if err != nil {
				pollErr.Store(err)
				return
			}
			open, inUse := map[string]int{}, map[string]int{}
			for _, p := range ps {
				open[p.Node] += p.Open
				inUse[p.Node] += p.InUse
			}
			for k, v := range open {
				st.MaxOpen[k] = max(st.MaxOpen[k], v)
				st.MaxInUse[k] = max(st.MaxInUse[k], inUse[k])
			}
			st.Polls++
		}
	})

	cpu0, err := sampleCPU(o.pid)
	if err != nil {
		return err
	}
	profiled := make(chan error, 1)
	if o.cpuDir != "" {
		// The load phase but its last second (the profile must end before the phase does).
		secs := max(int(o.duration/time.Second)-1, 1)
		st.CPUProfile = filepath.Join(o.cpuDir, fmt.Sprintf("cpu-%d.pb.gz", st.Clients))
		go func() {
			profiled <- saveProfile(o, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), st.CPUProfile)
		}()
	} else {
		profiled <- nil
	}
	start := time.Now()
	deadline := start.Add(o.duration)
	var wg sync.WaitGroup
	for i, c := range clients {
		c.samples, c.errs, c.first = c.samples[:0], 0, ""
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			// The first statement at a random point of the first interval.
			next := start.Add(time.Duration(rng.Int64N(int64(o.interval))))
			for next.Before(deadline) {
				time.Sleep(time.Until(next))
				id := 1 + rng.IntN(o.rows)
				t0 := time.Now()
				n, err := selectRow(c.c, fmt.Sprintf("SELECT c FROM %s WHERE id = %d", o.table, id))
				d := time.Since(t0)
				switch {
				case err != nil:
					c.note(err.Error())
				case n != 1:
					c.note(fmt.Sprintf("select of id %d returned %d rows, want 1", id, n))
				default:
					c.samples = append(c.samples, d)
				}
				if err != nil && errors.Is(err, driver.ErrBadConn) {
					return // the connection is gone: its later statements would all fail
				}
				next = next.Add(o.interval/2 + time.Duration(rng.Int64N(int64(o.interval))))
			}
		})
	}
	wg.Wait()
	st.Seconds = round(time.Since(start).Seconds())
	cpu1, err := sampleCPU(o.pid)
	if err != nil {
		return err
	}
	if err := <-profiled; err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	close(stopPoll)
	pollWG.Wait()
	if err, _ := pollErr.Load().(error); err != nil {
		return err
	}
	after, err := pools(o)
	if err != nil {
		return err
	}
	var all []time.Duration
	for _, c := range clients {
		all = append(all, c.samples...)
		st.Errors += c.errs
		if st.FirstError == "" {
			st.FirstError = c.first
		}
	}
	slices.Sort(all)
	st.Statements = len(all)
	st.QPS = round(float64(len(all)) / st.Seconds)
	st.P50, st.P99, st.P999 = percentile(all, 500), percentile(all, 990), percentile(all, 999)
	if len(all) > 0 {
		st.Max = ms(all[len(all)-1])
	}
	b, a := totals(before), totals(after)
	st.Created, st.Reused, st.Waits = a.Created-b.Created, a.Reused-b.Reused, a.Waits-b.Waits
	st.WaitSeconds = round(a.WaitSeconds - b.WaitSeconds)
	if st.Statements > 0 {
		st.WaitShare = math.Round(float64(st.Waits)/float64(st.Statements)*1e6) / 1e6
	}
	st.SluiceCPUSeconds, st.ClientCPUSeconds = round(cpu1.sluice-cpu0.sluice), round(cpu1.self-cpu0.self)
	st.MachineBusySeconds, st.CPUs = round(cpu1.busy-cpu0.busy), cpu1.cpus
	if all := cpu1.total - cpu0.total; all > 0 {
		st.MachineBusy = round(st.MachineBusySeconds / all)
	}
	if st.Statements > 0 {
		st.SluiceCPUPerStatementUS = round(st.SluiceCPUSeconds / float64(st.Statements) * 1e6)
	}
	most := 0
	for _, v := range st.MaxOpen {
		most = max(most, v)
	}
	if most > 0 {
		st.ClientsPerNodeConn = round(float64(st.Clients) / float64(most))
	}
	return nil
}

func (c *client) note(msg string) {
	c.errs++
	if c.first == "" {
		c.first = msg
	}
}

// selectRow runs query on c (text protocol) and returns how many rows it read.
func selectRow(c driver.Conn, query string) (int, error) {
	q, ok := c.(driver.QueryerContext)
	if !ok {
		return 0, errors.New("the driver's connection cannot run a query directly")
	}
	rows, err := q.QueryContext(context.Background(), query, nil)
	if err != nil {
		return 0, err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	n := 0
	for {
		err := rows.Next(dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = rows.Close()
			return n, err
		}
		n++
	}
	return n, rows.Close()
}

// pool is one row of the admin API's /v1/pools.
type pool struct {
	Node        string  `json:"node"`
	User        string  `json:"user"`
	Open        int     `json:"open"`
	InUse       int     `json:"in_use"`
	Created     uint64  `json:"created"`
	Reused      uint64  `json:"reused"`
	Waits       uint64  `json:"waits"`
	WaitSeconds float64 `json:"wait_seconds"`
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// profileClient is httpClient for a CPU profile, which takes its seconds to answer.
var profileClient = &http.Client{Timeout: 10 * time.Minute}

// adminGet reads path from the admin API.
func adminGet(o *options, path string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+o.admin+path, nil)
	if err != nil {
		return nil, err
	}
	if o.token != "" {
		req.Header.Set("Authorization", "Bearer "+o.token)
	}
	hc := httpClient
	if strings.HasPrefix(path, "/debug/pprof/profile") {
		hc = profileClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return resp, nil
}

func pools(o *options) ([]pool, error) {
	resp, err := adminGet(o, "/v1/pools")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Pools []pool `json:"pools"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET /v1/pools: %v", err)
	}
	return body.Pools, nil
}

// totals sums the counters of every pool row.
func totals(ps []pool) pool {
	var t pool
	for _, p := range ps {
		t.Created += p.Created
		t.Reused += p.Reused
		t.Waits += p.Waits
		t.WaitSeconds += p.WaitSeconds
	}
	return t
}

// memstats reads sluice's go_memstats_*_bytes gauges of interest from its /metrics, in KiB.
func memstats(o *options) (map[string]int64, error) {
	resp, err := adminGet(o, "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	return parseMemstats(string(b)), nil
}

// parseMemstats picks the go_memstats gauges memstats reports out of a /metrics text.
func parseMemstats(text string) map[string]int64 {
	want := []string{"stack_inuse", "heap_inuse", "heap_alloc", "heap_idle", "heap_released", "sys", "next_gc"}
	out := map[string]int64{}
	for line := range strings.SplitSeq(text, "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		short, ok := strings.CutPrefix(name, "go_memstats_")
		if !ok {
			continue
		}
		short, ok = strings.CutSuffix(short, "_bytes")
		if !ok || !slices.Contains(want, short) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[short] = int64(v) / 1024
		}
	}
	return out
}

// saveHeap writes sluice's heap profile (after a GC: ?gc=1) to path.
func saveHeap(o *options, path string) error { return saveProfile(o, "/debug/pprof/heap?gc=1", path) }

// saveProfile writes the profile at the admin API's path to the file at dst.
func saveProfile(o *options, path, dst string) error {
	resp, err := adminGet(o, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(resp.Body, 256<<20)); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// settledRSS is VmRSS of pid once it stayed within 1 % over half a second (at most 15 s).
func settledRSS(pid int) (int64, error) {
	prev, err := rss(pid)
	if err != nil {
		return 0, err
	}
	for range 30 {
		time.Sleep(500 * time.Millisecond)
		cur, err := rss(pid)
		if err != nil {
			return 0, err
		}
		if math.Abs(float64(cur-prev)) <= float64(prev)/100 {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

// rss is VmRSS of pid in KiB.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return vmRSS(string(b))
}

// vmRSS reads the VmRSS line of a /proc/PID/status text, in KiB.
func vmRSS(status string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmRSS line in /proc/PID/status")
}

// userHZ is the unit of /proc's CPU times (USER_HZ: 100 on every Linux sluice runs on).
const userHZ = 100

// cpuSample is CPU time at one moment, in seconds: of sluice, of this process, and of the
// machine (busy: every CPU's time but idle and iowait; total: all of it), over cpus CPUs.
type cpuSample struct {
	sluice, self, busy, total float64
	cpus                      int
}

// sampleCPU reads a cpuSample (sluice: process pid) from /proc.
func sampleCPU(pid int) (cpuSample, error) {
	var s cpuSample
	var err error
	read := func(path string) string {
		b, e := os.ReadFile(path)
		if e != nil && err == nil {
			err = e
		}
		return string(b)
	}
	if s.sluice, err = procCPU(read(fmt.Sprintf("/proc/%d/stat", pid))); err != nil {
		return s, err
	}
	if s.self, err = procCPU(read("/proc/self/stat")); err != nil {
		return s, err
	}
	s.busy, s.total, s.cpus, err = machineCPU(read("/proc/stat"))
	return s, err
}

// procCPU is utime + stime of a /proc/PID/stat text, in seconds.
func procCPU(stat string) (float64, error) {
	// The command name (field 2) is in parentheses and may hold spaces: fields count from
	// after its closing one (state is field 3; utime 14, stime 15).
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc/PID/stat")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("/proc/PID/stat too short")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(u+st) / userHZ, nil
}

// machineCPU reads /proc/stat's "cpu" line (busy and total, in seconds) and counts its
// per-CPU lines.
func machineCPU(stat string) (busy, total float64, cpus int, err error) {
	found := false
	for line := range strings.SplitSeq(stat, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			cpus++
			continue
		}
		if len(f) < 6 {
			return 0, 0, 0, errors.New("/proc/stat: short cpu line")
		}
		var all, idle uint64
		for j, v := range f[1:] {
			n, e := strconv.ParseUint(v, 10, 64)
			if e != nil {
				return 0, 0, 0, e
			}
			if j >= 8 {
				break // guest and guest_nice are counted in user and nice already
			}
			all += n
			if j == 3 || j == 4 { // idle, iowait
				idle += n
			}
		}
		busy, total, found = float64(all-idle)/userHZ, float64(all)/userHZ, true
	}
	if !found {
		return 0, 0, 0, errors.New("/proc/stat: no cpu line")
	}
	return busy, total, cpus, nil
}

// percentile is the p-th per-mille (nearest rank) of the sorted d, in milliseconds; 0 for none.
func percentile(sorted []time.Duration, perMille int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := max((perMille*len(sorted)+999)/1000, 1) // ceil(p/1000 * n)
	return ms(sorted[k-1])
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(x float64) float64 { return math.Round(x*1000) / 1000 }
