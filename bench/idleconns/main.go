// Command idleconns opens N MySQL client connections to one address, logs each one in, and then
// holds them idle, so that bench/run.sh can measure what idle sessions cost a proxy in memory.
//
//	idleconns -addr 127.0.0.1:PORT -n 1000 [-user app -password app -parallel 8 -query 'SELECT 1']
//
// With -query, each connection runs that statement once after its login (text protocol, the
// result read whole), so that the session has served a command before it idles, as an
// application's connection has. It prints "opened N" on stdout once every connection has
// completed its handshake and login (and its query),
// then waits, sending nothing, until stdin reaches end of file or it gets SIGTERM or SIGINT, and
// closes them all. It exits 1 when any connection fails. Plain TCP only (no TLS, like sysbench's
// default), and only to loopback addresses.
package main

import (
	"context"
	"database/sql/driver"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

func main() {
	addr := flag.String("addr", "", "host:port to connect to (loopback only)")
	n := flag.Int("n", 1000, "connections to open")
	user := flag.String("user", "app", "user name")
	password := flag.String("password", "app", "password")
	parallel := flag.Int("parallel", 8, "connections opened at once")
	timeout := flag.Duration("timeout", 2*time.Minute, "time allowed for opening all of them")
	query := flag.String("query", "", "a statement each connection runs once after its login (none: log in only)")
	flag.Parse()
	if err := run(*addr, *n, *user, *password, *query, *parallel, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "idleconns:", err)
		os.Exit(1)
	}
}

func run(addr string, n int, user, password, query string, parallel int, timeout time.Duration) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-addr %q: refusing a non-loopback address", addr)
	}
	if n < 1 || parallel < 1 {
		return fmt.Errorf("-n and -parallel must be at least 1")
	}

	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.User = user
	cfg.Passwd = password
	cfg.Timeout = 30 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conns := make([]driver.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
	}()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := connector.Connect(ctx)
				if err == nil && query != "" {
					conns[i] = c
					err = runQuery(ctx, c, query)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("connection %d of %d: %v", i+1, n, err)
						cancel()
					}
					mu.Unlock()
					continue
				}
				conns[i] = c
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	fmt.Printf("opened %d\n", n)

	// Hold them until stdin closes or a signal arrives.
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		done <- struct{}{}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-done:
	case <-sig:
	}
	return nil
}

// runQuery runs q on c and reads its result to the end.
func runQuery(ctx context.Context, c driver.Conn, q string) error {
	qc, ok := c.(driver.QueryerContext)
	if !ok {
		return fmt.Errorf("the driver's connection cannot run a query")
	}
	rows, err := qc.QueryContext(ctx, q, nil)
	if err != nil {
		return fmt.Errorf("%s: %v", q, err)
	}
	dest := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				break
			}
			rows.Close()
			return fmt.Errorf("%s: %v", q, err)
		}
	}
	return rows.Close()
}
