package route

import (
	"fmt"
	"sync"

	"github.com/sluicedb/sluice/internal/topology"
)

// Policy picks one node for a read among candidates (node indexes, in configuration order)
// with their weights (> 0), reading the live counters and the monitor's figures in snap. It
// returns -1 when candidates is empty. Implementations are safe for concurrent use.
type Policy interface {
	Pick(snap *topology.Snapshot, candidates []int, weights []int) int
	Name() string
}

// Weighted is smooth weighted round robin: each pick, every candidate's current weight grows by
// its weight, the candidate with the highest current weight wins (ties: the one listed first),
// and the winner's current weight drops by the sum of the weights. Weights 100, 200, 200 give
// B, C, A, B, C, ... — the same proportions as the weights, spread out rather than in bursts.
type Weighted struct {
	mu      sync.Mutex
	current map[int]int
}

// NewWeighted returns a smooth weighted round robin policy.
func NewWeighted() *Weighted { return &Weighted{current: map[int]int{}} }

func (w *Weighted) Name() string { return "weighted" }

func (w *Weighted) Pick(_ *topology.Snapshot, candidates []int, weights []int) int {
	if len(candidates) == 0 {
		return -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	best, total := -1, 0
	for i, n := range candidates {
		wt := weights[i]
		total += wt
		w.current[n] += wt
		if best < 0 || w.current[n] > w.current[best] {
			best = n
		}
	}
	w.current[best] -= total
	return best
}

// LeastActive picks the candidate with the fewest statements in flight per unit of weight
// (ties: the one listed first). It adapts to a slow node: its statements last longer, so it
// holds more of them and gets fewer new ones.
type LeastActive struct{}

func (LeastActive) Name() string { return "least-active" }

func (LeastActive) Pick(snap *topology.Snapshot, candidates []int, weights []int) int {
	return leastPerWeight(candidates, weights, func(i int) int64 { return snap.Load[i].Active.Load() })
}

// leastPerWeight picks the candidate with the lowest load/weight, ties to the one listed first.
func leastPerWeight(candidates []int, weights []int, load func(node int) int64) int {
	best := -1
	var bestLoad int64
	bestWeight := 1
	for i, n := range candidates {
		l := load(n)
		// l/w < bestLoad/bestWeight, without division.
		if best < 0 || l*int64(bestWeight) < bestLoad*int64(weights[i]) {
			best, bestLoad, bestWeight = n, l, weights[i]
		}
	}
	return best
}

// ParsePolicy returns a new policy for its configuration name; connectionsFrom ("proxy" or
// "nodes", "" for proxy) is where least-connections counts.
func ParsePolicy(name, connectionsFrom string) (Policy, error) {
	if connectionsFrom != "" && connectionsFrom != "proxy" && connectionsFrom != "nodes" {
		return nil, fmt.Errorf("unknown connections_from %q (want proxy or nodes)", connectionsFrom)
	}
	switch name {
	case "weighted":
		return NewWeighted(), nil
	case "least-active":
		return LeastActive{}, nil
	case "least-connections":
		return LeastConnections{FromNodes: connectionsFrom == "nodes"}, nil
	}
	return nil, fmt.Errorf("unknown balancing policy %q (want least-active, weighted or least-connections)", name)
}

// LeastConnections picks the candidate with the fewest connections per unit of weight (ties: the
// one listed first): this proxy's own connections to each node, or, FromNodes, the
// Threads_connected the monitor last polled from each (which counts every proxy and every direct
// client; a node not polled yet counts as having none). A read-only endpoint binds sessions
// with it when its policy is least-active, since at connect time no statement is in flight
// anywhere to tell nodes apart.
type LeastConnections struct {
	FromNodes bool
}

func (LeastConnections) Name() string { return "least-connections" }

func (p LeastConnections) Pick(snap *topology.Snapshot, candidates []int, weights []int) int {
	if p.FromNodes {
		return leastPerWeight(candidates, weights, func(i int) int64 {
			if i < len(snap.State) && snap.State[i] != nil {
				return snap.State[i].ThreadsConnected
			}
			return 0
		})
	}
	return leastPerWeight(candidates, weights, func(i int) int64 { return snap.Load[i].Conns.Load() })
}
