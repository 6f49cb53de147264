package app

import (
	"net/http"
	"testing"
)

// TestPatchPoolMinIdle: an endpoint's pool.min_idle changes live through PATCH, in the answer
// and in the proxy's settings; one over the endpoint's max_per_node is refused and changes
// nothing.
func TestPatchPoolMinIdle(t *testing.T) {
	a, h, _ := offlineApp(t, offline)
	code, ch := patch(t, h, "rw", `{"pool.min_idle": 2, "pool.max_per_node": 3}`)
	if code != http.StatusOK || ch.Endpoint == nil || ch.Endpoint.Settings.Pool.MinIdle != 2 {
		t.Fatalf("PATCH pool.min_idle: %d %+v", code, ch)
	}
	if st, _ := a.proxy.EndpointSettings("rw"); st.Pool.Limits.MinIdle != 2 || st.Pool.Limits.MaxPerNode != 3 {
		t.Errorf("the proxy's pool limits: %+v", st.Pool.Limits)
	}
	if code, _ := patch(t, h, "rw", `{"pool.min_idle": 4}`); code != http.StatusBadRequest {
		t.Errorf("min_idle over max_per_node: %d, want 400", code)
	}
	if st, _ := a.proxy.EndpointSettings("rw"); st.Pool.Limits.MinIdle != 2 {
		t.Errorf("a refused PATCH changed min_idle to %d", st.Pool.Limits.MinIdle)
	}
}
