package proxy

import (
	"context"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/route"
)

// The basic health checker: a node that refuses connections or fails a connection is marked
// down, and probed until it answers again. Routing reads the up/down state from an immutable
// snapshot swapped atomically, so a statement never waits on it. (The full monitor, with lag
// and GTID positions, replaces this later.)

// probeInterval is how often a down node is tried again.
const probeInterval = 500 * time.Millisecond

func (p *Proxy) initTopology() {
	snap := &route.Snapshot{Primary: -1}
	for i := range p.opts.Nodes {
		n := &p.opts.Nodes[i]
		rn := &route.Node{Name: n.Name, Primary: n.Role == "primary"}
		p.rnodes = append(p.rnodes, rn)
		snap.Nodes = append(snap.Nodes, rn)
		snap.Up = append(snap.Up, true)
		if rn.Primary {
			snap.Primary = i
		}
	}
	p.snap.Store(snap)
}

// snapshot returns the current topology.
func (p *Proxy) snapshot() *route.Snapshot { return p.snap.Load() }

// setUp publishes a new snapshot with node i up or down.
func (p *Proxy) setUp(i int, up bool) bool {
	p.topoMu.Lock()
	defer p.topoMu.Unlock()
	cur := p.snap.Load()
	if cur.Up[i] == up {
		return false
	}
	next := &route.Snapshot{Nodes: cur.Nodes, Primary: cur.Primary, Up: append([]bool(nil), cur.Up...)}
	next.Up[i] = up
	p.snap.Store(next)
	return true
}

// markDown takes node i out of routing and starts probing it.
func (p *Proxy) markDown(i int, cause error) {
	if !p.setUp(i, false) {
		return
	}
	n := &p.opts.Nodes[i]
	p.log.Warn("node marked down", "node", n.Name, "err", cause)
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		t := time.NewTicker(probeInterval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), p.connectTimeout())
			_, err := backend.ReadHandshake(ctx, n.Address, p.connectTimeout())
			cancel()
			if err == nil {
				p.setUp(i, true)
				p.log.Info("node is up again", "node", n.Name)
				return
			}
		}
	}()
}

// routeEndpoint builds the routing policy of an endpoint.
func (p *Proxy) routeEndpoint(ep Endpoint) *route.Endpoint {
	re := &route.Endpoint{
		Name:        ep.Name,
		Policy:      route.PolicyByName(ep.Balance),
		SplitTx:     ep.SplitTransactions,
		StrictMulti: ep.MultiStatements == "strict",
	}
	if ep.Mode == "read-only" {
		re.Mode = route.ReadOnly
	}
	for i := range p.opts.Nodes {
		re.Weights = append(re.Weights, ep.ReadWeights[p.opts.Nodes[i].Name])
	}
	return re
}
