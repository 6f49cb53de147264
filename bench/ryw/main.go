// Command ryw measures read-your-writes through one sluice endpoint: on a single client
// connection it runs N write-then-read pairs (UPDATE one row to a new value, then SELECT it back)
// and reports, as one JSON object on one line of stdout, the latency of the read and of the pair
// (p50, p99), how many reads returned another value than the one just written (stale reads), and
// where the reads went: after every read it asks sluice /*PROXY_INTERNAL*/ SHOW LAST ROUTE (node, role,
// reason) and /*PROXY_INTERNAL*/ SHOW CONSISTENCY (the process-wide waits and timeouts
// counters) on the same connection, outside the timed part.
//
//	ryw -addr 127.0.0.1:PORT [-n 2000 -warmup 20 -user app -password app -db sbtest -table sbtest1 -id 1]
//
// With -direct ADDR (the primary's own address), the UPDATE bypasses sluice: it goes to ADDR
// over a connection of its own, and the read through sluice is repeated until it returns the
// value written. That measures how long a write sluice did not see takes to be visible to reads
// at a level that follows the primary's binlog stream (latest): visible_p50/p99 (from the
// UPDATE's answer to the end of the first read that returned its value), and how many first
// reads did not see it yet (first_reads_stale, not an error in this mode).
//
// bench/run.sh runs it once per consistency level (endpoints cons-eventual, cons-session,
// cons-global). The counters of SHOW CONSISTENCY are the whole sluice process's, so the deltas
// it reports are this run's only when nothing else uses that sluice meanwhile. Plain TCP, text
// protocol, loopback addresses only. It exits 1 on any error (a failed statement, an UPDATE that
// changed no row, a read that returned no row); stale reads are reported, not errors.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// result is what ryw prints. Latencies are in milliseconds.
type result struct {
	Endpoint             string  `json:"endpoint"`
	Consistency          string  `json:"consistency"`
	ConsistencyTimeoutMS int64   `json:"consistency_timeout_ms"`
	Pairs                int     `json:"pairs"`
	Warmup               int     `json:"warmup"`
	WriteP50             float64 `json:"write_p50_ms"`
	WriteP99             float64 `json:"write_p99_ms"`
	ReadP50              float64 `json:"read_p50_ms"`
	ReadP99              float64 `json:"read_p99_ms"`
	ReadAvg              float64 `json:"read_avg_ms"`
	PairP50              float64 `json:"pair_p50_ms"`
	PairP99              float64 `json:"pair_p99_ms"`
	PairAvg              float64 `json:"pair_avg_ms"`
	Stale                int     `json:"stale"`
	ReplicaReads         int     `json:"replica_reads"`         // role replica (reason "read")
	ReplicaReadsWaited   int     `json:"replica_reads_waited"`  // of those, the ones sluice counted as a wait
	PrimaryTimeoutReads  int     `json:"primary_timeout_reads"` // reason "consistency: no replica reached the position"
	OtherReads           int     `json:"other_reads"`           // anything else (primary for another reason)
	ReadsWaited          int     `json:"reads_waited"`          // reads during which the waits counter moved
	ReadsTimedOut        int     `json:"reads_timed_out"`       // reads during which the timeouts counter moved
	ReplicaShare         float64 `json:"replica_share"`         // ReplicaReads / Pairs
	Waits                int64   `json:"waits"`                 // SHOW CONSISTENCY waits, after - before
	Timeouts             int64   `json:"timeouts"`              // SHOW CONSISTENCY timeouts, after - before
	WaitsBefore          int64   `json:"waits_before"`
	WaitsAfter           int64   `json:"waits_after"`
	TimeoutsBefore       int64   `json:"timeouts_before"`
	TimeoutsAfter        int64   `json:"timeouts_after"`
	Seconds              float64 `json:"seconds"`
	// Routes counts the reads per "node role reason" of SHOW LAST ROUTE.
	Routes map[string]int `json:"routes"`
	// With -direct: the writes bypassed sluice (Bypass); how long each took to be visible
	// through it, and how many first reads missed it (their repeats are not counted as reads).
	Bypass          bool    `json:"bypass"`
	VisibleP50      float64 `json:"visible_p50_ms,omitempty"`
	VisibleP99      float64 `json:"visible_p99_ms,omitempty"`
	VisibleMax      float64 `json:"visible_max_ms,omitempty"`
	FirstReadsStale int     `json:"first_reads_stale,omitempty"`
	RepeatedReads   int     `json:"repeated_reads,omitempty"`
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func main() {
	addr := flag.String("addr", "", "host:port of a sluice read-write endpoint (loopback only)")
	n := flag.Int("n", 2000, "write-then-read pairs measured")
	warmup := flag.Int("warmup", 20, "pairs run first and not measured")
	user := flag.String("user", "app", "user name")
	password := flag.String("password", "app", "password")
	db := flag.String("db", "sbtest", "database")
	table := flag.String("table", "sbtest1", "table with an INT column k and a primary key id (sysbench's)")
	id := flag.Int("id", 1, "id of the row written and read")
	timeout := flag.Duration("timeout", 5*time.Minute, "time allowed for the whole run")
	direct := flag.String("direct", "", "host:port of the primary: the writes bypass sluice (loopback only)")
	flag.Parse()
	res, err := run(*addr, *direct, *user, *password, *db, *table, *id, *n, *warmup, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ryw:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "ryw:", err)
		os.Exit(1)
	}
}

