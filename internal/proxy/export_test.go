package proxy

import (
	"testing"

	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// testProxy builds a proxy over one primary (at a closed port) with a read-write endpoint
// "rw", for tests that play the node themselves. opts may add users and timeouts.
func testProxy(tb testing.TB, opts Options) *Proxy {
	tb.Helper()
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary}}})
	if err != nil {
		tb.Fatal(err)
	}
	opts.Topology = topo
	opts.Endpoints = []Endpoint{{Name: "rw", Listen: "127.0.0.1:0", Routing: route.Settings{Mode: route.ReadWrite, Weights: []int{100}, Policy: &route.LeastActive{}}}}
	p, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
