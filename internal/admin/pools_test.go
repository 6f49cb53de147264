package admin

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

type fakePools []Pool

func (f fakePools) Pools() []Pool { return f }

// TestPools: GET /v1/pools lists what Pools returns (an empty list, not null, before any), behind
// the token; /metrics exports each figure per node and user.
func TestPools(t *testing.T) {
	h := New(Options{Control: &fake{}, Token: "s3cret", Pools: fakePools(nil)}).Handler()
	code, out := call(t, h, "GET", "/v1/pools", "s3cret", "")
	if ps, ok := out["pools"].([]any); code != 200 || !ok || len(ps) != 0 {
		t.Fatalf("empty pools: %d %v", code, out)
	}
	if code, _ := call(t, h, "GET", "/v1/pools", "", ""); code != 401 {
		t.Fatalf("GET /v1/pools without the token: %d", code)
	}
	p := Pool{Node: "primary", User: "app", Open: 3, Idle: 2, InUse: 1, Waiting: 4, Created: 5, Reused: 6, Resets: 7, ResetFailures: 8,
		Waits: 9, WaitSeconds: 1.5}
	h = New(Options{Control: &fake{}, Pools: fakePools{p}}).Handler()
	code, out = call(t, h, "GET", "/v1/pools", "", "")
	ps, _ := out["pools"].([]any)
	if code != 200 || len(ps) != 1 {
		t.Fatalf("pools: %d %v", code, out)
	}
	got := ps[0].(map[string]any)
	for k, v := range map[string]float64{"open": 3, "idle": 2, "in_use": 1, "waiting": 4, "created": 5, "reused": 6, "resets": 7,
		"reset_failures": 8, "waits": 9, "wait_seconds": 1.5} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if got["node"] != "primary" || got["user"] != "app" {
		t.Errorf("node, user = %v, %v", got["node"], got["user"])
	}

	srv := httptest.NewServer(MetricsHandler(func() Stats { return Stats{Pools: []Pool{p}} }))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{
		`sluice_pool_connections{node="primary",state="idle",user="app"} 2`,
		`sluice_pool_connections{node="primary",state="in_use",user="app"} 1`,
		`sluice_pool_waiting{node="primary",user="app"} 4`,
		`sluice_pool_created_total{node="primary",user="app"} 5`,
		`sluice_pool_reused_total{node="primary",user="app"} 6`,
		`sluice_pool_resets_total{node="primary",user="app"} 7`,
		`sluice_pool_reset_failures_total{node="primary",user="app"} 8`,
		`sluice_pool_waits_total{node="primary",user="app"} 9`,
		`sluice_pool_wait_seconds_total{node="primary",user="app"} 1.5`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
