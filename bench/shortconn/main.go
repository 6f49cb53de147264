// Command shortconn measures short client connections, the way a PHP page or a CGI script uses a
// database: for a fixed time, each of -clients workers loops over connect (a new TCP connection
// and a full login), one point select, disconnect (COM_QUIT, then close). It prints one JSON
// object on one line of stdout: completed connections, connections per second, and the p50, p99,
// average and maximum of one iteration's time (connect + query + disconnect) and of the connect
// (TCP and login) alone, in milliseconds; errors and the first error's text.
//
//	shortconn -addr 127.0.0.1:PORT [-clients 16 -duration 10s -user app -password app -db sbtest -table sbtest1 -rows 10000]
//
// bench/run.sh's part "short" runs it through each system (direct, HAProxy, sluice with pool_mode
// off and session). Every connection goes through go-sql-driver/mysql's connector directly (no
// database/sql pool: each iteration is its own connection and login), over plain TCP (no TLS,
// on every system alike), authenticating with the plugin the server's greeting names
// (mysql_native_password on the sandbox's MariaDB and on sluice): a challenge-response the server
// verifies every time, with no cached fast path. The query is text protocol, one row by primary
// key (sysbench's table; the id is random in 1..-rows). Loopback addresses only.
//
// It exits 1 when any iteration failed (after printing the JSON), 2 on bad flags.
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
	"os"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// result is what shortconn prints. Latencies are in milliseconds.
type result struct {
	Addr        string  `json:"addr"`
	Clients     int     `json:"clients"`
	Seconds     float64 `json:"seconds"`     // from the first connect to the last worker's end
	Connections int     `json:"connections"` // iterations that completed (connect, select, disconnect)
	Errors      int     `json:"errors"`      // iterations that failed
	FirstError  string  `json:"first_error"`
	CPS         float64 `json:"cps"` // Connections / Seconds
	P50         float64 `json:"p50_ms"`
	P99         float64 `json:"p99_ms"`
	Avg         float64 `json:"avg_ms"`
	Max         float64 `json:"max_ms"`
	ConnectP50  float64 `json:"connect_p50_ms"`
	ConnectP99  float64 `json:"connect_p99_ms"`
	// ClientCPU is this tool's own CPU time (user + system) per completed connection, in
	// microseconds: the client's share of a shared machine's CPU, so a run's connections per
	// second can be read against what the client, the proxy and the nodes each cost.
	ClientCPU float64 `json:"client_cpu_us_per_conn"`
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func main() {
	addr := flag.String("addr", "", "host:port to connect to (loopback only)")
	clients := flag.Int("clients", 16, "workers, each looping over connect, select, disconnect")
	duration := flag.Duration("duration", 10*time.Second, "how long the workers start new connections")
	user := flag.String("user", "app", "user name")
	password := flag.String("password", "app", "password")
	db := flag.String("db", "sbtest", "database")
	table := flag.String("table", "sbtest1", "table with an integer primary key id and a column c (sysbench's)")
	rows := flag.Int("rows", 10000, "ids 1..rows exist in the table")
	flag.Parse()
	switch {
	case *clients < 1 || *rows < 1 || *duration <= 0:
		fmt.Fprintln(os.Stderr, "shortconn: -clients, -rows and -duration must be positive")
		os.Exit(2)
	case !identifier.MatchString(*db) || !identifier.MatchString(*table):
		fmt.Fprintln(os.Stderr, "shortconn: -db and -table must be plain identifiers")
		os.Exit(2)
	}
	cpu0 := cpuTime()
	res, err := run(*addr, *user, *password, *db, *table, *clients, *rows, *duration)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shortconn:", err)
		os.Exit(2)
	}
	if res.Connections > 0 {
		res.ClientCPU = round(float64(cpuTime()-cpu0) / float64(time.Microsecond) / float64(res.Connections))
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if res.Errors > 0 {
		fmt.Fprintf(os.Stderr, "shortconn: %d of %d iterations failed; the first: %s\n",
			res.Errors, res.Errors+res.Connections, res.FirstError)
		os.Exit(1)
	}
}

// cpuTime is the process's CPU time so far (user + system), 0 where getrusage fails.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sample is one completed iteration: its whole time and its connect's.
type sample struct{ total, connect time.Duration }

func run(addr, user, password, db, table string, clients, rows int, duration time.Duration) (*result, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-addr %q: refusing a non-loopback address", addr)
	}
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.User = user
	cfg.Passwd = password
	cfg.DBName = db
	cfg.TLSConfig = "false"
	// Every wait is bounded: the dial and login, and each read and write of the select.
	cfg.Timeout = 10 * time.Second
	cfg.ReadTimeout = 10 * time.Second
	cfg.WriteTimeout = 10 * time.Second
	// A failed connection is counted here; the driver's own log line for it is noise.
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		samples  = make([][]sample, clients)
		errCount int
		firstErr string
	)
	start := time.Now()
	deadline := start.Add(duration)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for time.Now().Before(deadline) {
				s, err := iteration(connector, table, 1+rng.IntN(rows))
				if err == nil {
					samples[w] = append(samples[w], s)
					continue
				}
				mu.Lock()
				errCount++
				if firstErr == "" {
					firstErr = err.Error()
				}
				mu.Unlock()
				// Not a tight loop against a node or proxy that is down.
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	var all []sample
	for _, s := range samples {
		all = append(all, s...)
	}
	res := summarize(all, elapsed)
	res.Addr, res.Clients, res.Errors, res.FirstError = addr, clients, errCount, firstErr
	return res, nil
}

