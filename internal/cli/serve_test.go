package cli_test

import (
	"bytes"
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
func TestServeGracefulShutdown(t *testing.T) {
	c := testutil.Cluster(t)
	cfgData, err := os.ReadFile(filepath.Join(c.Dir, sandbox.ConfigFile))
	if err != nil {
		t.Fatal(err)
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
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgs+"=serve\n--config\n"+path)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	addr := "127.0.0.1:" + strconv.Itoa(rwPort)
	deadline := time.Now().Add(15 * time.Second)
	for {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice did not listen: %s", logs.String())
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
	// New connections are refused once shutdown began.
	time.Sleep(200 * time.Millisecond)
	if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		nc.Close()
		t.Error("sluice still accepts connections after SIGTERM")
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

type errorString string

func (e errorString) Error() string { return string(e) }
