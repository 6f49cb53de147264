package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fake is a Control with one endpoint (rw), one node and one session.
type fake struct {
	patched map[string]json.RawMessage
	ready   error
	killed  []uint64
	drained time.Duration
}

func (f *fake) Proxy() Proxy {
	return Proxy{Version: "test", Nodes: f.Nodes(), Endpoints: f.Endpoints()}
}
func (f *fake) Nodes() []Node {
	return []Node{{Name: "primary", Role: "primary", State: "up"}}
}
func (f *fake) Endpoints() []Endpoint {
	return []Endpoint{{Name: "rw", Settings: EndpointSettings{Mode: "read-write", Balance: "weighted"}}}
}
func (f *fake) PatchEndpoint(name string, patch map[string]json.RawMessage) (Change, error) {
	if name != "rw" {
		return Change{}, Errorf(NotFound, "", "no endpoint is named %q", name)
	}
	if _, ok := patch["balance"]; ok && string(patch["balance"]) == `"fastest"` {
		return Change{}, Errorf(Invalid, "balance", `invalid value "fastest"`)
	}
	f.patched = patch
	return Change{Changed: []string{"balance"}, Persisted: true}, nil
}
func (f *fake) DrainNode(name string, timeout time.Duration) (Node, error) {
	if name != "primary" {
		return Node{}, Errorf(NotFound, "", "no node is named %q", name)
	}
	f.drained = timeout
	return Node{Name: name, State: "draining"}, nil
}
func (f *fake) UndrainNode(name string) (Node, error) { return Node{Name: name, State: "up"}, nil }
func (f *fake) CreateEndpoint(body map[string]json.RawMessage) (Change, error) {
	if _, ok := body["name"]; !ok {
		return Change{}, Errorf(Invalid, "name", "required")
	}
	return Change{Changed: []string{"endpoints.x (new)"}, Persisted: true}, nil
}
func (f *fake) DeleteEndpoint(name string) (Change, error) {
	if name != "rw" {
		return Change{}, Errorf(NotFound, "", "no endpoint is named %q", name)
	}
	return Change{Changed: []string{"endpoints.rw (removed)"}, Persisted: true}, nil
}
func (f *fake) CreateNode(body map[string]json.RawMessage) (Change, error) {
	if _, ok := body["address"]; !ok {
		return Change{}, Errorf(Invalid, "address", "required")
	}
	return Change{Changed: []string{"backends.replica3 (new)"}, Node: &Node{Name: "replica3", State: "down"}, Persisted: true}, nil
}
func (f *fake) DeleteNode(name string) (Change, error) {
	if name != "replica3" {
		return Change{}, Errorf(Conflict, "", "%s is in service: drain it first", name)
	}
	return Change{Changed: []string{"backends.replica3 (removed)"}, Persisted: true}, nil
}
func (f *fake) Sessions() []Session { return []Session{{ID: 7, User: "app"}} }
func (f *fake) KillSession(id uint64) bool {
	f.killed = append(f.killed, id)
	return id == 7
}
func (f *fake) Reload() (Change, error) { return Change{}, errors.New("disk on fire") }
func (f *fake) Readiness() error        { return f.ready }

func call(t *testing.T, h http.Handler, method, path, token, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "127.0.0.1:6080"
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: not JSON: %q", method, path, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return rec.Code, out
}

func errorOf(out map[string]any) (code, field, msg string) {
	e, _ := out["error"].(map[string]any)
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	msg, _ = e["message"].(string)
	return
}

// TestAuth: with a token, everything but /healthz, /readyz and /metrics needs it.
func TestAuth(t *testing.T) {
	h := New(Options{Control: &fake{}, Token: "s3cret", Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	})}).Handler()
	for _, open := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := call(t, h, "GET", open, "", ""); code != 200 {
			t.Errorf("%s without a token: %d", open, code)
		}
	}
	for _, path := range []string{"/v1/proxy", "/v1/nodes", "/v1/endpoints", "/v1/endpoints/rw", "/v1/sessions", "/nope"} {
		for _, token := range []string{"", "wrong", "s3cret "} {
			code, out := call(t, h, "GET", path, token, "")
			if c, _, _ := errorOf(out); code != 401 || c != "unauthorized" {
				t.Errorf("GET %s with token %q: %d %v", path, token, code, out)
			}
		}
		if code, _ := call(t, h, "GET", path, "s3cret", ""); code == 401 {
			t.Errorf("GET %s with the token: 401", path)
		}
	}
	if code, _ := call(t, h, "PATCH", "/v1/endpoints/rw", "", `{"balance":"weighted"}`); code != 401 {
		t.Errorf("PATCH without a token: %d", code)
	}
}