// iteration connects, selects row id of table, checks that exactly one row came back, and
// disconnects (the driver sends COM_QUIT and closes the socket).
func iteration(connector driver.Connector, table string, id int) (sample, error) {
	// The driver bounds each step with its Timeout, ReadTimeout and WriteTimeout; this context
	// bounds the whole iteration besides.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := connector.Connect(ctx)
	if err != nil {
		return sample{}, fmt.Errorf("connect: %w", err)
	}
	connected := time.Since(t0)
	n, qerr := selectRow(ctx, c, fmt.Sprintf("SELECT c FROM %s WHERE id = %d", table, id))
	cerr := c.Close()
	total := time.Since(t0)
	switch {
	case qerr != nil:
		return sample{}, fmt.Errorf("select: %w", qerr)
	case n != 1:
		return sample{}, fmt.Errorf("select of id %d returned %d rows, want 1", id, n)
	case cerr != nil:
		return sample{}, fmt.Errorf("disconnect: %w", cerr)
	}
	return sample{total: total, connect: connected}, nil
}

// selectRow runs query on c (text protocol) and returns how many rows it read.
func selectRow(ctx context.Context, c driver.Conn, query string) (int, error) {
	q, ok := c.(driver.QueryerContext)
	if !ok {
		return 0, errors.New("the driver's connection cannot run a query directly")
	}
	rows, err := q.QueryContext(ctx, query, nil)
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

// summarize computes the counts, the rate and the percentiles of the completed iterations all,
// which took elapsed in total.
func summarize(all []sample, elapsed time.Duration) *result {
	res := &result{Seconds: round(elapsed.Seconds()), Connections: len(all)}
	if elapsed > 0 {
		res.CPS = round(float64(len(all)) / elapsed.Seconds())
	}
	totals := make([]time.Duration, len(all))
	connects := make([]time.Duration, len(all))
	for i, s := range all {
		totals[i], connects[i] = s.total, s.connect
	}
	slices.Sort(totals)
	slices.Sort(connects)
	res.P50, res.P99 = percentile(totals, 50), percentile(totals, 99)
	res.ConnectP50, res.ConnectP99 = percentile(connects, 50), percentile(connects, 99)
	if len(totals) > 0 {
		var sum time.Duration
		for _, d := range totals {
			sum += d
		}
		res.Avg = ms(sum / time.Duration(len(totals)))
		res.Max = ms(totals[len(totals)-1])
	}
	return res
}

// percentile is the p-th percentile (nearest rank) of the sorted d, in milliseconds; 0 for none.
func percentile(sorted []time.Duration, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := max((p*len(sorted)+99)/100, 1) // ceil(p/100 * n)
	return ms(sorted[k-1])
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

func round(x float64) float64 { return math.Round(x*1000) / 1000 }
