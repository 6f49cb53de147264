package cli_test

import (
	"bytes"
	"database/sql"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/cli"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// childArgs, when set in the environment, makes the test binary run sluice's CLI with these
// arguments (separated by newlines) instead of the tests: a real process to signal.
const childArgs = "SLUICE_TEST_CLI_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(childArgs); a != "" {
		os.Exit(cli.Run(strings.Split(a, "\n"), os.Stdout, os.Stderr))
	}
	os.Exit(testutil.Main(m, sandbox.Options{}))
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cli.Run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestServeCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	cfg := `users:
  - name: app
    password: ${SLUICE_TEST_PW}
backends:
  - name: primary
    address: 127.0.0.1:23306
    role: primary
  - name: replica1
    address: 127.0.0.1:23307
    role: replica
endpoints:
  - name: rw
    listen: 127.0.0.1:6033
    mode: read-write
`
	if err := os.WriteFile(good, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(cfg, "mode: read-write", "mode: rw", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_TEST_PW", "secret")
	if code, out, errOut := runCLI("serve", "--config", good, "--check"); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("valid config: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut := runCLI("serve", "--config", bad, "--check")
	if code != 1 || !strings.Contains(errOut, "bad.yaml:14: endpoints[0].mode") {
		t.Fatalf("invalid config: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI("serve", "--config", filepath.Join(dir, "missing.yaml"), "--check"); code != 1 || errOut == "" {
		t.Fatalf("missing config: exit %d, %q", code, errOut)
	}
	if code, out, _ := runCLI("serve", "--help"); code != 0 || !strings.Contains(out, "Usage: sluice serve") {
		t.Fatalf("serve --help: exit %d %q", code, out)
	}
	if code, _, _ := runCLI("nonsense"); code != 2 {
		t.Fatalf("unknown command: exit %d", code)
	}
	if code, out, _ := runCLI("version"); code != 0 || !strings.HasPrefix(out, "sluice ") {
		t.Fatalf("version: exit %d %q", code, out)
	}
}

// TestServeGracefulShutdown: on SIGTERM sluice stops accepting, lets a running statement finish
// and exits 0.
// startServe runs 'sluice serve' as a child process against the test cluster, with the
// cluster's configuration on fresh ports plus extra (appended at the top level) and flags. It
// returns the rw address, the child, a channel with its exit, and its log.
func startServe(t *testing.T, extra string, flags ...string) (addr string, cmd *exec.Cmd, exited chan error, logs *syncBuffer) {
	t.Helper()
	addr, cmd, exited, logs, _ = startServeAt(t, extra, flags...)
	return addr, cmd, exited, logs
}

// startServeAt is startServe that also returns the configuration file's path.
func startServeAt(t *testing.T, extra string, flags ...string) (addr string, cmd *exec.Cmd, exited chan error, logs *syncBuffer, path string) {
	t.Helper()
	return startServeEdited(t, nil, extra, flags...)
}

// startServeEdited is startServeAt with the sandbox's configuration first changed by edit.
func startServeEdited(t *testing.T, edit func([]byte) []byte, extra string, flags ...string) (addr string, cmd *exec.Cmd, exited chan error, logs *syncBuffer, path string) {
	t.Helper()
	c := testutil.Cluster(t)
	cfgData, err := os.ReadFile(filepath.Join(c.Dir, sandbox.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		cfgData = edit(cfgData)
	}
	rwPort, roPort := testutil.FreePort(t), testutil.FreePort(t)
	cfgText := regexp.MustCompile(`listen: 127\.0\.0\.1:\d+`).ReplaceAllStringFunc(string(cfgData), func() func(string) string {
		i := 0
		return func(string) string {
			i++
			if i == 1 {
				return "listen: 127.0.0.1:" + strconv.Itoa(rwPort)
			}
			return "listen: 127.0.0.1:" + strconv.Itoa(roPort)
		}
	}())
	path = filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(cfgText+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(os.Args[0])
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, childArgs+"="+strings.Join(append([]string{"serve", "--config", path}, flags...), "\n"))
	logs = new(syncBuffer)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	addr = "127.0.0.1:" + strconv.Itoa(rwPort)
	waitListen(t, addr, logs)
	return addr, cmd, exited, logs, path
}

func waitListen(t *testing.T, addr string, logs *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice did not listen on %s: %s", addr, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServeGracefulShutdown(t *testing.T) {
	adminAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	addr, cmd, exited, logs, _ := startServeAt(t, "admin: {listen: '"+adminAddr+"'}\n")
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for code, _ := readyz(); code != http.StatusOK; code, _ = readyz() {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never answered 200 before the shutdown\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	db, err := sql.Open("mysql", "app:app@tcp("+addr+")/?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	result := make(chan error, 1)
	start := time.Now()
	go func() {
		var v int
		err := db.QueryRow("SELECT SLEEP(2)").Scan(&v)
		if err == nil && v != 0 {
			err = errorString("SLEEP was interrupted")
		}
		result <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New connections are refused once shutdown began, and /readyz says so (503) while the
	// running statement finishes: a load balancer stops sending clients.
	time.Sleep(200 * time.Millisecond)
	if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		nc.Close()
		t.Error("sluice still accepts connections after SIGTERM")
	}
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz during the shutdown: %d %s, want 503 shutting down", code, body)
	}
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("running statement failed during shutdown: %v\n%s", err, logs.String())
		}
		if d := time.Since(start); d < 2*time.Second {
			t.Fatalf("statement returned after %s", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("statement did not finish")
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("sluice exited with %v\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sluice did not exit after SIGTERM")
	}
}

// syncBuffer collects a child's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestServeProfiling: threads sets GOMAXPROCS, the admin listener serves the profiles behind
// its token, and --cpuprofile leaves a profile behind at shutdown.
func TestServeProfiling(t *testing.T) {
	adminAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	addr, cmd, exited, logs := startServe(t, "threads: 1\nadmin: {listen: '"+adminAddr+"', token: s3cret}\n", "--cpuprofile", profile)
	if !strings.Contains(logs.String(), "threads=1") {
		t.Errorf("threads: 1 not applied; log:\n%s", logs.String())
	}
	db, err := sql.Open("mysql", "app:app@tcp("+addr+")/?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 100; i++ {
		if _, err := db.Exec("DO 1"); err != nil {
			t.Fatal(err)
		}
	}
	get := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+adminAddr+"/debug/pprof/goroutine?debug=1", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	if code, body := get("s3cret"); code != 200 || !strings.Contains(body, "proxy.(*session)") {
		t.Errorf("goroutine profile: status %d, no session goroutine in:\n%.2000s", code, body)
	}
	for _, bad := range []string{"", "wrong"} {
		if code, body := get(bad); code != 401 || !strings.Contains(body, `"code": "unauthorized"`) {
			t.Errorf("token %q: status %d, %s; want 401", bad, code, body)
		}
	}
	db.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("sluice exited with %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("sluice did not exit after SIGTERM")
	}
	data, err := os.ReadFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("CPU profile is not a gzipped profile (%d bytes)", len(data))
	}
}

// TestServeAdminNeedsATokenOffLoopback: an admin listener off loopback without a token is a
// configuration error, and sluice does not start.
func TestServeAdminNeedsATokenOffLoopback(t *testing.T) {
	dir := t.TempDir()
	for _, a := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0"} {
		cfg := filepath.Join(dir, "sluice.yaml")
		if err := os.WriteFile(cfg, []byte(`users: [{name: app, password: app}]
backends: [{name: primary, address: "127.0.0.1:1", role: primary}, {name: replica1, address: "127.0.0.1:2", role: replica}]
endpoints: [{name: rw, listen: "127.0.0.1:0", mode: read-write}]
admin: {listen: "`+a+`"}
`), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("serve", "--config", cfg)
		if code != 1 || !strings.Contains(stderr, "admin.token: required when admin.listen is not a loopback address") {
			t.Errorf("admin.listen %s: exit %d, stderr %q", a, code, stderr)
		}
	}
}

// TestHelpOnce: --help prints the usage once, on stdout, and exits 0; a bad flag prints the
// error and the usage on stderr and exits 2.
func TestHelpOnce(t *testing.T) {
	for _, args := range [][]string{{"serve", "--help"}, {"sandbox", "up", "--help"}, {"sandbox", "stop", "-h"}, {"ctl", "--help"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || strings.Count(stdout, "Usage") != 1 || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the usage once on stdout", args, code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"serve", "--bogus"}, {"sandbox", "up", "--bogus"}, {"ctl", "--bogus"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "-bogus") || strings.Count(stderr, "Usage") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, the error and the usage on stderr", args, code, stdout, stderr)
		}
	}
}

// TestServeShutdownBounded: a statement on a node that does not answer within the grace
// period does not hold the shutdown: after timeouts.shutdown sluice closes its node
// connections too and exits (before, it waited for the node's answer). A second signal during
// the grace period ends sluice at once.
func TestServeShutdownBounded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grace  string
		second bool
	}{
		{"grace period over", "1s", false},
		{"second signal", "60s", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, cmd, exited, logs := startServe(t, "timeouts:\n  shutdown: "+tc.grace+"\n")
			db, err := sql.Open("mysql", "app:app@tcp("+addr+")/?timeout=5s")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			go func() { _, _ = db.Exec("SELECT SLEEP(60)") }()
			time.Sleep(500 * time.Millisecond)
			start := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if tc.second {
				time.Sleep(300 * time.Millisecond)
				if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case err := <-exited:
				if d := time.Since(start); d > 8*time.Second {
					t.Fatalf("sluice took %s to exit", d)
				}
				if tc.second && err == nil {
					t.Fatalf("after a second signal sluice exited 0, want killed by the signal\n%s", logs.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("sluice did not exit within 20 s of SIGTERM (grace %s)\n%s", tc.grace, logs.String())
			}
		})
	}
}