// TestHandlers: each handler's answers to good input and each kind of bad input.
func TestHandlers(t *testing.T) {
	f := &fake{}
	h := New(Options{Control: f}).Handler()
	if code, out := call(t, h, "GET", "/v1/proxy", "", ""); code != 200 || out["version"] != "test" {
		t.Errorf("proxy: %d %v", code, out)
	}
	if code, out := call(t, h, "GET", "/v1/endpoints/rw", "", ""); code != 200 || out["name"] != "rw" {
		t.Errorf("endpoint: %d %v", code, out)
	}
	if code, out := call(t, h, "GET", "/v1/nodes/primary", "", ""); code != 200 || out["state"] != "up" {
		t.Errorf("node: %d %v", code, out)
	}
	for _, path := range []string{"/v1/endpoints/nope", "/v1/nodes/nope", "/v2/x"} {
		if code, out := call(t, h, "GET", path, "", ""); code != 404 {
			t.Errorf("%s: %d %v", path, code, out)
		}
	}
	if code, out := call(t, h, "PATCH", "/v1/endpoints/rw", "", `{"balance":"least-active"}`, "Content-Type", "application/json"); code != 200 ||
		out["persisted"] != true || string(f.patched["balance"]) != `"least-active"` {
		t.Errorf("patch: %d %v %s", code, out, f.patched)
	}
	for _, c := range []struct {
		body, ct  string
		status    int
		code, fld string
	}{
		{`{"balance":"fastest"}`, "", 400, "invalid", "balance"},
		{`{}`, "", 400, "bad_request", ""},
		{`[1]`, "", 400, "bad_request", ""},
		{`{"balance":`, "", 400, "bad_request", ""},
		{`{"balance":"x"}`, "text/plain", 415, "bad_request", ""},
		{`{"x":"` + strings.Repeat("a", maxBody) + `"}`, "", 413, "bad_request", ""},
	} {
		code, out := call(t, h, "PATCH", "/v1/endpoints/rw", "", c.body, "Content-Type", c.ct)
		if ec, fld, _ := errorOf(out); code != c.status || ec != c.code || fld != c.fld {
			t.Errorf("PATCH %.40q (%s): %d %v; want %d %s %s", c.body, c.ct, code, out, c.status, c.code, c.fld)
		}
	}
	if code, out := call(t, h, "POST", "/v1/endpoints", "", `{"name":"x","listen":"127.0.0.1:0"}`); code != 201 || out["persisted"] != true {
		t.Errorf("create: %d %v", code, out)
	}
	if code, out := call(t, h, "POST", "/v1/endpoints", "", `{"listen":"127.0.0.1:0"}`); code != 400 {
		t.Errorf("create without a name: %d %v", code, out)
	}
	if code, out := call(t, h, "POST", "/v1/nodes", "", `{"name":"replica3","address":"127.0.0.1:3309"}`); code != 201 || out["node"] == nil {
		t.Errorf("create a node: %d %v", code, out)
	}
	if code, out := call(t, h, "POST", "/v1/nodes", "", `{"name":"replica3"}`); code != 400 {
		t.Errorf("create a node without an address: %d %v", code, out)
	}
	if code, out := call(t, h, "POST", "/v1/nodes", "", `["replica3"]`); code != 400 {
		t.Errorf("create a node from a list: %d %v", code, out)
	}
	if code, out := call(t, h, "DELETE", "/v1/nodes/replica3", "", ""); code != 200 || out["persisted"] != true {
		t.Errorf("delete a node: %d %v", code, out)
	}
	if code, out := call(t, h, "DELETE", "/v1/nodes/replica1", "", ""); code != 409 {
		t.Errorf("delete a node in service: %d %v", code, out)
	}
	if code, _ := call(t, h, "DELETE", "/v1/endpoints/rw", "", ""); code != 200 {
		t.Errorf("delete: %d", code)
	}
	if code, _ := call(t, h, "DELETE", "/v1/endpoints/nope", "", ""); code != 404 {
		t.Errorf("delete of no endpoint: %d", code)
	}
	if code, _ := call(t, h, "PATCH", "/v1/endpoints/nope", "", `{"balance":"weighted"}`); code != 404 {
		t.Errorf("patch of no endpoint: %d", code)
	}
	if code, out := call(t, h, "DELETE", "/v1/sessions/7", "", ""); code != 200 || out["killed"] != float64(7) {
		t.Errorf("kill: %d %v", code, out)
	}
	if code, _ := call(t, h, "DELETE", "/v1/sessions/8", "", ""); code != 404 {
		t.Errorf("kill of no session: %d", code)
	}
	if code, out := call(t, h, "DELETE", "/v1/sessions/x", "", ""); code != 400 {
		t.Errorf("kill of a bad id: %d %v", code, out)
	}
	if code, out := call(t, h, "POST", "/v1/reload", "", ""); code != 500 {
		t.Errorf("reload failing: %d %v", code, out)
	}
	if code, _ := call(t, h, "POST", "/v1/proxy", "", ""); code != 405 && code != 404 {
		t.Errorf("POST /v1/proxy: %d", code)
	}
	if code, out := call(t, h, "POST", "/v1/nodes/primary/drain", "", ""); code != 200 || out["state"] != "draining" || f.drained != DefaultDrainTimeout {
		t.Errorf("drain: %d %v %s", code, out, f.drained)
	}
	if code, _ := call(t, h, "POST", "/v1/nodes/primary/drain", "", `{"timeout":"5s"}`); code != 200 || f.drained != 5*time.Second {
		t.Errorf("drain 5s: %d %s", code, f.drained)
	}
	for _, bad := range []string{`{"timeout":"soon"}`, `{"timeout":"-1s"}`, `{"timeout":"48h"}`} {
		code, out := call(t, h, "POST", "/v1/nodes/primary/drain", "", bad)
		if _, fld, _ := errorOf(out); code != 400 || fld != "timeout" {
			t.Errorf("drain %s: %d %v", bad, code, out)
		}
	}
	if code, _ := call(t, h, "POST", "/v1/nodes/nope/drain", "", ""); code != 404 {
		t.Errorf("drain of no node: %d", code)
	}
	if code, out := call(t, h, "POST", "/v1/nodes/primary/undrain", "", ""); code != 200 || out["state"] != "up" {
		t.Errorf("undrain: %d %v", code, out)
	}
	// A browser page on another site cannot change anything; a rebound name is refused.
	req := httptest.NewRequest("POST", "http://127.0.0.1:6080/v1/reload", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 {
		t.Errorf("a cross-site POST: %d, want 403", rec.Code)
	}
	req = httptest.NewRequest("GET", "http://evil.example:6080/v1/sessions", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 {
		t.Errorf("Host evil.example without a token: %d, want 403", rec.Code)
	}
	f.ready = errors.New("the primary is down")
	if code, out := call(t, h, "GET", "/readyz", "", ""); code != 503 || out["reason"] != "the primary is down" {
		t.Errorf("readyz: %d %v", code, out)
	}
}

// TestCrossOriginGets: without a token, a page on another site cannot make the operator's
// browser GET the profiler (CPU for as long as it asks), the API or anything else; the probes
// and /metrics stay readable from anywhere, and same-origin and non-browser GETs still work.
func TestCrossOriginGets(t *testing.T) {
	h := New(Options{Control: &fake{}, Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	})}).Handler()
	get := func(path string, header ...string) int {
		req := httptest.NewRequest("GET", "http://127.0.0.1:6080"+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, path := range []string{"/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1", "/debug/pprof/", "/v1/sessions", "/v1/proxy"} {
		if code := get(path, "Sec-Fetch-Site", "cross-site"); code != 403 {
			t.Errorf("cross-site GET %s: %d, want 403", path, code)
		}
		if code := get(path, "Origin", "http://evil.example"); code != 403 {
			t.Errorf("GET %s with a foreign Origin: %d, want 403", path, code)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code := get(path, "Sec-Fetch-Site", "cross-site"); code != 200 {
			t.Errorf("cross-site GET %s: %d, want 200", path, code)
		}
	}
	for _, path := range []string{"/v1/sessions", "/debug/pprof/"} {
		if code := get(path, "Sec-Fetch-Site", "same-origin"); code != 200 {
			t.Errorf("same-origin GET %s: %d, want 200", path, code)
		}
		if code := get(path); code != 200 {
			t.Errorf("GET %s from a non-browser client: %d, want 200", path, code)
		}
	}
}
