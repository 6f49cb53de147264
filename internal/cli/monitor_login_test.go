package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// wrongMonitorPassword edits the sandbox's configuration: the monitor logs in with a password
// the nodes refuse, every 200 ms.
func wrongMonitorPassword(b []byte) []byte {
	return bytes.Replace(b, []byte("password: "+sandbox.MonitorPassword+"\n"), []byte("password: not-the-monitors\n  interval: 200ms\n"), 1)
}

// TestWrongMonitorPassword: with a monitor password every node refuses (1045), no node is
// called down: each is auth_failed with the server's words, routing goes on on the configured
// roles (writes on the primary, reads on both replicas), /readyz answers 200 "degraded" and
// says what to fix; `serve --check` tries the monitor's login on every node and refuses the
// file, and passes it with the right password.
func TestWrongMonitorPassword(t *testing.T) {
	adminAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	addr, _, _, logs, path := startServeEdited(t, wrongMonitorPassword, "admin: {listen: '"+adminAddr+"'}\n")

	// Past monitor.down_after (3) failed checks, many times over.
	var nodes struct {
		Nodes []struct{ Name, State, Error string }
	}
	_, mustCtl := ctlAt(t, adminAddr, "", logs)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := json.Unmarshal([]byte(mustCtl("-o", "json", "status")), &nodes); err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, n := range nodes.Nodes {
			if n.State == "auth_failed" {
				seen++
			}
		}
		if seen == 3 || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(time.Second) // 5 more checks: none of them makes a node down
	if err := json.Unmarshal([]byte(mustCtl("-o", "json", "status")), &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Nodes) != 3 {
		t.Fatalf("nodes: %+v", nodes.Nodes)
	}
	for _, n := range nodes.Nodes {
		if n.State != "auth_failed" || !strings.Contains(n.Error, "1045") || !strings.Contains(n.Error, "Access denied for user 'sluice_monitor'") {
			t.Errorf("%s: %s %q; want auth_failed with the server's message", n.Name, n.State, n.Error)
		}
	}
	if out := mustCtl("status"); !strings.Contains(out, "auth_failed") || !strings.Contains(out, "READS FROM") {
		t.Errorf("ctl status:\n%s", out)
	}

	resp, err := http.Get("http://" + adminAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct{ Status, Reason string }
	_ = json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || ready.Status != "degraded" || !strings.Contains(ready.Reason, "monitor.password") ||
		!strings.Contains(ready.Reason, "Access denied") {
		t.Errorf("/readyz: %d %+v", resp.StatusCode, ready)
	}

	// The sessions log in as their own users: writes and reads go on, reads on both replicas.
	db, err := sql.Open("mysql", "app:app@tcp("+addr+")/test?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS monitor_login (id INT PRIMARY KEY)"); err != nil {
		t.Fatalf("a write with the monitor locked out: %v", err)
	}
	// Reads spread (weighted) from a session that wrote nothing (consistency: session waits for
	// nothing): both replicas take them.
	mustCtl("endpoint", "rw", "balance=weighted")
	readers, err := sql.Open("mysql", "app:app@tcp("+addr+")/test?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer readers.Close()
	conn, err := readers.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := readSplitOn(t, conn, serverIDs(t, "primary", "replica1", "replica2"))
	if got["replica1"] == 0 || got["replica2"] == 0 || got["primary"] != 0 {
		t.Errorf("reads with the monitor locked out went %v, want both replicas", got)
	}

	// serve --check: the wrong password is refused on every node, the right one is not.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("serve", "--config", path, "--check")
	if code != 1 || strings.Count(out, "REFUSED") != 3 || !strings.Contains(out, "1045") {
		t.Errorf("--check with the wrong password: exit %d\n%s%s", code, out, errOut)
	}
	good := filepath.Join(t.TempDir(), "good.yaml")
	if err := os.WriteFile(good, bytes.Replace(data, []byte("password: not-the-monitors\n"), []byte("password: "+sandbox.MonitorPassword+"\n"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI("serve", "--config", good, "--check")
	if code != 0 || strings.Count(out, ": ok") != 3 {
		t.Errorf("--check with the right password: exit %d\n%s%s", code, out, errOut)
	}
}
