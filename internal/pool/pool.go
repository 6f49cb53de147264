package pool

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Key names a group of connections: one node, one user. max_per_node counts per Key.
type Key struct {
	Node string // the node's name
	User string // the user the connections are logged in as
}

// Variant is what a connection was opened with that a reset does not undo: an idle connection
// is handed only to a session that would have opened it the same way.
type Variant struct {
	// Caps and MariaDBCaps are the capabilities asked of the node (the client's mirrored ones:
	// CLIENT_DEPRECATE_EOF, CLIENT_MULTI_STATEMENTS, CLIENT_FOUND_ROWS... change the protocol
	// or the server's behaviour for the whole connection).
	Caps, MariaDBCaps uint32
	// Charset is the handshake's character set: the one COM_RESET_CONNECTION goes back to.
	Charset uint8
	// ReadOnly: opened read-only (a replica's connection, guarded).
	ReadOnly bool
	// TLS: the connection to the node is encrypted.
	TLS bool
	// Attrs identifies the connection attributes sent at login (a hash): the node shows them
	// for the connection's whole life (performance_schema.session_connect_attrs).
	Attrs uint64
	// Client is the client address the connection told its node of (a PROXY protocol header,
	// sent once per connection): the node holds the connection as that client's, for its host
	// rules, USER() and processlist. The zero Addr when the node was told nothing.
	Client netip.Addr
	// Shared: the connection came back without a reset (Return), carrying the session state
	// of its last user; a connection reset on its way back (Put) is not Shared.
	Shared bool
}

// Limits are the settings of one Get or Put (the endpoint's pool settings, with the user's
// overrides): they may change between calls (a PATCH, a reload), and each call obeys its own.
type Limits struct {
	// MaxPerNode bounds the group's open connections, idle and in use; 0: unlimited.
	MaxPerNode int
	// IdleTimeout: an idle connection older than this (idle) is closed; 0: never.
	IdleTimeout time.Duration
	// MaxLifetime: a connection older than this is closed instead of being reused; 0: never.
	MaxLifetime time.Duration
	// AcquireTimeout bounds a Get's wait at MaxPerNode; 0: it does not wait.
	AcquireTimeout time.Duration
	// MinIdle is how many idle connections Fill keeps in the group (never past MaxPerNode), and
	// how many IdleTimeout leaves open: only the idle connections beyond the MinIdle most
	// recently used are closed for being idle. MaxLifetime still closes any of them (Fill opens
	// their replacements). 0: none kept.
	MinIdle int
	// Origin names where these limits came from (the proxy: the endpoint). The pool keeps it
	// with a group's template and hands it back to Fill's plan, which reads the limits in force
	// there now; the pool itself does not look at it.
	Origin string
}

// Ops are the protocol work the pool needs done on a connection. Both are called without the
// pool's lock held, from the goroutine of the Get (Ping) or of whoever closes (Close).
type Ops[C comparable] struct {
	// Ping checks a connection that was idle long (bounded by the caller: a deadline).
	Ping func(C) error
	// Close ends a connection (COM_QUIT, then close), bounded by the caller.
	Close func(C)
}

