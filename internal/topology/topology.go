package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Snapshot is the topology as routing sees it. Immutable once published: a change makes a new
// Snapshot. Nodes, Load and Up are indexed alike, in configuration order.
type Snapshot struct {
	Nodes []*Node
	// Load is shared by every snapshot: the counters live on across swaps.
	Load []*Load
	Up   []bool
	// State is what the monitor last saw of each node (nil entries before its first round,
	// and always without a monitor).
	State []*NodeState
	// Primary is the index of the node that takes writes: the configured primary until the
	// monitor has seen the nodes, then the one it sees writable (ChoosePrimary).
	Primary int
	// Switching: the primary is up but no longer takes writes (it went read-only or
	// replicates) and no other node does yet: a switchover is under way. Statements for the
	// primary wait (for a snapshot where it is over) rather than fail.
	Switching bool
	// Candidates has bit i set when node i may become the new primary of the switchover under
	// way: it replicated when the primary stopped taking writes (a planned switchover promotes
	// a replica of the old primary). A node that was detached already (RESET SLAVE ALL) never
	// is: its data stopped following the primary's at a moment nobody chose. Zero when no
	// switchover is under way.
	Candidates uint64
	// Writable lists the nodes that are writable and do not replicate, when there is more
	// than one (two primaries at once): writes stay on Primary, and the others take no reads.
	Writable []int
	// Draining has bit i set while node i is being drained (Topology.SetDraining): it takes no
	// new reads or bindings, and sessions give up their connections to it at their next
	// statement boundary outside a transaction.
	Draining uint64
	// Removed has bit i set when slot i holds no node: its node was removed while sluice ran
	// (Topology.RemoveNode). Nodes[i] still names the node that was there; it is down, takes
	// no work, and a node added later may take the slot (Topology.AddNode).
	Removed uint64
	// Joining has bit i set from node i's addition (Topology.AddNode) until it is first seen:
	// checked by the monitor, or answering a probe. It takes no work meanwhile (it is not Up).
	Joining uint64

	changed chan struct{} // closed when a newer snapshot replaces this one
}

// MaxNodes bounds the node slots of a topology (the Draining and Removed bit sets, the
// consistency levels' sets of replicas): nodes configured at start, plus those added while
// sluice runs, less the removed slots that new nodes took over.
const MaxNodes = 64

// IsRemoved reports whether slot i holds no node (its node was removed).
func (s *Snapshot) IsRemoved(i int) bool { return i >= 0 && i < 64 && s.Removed&(1<<i) != 0 }

// IsJoining reports whether node i was added and not seen yet.
func (s *Snapshot) IsJoining(i int) bool { return i >= 0 && i < 64 && s.Joining&(1<<i) != 0 }

// IsPrimary reports whether node i is the primary.
func (s *Snapshot) IsPrimary(i int) bool { return i == s.Primary }

// Changed returns a channel closed once a newer snapshot is published: a session that waits
// for the topology to change (a switchover to end) selects on it instead of polling.
func (s *Snapshot) Changed() <-chan struct{} { return s.changed }

// ProbeFunc checks that a node answers. It is called from the topology's own goroutines, for
// several nodes at once, and must return once ctx ends. A panic in it is recovered and counts
// as a failed check.
type ProbeFunc func(ctx context.Context, n *Node) error

// Options configure a Topology.
type Options struct {
	Nodes []Node
	// ProbeInterval is how often a node that failed is checked again (0: 500 ms).
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe (0: 5 s).
	ProbeTimeout time.Duration
	// Probe checks a node; nil means a node reported failed stays down (only tests do that).
	Probe  ProbeFunc
	Logger *slog.Logger
}

// Topology owns the nodes' state and publishes it. Safe for concurrent use: Snapshot is
// lock-free; NodeFailed may be called from any session at any time.
type Topology struct {
	opts Options
	log  *slog.Logger
	snap atomic.Pointer[Snapshot]

	mu sync.Mutex // serialises publishing (Snapshot stays lock-free)
	// readOnlyAt is when a session last reported the primary read-only (PrimaryReadOnly): a
	// monitor check from before then does not end the switchover. Guarded by mu.
	readOnlyAt time.Time
	probing    []bool // node i has a probe running; guarded by mu
	// failedAt is when a session last reported node i failed: a monitor check from before
	// then does not bring it back. Guarded by mu.
	failedAt []time.Time
	closed   bool // guarded by mu
	ctx      context.Context
	cancel   context.CancelFunc // ends every probe (Close)
	wg       sync.WaitGroup
}

