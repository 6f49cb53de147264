package route

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

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
//
// One Weighted is shared by every session of an endpoint, so Pick takes no lock: for one
// setting (candidates and their weights) the sequence is periodic — after sum(weights)/gcd
// picks every current weight is back at zero — so it is computed once, as a cycle, and each
// pick takes the next place in it with one atomic add. The cycles of a few settings are kept
// (a replica set aside and back, reads whose candidates depend on which replicas reached a
// position, ...), each keeping its place. A setting whose cycle would be longer than maxCycle
// (large weights without a common divisor), or with a weight of zero, is picked as before: under
// a mutex, with the current weights of every node kept across picks; so is a setting met while
// every kept cycle is in use (more settings take turns than are kept): a cycle is given up only
// when its setting has not been picked for a while, so that settings taking turns do not keep
// replacing each other's cycles (each new one starting over at its heaviest candidate would
// give that candidate every pick). Safe for concurrent use.
type Weighted struct {
	// cycles are the recent settings' cycles, newest first: an immutable list, replaced whole
	// (under mu) when a setting not in it comes.
	cycles atomic.Pointer[[]*cycle]
	// missed counts the picks of settings that had no kept cycle (learn): the clock by which a
	// kept cycle's setting has not been picked for a while (cycle.seen).
	missed atomic.Uint64

	mu      sync.Mutex  // guards current, and serialises replacing cycles
	current map[int]int // node index -> current weight, for the settings picked under mu
}

// cycle is one setting's precomputed sequence. Immutable but for next.
type cycle struct {
	candidates, weights []int // the setting, copied
	// order holds the node picked at each place of the cycle; nil: the setting is picked under
	// Weighted.mu (too long a cycle, or a zero weight).
	order []uint8
	next  atomic.Uint64 // picks taken from this cycle
	seen  atomic.Uint64 // Weighted.missed when this cycle was last picked
}

const (
	// maxCycle bounds a cycle's length (and its bytes): past it a setting is picked under the
	// mutex. Weights that share a divisor (100, 200, 200: a cycle of 5) stay far below it.
	maxCycle = 4096
	// keptCycles is how many settings keep their cycle and place at once.
	keptCycles = 8
	// staleAfter is how many picks of settings without a kept cycle a kept one's setting may
	// go unpicked before its cycle may be given up for another (Weighted.learn): more than
	// settings that take turns with the kept ones miss in one turn.
	staleAfter = 64
)

// NewWeighted returns a smooth weighted round robin policy.
func NewWeighted() *Weighted { return &Weighted{current: map[int]int{}} }

func (w *Weighted) Name() string { return "weighted" }

func (w *Weighted) Pick(_ *topology.Snapshot, candidates []int, weights []int) int {
	if len(candidates) == 0 {
		return -1
	}
	var c *cycle
	if cs := w.cycles.Load(); cs != nil {
		for _, k := range *cs {
			if k.is(candidates, weights) {
				c = k
				break
			}
		}
	}
	if c == nil {
		if c = w.learn(candidates, weights); c == nil {
			return w.pickLocked(candidates, weights) // no cycle may be given up for it now
		}
	} else if m := w.missed.Load(); c.seen.Load() != m {
		c.seen.Store(m) // a store only after a miss: picks of one setting share no write but next
	}
	if c.order == nil {
		return w.pickLocked(candidates, weights)
	}
	return int(c.order[(c.next.Add(1)-1)%uint64(len(c.order))])
}

// is reports whether c is the cycle of this setting.
func (c *cycle) is(candidates, weights []int) bool {
	return slices.Equal(c.candidates, candidates) && slices.Equal(c.weights, weights)
}

// learn returns the cycle of a setting not among w.cycles, computing it and putting it first.
// When keptCycles are kept already, it takes the place of the one not picked for longest, if
// that one was not picked during the last staleAfter picks of settings without a cycle (its
// setting went away: a weight changed, a replica left); it then starts at a random place, so
// that settings that take turns in the kept list share out their picks by weight rather than
// each start over at its heaviest candidate. Otherwise learn returns nil: the setting is picked
// under the mutex, as every setting was before the cycles.
func (w *Weighted) learn(candidates, weights []int) *cycle {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.missed.Add(1)
	var kept []*cycle
	if cs := w.cycles.Load(); cs != nil {
		kept = *cs
		for _, k := range kept {
			if k.is(candidates, weights) {
				return k // another session learnt it meanwhile
			}
		}
	}
	replaced := false
	if len(kept) >= keptCycles {
		stale := -1
		for i, k := range kept {
			if s := k.seen.Load(); m-s > staleAfter && (stale < 0 || s < kept[stale].seen.Load()) {
				stale = i
			}
		}
		if stale < 0 {
			return nil
		}
		kept, replaced = slices.Delete(slices.Clone(kept), stale, stale+1), true
	}
	c := &cycle{candidates: slices.Clone(candidates), weights: slices.Clone(weights), order: swrrCycle(candidates, weights)}
	c.seen.Store(m)
	if replaced && c.order != nil {
		c.next.Store(rand.Uint64N(uint64(len(c.order))))
	}
	next := make([]*cycle, 0, keptCycles)
	next = append(next, c)
	next = append(next, kept...)
	w.cycles.Store(&next)
	return c
}

