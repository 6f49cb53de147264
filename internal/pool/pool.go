package pool

import (
	"context"
	"errors"
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
	open    int           // idle + in use + being dialed
	idle    []idle[C]     // LIFO: the most recently used last
	waiting int           // Gets waiting at MaxPerNode
	wake    chan struct{} // closed (and replaced) when room was made while some wait
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

// roomMade wakes the Gets waiting on g. Under p.mu.
func (g *group[C]) roomMade() {
	if g.waiting > 0 && g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
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
	var zero C
	var waitStart time.Time
	var timer *time.Timer
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
			return zero, false, ErrClosed
		}
		g := p.group(k)
		now := p.now()
		stale := g.expire(now, false, nil)
		found, pick := false, idle[C]{}
		for i := len(g.idle) - 1; i >= 0; i-- {
			e := g.idle[i]
			if e.v == v && (accept == nil || accept(e.c)) {
				g.idle = slices.Delete(g.idle, i, i+1)
				found, pick = true, e
				break
			}
		}
		if found {
			p.lent[pick.c] = lease{key: k, born: pick.born}
			g.roomMade() // the stale ones freed room too
			p.mu.Unlock()
			p.closeAll(stale)
			if now.Sub(pick.since) > p.pingAfter && p.ops.Ping != nil {
				if err := p.ops.Ping(pick.c); err != nil {
					p.Discard(pick.c, false)
					continue
				}
			}
			p.mu.Lock()
			g.st.reused++
			p.mu.Unlock()
			return pick.c, true, nil
		}
		if lim.MaxPerNode > 0 && g.open >= lim.MaxPerNode && len(g.idle) > 0 {
			// Another variant's idle connection stands in the way: it gives its place.
			stale = append(stale, g.idle[0].c)
			g.idle = slices.Delete(g.idle, 0, 1)
			g.open--
		}
		if lim.MaxPerNode <= 0 || g.open < lim.MaxPerNode {
			g.open++
			g.roomMade()
			p.mu.Unlock()
			p.closeAll(stale)
			c, err := dial()
			p.mu.Lock()
			if err != nil {
				g.open--
				g.roomMade()
				p.mu.Unlock()
				return zero, false, err
			}
			if p.closed {
				g.open--
				p.mu.Unlock()
				p.closeAll([]C{c})
				return zero, false, ErrClosed
			}
			g.st.created++
			p.lent[c] = lease{key: k, born: p.now()}
			p.mu.Unlock()
			return c, false, nil
		}
		// At the limit: wait for room.
		if waitStart.IsZero() {
			waitStart = time.Now() // the real clock: Options.Now is for ages, not for waits
			g.st.waits++
		}
		left := lim.AcquireTimeout - time.Since(waitStart)
		if left <= 0 {
			p.mu.Unlock()
			p.closeAll(stale)
			return zero, false, TooMany(k, lim)
		}
		if g.wake == nil {
			g.wake = make(chan struct{})
		}
		wake := g.wake
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
		case <-wake:
		case <-timer.C:
		case <-ctx.Done():
			done = ctx.Err()
		}
		p.mu.Lock()
		g.waiting--
		p.mu.Unlock()
		if done != nil {
			return zero, false, done
		}
	}
}

// Put takes back c, which the caller got from Get and has reset (counted as a reset): it waits
// idle for the next Get of its key and variant v, under lim. One past lim.MaxLifetime, one
// the group has no room for any more (MaxPerNode lowered), one the pool never handed out, and
// any after Close, are closed instead.
func (p *Pool[C]) Put(c C, v Variant, lim Limits) {
	p.mu.Lock()
	l, ok := p.lent[c]
	if !ok {
		p.mu.Unlock()
		p.closeAll([]C{c})
		return
	}
	delete(p.lent, c)
	g := p.groups[l.key]
	g.st.resets++
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