// loopback checks that addr is host:port on a loopback address.
func loopback(flagName, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-%s %q: %v", flagName, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-%s %q: refusing a non-loopback address", flagName, addr)
	}
	return nil
}

// open returns one connection to addr and the pool that holds it.
func open(ctx context.Context, addr, user, password, db string) (*sql.DB, *sql.Conn, error) {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.User = user
	cfg.Passwd = password
	cfg.DBName = db
	cfg.Timeout = 30 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	pool := sql.OpenDB(connector)
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, conn, nil
}

func run(addr, direct, user, password, db, table string, id, n, warmup int, timeout time.Duration) (*result, error) {
	if err := loopback("addr", addr); err != nil {
		return nil, err
	}
	if direct != "" {
		if err := loopback("direct", direct); err != nil {
			return nil, err
		}
	}
	if n < 1 || warmup < 0 {
		return nil, errors.New("-n must be at least 1 and -warmup at least 0")
	}
	if !identifier.MatchString(db) || !identifier.MatchString(table) {
		return nil, errors.New("-db and -table must be plain identifiers")
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// One connection: sluice's session state (the last commit's GTID, the last route) is per
	// connection.
	pool, conn, err := open(ctx, addr, user, password, db)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	defer conn.Close()
	writer := conn
	if direct != "" {
		dpool, dconn, err := open(ctx, direct, user, password, db)
		if err != nil {
			return nil, fmt.Errorf("-direct: %v", err)
		}
		defer dpool.Close()
		defer dconn.Close()
		writer = dconn
	}
	var visible []time.Duration

	res := &result{Pairs: n, Warmup: warmup, Routes: map[string]int{}, Bypass: direct != ""}
	var waits, timeouts, positionReads int64
	if err := conn.QueryRowContext(ctx, "/*PROXY_INTERNAL*/ SHOW CONSISTENCY").Scan(&res.Endpoint, &res.Consistency,
		&res.ConsistencyTimeoutMS, &waits, &timeouts, &positionReads); err != nil {
		return nil, fmt.Errorf("SHOW CONSISTENCY: %v", err)
	}
	// The counters before the first measured pair: now, or after the last warm-up pair.
	res.WaitsBefore, res.TimeoutsBefore = waits, timeouts

	// Values no earlier run left in the row: each UPDATE changes it, so each changes one row.
	base := 1_000_000_000 + rand.IntN(1_000_000_000)
	if base+warmup+n > math.MaxInt32 {
		return nil, errors.New("-n and -warmup too large")
	}
	writes := make([]time.Duration, 0, n)
	reads := make([]time.Duration, 0, n)
	pairs := make([]time.Duration, 0, n)
	t0 := time.Now()
	for i := range warmup + n {
		v := base + i
		update := fmt.Sprintf("UPDATE %s SET k = %d WHERE id = %d", table, v, id)
		sel := fmt.Sprintf("SELECT k FROM %s WHERE id = %d", table, id)

		start := time.Now()
		r, err := writer.ExecContext(ctx, update)
		if err != nil {
			return nil, fmt.Errorf("pair %d: %s: %v", i+1, update, err)
		}
		mid := time.Now()
		var got int64
		if err := conn.QueryRowContext(ctx, sel).Scan(&got); err != nil {
			return nil, fmt.Errorf("pair %d: %s: %v", i+1, sel, err)
		}
		end := time.Now()
		if direct != "" {
			// Until the read through sluice sees the write that bypassed it (bounded by
			// the run's timeout).
			seen, first := got, got
			for seen != int64(v) {
				if i >= warmup {
					res.RepeatedReads++
				}
				if err := conn.QueryRowContext(ctx, sel).Scan(&seen); err != nil {
					return nil, fmt.Errorf("pair %d: %s (repeated): %v", i+1, sel, err)
				}
			}
			if i >= warmup {
				visible = append(visible, time.Since(mid))
				if first != int64(v) {
					res.FirstReadsStale++
				}
			}
		}
		if changed, err := r.RowsAffected(); err != nil || changed != 1 {
			return nil, fmt.Errorf("pair %d: %s changed %d rows (%v), want 1", i+1, update, changed, err)
		}
		if i == warmup {
			t0 = start
		}

		var node, role, reason, pins string
		if err := conn.QueryRowContext(ctx, "/*PROXY_INTERNAL*/ SHOW LAST ROUTE").Scan(&node, &role, &reason, &pins); err != nil {
			return nil, fmt.Errorf("pair %d: SHOW LAST ROUTE: %v", i+1, err)
		}
		var ep, level string
		var timeoutMS, w, to, pr int64
		if err := conn.QueryRowContext(ctx, "/*PROXY_INTERNAL*/ SHOW CONSISTENCY").Scan(&ep, &level, &timeoutMS, &w, &to, &pr); err != nil {
			return nil, fmt.Errorf("pair %d: SHOW CONSISTENCY: %v", i+1, err)
		}
		waited, timedOut := w > waits, to > timeouts
		waits, timeouts = w, to
		if i == warmup-1 {
			res.WaitsBefore, res.TimeoutsBefore = w, to
		}
		if i < warmup {
			continue
		}

		writes = append(writes, mid.Sub(start))
		reads = append(reads, end.Sub(mid))
		pairs = append(pairs, end.Sub(start))
		if got != int64(v) {
			res.Stale++
		}
		res.Routes[node+" "+role+" "+reason]++
		switch {
		case role == "replica":
			res.ReplicaReads++
			if waited {
				res.ReplicaReadsWaited++
			}
		case strings.HasPrefix(reason, "consistency"):
			res.PrimaryTimeoutReads++
		default:
			res.OtherReads++
		}
		if waited {
			res.ReadsWaited++
		}
		if timedOut {
			res.ReadsTimedOut++
		}
	}
	res.Seconds = round(time.Since(t0).Seconds())
	res.WaitsAfter, res.TimeoutsAfter = waits, timeouts
	res.Waits = res.WaitsAfter - res.WaitsBefore
	res.Timeouts = res.TimeoutsAfter - res.TimeoutsBefore
	res.ReplicaShare = round(float64(res.ReplicaReads) / float64(n))
	res.WriteP50, res.WriteP99 = percentile(writes, 50), percentile(writes, 99)
	res.ReadP50, res.ReadP99, res.ReadAvg = percentile(reads, 50), percentile(reads, 99), average(reads)
	res.PairP50, res.PairP99, res.PairAvg = percentile(pairs, 50), percentile(pairs, 99), average(pairs)
	if direct != "" {
		res.VisibleP50, res.VisibleP99, res.VisibleMax = percentile(visible, 50), percentile(visible, 99), percentile(visible, 100)
	}
	return res, nil
}

// percentile is the p-th percentile (nearest rank) of d, in milliseconds.
func percentile(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	k := (p*len(s) + 99) / 100 // ceil(p/100 * n)
	k = max(k, 1)
	return ms(s[k-1])
}

// average of d, in milliseconds.
func average(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return ms(sum / time.Duration(len(d)))
}

func ms(d time.Duration) float64 { return round(float64(d) / float64(time.Millisecond)) }

// round to 3 decimals (microseconds, for milliseconds).
func round(x float64) float64 { return math.Round(x*1000) / 1000 }