// swrrCycle is the sequence smooth weighted round robin picks for candidates and weights from
// all-zero current weights, one whole period of it; nil when it cannot be precomputed (a weight
// of zero or less, a node index past a byte, a period past maxCycle).
func swrrCycle(candidates, weights []int) []uint8 {
	g := 0
	for i, wt := range weights {
		if wt <= 0 || candidates[i] < 0 || candidates[i] > 255 {
			return nil
		}
		g = gcd(g, wt)
	}
	period := 0
	for _, wt := range weights {
		period += wt / g
		if period > maxCycle {
			return nil
		}
	}
	// Dividing every weight by g divides every current weight by g: the same picks.
	current := make([]int, len(candidates))
	order := make([]uint8, period)
	for p := range order {
		best := -1
		for i, wt := range weights {
			current[i] += wt / g
			if best < 0 || current[i] > current[best] {
				best = i
			}
		}
		current[best] -= period
		order[p] = uint8(candidates[best])
	}
	return order
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// pickLocked is smooth weighted round robin over w.current, for settings without a cycle.
func (w *Weighted) pickLocked(candidates, weights []int) int {
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

// LeastActive picks the candidate with the fewest statements in flight per unit of weight. It
// adapts to a slow node: its statements last longer, so it holds more of them and gets fewer new
// ones. Ties go round: each pick starts its scan one candidate further (an atomic counter modulo
// the candidates), so one client's serial reads, which leave every node idle between them, are
// spread over the tied replicas instead of all landing on the first listed. One LeastActive is
// shared by an endpoint's sessions; Pick takes no lock and allocates nothing. Safe for
// concurrent use; the zero value is ready.
type LeastActive struct {
	turn atomic.Uint64 // picks taken: where the next scan starts
}

func (*LeastActive) Name() string { return "least-active" }

func (p *LeastActive) Pick(snap *topology.Snapshot, candidates []int, weights []int) int {
	if len(candidates) == 0 {
		return -1
	}
	start := int((p.turn.Add(1) - 1) % uint64(len(candidates)))
	return leastPerWeight(candidates, weights, start, func(i int) int64 { return snap.Load[i].Active.Load() })
}

// leastPerWeight picks the candidate with the lowest load/weight, scanning from candidates[start]
// round to candidates[start-1]: ties go to the first one scanned.
func leastPerWeight(candidates []int, weights []int, start int, load func(node int) int64) int {
	best := -1
	var bestLoad int64
	bestWeight := 1
	for k := range candidates {
		i := (start + k) % len(candidates)
		n := candidates[i]
		l := load(n)
		// l/w < bestLoad/bestWeight, without division.
		if best < 0 || l*int64(bestWeight) < bestLoad*int64(weights[i]) {
			best, bestLoad, bestWeight = n, l, weights[i]
		}
	}
	return best
}

// ParsePolicy returns a new policy for its configuration name; connectionsFrom ("proxy",
// "nodes" or "cluster", "" for proxy) is where least-connections counts.
func ParsePolicy(name, connectionsFrom string) (Policy, error) {
	from, err := parseCountFrom(connectionsFrom)
	if err != nil {
		return nil, err
	}
	switch name {
	case "weighted":
		return NewWeighted(), nil
	case "least-active":
		return &LeastActive{}, nil
	case "least-connections":
		return LeastConnections{From: from}, nil
	}
	return nil, fmt.Errorf("unknown balancing policy %q (want least-active, weighted or least-connections)", name)
}

// CountFrom is where LeastConnections counts a node's connections.
type CountFrom uint8

const (
	// CountProxy counts this proxy's own connections to the node (Load.Conns).
	CountProxy CountFrom = iota
	// CountNodes counts the node's Threads_connected, as the monitor last polled it.
	CountNodes
	// CountCluster counts every sluice node's connections: this proxy's own (Load.Conns) plus
	// those the other live members of the cluster last published (Load.Others).
	CountCluster
)

func parseCountFrom(s string) (CountFrom, error) {
	switch s {
	case "", "proxy":
		return CountProxy, nil
	case "nodes":
		return CountNodes, nil
	case "cluster":
		return CountCluster, nil
	}
	return 0, fmt.Errorf("unknown connections_from %q (want proxy, nodes or cluster)", s)
}

// LeastConnections picks the candidate with the fewest connections per unit of weight (ties: the
// one listed first), counted From: this proxy's own connections to each node; the
// Threads_connected the monitor last polled from each (which counts every proxy and every direct
// client; a node not polled yet counts as having none); or the connections of every sluice node
// of the cluster (this proxy's own live count plus the others' published ones, which the app
// keeps in Load.Others). A read-only endpoint binds sessions with it when its policy is
// least-active, since at connect time no statement is in flight anywhere to tell nodes apart.
// Pick takes no lock and allocates nothing.
type LeastConnections struct {
	From CountFrom
}

func (LeastConnections) Name() string { return "least-connections" }

func (p LeastConnections) Pick(snap *topology.Snapshot, candidates []int, weights []int) int {
	switch p.From {
	case CountNodes:
		return leastPerWeight(candidates, weights, 0, func(i int) int64 {
			if i < len(snap.State) && snap.State[i] != nil {
				return snap.State[i].ThreadsConnected
			}
			return 0
		})
	case CountCluster:
		return leastPerWeight(candidates, weights, 0, func(i int) int64 {
			l := snap.Load[i]
			return l.Conns.Load() + l.Others.Load()
		})
	}
	return leastPerWeight(candidates, weights, 0, func(i int) int64 { return snap.Load[i].Conns.Load() })
}
