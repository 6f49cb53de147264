package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// lagged is the cluster: rw tolerates 30 s of lag, ro 5 s; rw also reads from the
// primary a little.
const lagged = `users:
  - {name: app, password: app}
backends:
  - {name: primary, address: 127.0.0.1:1, role: primary}
  - {name: replica1, address: 127.0.0.1:2, role: replica}
  - {name: replica2, address: 127.0.0.1:3, role: replica}
  - {name: replica3, address: 127.0.0.1:4, role: replica}
endpoints:
  - {name: rw, listen: 127.0.0.1:0, max_replica_lag: 30s, read_weights: {primary: 10, replica1: 100, replica2: 100, replica3: 0}}
  - {name: ro, listen: 127.0.0.1:0, mode: read-only, max_replica_lag: 5s, read_weights: {primary: 10, replica1: 100, replica2: 100, replica3: 100}}
`

// get sends GET path to h and decodes the answer into v.
func get(t *testing.T, h http.Handler, path string, v any) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatal(err)
	}
}

// TestReadsPerEndpoint: a replica 10 s behind is no node state of its own (up, its lag in
// seconds) but a verdict per endpoint: rw (30 s) reads from it, ro (5 s) does not, and says
// why; so do a node down, one draining, a weight of 0 and the primary on a read-only endpoint.
// The topology is the monitor's report, made by hand: the verdicts are route's.
func TestReadsPerEndpoint(t *testing.T) {
	a, h, _ := offlineApp(t, lagged)
	replica := func(lag time.Duration) *topology.NodeState {
		return &topology.NodeState{Health: topology.Healthy, ReadOnly: true, Lag: lag, LagKnown: true,
			Replica: &topology.ReplicaStatus{Source: "127.0.0.1:1"}}
	}
	a.topo.Observe([]*topology.NodeState{{Health: topology.Healthy}, replica(10 * time.Second), replica(0),
		{Health: topology.Down, LastErr: "connection refused"}})

	var nodes struct{ Nodes []admin.Node }
	get(t, h, "/v1/nodes", &nodes)
	if n := nodes.Nodes[1]; n.State != "up" || n.LagSeconds == nil || *n.LagSeconds != 10 {
		t.Errorf("replica1: state %s, lag %v; want up, 10 s", n.State, n.LagSeconds)
	}
	if n := nodes.Nodes[0]; n.LagSeconds != nil {
		t.Errorf("the primary has a lag: %v", *n.LagSeconds)
	}

	reads := func(ep string) map[string]string {
		var e admin.Endpoint
		get(t, h, "/v1/endpoints/"+ep, &e)
		out := map[string]string{}
		for _, r := range e.Reads {
			if r.Reads != (r.Why == "") {
				t.Errorf("%s %s: reads %v, why %q", ep, r.Node, r.Reads, r.Why)
			}
			out[r.Node] = r.Why
		}
		return out
	}
	want := map[string]map[string]string{
		"rw": {"primary": "", "replica1": "", "replica2": "", "replica3": "weight 0"},
		"ro": {"primary": "the primary: this endpoint reads from replicas only", "replica1": "lag 10s over max_replica_lag 5s",
			"replica2": "", "replica3": "down"},
	}
	check := func(when string) {
		t.Helper()
		for ep, w := range want {
			got := reads(ep)
			for node, why := range w {
				if g, ok := got[node]; !ok || g != why {
					t.Errorf("%s: %s's reads on %s: %q, want %q", when, ep, node, g, why)
				}
			}
		}
	}
	check("replica1 10 s behind")

	// Under 5 s again but not under 3/4 of it: ro has set it aside (a read decided so), and
	// says what brings it back; looking changes nothing.
	rs, _ := a.proxy.EndpointSettings("ro")
	if n := routeBind(&rs.Routing, a.topo.Snapshot()); n != 2 {
		t.Fatalf("ro bound a session to node %d, want replica2", n)
	}
	a.topo.Observe([]*topology.NodeState{nil, replica(4 * time.Second)})
	want["ro"]["replica1"] = "lag 4s: was over max_replica_lag 5s, takes reads again under 3.75s"
	check("replica1 4 s behind")
	check("looked twice")

	if _, err := a.DrainNode("replica2", time.Minute); err != nil {
		t.Fatal(err)
	}
	want["rw"]["replica2"], want["ro"]["replica2"] = "drained", "drained"
	check("replica2 drained")
}

// routeBind binds a new session of the endpoint routed by rs, as the proxy does.
func routeBind(rs *route.Settings, snap *topology.Snapshot) int {
	s := route.NewSession()
	return route.BindReplica(&s, rs, snap)
}
