package testutil

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/sandbox"
)

// The cluster of the current test binary. Package state because TestMain and the tests share
// nothing else; set once by Main before m.Run and read-only afterwards.
var (
	mu         sync.Mutex
	shared     *sandbox.Cluster
	skipReason string
)

// dirPrefix names the temp directories Main creates; stale ones are found by it.
const (
	dirPrefix = "sluice-test-"
	ownerFile = "owner.pid"
)

// Main brings one cluster up for the test package, runs the tests and brings it down, and
// returns the exit code for os.Exit. The cluster always lives in a fresh temp directory on
// free ports (opts.Dir, opts.BasePort and opts.ProxyPorts are overridden: tests never use
// fixed ports; no admin listener: a test that wants one adds it); the other options are used as given. Progress is logged only with -v.
//
// With opts.WritableReplicas the replicas run with read_only OFF, and the run fails when any
// of them holds a transaction of its own at the end: a write reached it.
//
// When no server is installed, tests calling Cluster are skipped; with CI=true Main fails
// instead, so a CI machine without MariaDB cannot pass by skipping every integration test.
func Main(m *testing.M, opts sandbox.Options) int {
	if !flag.Parsed() {
		flag.Parse() // testing.Verbose needs parsed flags; m.Run parses them again harmlessly
	}
	if err := sandbox.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "testutil: %v\ntestutil: CI=true, so this is a failure, not a skip\n", err)
			return 1
		}
		setSkip("no database server: " + err.Error())
		return m.Run()
	}
	sweepStale()

	root, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testutil: %v\n", err)
		return 1
	}
	defer os.RemoveAll(root)
	// MkdirTemp makes 0700; as root, the servers can then run as "mysql" (see sandbox).
	_ = os.Chmod(root, 0o755)
	_ = os.WriteFile(filepath.Join(root, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644)

	opts.Dir = filepath.Join(root, "c")
	opts.BasePort, opts.ProxyPorts, opts.AdminPort = 0, [2]int{}, -1
	opts.Log = nil
	if testing.Verbose() {
		opts.Log = os.Stderr
	}

	// Ctrl-C (or SIGTERM) during the run: the servers run in their own session and would
	// outlive us, so bring them down before exiting.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupted := make(chan struct{})
	upDone := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		close(interrupted)
		cancel() // aborts an Up in progress, which cleans up after itself
		<-upDone
		mu.Lock()
		c := shared
		mu.Unlock()
		if c != nil {
			dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
			_ = c.Down(dctx)
			dcancel()
		}
		os.RemoveAll(root)
		fmt.Fprintln(os.Stderr, "testutil: interrupted; sandbox cluster removed")
		os.Exit(130)
	}()

	began := time.Now()
	c, err := sandbox.Up(ctx, opts)
	if err == nil {
		mu.Lock()
		shared = c
		mu.Unlock()
	}
	close(upDone)
	if err != nil {
		select {
		case <-interrupted:
			select {} // the signal goroutine exits the process
		default:
		}
		fmt.Fprintf(os.Stderr, "testutil: sandbox cluster did not come up: %v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "testutil: cluster up in %s\n", time.Since(began).Round(time.Millisecond))
	}

	code := m.Run()

	if opts.WritableReplicas && code == 0 {
		// Replicas that would take a write: none may have taken one. First let them apply what
		// the primary wrote last: a replica that was the primary a moment ago (a switchover and
		// back) shows its own GTIDs until the primary's next one reaches it.
		wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = c.WaitCaughtUp(wctx, 30*time.Second) // a replica that does not catch up is checked as it is
		wcancel()
		writes, err := c.ReplicaWrites(context.Background())
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "testutil: checking the replicas for writes of their own: %v\n", err)
			code = 1
		case len(writes) > 0:
			fmt.Fprintf(os.Stderr, "testutil: FAIL: writes reached a replica through the tests: %s\n", strings.Join(writes, "; "))
			code = 1
		}
	}

	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer dcancel()
	if err := c.Down(dctx); err != nil {
		fmt.Fprintf(os.Stderr, "testutil: bringing the cluster down: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func setSkip(reason string) {
	mu.Lock()
	defer mu.Unlock()
	skipReason = reason
}

// Cluster returns the package's cluster. It skips the test when Main found no server, and
// fails it when the package's TestMain does not call Main.
func Cluster(t testing.TB) *sandbox.Cluster {
	t.Helper()
	mu.Lock()
	c, reason := shared, skipReason
	mu.Unlock()
	if reason != "" {
		t.Skip(reason)
	}
	if c == nil {
		t.Fatal("testutil.Cluster: no cluster; call testutil.Main from this package's TestMain")
	}
	return c
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := sandbox.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// sweepStale brings down clusters left behind by test binaries that died without running
// their cleanup (a `go test -timeout` panic, SIGKILL). A directory is stale only when the pid
// in its owner file is gone; directories of live runs, and ones without an owner file yet,
// are left alone.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || processExists(pid) {
			continue
		}
		if c, err := sandbox.Open(filepath.Join(d, "c")); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := c.Down(ctx)
			cancel()
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				continue // something still runs there: do not delete its files
			}
		}
		_ = os.RemoveAll(d)
	}
}

// processExists reports whether pid names a process; where that cannot be told, it says yes,
// which only means a stale directory stays.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	// ESRCH comes back as ErrProcessDone; EPERM means it exists but is not ours.
	return !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}
