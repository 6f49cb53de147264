package proxy

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/pool"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// TestFillPlan: the top-up of a (node, user) follows the limits in force now at the endpoint
// its last session came through (the user's own, else the endpoint's), and stops for a node
// marked down, an endpoint gone or in pool_mode off, a user not in the users list, and
// min_idle 0.
func TestFillPlan(t *testing.T) {
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{
		{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary},
		{Name: "replica1", Address: "127.0.0.1:1", Role: topology.Replica},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(topo.Close)
	ps := PoolSettings{Mode: PoolSession, Limits: pool.Limits{MinIdle: 2, MaxPerNode: 5},
		Users: map[string]pool.Limits{"heavy": {MinIdle: 4}}}
	p, err := New(Options{Topology: topo, ConnectTimeout: time.Second,
		Users: []User{{Name: "app", Password: "x", HasPassword: true}, {Name: "heavy", Password: "x", HasPassword: true}},
		Endpoints: []Endpoint{{Name: "rw", Listen: "127.0.0.1:0", Pool: ps,
			Routing: route.Settings{Mode: route.ReadWrite, Weights: []int{0, 100}, Policy: &route.LeastActive{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	last := pool.Limits{MinIdle: 9, Origin: "rw"} // what the pool remembered: not what is in force
	plan := func(node, user string, last pool.Limits) (int, bool) {
		lim, ok := p.fillPlan(pool.Key{Node: node, User: user}, last)
		if ok && lim.Origin != "rw" {
			t.Errorf("the plan's limits came from %q", lim.Origin)
		}
		return lim.MinIdle, ok
	}
	if n, ok := plan("primary", "app", last); !ok || n != 2 {
		t.Errorf("app on the primary: min_idle %d, %v; want the endpoint's 2", n, ok)
	}
	if n, ok := plan("replica1", "heavy", last); !ok || n != 4 {
		t.Errorf("heavy on replica1: min_idle %d, %v; want the user's 4", n, ok)
	}
	if _, ok := plan("primary", "stranger", last); ok {
		t.Error("a user not in the users list is topped up")
	}
	if _, ok := plan("primary", "app", pool.Limits{MinIdle: 2, Origin: "gone"}); ok {
		t.Error("a group whose endpoint is gone is topped up")
	}
	topo.NodeFailed(1, errors.New("test"))
	if _, ok := plan("replica1", "heavy", last); ok {
		t.Error("a node marked down is topped up")
	}
	if _, ok := plan("nowhere", "app", last); ok {
		t.Error("a node not in the topology is topped up")
	}
	// Live: a new min_idle applies at the next tick; 0 or pool_mode off stop the top-up.
	set, _ := p.EndpointSettings("rw")
	set.Pool.Limits.MinIdle = 3
	if err := p.UpdateEndpoint("rw", set); err != nil {
		t.Fatal(err)
	}
	if n, ok := plan("primary", "app", last); !ok || n != 3 {
		t.Errorf("after min_idle 3: %d, %v", n, ok)
	}
	set.Pool.Limits.MinIdle = 0
	if err := p.UpdateEndpoint("rw", set); err != nil {
		t.Fatal(err)
	}
	if _, ok := plan("primary", "app", last); ok {
		t.Error("min_idle 0 is topped up")
	}
	set.Pool.Limits.MinIdle, set.Pool.Mode = 2, PoolOff
	if err := p.UpdateEndpoint("rw", set); err != nil {
		t.Fatal(err)
	}
	if _, ok := plan("primary", "app", last); ok {
		t.Error("pool_mode off is topped up")
	}
}
