package topology

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Nodes join and leave while sluice runs (the admin API's POST and DELETE /v1/nodes). A node
// keeps its index, its slot, for as long as it is in the topology: everything kept per node
// (Load, positions, sessions' connections and counters) is indexed by slot. A removed node's
// slot is marked Removed, not taken out, so no index moves; a node added later takes a free
// slot of the same name, else a new one, up to MaxNodes, else any free slot.

// AddNode adds replica n and returns its slot. It starts joining (not up) and takes no work
// until it is seen answering: by the monitor's first check of it, or (without a monitor) by a
// probe.
func (t *Topology) AddNode(n Node) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.snap.Load()
	switch {
	case t.closed:
		return -1, errors.New("topology: closed")
	case n.Name == "":
		return -1, errors.New("topology: a node needs a name")
	case n.Role != Replica:
		return -1, errors.New("topology: only replicas can be added (the primary changes by switchover)")
	}
	// A removed node's slot, when free (nothing of sluice's left there; a drained node has
	// nothing, but a dial begun before its drain may still land): the same name's first, as the
	// slot's counters are reported under its node's name; another's only once no new slot is
	// left.
	same, other := -1, -1
	for i, old := range cur.Nodes {
		switch {
		case !cur.IsRemoved(i):
			if old.Name == n.Name {
				return -1, fmt.Errorf("topology: a node is named %q already", n.Name)
			}
		case cur.Load[i].Conns.Load() != 0 || cur.Load[i].Active.Load() != 0:
		case old.Name == n.Name:
			same = i
		case other < 0:
			other = i
		}
	}
	slot := same
	if slot < 0 && len(cur.Nodes) >= MaxNodes {
		if slot = other; slot < 0 {
			return -1, fmt.Errorf("topology: no free node slot (at most %d nodes)", MaxNodes)
		}
	}
	next := *cur
	next.Nodes = append([]*Node(nil), cur.Nodes...)
	next.Up = append([]bool(nil), cur.Up...)
	next.State = append([]*NodeState(nil), cur.State...)
	if slot < 0 {
		slot = len(cur.Nodes)
		next.Nodes = append(next.Nodes, nil)
		next.Up = append(next.Up, false)
		next.State = append(next.State, nil)
		next.Load = append(cur.Load[:len(cur.Load):len(cur.Load)], &Load{})
		t.probing = append(t.probing, false)
		t.failedAt = append(t.failedAt, time.Time{})
	}
	n.Index = slot
	next.Nodes[slot], next.Up[slot], next.State[slot] = &n, false, nil
	next.Removed &^= 1 << slot
	next.Draining &^= 1 << slot
	next.Joining |= 1 << slot
	t.probing[slot], t.failedAt[slot] = false, time.Time{}
	t.publish(cur, &next)
	t.log.Info("node added", "node", n.Name, "address", n.Address, "slot", slot)
	if t.opts.Probe != nil {
		t.startProbe(slot)
	}
	return slot, nil
}

// RemoveNode takes node i out of the topology. Only a drained node can go: one being drained
// (SetDraining) to which sluice holds no connection any more.
func (t *Topology) RemoveNode(i int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.snap.Load()
	if err := t.noNode(cur, i); err != nil {
		return err
	}
	switch {
	case cur.IsPrimary(i):
		return fmt.Errorf("%s is the primary: switch over to another node first", cur.Nodes[i].Name)
	case !cur.IsDraining(i):
		return fmt.Errorf("%s is in service: drain it first", cur.Nodes[i].Name)
	case cur.Load[i].Conns.Load() != 0:
		return fmt.Errorf("%s is still draining: sluice holds %d connections to it", cur.Nodes[i].Name, cur.Load[i].Conns.Load())
	}
	next := *cur
	next.Up = append([]bool(nil), cur.Up...)
	next.State = append([]*NodeState(nil), cur.State...)
	next.Up[i], next.State[i] = false, nil
	next.Removed |= 1 << i
	next.Joining &^= 1 << i
	// No session holds a connection there (drained): sessions need not look at it any more
	// (a snapshot with a drain makes every statement check its connections).
	next.Draining &^= 1 << i
	next.Writable = nil
	for _, w := range cur.Writable {
		if w != i {
			next.Writable = append(next.Writable, w)
		}
	}
	if len(next.Writable) < 2 {
		next.Writable = nil
	}
	t.publish(cur, &next)
	t.log.Info("node removed", "node", cur.Nodes[i].Name, "slot", i)
	return nil
}

// Follow runs run(ctx, i, n) for every node in the topology, each in a goroutine of its own,
// as nodes come and go: a node added gets its run; a node removed (or whose slot another node
// took) has its run's ctx cancelled. It returns once ctx ends and every run has returned.
// snapshot is the topology's Snapshot.
func Follow(ctx context.Context, snapshot func() *Snapshot, run func(ctx context.Context, i int, n *Node)) {
	type running struct {
		n      *Node
		cancel context.CancelFunc
	}
	runs := map[int]running{}
	var wg sync.WaitGroup
	defer func() {
		for _, r := range runs {
			r.cancel()
		}
		wg.Wait()
	}()
	for {
		snap := snapshot()
		for i, n := range snap.Nodes {
			r, ok := runs[i]
			if ok && r.n == n && !snap.IsRemoved(i) {
				continue
			}
			if ok {
				r.cancel()
				delete(runs, i)
			}
			if snap.IsRemoved(i) {
				continue
			}
			rctx, cancel := context.WithCancel(ctx)
			runs[i] = running{n: n, cancel: cancel}
			wg.Go(func() { run(rctx, i, n) })
		}
		select {
		case <-ctx.Done():
			return
		case <-snap.Changed():
		}
	}
}