// Options configure a Pool.
type Options[C comparable] struct {
	Ops Ops[C]
	// PingAfter: a connection idle longer than this is pinged before it is handed out; one
	// idle for less is not (no ping per reuse). 0: 1 s.
	PingAfter time.Duration
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// DefaultPingAfter is Options.PingAfter's default.
const DefaultPingAfter = time.Second

// Pool keeps idle connections of type C (a pointer) per Key and Variant, and counts the open
// ones per Key. Every method may be called from any goroutine; connections are handed out to
// one caller at a time, and Ops run outside the lock.
type Pool[C comparable] struct {
	ops       Ops[C]
	pingAfter time.Duration
	now       func() time.Time

	mu     sync.Mutex
	groups map[Key]*group[C]
	lent   map[C]lease // connections handed out (or being dialed for a Get), by connection
	closed bool
}

// lease is what the pool remembers of a connection it handed out.
type lease struct {
	key  Key
	born time.Time
}

// group is one Key's connections. Guarded by Pool.mu.
type group[C comparable] struct {
	open    int       // idle + in use + being dialed
	idle    []idle[C] // LIFO: the most recently used last
	waiting int       // Gets waiting at MaxPerNode (queued, or woken and not yet back)
	queue   waiters   // the waiting Gets, first come first; roomMade wakes the first
	st      counters

	// floor is how many idle connections IdleTimeout leaves open: the MinIdle of the last Put,
	// then of Fill's plan (0 when the plan keeps nothing, e.g. the node is down).
	floor int
	// tmpl is what Fill opens the group's connections as: the variant and limits of the last
	// Put (hasTmpl: there was one). Before any Put the group is not topped up: the pool cannot
	// know how its user's sessions would open a connection.
	tmpl    Variant
	tmplLim Limits
	hasTmpl bool
	// retryAt and backoff pace Fill after a failed dial (or a node found full): no dial before
	// retryAt; backoff doubles per failure up to fillBackoffMax and is 0 after a success.
	retryAt time.Time
	backoff time.Duration
	// filling counts Fill's dials under way (part of open).
	filling int
}

type idle[C comparable] struct {
	c     C
	v     Variant
	born  time.Time // dialed
	since time.Time // put back
	lim   Limits    // the settings it was put back under
}

type counters struct {
	created, reused, resets, resetFailures, waits uint64
	waited                                        time.Duration
}

// New makes an empty pool.
func New[C comparable](o Options[C]) *Pool[C] {
	p := &Pool[C]{ops: o.Ops, pingAfter: o.PingAfter, now: o.Now, groups: map[Key]*group[C]{}, lent: map[C]lease{}}
	if p.pingAfter <= 0 {
		p.pingAfter = DefaultPingAfter
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p
}

// ErrClosed is Get's error once Close was called.
var ErrClosed = errors.New("pool: closed")

// TooMany is the error of a Get that waited AcquireTimeout at MaxPerNode: 1040, as the server
// words its own limit, saying which limit it is.
func TooMany(k Key, lim Limits) *mysql.SQLError {
	return mysql.NewError(mysql.ErrConCount, "08004",
		"sluice: too many connections to node %s for user %s (pool.max_per_node=%d); waited %s (pool.acquire_timeout)",
		k.Node, k.User, lim.MaxPerNode, lim.AcquireTimeout)
}

// group returns k's group, made on first use. Under p.mu.
func (p *Pool[C]) group(k Key) *group[C] {
	g := p.groups[k]
	if g == nil {
		g = &group[C]{}
		p.groups[k] = g
	}
	return g
}

// idleExpired and lifeExpired report whether an idle connection has been idle past its idle
// timeout, or lived past its lifetime, at now.
func (e *idle[C]) idleExpired(now time.Time) bool {
	return e.lim.IdleTimeout > 0 && now.Sub(e.since) >= e.lim.IdleTimeout
}

func (e *idle[C]) lifeExpired(now time.Time) bool {
	return e.lim.MaxLifetime > 0 && now.Sub(e.born) >= e.lim.MaxLifetime
}

// expire takes out of g's idle connections those that must not be handed out any more at now,
// or all of them when all is set, and returns them (appended to stale) for the caller to close
// outside the lock: those past their lifetime, and those idle past their idle timeout while
// more than g.floor idle connections would remain. The oldest go first: the floor keeps the
// most recently used. Under p.mu.
func (g *group[C]) expire(now time.Time, all bool, stale []C) []C {
	left, n := len(g.idle), 0
	for _, e := range g.idle {
		if all || e.lifeExpired(now) || (e.idleExpired(now) && left > g.floor) {
			stale = append(stale, e.c)
			g.open--
			left--
			continue
		}
		g.idle[n] = e
		n++
	}
	if n < len(g.idle) {
		clear(g.idle[n:])
		g.idle = g.idle[:n]
		g.roomMade()
	}
	return stale
}

// roomMade wakes the first Get waiting on g, if any: room was made (a connection put back
// idle, one closed). One room event wakes one waiter, not all of them: with thousands waiting
// at max_per_node, waking every one per Put made each Put cost a pass of the whole crowd over
// the scheduler and the lock, and kept the connections' holders waiting behind them for the
// CPU. A woken Get that takes the room and sees more left wakes the next (moreRoom), and one
// that finds none (a Get that did not wait took it first) queues again at the front. Under p.mu.
func (g *group[C]) roomMade() {
	if w := g.queue.popFront(); w != nil {
		w.wake <- struct{}{} // buffered 1, and only queued waiters are woken: never blocks
	}
}

// moreRoom wakes the next waiter when g still has room after a Take got its connection:
// an idle connection left, or fewer open than max (0: no limit). Under p.mu.
func (g *group[C]) moreRoom(max int) {
	if g.queue.head != nil && (len(g.idle) > 0 || max <= 0 || g.open < max) {
		g.roomMade()
	}
}

// waiter is one Take waiting at max_per_node: queued in its group's waiters until roomMade
// wakes it (wake receives) or it leaves on its own (timeout, ctx). Its links are guarded by
// Pool.mu; wake is its own.
type waiter struct {
	wake       chan struct{} // buffered 1
	prev, next *waiter
	queued     bool
}

// waiters is a group's queue of waiting Takes, a doubly linked list (a waiter that gives up
// leaves from anywhere in O(1)). Guarded by Pool.mu.
type waiters struct{ head, tail *waiter }

func (q *waiters) pushBack(w *waiter) {
	w.prev, w.next, w.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
}

func (q *waiters) pushFront(w *waiter) {
	w.prev, w.next, w.queued = nil, q.head, true
	if q.head != nil {
		q.head.prev = w
	} else {
		q.tail = w
	}
	q.head = w
}

func (q *waiters) remove(w *waiter) {
	if !w.queued {
		return
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
}

func (q *waiters) popFront() *waiter {
	w := q.head
	if w != nil {
		q.remove(w)
	}
	return w
}

// Get returns a connection for k and v: the most recently put back idle one of that variant
// that accept takes (nil: any), pinged first when it was idle longer than PingAfter; else one
// made by dial, when the group is under lim.MaxPerNode (an idle connection of another variant
// gives its place when that is what stands in the way). At the limit it waits for a Put or a
// close, up to lim.AcquireTimeout and ctx, then returns TooMany (or ctx's error). reused says
// which. dial's error is returned as it is.
//
// Every connection Get returns is the caller's until it gives it to Put or Discard.
func (p *Pool[C]) Get(ctx context.Context, k Key, v Variant, lim Limits, accept func(C) bool, dial func() (C, error)) (c C, reused bool, err error) {
	c, _, reused, err = p.Take(ctx, k, Want[C]{Variant: v, Accept: accept}, lim, dial)
	return c, reused, err
}

// Want says which idle connections a Take may hand out, and which it prefers.
type Want[C comparable] struct {
	// Variant is the variant wanted; Also, when set, another variant taken when no idle
	// connection of Variant is acceptable (it ranks below every one of Variant).
	Variant Variant
	Also    *Variant
	// Accept refuses an idle connection it returns false for (nil: all accepted).
	Accept func(C) bool
	// Prefer ranks an acceptable connection of Variant above the others when it returns true
	// (nil: none preferred): among equals, the most recently put back wins.
	Prefer func(C) bool
}

// rank is how much w wants e: 0 not at all, then Also's, Variant's, Variant's preferred.
func (w *Want[C]) rank(e *idle[C]) int {
	switch {
	case e.v == w.Variant:
	case w.Also != nil && e.v == *w.Also:
		if w.Accept == nil || w.Accept(e.c) {
			return 1
		}
		return 0
	default:
		return 0
	}
	if w.Accept != nil && !w.Accept(e.c) {
		return 0
	}
	if w.Prefer != nil && w.Prefer(e.c) {
		return 3
	}
	return 2
}

// Take is Get for what w wants: the best ranked idle connection (see Want), else one made by
// dial, under the same limits and waits as Get: an idle connection's variant (w.Variant or
// *w.Also) and reused true, or a new one (w.Variant, reused false).
//
// Waits are first come, first served: while Takes wait in k's group (queued, or woken and on
// their way), a new Take queues behind them instead of taking the room one was woken for
// (under a load past what max_per_node serves, every statement waits its turn rather than a
// few waiting out acquire_timeout). Invariant, under p.mu: while the group has room (an idle
// connection, or fewer open than max_per_node) and Takes wait, one of them has been woken and
// not yet looked: every room event wakes the first queued, and a woken Take that leaves room
// behind (it took one of several, or gave up) wakes the next.
func (p *Pool[C]) Take(ctx context.Context, k Key, w Want[C], lim Limits, dial func() (C, error)) (c C, v Variant, reused bool, err error) {
	var zero C
	var waitStart time.Time
	var timer *time.Timer
	var me *waiter // this Take's place in the queue, once it waits
	woken := false // roomMade woke it: its turn has come (it queues again at the front)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if !waitStart.IsZero() {
			p.mu.Lock()
			p.group(k).st.waited += time.Since(waitStart)
			p.mu.Unlock()
		}
	}()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return zero, w.Variant, false, ErrClosed
		}
		g := p.group(k)
		now := p.now()
		var stale []C
		if woken || g.waiting == 0 || lim.MaxPerNode <= 0 || lim.AcquireTimeout <= 0 {
			var pick idle[C]
			var found bool
			pick, found, stale = g.best(&w, now)
			if found {
				if c, ok := p.hand(k, g, pick, stale, now); ok {
					return c, pick.v, true, nil
				}
				continue
			}
			if lim.MaxPerNode > 0 && g.open >= lim.MaxPerNode && len(g.idle) > 0 {
				// Another variant's idle connection stands in the way: it gives its place.
				stale = append(stale, g.idle[0].c)
				g.idle = slices.Delete(g.idle, 0, 1)
				g.open--
			}
			if lim.MaxPerNode <= 0 || g.open < lim.MaxPerNode {
				g.open++
				g.moreRoom(lim.MaxPerNode)
				p.mu.Unlock()
				p.closeAll(stale)
				c, err := dial()
				p.mu.Lock()
				if err != nil {
					g.open--
					g.roomMade()
					p.mu.Unlock()
					return zero, w.Variant, false, err
				}
				if p.closed {
					g.open--
					p.mu.Unlock()
					p.closeAll([]C{c})
					return zero, w.Variant, false, ErrClosed
				}
				g.st.created++
				p.lent[c] = lease{key: k, born: p.now()}
				p.mu.Unlock()
				return c, w.Variant, false, nil
			}
		}
		// At the limit, or others wait before this one: wait for room.
		if waitStart.IsZero() {
			waitStart = time.Now() // the real clock: Options.Now is for ages, not for waits
			g.st.waits++
		}
		left := lim.AcquireTimeout - time.Since(waitStart)
		if left <= 0 {
			if woken {
				g.moreRoom(lim.MaxPerNode) // its turn passes to the next
			}
			p.mu.Unlock()
			p.closeAll(stale)
			return zero, w.Variant, false, TooMany(k, lim)
		}
		if me == nil {
			me = &waiter{wake: make(chan struct{}, 1)}
		}
		if woken {
			g.queue.pushFront(me)
		} else {
			g.queue.pushBack(me)
		}
		g.waiting++
		p.mu.Unlock()
		p.closeAll(stale)
		if timer == nil {
			timer = time.NewTimer(left)
		} else {
			timer.Reset(left)
		}
		var done error
		select {
		case <-me.wake:
		case <-timer.C:
		case <-ctx.Done():
			done = ctx.Err()
		}
		p.mu.Lock()
		g.waiting--
		woken = !me.queued // roomMade took it out of the queue
		g.queue.remove(me)
		if woken {
			select {
			case <-me.wake: // the select took the timer or ctx instead
			default:
			}
		}
		if done != nil && woken {
			g.roomMade() // the room it was woken for goes to the next
		}
		p.mu.Unlock()
		if done != nil {
			return zero, w.Variant, false, done
		}
	}
}

