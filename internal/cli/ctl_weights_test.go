package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/app"
	"github.com/sluicedb/sluice/internal/config"
)

// TestCtlPartialWeights: `ctl endpoint rw read_weights=replica1:50` sends only replica1's
// weight, and the admin API (a real app, built from a file, never run: nothing listens at its
// nodes) changes only that one: the answer ctl prints lists every weight in force, replica2's
// kept, and the file keeps it too.
func TestCtlPartialWeights(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	const text = `users: [{name: app, password: app}]
backends:
  - {name: primary, address: 127.0.0.1:1, role: primary}
  - {name: replica1, address: 127.0.0.1:2, role: replica}
  - {name: replica2, address: 127.0.0.1:3, role: replica}
endpoints:
  - {name: rw, listen: 127.0.0.1:0, read_weights: {primary: 0, replica1: 100, replica2: 100}}
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	api := admin.New(admin.Options{Control: a}).Handler()
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Method+" "+string(b))
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()

	var out, errOut strings.Builder
	if code := Run([]string{"ctl", "--admin", srv.URL, "endpoint", "rw", "read_weights=replica1:50"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	mu.Lock()
	if len(bodies) != 1 || bodies[0] != `PATCH {"read_weights":{"replica1":50}}` {
		t.Errorf("ctl sent %q, want only replica1's weight", bodies)
	}
	mu.Unlock()
	if !regexp.MustCompile(`(?m)^read_weights\s+primary:0,replica1:50,replica2:100$`).MatchString(out.String()) {
		t.Errorf("the answer ctl printed does not list the weights in force:\n%s", out.String())
	}
	file, _ := os.ReadFile(path)
	if !strings.Contains(string(file), "{primary: 0, replica1: 50, replica2: 100}") {
		t.Errorf("the file after the change:\n%s", file)
	}
}

// TestCtlStatusReads: ctl status shows each node's lag (no lagging state: that depends on the
// endpoint) and, per endpoint, the nodes that take its reads and why not the others.
func TestCtlStatusReads(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"version": "t", "nodes": [
			{"name": "primary", "role": "primary", "state": "up"},
			{"name": "replica1", "role": "replica", "state": "up", "lag_seconds": 10.25}],
		  "endpoints": [
			{"name": "rw", "settings": {"max_replica_lag": "30s"}, "reads": [{"node": "primary", "reads": false, "why": "weight 0"}, {"node": "replica1", "reads": true}]},
			{"name": "ro", "settings": {"max_replica_lag": "5s"}, "reads": [{"node": "primary", "reads": false, "why": "weight 0"}, {"node": "replica1", "reads": false, "why": "lag 10.25s over max_replica_lag 5s"}]}]}`))
	}))
	defer srv.Close()
	var out, errOut strings.Builder
	if code := Run([]string{"ctl", "--admin", srv.URL, "status"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, re := range []string{
		`(?m)^replica1\s+replica\s+up\s+10\.25s\s`,
		`(?m)^ENDPOINT\s+READS FROM\s+NOT FROM$`,
		`(?m)^rw\s+replica1\s+primary \(weight 0\)$`,
		`(?m)^ro\s+-\s+primary \(weight 0\), replica1 \(lag 10.25s over max_replica_lag 5s\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("status lacks %s:\n%s", re, out.String())
		}
	}
}
