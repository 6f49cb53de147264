package topology

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
)

// Positions is what each node is known to have applied, moved forward by whichever source reports
// it first (the node's binlog stream, the monitor's checks), with a way to wait for a node to get
// somewhere. A position never moves back: a source that reports an older one (a check that began
// before the stream's last event) changes nothing. Safe for concurrent use; reading is lock-free.
type Positions struct {
	mu    sync.Mutex // serialises Advance
	nodes []atomic.Pointer[applied]
	// any is closed (and replaced) when any node's position moves: a read waiting for the
	// first of several replicas to get somewhere waits on it.
	any atomic.Pointer[chan struct{}]
	// streaming[i]: node i's position comes from its binlog stream, in real time (else only
	// from the monitor's checks, up to an interval old).
	streaming []atomic.Bool
	// owner[i] is the node slot i's position is of (Own; guarded by mu): a source still
	// reporting a node since removed (AdvanceNode) moves nothing.
	owner []*Node
	// visible[i] is what node i was seen to have made visible to readers: a wait for it
	// there (MASTER_GTID_WAIT, WAIT_FOR_EXECUTED_GTID_SET) returned "reached" (Confirm). Unlike
	// the position above, which a stream reports as the node writes its binlog (a moment
	// before the transaction is visible), a read of anything visible contains needs no wait.
	// Forgotten with the position (Reset, Own) and when the node's connections broke
	// (Forget): its data may not be what it was.
	visible []atomic.Pointer[seen]
	// flights[i] is the wait in flight on node i that will confirm a position (nil: none):
	// reads that need no more than its target follow it instead of sending waits of their own
	// (BeginFlight).
	flights []atomic.Pointer[Flight]
}

// Flight is one wait for a position sent to a node, whose answer other reads may follow
// (BeginFlight). Done is closed when its leader ends it (EndFlight), answered or not.
type Flight struct {
	target gtid.Position
	done   chan struct{}
}

// Done returns a channel closed when the flight ended.
func (f *Flight) Done() <-chan struct{} { return f.done }

// seen is one node's visible position (the zero Position: nothing confirmed), immutable once
// published, with the epoch it belongs to: a confirmation of a wait sent before the node's
// positions were last forgotten is of an older epoch and is dropped.
type seen struct {
	pos   gtid.Position
	epoch uint64
	at    time.Time // when the last confirmation moved pos
}

// applied is one node's position, immutable once published; changed is closed when a later one
// replaces it.
type applied struct {
	pos     gtid.Position
	changed chan struct{}
}

// NewPositions returns the positions of n nodes, none known yet.
func NewPositions(n int) *Positions {
	p := &Positions{nodes: make([]atomic.Pointer[applied], n), streaming: make([]atomic.Bool, n), owner: make([]*Node, n),
		visible: make([]atomic.Pointer[seen], n), flights: make([]atomic.Pointer[Flight], n)}
	for i := range p.nodes {
		p.nodes[i].Store(&applied{changed: make(chan struct{})})
		p.visible[i].Store(&seen{})
	}
	any := make(chan struct{})
	p.any.Store(&any)
	return p
}

// Advance records that node i has applied pos (merged with what it had), and wakes whoever
// waits on node i when that moved it.
func (p *Positions) Advance(i int, pos gtid.Position) {
	if i < 0 || i >= len(p.nodes) || pos.IsZero() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advance(i, pos)
}

// advance is Advance, with p.mu held.
func (p *Positions) advance(i int, pos gtid.Position) {
	cur := p.nodes[i].Load()
	if !cur.pos.IsZero() && cur.pos.Contains(pos) {
		return
	}
	p.nodes[i].Store(&applied{pos: cur.pos.Merge(pos), changed: make(chan struct{})})
	close(cur.changed)
	p.moved()
}

// AdvanceNode is Advance for node n's slot, when the slot is still n's (Own).
func (p *Positions) AdvanceNode(n *Node, pos gtid.Position) {
	i := n.Index
	if i < 0 || i >= len(p.nodes) || pos.IsZero() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owner[i] == n {
		p.advance(i, pos)
	}
}

// Own gives slot i's position to node n (nil: to no node), forgetting what was known there.
func (p *Positions) Own(i int, n *Node) {
	if i < 0 || i >= len(p.nodes) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owner[i] == n {
		return
	}
	p.owner[i] = n
	p.streaming[i].Store(false)
	p.reset(i)
}

// moved wakes whoever waits for any node to move. Called with p.mu held.
func (p *Positions) moved() {
	next := make(chan struct{})
	close(*p.any.Swap(&next))
}

// Changed returns a channel closed when any node's position next moves.
func (p *Positions) Changed() <-chan struct{} { return *p.any.Load() }

// Reset forgets node i's position (its stream restarted from a position that may be older, the
// node was rebuilt): until a source reports again, nothing is known of it.
func (p *Positions) Reset(i int) {
	if i < 0 || i >= len(p.nodes) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reset(i)
}

// reset is Reset, with p.mu held.
func (p *Positions) reset(i int) {
	cur := p.nodes[i].Load()
	p.nodes[i].Store(&applied{changed: make(chan struct{})})
	close(cur.changed)
	p.moved()
	p.forget(i)
}