// TakeIdle is Take without dialing or waiting: the best ranked idle connection for w and its
// variant, if there is one (ok false otherwise).
func (p *Pool[C]) TakeIdle(k Key, w Want[C]) (c C, v Variant, ok bool) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return c, v, false
		}
		g := p.group(k)
		now := p.now()
		if g.waiting > 0 {
			// Takes wait for room: they come first (see Take).
			p.mu.Unlock()
			return c, v, false
		}
		pick, found, stale := g.best(&w, now)
		if !found {
			if len(stale) > 0 {
				g.roomMade()
			}
			p.mu.Unlock()
			p.closeAll(stale)
			return c, v, false
		}
		if c, ok := p.hand(k, g, pick, stale, now); ok {
			return c, pick.v, true
		}
	}
}

// best takes out of g's idle connections the one w ranks highest (found), and the expired
// ones it met (stale: g.open no longer counts them). Under p.mu.
func (g *group[C]) best(w *Want[C], now time.Time) (pick idle[C], found bool, stale []C) {
	stale = g.expire(now, false, nil)
	best, bestRank := -1, 0
	for i := len(g.idle) - 1; i >= 0; i-- {
		e := &g.idle[i]
		if r := w.rank(e); r > bestRank {
			best, bestRank = i, r
			if r == 3 {
				break
			}
		}
	}
	if best < 0 {
		return pick, false, stale
	}
	pick = g.idle[best]
	g.idle = slices.Delete(g.idle, best, best+1)
	return pick, true, stale
}