// New builds the topology of opts.Nodes (exactly one of them the primary), every node up.
func New(opts Options) (*Topology, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = 500 * time.Millisecond
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 5 * time.Second
	}
	if len(opts.Nodes) > MaxNodes {
		return nil, fmt.Errorf("topology: %d nodes (at most %d)", len(opts.Nodes), MaxNodes)
	}
	s := &Snapshot{Primary: -1, changed: make(chan struct{})}
	seen := map[string]bool{}
	for i := range opts.Nodes {
		n := opts.Nodes[i]
		n.Index = i
		if n.Name == "" || seen[n.Name] {
			return nil, fmt.Errorf("topology: node %d: empty or duplicate name %q", i, n.Name)
		}
		seen[n.Name] = true
		if n.Role == Primary {
			if s.Primary >= 0 {
				return nil, errors.New("topology: more than one primary")
			}
			s.Primary = i
		}
		s.Nodes = append(s.Nodes, &n)
		s.Load = append(s.Load, &Load{})
		s.Up = append(s.Up, true)
		s.State = append(s.State, nil)
	}
	if s.Primary < 0 {
		return nil, errors.New("topology: no primary node")
	}
	t := &Topology{opts: opts, log: opts.Logger, probing: make([]bool, len(s.Nodes)), failedAt: make([]time.Time, len(s.Nodes))}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.snap.Store(s)
	return t, nil
}

// Snapshot returns the current topology. Never nil; never modified after it is returned.
func (t *Topology) Snapshot() *Snapshot { return t.snap.Load() }

// setUp publishes a snapshot with node i up or down and reports whether that changed anything.
// Called with t.mu held.
func (t *Topology) setUp(i int, up bool) bool {
	cur := t.snap.Load()
	if cur.Up[i] == up {
		return false
	}
	next := *cur
	next.Up = append([]bool(nil), cur.Up...)
	next.Up[i] = up
	if up {
		next.Joining &^= 1 << i
	}
	t.publish(cur, &next)
	return true
}

// publish replaces cur by next (a copy of cur with changes) and wakes whoever waits on cur.
// Called with t.mu held.
func (t *Topology) publish(cur, next *Snapshot) {
	next.changed = make(chan struct{})
	t.snap.Store(next)
	close(cur.changed)
}

// PrimaryReadOnly reports that node i, the primary, refused a write because it is read-only:
// a switchover has begun before the monitor saw it. Routing treats it as one at once (writes
// wait for the new primary); the monitor's next round says what the nodes really are. Without
// a monitor (no node state yet) nothing changes: there would be nothing to end the wait.
func (t *Topology) PrimaryReadOnly(i int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.snap.Load()
	if t.closed || i != cur.Primary || cur.Switching || cur.State[i] == nil {
		return
	}
	next := *cur
	next.Switching, next.Candidates = true, Replicating(cur.State)
	t.readOnlyAt = time.Now()
	t.log.Warn("the primary refused a write as read-only: waiting for a new primary", "node", cur.Nodes[i].Name)
	t.publish(cur, &next)
}

// IsDraining reports whether node i is being drained.
func (s *Snapshot) IsDraining(i int) bool { return i >= 0 && i < 64 && s.Draining&(1<<i) != 0 }

// SetDraining starts (on) or ends the drain of node i, and reports whether that changed
// anything. The primary cannot be drained: writes have nowhere else to go.
func (t *Topology) SetDraining(i int, on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.snap.Load()
	if err := t.noNode(cur, i); err != nil {
		return err
	}
	switch {
	case on && cur.IsPrimary(i):
		return fmt.Errorf("%s is the primary: switch over to another node first", cur.Nodes[i].Name)
	case cur.IsDraining(i) == on:
		return nil
	}
	next := *cur
	if on {
		next.Draining |= 1 << i
		t.log.Info("draining node", "node", cur.Nodes[i].Name)
	} else {
		next.Draining &^= 1 << i
		t.log.Info("node back in service", "node", cur.Nodes[i].Name)
	}
	t.publish(cur, &next)
	return nil
}

// noNode says why node i of cur cannot be changed: the topology is closed, or has no such
// node (nil: it has). Called with t.mu held.
func (t *Topology) noNode(cur *Snapshot, i int) error {
	switch {
	case t.closed:
		return errors.New("topology: closed")
	case i < 0 || i >= len(cur.Nodes) || cur.IsRemoved(i):
		return fmt.Errorf("topology: no node %d", i)
	}
	return nil
}

// NodeFailed reports that a connection to node i failed (it refused a connection, broke, or
// timed out). The node takes no new work until a probe finds it answering again.
func (t *Topology) NodeFailed(i int, cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || i < 0 || i >= len(t.probing) || t.snap.Load().IsRemoved(i) {
		return
	}
	t.failedAt[i] = time.Now()
	if t.setUp(i, false) {
		t.log.Warn("node marked down", "node", t.snap.Load().Nodes[i].Name, "err", cause)
	}
	if t.probing[i] || t.opts.Probe == nil {
		return
	}
	t.startProbe(i)
}