// forget drops node i's visible position and starts a new epoch. Called with p.mu held.
func (p *Positions) forget(i int) {
	p.visible[i].Store(&seen{epoch: p.visible[i].Load().epoch + 1})
}

// ForgetNode forgets what node n (when slot n.Index is still n's) was seen to make visible, and
// its position: a connection to it broke and a new one opened (it restarted, perhaps from older
// data), so nothing read of it before says what it has now.
func (p *Positions) ForgetNode(n *Node) {
	i := n.Index
	if i < 0 || i >= len(p.nodes) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.owner[i] == n {
		p.reset(i)
	}
}

// Epoch returns node i's epoch, to hand to Confirm with what a wait sent now finds.
func (p *Positions) Epoch(i int) uint64 {
	if i < 0 || i >= len(p.visible) {
		return 0
	}
	return p.visible[i].Load().epoch
}

// Confirm records that a wait sent to node i in epoch (Epoch, read before the wait was sent)
// found pos visible there: a later read of what pos contains needs no wait (Visible). A wait of
// an older epoch (the node's positions were forgotten since) records nothing.
func (p *Positions) Confirm(i int, epoch uint64, pos gtid.Position) {
	if i < 0 || i >= len(p.visible) || pos.IsZero() {
		return
	}
	if cur := p.visible[i].Load(); cur.epoch != epoch || cur.pos.Contains(pos) {
		return // lock-free for the common case: known already
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.visible[i].Load()
	if cur.epoch != epoch || cur.pos.Contains(pos) {
		return
	}
	p.visible[i].Store(&seen{pos: cur.pos.Merge(pos), epoch: epoch, at: time.Now()})
}

// CheckNode holds what a check of node n that began at began read as its applied position
// against what waits found visible there: when the node reports less than was confirmed
// before the check began, its replication position went back (SET GLOBAL gtid_slave_pos, a
// restore that kept the server running) and what was confirmed is forgotten, so reads wait on
// the node again. A confirmation after began proves nothing either way and is kept.
func (p *Positions) CheckNode(n *Node, applied gtid.Position, began time.Time) {
	i := n.Index
	if i < 0 || i >= len(p.visible) || applied.IsZero() {
		return
	}
	if v := p.visible[i].Load(); v.pos.IsZero() || !v.at.Before(began) || applied.Contains(v.pos) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v := p.visible[i].Load(); p.owner[i] == n && !v.pos.IsZero() && v.at.Before(began) && !applied.Contains(v.pos) {
		p.forget(i)
	}
}

// Visible reports whether a wait on node i was seen to find everything target has visible there
// (Confirm), in the node's current epoch. Lock-free; it does not allocate.
func (p *Positions) Visible(i int, target gtid.Position) bool {
	if i < 0 || i >= len(p.visible) {
		return false
	}
	return p.visible[i].Load().pos.Contains(target)
}

// At returns node i's position (the zero Position when unknown) and a channel closed when it
// moves.
func (p *Positions) At(i int) (gtid.Position, <-chan struct{}) {
	if i < 0 || i >= len(p.nodes) {
		return gtid.Position{}, nil
	}
	a := p.nodes[i].Load()
	return a.pos, a.changed
}

// Reached reports whether node i is known to have applied everything target has.
func (p *Positions) Reached(i int, target gtid.Position) bool {
	if i < 0 || i >= len(p.nodes) {
		return false
	}
	return p.nodes[i].Load().pos.Contains(target)
}

// SetStreaming records whether node i's binlog stream runs (its position is then real time).
func (p *Positions) SetStreaming(i int, on bool) {
	if i >= 0 && i < len(p.streaming) {
		p.streaming[i].Store(on)
	}
}

// SetStreamingNode is SetStreaming for node n's slot, when the slot is still n's (Own).
func (p *Positions) SetStreamingNode(n *Node, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := n.Index; i >= 0 && i < len(p.owner) && p.owner[i] == n {
		p.streaming[i].Store(on)
	}
}

// Streaming reports whether node i's position comes from its running binlog stream.
func (p *Positions) Streaming(i int) bool {
	return i >= 0 && i < len(p.streaming) && p.streaming[i].Load()
}

// BeginFlight finds the wait in flight on node i for target: when one is under way whose
// target contains target, it returns it and lead false (the caller follows it: waits on its
// Done, then looks at Visible); otherwise it starts one for target, replacing any for less,
// and returns it with lead true (the caller sends the wait and ends the flight, EndFlight,
// once answered or given up). Lock-free.
func (p *Positions) BeginFlight(i int, target gtid.Position) (f *Flight, lead bool) {
	if i < 0 || i >= len(p.flights) {
		return nil, true
	}
	var mine *Flight
	for {
		cur := p.flights[i].Load()
		if cur != nil && cur.target.Contains(target) {
			return cur, false
		}
		if mine == nil {
			mine = &Flight{target: target, done: make(chan struct{})}
		}
		if p.flights[i].CompareAndSwap(cur, mine) {
			return mine, true
		}
	}
}

// EndFlight ends flight f on node i (its leader, once): its followers wake.
func (p *Positions) EndFlight(i int, f *Flight) {
	if f == nil {
		return
	}
	if i >= 0 && i < len(p.flights) {
		p.flights[i].CompareAndSwap(f, nil)
	}
	close(f.done)
}