// hand lends pick, taken out of g's idle connections, to the caller (p.mu held on entry,
// released on return), after closing stale and pinging pick when it was idle long: ok false
// when that ping failed (pick was discarded; the caller looks again).
func (p *Pool[C]) hand(k Key, g *group[C], pick idle[C], stale []C, now time.Time) (C, bool) {
	p.lent[pick.c] = lease{key: k, born: pick.born}
	if len(stale) > 0 || len(g.idle) > 0 {
		g.roomMade() // room is left (the stale ones freed some too): the next waiter's turn
	}
	p.mu.Unlock()
	p.closeAll(stale)
	if now.Sub(pick.since) > p.pingAfter && p.ops.Ping != nil {
		if err := p.ops.Ping(pick.c); err != nil {
			p.Discard(pick.c, false)
			var zero C
			return zero, false
		}
	}
	p.mu.Lock()
	g.st.reused++
	p.mu.Unlock()
	return pick.c, true
}

// Put takes back c, which the caller got from Get and has reset (counted as a reset): it waits
// idle for the next Get of its key and variant v, under lim. One past lim.MaxLifetime, one
// the group has no room for any more (MaxPerNode lowered), one the pool never handed out, and
// any after Close, are closed instead.
func (p *Pool[C]) Put(c C, v Variant, lim Limits) { p.put(c, v, lim, true) }

