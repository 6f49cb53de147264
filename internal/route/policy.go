package route

import (
	"sync"
	"sync/atomic"
)

// Node is one backend as routing sees it: fixed identity plus live counters.
type Node struct {
	Name    string
	Primary bool
	Zone    string
	// Active counts the statements this proxy has in flight on the node (least-active).
	Active atomic.Int64
	// Conns counts this proxy's open connections to the node.
	Conns atomic.Int64
}

// Policy picks one node for a read among candidates (node indexes, in configuration order)
// with their weights (> 0). It returns -1 when candidates is empty. Implementations are safe for
// concurrent use.
type Policy interface {
	Pick(nodes []*Node, candidates []int, weights []int) int
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

func (w *Weighted) Pick(_ []*Node, candidates []int, weights []int) int {
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

func (LeastActive) Pick(nodes []*Node, candidates []int, weights []int) int {
	return leastPerWeight(nodes, candidates, weights, func(n *Node) int64 { return n.Active.Load() })
}

// leastPerWeight picks the candidate with the lowest load/weight, ties to the one listed first.
func leastPerWeight(nodes []*Node, candidates []int, weights []int, load func(*Node) int64) int {
	best := -1
	var bestLoad int64
	bestWeight := 1
	for i, n := range candidates {
		l := load(nodes[n])
		// l/w < bestLoad/bestWeight, without division.
		if best < 0 || l*int64(bestWeight) < bestLoad*int64(weights[i]) {
			best, bestLoad, bestWeight = n, l, weights[i]
		}
	}
	return best
}

// PolicyByName returns a new policy for a configuration name.
func PolicyByName(name string) Policy {
	if name == "weighted" {
		return NewWeighted()
	}
	return LeastActive{}
}

// LeastConnections picks the candidate with the fewest proxy connections per unit of weight
// (ties: the one listed first). A read-only endpoint binds sessions with it when its policy is
// least-active, since at connect time no statement is in flight anywhere to tell nodes apart.
type LeastConnections struct{}

func (LeastConnections) Name() string { return "least-connections" }

func (LeastConnections) Pick(nodes []*Node, candidates []int, weights []int) int {
	return leastPerWeight(nodes, candidates, weights, func(n *Node) int64 { return n.Conns.Load() })
}