// startProbe starts the probe of node i. Called with t.mu held, t.opts.Probe set.
func (t *Topology) startProbe(i int) {
	t.probing[i] = true
	t.wg.Add(1)
	go t.probe(i, t.snap.Load().Nodes[i])
}

// probe checks node n, in slot i, every ProbeInterval until it answers, then marks it up. It
// ends when the slot no longer holds n (removed, or taken by another node).
func (t *Topology) probe(i int, n *Node) {
	defer t.wg.Done()
	tick := time.NewTicker(t.opts.ProbeInterval)
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		err := t.check(n)
		t.mu.Lock()
		if cur := t.snap.Load(); cur.Nodes[i] != n || cur.IsRemoved(i) {
			if cur.Nodes[i] == n {
				t.probing[i] = false // else the slot's new node has a probe of its own
			}
			t.mu.Unlock()
			return
		}
		if err != nil {
			if cur := t.snap.Load(); cur.IsJoining(i) {
				// Checked, and not answering: down, no longer joining.
				next := *cur
				next.Joining &^= 1 << i
				t.publish(cur, &next)
			}
			t.mu.Unlock()
			continue
		}
		t.probing[i] = false
		if !t.closed && t.setUp(i, true) {
			t.log.Info("node is up again", "node", n.Name)
		}
		t.mu.Unlock()
		return
	}
}

// check runs one probe of n, bounded by ProbeTimeout and ended early by Close.
func (t *Topology) check(n *Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			t.log.Error("node probe panicked", "node", n.Name, "panic", r)
			err = fmt.Errorf("probe panicked: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(t.ctx, t.opts.ProbeTimeout)
	defer cancel()
	return t.opts.Probe(ctx, n)
}

// Observe publishes what a monitor round saw: the state of every node (a nil entry keeps the
// node's previous state). A node is up unless its state says Down. One snapshot swap per call.
func (t *Topology) Observe(states []*NodeState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	cur := t.snap.Load()
	next := *cur
	next.Up = append([]bool(nil), cur.Up...)
	next.State = append([]*NodeState(nil), cur.State...)
	for i, st := range states {
		if i >= len(next.State) || st == nil || next.IsRemoved(i) || (st.Node != nil && st.Node != next.Nodes[i]) {
			continue // no node there, or a state of the node the slot held before
		}
		next.State[i] = st
		next.Joining &^= 1 << i
		up := st.Health != Down
		if !next.Up[i] && ((st.Failures > 0 && st.AuthFailed == "") || st.Checked.Before(t.failedAt[i])) {
			// Down (a session reported it): only a check made since that the node answered
			// brings it back (a refused login is an answer).
			up = false
		}
		if up != next.Up[i] {
			if up {
				t.log.Info("node is up", "node", next.Nodes[i].Name)
			} else {
				t.log.Warn("node is down", "node", next.Nodes[i].Name, "err", st.LastErr)
			}
		}
		next.Up[i] = up
	}
	t.follow(cur, &next)
	t.publish(cur, &next)
}

// follow sets next's primary from the node states (ChoosePrimary) and logs what changed.
func (t *Topology) follow(cur, next *Snapshot) {
	next.Primary, next.Switching, next.Writable = ChoosePrimary(cur, next.State)
	if cur.Switching && !next.Switching && next.Primary == cur.Primary {
		if st := next.State[cur.Primary]; st != nil && !st.Began.After(t.readOnlyAt) {
			// Seen writable by a check that began before the read-only refusal a session
			// reported: what it read may be from before the refusal (a check that ends after
			// the report still read read_only before it), so it proves nothing.
			next.Switching = true
		}
	}
	switch {
	case !next.Switching:
		next.Candidates = 0
	case !cur.Switching:
		// The switchover begins: who may end it is decided now, from the states before it.
		next.Candidates = Replicating(cur.State)
	}
	name := func(i int) string { return next.Nodes[i].Name }
	switch {
	case next.Primary != cur.Primary:
		t.log.Warn("the primary changed", "from", name(cur.Primary), "to", name(next.Primary))
		if next.IsDraining(next.Primary) {
			// Writes have nowhere else to go: a drain of the new primary ends.
			next.Draining &^= 1 << next.Primary
			t.log.Warn("the drained node became the primary: its drain ends", "node", name(next.Primary))
		}
	case next.Switching && !cur.Switching:
		t.log.Warn("the primary no longer takes writes: waiting for a new primary", "node", name(next.Primary))
	case !next.Switching && cur.Switching:
		t.log.Info("the primary takes writes again", "node", name(next.Primary))
	}
	if len(next.Writable) > 0 && !slices.Equal(next.Writable, cur.Writable) {
		names := make([]string, len(next.Writable))
		for j, i := range next.Writable {
			names[j] = name(i)
		}
		t.log.Error("more than one node is writable and does not replicate; writes stay on the primary", "primary", name(next.Primary), "writable", names)
	}
}

// Close stops every probe and waits for them.
func (t *Topology) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}