// Return is Put for a connection given back without a reset (transaction pooling: it carries
// the session state of whoever used it last, which the next user brings in line with its own).
// It is not counted as a reset.
func (p *Pool[C]) Return(c C, v Variant, lim Limits) { p.put(c, v, lim, false) }

func (p *Pool[C]) put(c C, v Variant, lim Limits, reset bool) {
	p.mu.Lock()
	l, ok := p.lent[c]
	if !ok {
		p.mu.Unlock()
		p.closeAll([]C{c})
		return
	}
	delete(p.lent, c)
	g := p.groups[l.key]
	if reset {
		g.st.resets++
	}
	now := p.now()
	if !p.closed {
		g.tmpl, g.tmplLim, g.hasTmpl, g.floor = v, lim, true, lim.MinIdle
	}
	if p.closed || (lim.MaxLifetime > 0 && now.Sub(l.born) >= lim.MaxLifetime) || (lim.MaxPerNode > 0 && g.open > lim.MaxPerNode) {
		g.open--
		g.roomMade()
		p.mu.Unlock()
		p.closeAll([]C{c})
		return
	}
	g.idle = append(g.idle, idle[C]{c: c, v: v, born: l.born, since: now, lim: lim})
	g.roomMade()
	p.mu.Unlock()
}

// Discard closes c, which the caller got from Get and will not give back (it failed, its
// reset failed: resetFailed counts that, or it is in a state no reset can be trusted with),
// making room in its group. A connection the pool never handed out is closed all the same.
func (p *Pool[C]) Discard(c C, resetFailed bool) {
	p.mu.Lock()
	if l, ok := p.lent[c]; ok {
		delete(p.lent, c)
		g := p.groups[l.key]
		g.open--
		if resetFailed {
			g.st.resetFailures++
		}
		g.roomMade()
	}
	p.mu.Unlock()
	p.closeAll([]C{c})
}

