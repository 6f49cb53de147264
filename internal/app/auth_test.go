package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/topology"
)

// TestMonitorLoginRefused: nodes that refuse the monitor's login (as the monitor reports it:
// auth_failed with the server's words, health as last known) stay up on their roles and keep
// taking reads; /readyz answers 200, degraded, and says why.
func TestMonitorLoginRefused(t *testing.T) {
	a, h, _ := offlineApp(t, offline)
	close(a.ready) // as Run does once every endpoint listens
	const msg = "Access denied for user 'sluice_monitor'@'localhost' (using password: YES)"
	denied := func() *topology.NodeState {
		return &topology.NodeState{AuthFailed: msg, LastErr: "ERROR 1045 (28000): " + msg, Failures: 5}
	}
	a.topo.Observe([]*topology.NodeState{denied(), denied(), denied()})

	var nodes struct{ Nodes []admin.Node }
	get(t, h, "/v1/nodes", &nodes)
	for _, n := range nodes.Nodes {
		if n.State != "auth_failed" || !strings.Contains(n.Error, "1045") {
			t.Errorf("%s: %s %q, want auth_failed and the server's words", n.Name, n.State, n.Error)
		}
	}
	if snap := a.topo.Snapshot(); snap.Primary != 0 || !snap.Up[0] || !snap.Up[1] {
		t.Errorf("primary %d, up %v: want the configured roles, every node up", snap.Primary, snap.Up)
	}
	var rw admin.Endpoint
	get(t, h, "/v1/endpoints/rw", &rw)
	for _, r := range rw.Reads {
		if r.Node != "primary" && !r.Reads {
			t.Errorf("rw does not read from %s: %s", r.Node, r.Why)
		}
	}

	req := httptest.NewRequest("GET", "/readyz", nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `"degraded"`) || !strings.Contains(body, "primary, replica1, replica2") ||
		!strings.Contains(body, "monitor.password") {
		t.Errorf("/readyz: %d %s", rec.Code, body)
	}
}
