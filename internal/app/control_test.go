package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
)

// offline is a configuration of three nodes that nothing listens for (no monitor: the app is
// built, never run), with endpoint rw's weights in the file as the operator wrote them.
const offline = `users:
  - {name: app, password: app}
backends:
  - {name: primary, address: 127.0.0.1:1, role: primary}
  - {name: replica1, address: 127.0.0.1:2, role: replica}
  - {name: replica2, address: 127.0.0.1:3, role: replica}
endpoints:
  - name: rw
    listen: 127.0.0.1:0
    mode: read-write
    read_weights:
      replica1: 100 # the big one
      replica2: 100
  - name: ro
    listen: 127.0.0.1:0
    mode: read-only
`

// offlineApp builds an app from text (written to a file, which the changes write back to) and
// its admin API's handler.
func offlineApp(t *testing.T, text string) (*App, http.Handler, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The logger sluice builds (NewLogger), so that log.level follows a reload as in serve.
	a, err := New(cfg, NewLogger(cfg.Log, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.topo.Close)
	return a, admin.New(admin.Options{Control: a}).Handler(), path
}

// patch sends PATCH /v1/endpoints/name with body and decodes the answer.
func patch(t *testing.T, h http.Handler, name, body string) (int, admin.Change) {
	t.Helper()
	req := httptest.NewRequest("PATCH", "/v1/endpoints/"+name, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "127.0.0.1" // without a token the API answers only loopback Host headers
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var ch admin.Change
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &ch); err != nil {
			t.Fatal(err)
		}
	}
	return rec.Code, ch
}

// TestPatchMergesMaps: a PATCH of read_weights merges as a JSON merge patch (RFC 7386): the
// node named changes, the others keep their weights (in force, in the answer and in the file,
// comments included), null removes a node's entry; where the file gives no weights, the
// defaults in force are what the patch changes.
func TestPatchMergesMaps(t *testing.T) {
	a, h, path := offlineApp(t, offline)
	code, ch := patch(t, h, "rw", `{"read_weights": {"replica1": 50}}`)
	if code != http.StatusOK || ch.Endpoint == nil {
		t.Fatalf("PATCH: %d %+v", code, ch)
	}
	want := map[string]int{"primary": 0, "replica1": 50, "replica2": 100}
	if got := ch.Endpoint.Settings.ReadWeights; !equalWeights(got, want) {
		t.Errorf("the answer's weights: %v, want %v", got, want)
	}
	if got := a.Endpoints()[0].Settings.ReadWeights; !equalWeights(got, want) {
		t.Errorf("the weights in force: %v, want %v", got, want)
	}
	if st, _ := a.proxy.EndpointSettings("rw"); len(st.Routing.Weights) != 3 || st.Routing.Weights[1] != 50 || st.Routing.Weights[2] != 100 {
		t.Errorf("the routing's weights: %v", st.Routing.Weights)
	}
	file, _ := os.ReadFile(path)
	for _, w := range []string{"replica1: 50 # the big one", "replica2: 100"} {
		if !strings.Contains(string(file), w) {
			t.Errorf("the file lacks %q:\n%s", w, file)
		}
	}

	// null removes the entry: a node the file's weights do not list takes no reads.
	if code, ch = patch(t, h, "rw", `{"read_weights": {"replica2": null, "primary": 10}}`); code != http.StatusOK {
		t.Fatalf("PATCH with null: %d", code)
	}
	want = map[string]int{"primary": 10, "replica1": 50, "replica2": 0}
	if got := ch.Endpoint.Settings.ReadWeights; !equalWeights(got, want) {
		t.Errorf("after null: %v, want %v", got, want)
	}
	if file, _ := os.ReadFile(path); strings.Contains(string(file), "replica2: ") {
		t.Errorf("replica2's entry is still in the file:\n%s", file)
	}

	// ro's file gives no weights: the defaults (100 per replica) are what changes.
	if code, ch = patch(t, h, "ro", `{"read_weights": {"replica2": 20}}`); code != http.StatusOK {
		t.Fatalf("PATCH ro: %d", code)
	}
	want = map[string]int{"primary": 0, "replica1": 100, "replica2": 20}
	if got := ch.Endpoint.Settings.ReadWeights; !equalWeights(got, want) {
		t.Errorf("ro after the patch: %v, want %v", got, want)
	}

	// A bad entry is refused with the configuration's words, and changes nothing.
	if code, _ := patch(t, h, "rw", `{"read_weights": {"replica9": 1}}`); code != http.StatusBadRequest {
		t.Errorf("an unknown node: %d", code)
	}
	// The whole map back to the default: null for the setting itself.
	if code, ch = patch(t, h, "rw", `{"read_weights": null}`); code != http.StatusOK {
		t.Fatalf("PATCH null: %d", code)
	}
	want = map[string]int{"primary": 0, "replica1": 100, "replica2": 100}
	if got := ch.Endpoint.Settings.ReadWeights; !equalWeights(got, want) {
		t.Errorf("back to the default: %v, want %v", got, want)
	}
}

// TestPatchChangedNamesWhatChanged: a PATCH's answer lists the settings whose value in force
// changed, not every key it gave; one that sets values already in force changed nothing.
func TestPatchChangedNamesWhatChanged(t *testing.T) {
	_, h, _ := offlineApp(t, offline)
	code, ch := patch(t, h, "rw", `{"max_connections": 50, "max_replica_lag": "7s"}`)
	if code != http.StatusOK {
		t.Fatalf("PATCH: %d", code)
	}
	if !slices.Equal(ch.Changed, []string{"max_connections", "max_replica_lag"}) {
		t.Errorf("changed %q, want max_connections and max_replica_lag", ch.Changed)
	}
	code, ch = patch(t, h, "rw", `{"max_connections": 50, "max_replica_lag": "9s"}`)
	if code != http.StatusOK || !slices.Equal(ch.Changed, []string{"max_replica_lag"}) {
		t.Errorf("PATCH with max_connections already 50: %d, changed %q, want max_replica_lag only", code, ch.Changed)
	}
	code, ch = patch(t, h, "rw", `{"max_connections": 50}`)
	if code != http.StatusOK || len(ch.Changed) != 0 {
		t.Errorf("PATCH of the value in force: %d, changed %q, want nothing", code, ch.Changed)
	}
}

func equalWeights(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if w, ok := got[k]; !ok || w != v {
			return false
		}
	}
	return true
}