// Forget is Discard for a connection the caller closes itself (at once, without the COM_QUIT
// of Ops.Close: it may be broken).
func (p *Pool[C]) Forget(c C) {
	p.mu.Lock()
	if l, ok := p.lent[c]; ok {
		delete(p.lent, c)
		g := p.groups[l.key]
		g.open--
		g.roomMade()
	}
	p.mu.Unlock()
}

// EvictNode closes every idle connection to node, of every user, and reports how many: the
// node refused a new connection as full (its max_connections), and idle ones hold its slots.
func (p *Pool[C]) EvictNode(node string) int {
	var stale []C
	p.mu.Lock()
	for k, g := range p.groups {
		if k.Node != node || len(g.idle) == 0 {
			continue
		}
		stale = g.expire(p.now(), true, stale)
		// Fill must not take the slots back at once: the node is full.
		g.failed(p.now())
	}
	p.mu.Unlock()
	p.closeAll(stale)
	return len(stale)
}

// Sweep closes the idle connections past their idle timeout or lifetime, and those of the keys
// keep refuses (nil: all kept): a node removed, down or draining.
func (p *Pool[C]) Sweep(keep func(Key) bool) {
	var stale []C
	p.mu.Lock()
	now := p.now()
	for k, g := range p.groups {
		stale = g.expire(now, keep != nil && !keep(k), stale)
	}
	p.mu.Unlock()
	p.closeAll(stale)
}

// Run sweeps every interval until ctx ends, then closes the pool; after each sweep it calls
// then (nil: nothing), e.g. a Fill.
func (p *Pool[C]) Run(ctx context.Context, interval time.Duration, keep func(Key) bool, then func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.Close()
			return
		case <-t.C:
			p.Sweep(keep)
			if then != nil {
				then()
			}
		}
	}
}

// Close closes every idle connection; connections in use are closed when put back, and Get
// fails from now on.
func (p *Pool[C]) Close() {
	var stale []C
	p.mu.Lock()
	p.closed = true
	for _, g := range p.groups {
		stale = g.expire(p.now(), true, stale)
	}
	p.mu.Unlock()
	p.closeAll(stale)
}

func (p *Pool[C]) closeAll(cs []C) {
	for _, c := range cs {
		if p.ops.Close != nil {
			p.ops.Close(c)
		}
	}
}

// Stat is one group's numbers.
type Stat struct {
	Node, User string
	// Open counts idle + in use connections; Waiting the Gets waiting at max_per_node now.
	Open, Idle, InUse, Waiting int
	// Created: dialed; Reused: handed out from idle; Resets: put back after a reset;
	// ResetFailures: discarded because their reset failed; Waits: Gets that had to wait.
	Created, Reused, Resets, ResetFailures, Waits uint64
	// Waited is the time Gets spent waiting at max_per_node, in total.
	Waited time.Duration
}

// Stats returns every group's numbers, by node then user.
func (p *Pool[C]) Stats() []Stat {
	p.mu.Lock()
	out := make([]Stat, 0, len(p.groups))
	for k, g := range p.groups {
		out = append(out, Stat{Node: k.Node, User: k.User, Open: g.open, Idle: len(g.idle), InUse: g.open - len(g.idle),
			Waiting: g.waiting, Created: g.st.created, Reused: g.st.reused, Resets: g.st.resets,
			ResetFailures: g.st.resetFailures, Waits: g.st.waits, Waited: g.st.waited})
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b Stat) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.User, b.User)
	})
	return out
}
