package proxy

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

func newUpdateProxy(t *testing.T) *Proxy {
	t.Helper()
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{
		{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary},
		{Name: "replica1", Address: "127.0.0.1:1", Role: topology.Replica},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Topology: topo, ConnectTimeout: time.Second, Endpoints: []Endpoint{{
		Name: "rw", Listen: "127.0.0.1:0", MaxConnections: 10, Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Routing: route.Settings{Mode: route.ReadWrite, Weights: []int{0, 100}, Policy: &route.LeastActive{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUpdateEndpoint: one UpdateEndpoint puts routing, limit and allow list in force together;
// settings the routing refuses change none of them; what EndpointSettings returns is a copy.
func TestUpdateEndpoint(t *testing.T) {
	p := newUpdateProxy(t)
	before, ok := p.EndpointSettings("rw")
	if !ok || before.MaxConnections != 10 || len(before.Allow) != 1 || !reflect.DeepEqual(before.Routing.Weights, []int{0, 100}) {
		t.Fatalf("settings at start: %+v, %v", before, ok)
	}
	// A copy: changing it changes nothing in force.
	before.Routing.Weights[1] = 7
	before.Allow[0] = netip.MustParsePrefix("10.0.0.0/8")
	if now, _ := p.EndpointSettings("rw"); now.Routing.Weights[1] != 100 || now.Allow[0].String() != "127.0.0.0/8" {
		t.Fatalf("changing the returned settings reached the endpoint: %+v", now)
	}

	next, _ := p.EndpointSettings("rw")
	next.MaxConnections = 3
	next.Allow = []netip.Prefix{netip.MustParsePrefix("::1/128")}
	next.Routing.Weights = []int{50, 50}
	next.Routing.SplitTx = true
	if err := p.UpdateEndpoint("rw", next); err != nil {
		t.Fatal(err)
	}
	next.Routing.Weights[0] = 9 // the caller keeps its settings
	got, _ := p.EndpointSettings("rw")
	if got.MaxConnections != 3 || !reflect.DeepEqual(got.Allow, []netip.Prefix{netip.MustParsePrefix("::1/128")}) ||
		!reflect.DeepEqual(got.Routing.Weights, []int{50, 50}) || !got.Routing.SplitTx {
		t.Fatalf("after the update: %+v", got)
	}
	ep := p.endpoint("rw")
	if ep.allowed(netip.MustParseAddr("127.0.0.1")) || !ep.allowed(netip.MustParseAddr("::1")) {
		t.Fatal("the allow list in force is not the new one")
	}
	if ep.admit.Load().maxConns != 3 || !ep.route.Settings().SplitTx {
		t.Fatal("the limit or the routing in force is not the new one")
	}

	// Routing settings that do not fit change nothing, the limit and allow list included.
	bad := got
	bad.MaxConnections = 99
	bad.Allow = nil
	bad.Routing.Weights = []int{route.MaxWeight + 1, 0}
	if err := p.UpdateEndpoint("rw", bad); err == nil {
		t.Fatal("a weight past MaxWeight was taken")
	}
	if after, _ := p.EndpointSettings("rw"); !reflect.DeepEqual(after, got) {
		t.Fatalf("a refused update changed settings: %+v, want %+v", after, got)
	}

	if err := p.UpdateEndpoint("nope", got); err == nil {
		t.Fatal("an update of no endpoint succeeded")
	}
	if _, ok := p.EndpointSettings("nope"); ok || p.HasEndpoint("nope") || !p.HasEndpoint("rw") {
		t.Fatal("an endpoint that does not exist is found")
	}
}
