package route

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// refWeighted is the smooth weighted round robin as Weighted.Pick computed it before the
// precomputed cycles (a mutex and a map of current weights): the reference the new Pick must
// reproduce pick for pick.
type refWeighted struct{ current map[int]int }

func (w *refWeighted) pick(candidates, weights []int) int {
	if len(candidates) == 0 {
		return -1
	}
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

// weightSets are the settings the sequence tests run: common ones, ties, one candidate, a zero
// weight, weights without a common divisor, and one whose cycle is past maxCycle (the locked
// fallback).
var weightSets = []struct {
	name       string
	candidates []int
	weights    []int
}{
	{"100 200 200", []int{0, 1, 2}, []int{100, 200, 200}},
	{"equal pair", []int{1, 2}, []int{100, 100}},
	{"one", []int{2}, []int{100}},
	{"400 100", []int{1, 2}, []int{400, 100}},
	{"coprime", []int{0, 3, 5, 6}, []int{7, 11, 13, 1}},
	{"zero weight", []int{0, 1, 2}, []int{0, 100, 50}},
	{"all zero", []int{4, 5}, []int{0, 0}},
	{"max weights", []int{0, 1}, []int{MaxWeight, MaxWeight - 1}},
	{"many nodes", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
}

func TestWeightedMatchesReference(t *testing.T) {
	for _, ws := range weightSets {
		t.Run(ws.name, func(t *testing.T) {
			ref := &refWeighted{current: map[int]int{}}
			w := NewWeighted()
			// Three cycles' worth, or more picks than maxCycle for the fallback's setting.
			n := 3 * sum(ws.weights)
			n = min(max(n, 50), 3*maxCycle)
			for i := range n {
				want := ref.pick(ws.candidates, ws.weights)
				if got := w.Pick(nil, ws.candidates, ws.weights); got != want {
					t.Fatalf("pick %d: %d, want %d", i, got, want)
				}
			}
		})
	}
}

// TestWeightedSettingsInTurn: settings that alternate (candidates that differ between sessions
// or statements), as many as are kept, each keep their own place in their own sequence.
func TestWeightedSettingsInTurn(t *testing.T) {
	type setting struct {
		candidates, weights []int
		ref                 *refWeighted
	}
	var settings []setting
	for _, ws := range weightSets {
		// Settings picked under the mutex share one table of current weights, as all settings
		// did before: only the settings with a cycle keep a place of their own.
		if swrrCycle(ws.candidates, ws.weights) != nil {
			settings = append(settings, setting{ws.candidates, ws.weights, &refWeighted{current: map[int]int{}}})
		}
	}
	if len(settings) < 3 || len(settings) > keptCycles {
		t.Fatalf("%d settings with a cycle: the test wants 3 to keptCycles (%d)", len(settings), keptCycles)
	}
	w := NewWeighted()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		st := settings[rng.IntN(len(settings))]
		want := st.ref.pick(st.candidates, st.weights)
		if got := w.Pick(nil, st.candidates, st.weights); got != want {
			t.Fatalf("pick %d (%v %v): %d, want %d", i, st.candidates, st.weights, got, want)
		}
	}
}

// TestWeightedConcurrent: picks from many goroutines at once (run it under -race) give, all
// together, each candidate its weight's share of every whole cycle.
func TestWeightedConcurrent(t *testing.T) {
	w := NewWeighted()
	candidates, weights := []int{0, 1, 2}, []int{100, 200, 200}
	const goroutines, each = 8, 5 * 1000 // 40000 picks: 8000 whole cycles of 5
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			local := map[int]int{}
			for range each {
				local[w.Pick(nil, candidates, weights)]++
			}
			mu.Lock()
			for k, v := range local {
				counts[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	want := map[int]int{0: 8000, 1: 16000, 2: 16000}
	for k, v := range want {
		if counts[k] != v {
			t.Fatalf("counts %v, want %v", counts, want)
		}
	}
}

func TestWeightedAllocs(t *testing.T) {
	w := NewWeighted()
	candidates, weights := []int{0, 1, 2}, []int{100, 200, 200}
	w.Pick(nil, candidates, weights) // builds the cycle
	if n := testing.AllocsPerRun(1000, func() { w.Pick(nil, candidates, weights) }); n != 0 {
		t.Fatalf("%v allocations a pick, want 0", n)
	}
}

func BenchmarkWeightedPick(b *testing.B) {
	w := NewWeighted()
	candidates, weights := []int{0, 1, 2}, []int{0, 100, 100}
	candidates, weights = candidates[1:], weights[1:]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Pick(nil, candidates, weights)
		}
	})
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestWeightedCycleBound: a period past maxCycle, or a zero weight, has no cycle (the mutex
// picks it); weights with a common divisor get the short cycle of the divided weights.
func TestWeightedCycleBound(t *testing.T) {
	if o := swrrCycle([]int{0, 1}, []int{MaxWeight, MaxWeight - 1}); o != nil {
		t.Fatalf("a period of %d got a cycle of %d", 2*MaxWeight-1, len(o))
	}
	if o := swrrCycle([]int{0, 1}, []int{0, 100}); o != nil {
		t.Fatalf("a zero weight got a cycle %v", o)
	}
	if o := swrrCycle([]int{0, 1, 2}, []int{100, 200, 200}); len(o) != 5 {
		t.Fatalf("100 200 200: a cycle of %d, want 5", len(o))
	}
}

// manySettings are more settings than Weighted keeps cycles for: every pair of five equally
// weighted replicas, as reads whose candidates depend on which replicas reached a position
// (consistency levels) give them.
func manySettings() [][]int {
	var settings [][]int
	for a := 0; a < 5; a++ {
		for b := a + 1; b < 5; b++ {
			settings = append(settings, []int{a, b})
		}
	}
	if len(settings) <= keptCycles {
		panic("manySettings: no more settings than keptCycles")
	}
	return settings
}

// TestWeightedManySettingsShareByWeight: settings that take turns, more of them than have a
// cycle kept, still share the picks by weight, as the mutex and its map of current weights did.
// (A setting that lost its cycle and got a new one started over at its heaviest candidate:
// the first of each pair won every pick, and replica 4 got no read at all.)
func TestWeightedManySettingsShareByWeight(t *testing.T) {
	settings := manySettings()
	weights := []int{100, 100}
	w := NewWeighted()
	ref := &refWeighted{current: map[int]int{}}
	got, want := map[int]int{}, map[int]int{}
	const picks = 10000
	for i := range picks {
		c := settings[i%len(settings)]
		got[w.Pick(nil, c, weights)]++
		want[ref.pick(c, weights)]++
	}
	for n := range 5 {
		if d := got[n] - want[n]; d < -picks/50 || d > picks/50 {
			t.Fatalf("picks by node %v, want about %v (the mutex's)", got, want)
		}
	}
}

// TestWeightedManySettingsAllocs: settings that take turns, more of them than have a cycle
// kept, do not allocate a cycle on every pick once they have all been seen.
func TestWeightedManySettingsAllocs(t *testing.T) {
	settings := manySettings()
	weights := []int{100, 100}
	w := NewWeighted()
	round := func() {
		for _, c := range settings {
			w.Pick(nil, c, weights)
		}
	}
	for range 3 {
		round()
	}
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Fatalf("%v allocations a round of %d settings, want 0", n, len(settings))
	}
}

// TestWeightedStaleCycleGivenUp: once keptCycles settings have cycles, a new setting that stays
// (the topology changed) gets a cycle in place of one whose setting is no longer picked, and
// its picks keep their proportions meanwhile.
func TestWeightedStaleCycleGivenUp(t *testing.T) {
	w := NewWeighted()
	for n := range keptCycles {
		w.Pick(nil, []int{n, n + 1}, []int{100, 100})
	}
	candidates, weights := []int{0, 1, 2}, []int{100, 200, 200}
	counts := map[int]int{}
	for range 5 * staleAfter {
		counts[w.Pick(nil, candidates, weights)]++
	}
	// Within a pick or two of it: the cycle begins where the mutex's sequence left off only by
	// chance (a random place).
	for n, want := range map[int]int{0: staleAfter, 1: 2 * staleAfter, 2: 2 * staleAfter} {
		if d := counts[n] - want; d < -2 || d > 2 {
			t.Fatalf("picks %v, want 1:2:2 of %d", counts, 5*staleAfter)
		}
	}
	kept := false
	for _, c := range *w.cycles.Load() {
		kept = kept || c.is(candidates, weights)
	}
	if !kept || len(*w.cycles.Load()) != keptCycles {
		t.Fatalf("the new setting has no cycle after %d picks (%d kept)", 5*staleAfter, len(*w.cycles.Load()))
	}
}

// TestWeightedManySettingsConcurrent: sessions picking from more settings than are kept, and
// from settings that come and go, at once (run it under -race): every setting's picks stay
// among its candidates and the picks share out evenly.
func TestWeightedManySettingsConcurrent(t *testing.T) {
	settings := manySettings()
	weights := []int{100, 100}
	w := NewWeighted()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			local := map[int]int{}
			for i := range 20000 {
				c := settings[(i+g)%len(settings)]
				if i%1000 == 999 {
					c = []int{5 + i%3, 8} // a setting met once
				}
				n := w.Pick(nil, c, weights)
				if n != c[0] && n != c[1] {
					t.Errorf("picked %d from %v", n, c)
					return
				}
				local[n]++
			}
			mu.Lock()
			for k, v := range local {
				counts[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for n := range 5 {
		if counts[n] < 15000 || counts[n] > 17000 {
			t.Fatalf("picks by node %v, want about 16000 each of nodes 0 to 4", counts)
		}
	}
}
