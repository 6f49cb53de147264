package pool

import (
	"sync"
	"time"
)

// Top-up (Limits.MinIdle). A group is topped up only once a connection was put back in it: its
// template is that connection's variant and limits (the last Put's). The pool cannot invent a
// variant: the capabilities, character set, TLS and attributes a connection is opened with are
// the client's choices, and a connection opened any other way would be handed to no session
// (Get matches variants exactly). The last session's are the best guess of the next one's: the
// clients of one user are usually one application with one driver.
//
// MinIdle counts every idle connection of the group, whatever its variant: a user's sessions
// that open connections two ways keep MinIdle between them, not MinIdle of each.
//
// How MinIdle and IdleTimeout meet (as HikariCP's minimumIdle and idleTimeout do): IdleTimeout
// closes only the idle connections beyond the MinIdle most recently used; those MinIdle stay
// however long they wait, until MaxLifetime (then Fill opens their replacements), until their
// node is down, draining or removed (Sweep's keep), or until MinIdle is lowered. A connection
// kept idle long is pinged before it is handed out (Options.PingAfter), so one the node closed
// meanwhile (its wait_timeout) is replaced, not handed out: MaxLifetime below the nodes'
// wait_timeout renews them before that happens.

// Dial backoff of a group whose top-up failed.
const (
	fillBackoffMin = time.Second
	fillBackoffMax = time.Minute
	// fillParallel bounds the dials of one Fill at once.
	fillParallel = 4
)

// failed paces g's top-up after a failed dial at now. Under p.mu.
func (g *group[C]) failed(now time.Time) {
	if now.Before(g.retryAt) {
		return // another dial of the same round failed first: one failure, one step
	}
	g.backoff = min(max(2*g.backoff, fillBackoffMin), fillBackoffMax)
	g.retryAt = now.Add(g.backoff)
}

// Fill opens connections for the groups with fewer idle connections than their MinIdle, and
// reports how many it opened. For each group with a template, plan says which limits are in
// force (it is given the last Put's: their Origin tells where to look) and whether the group is
// to be topped up at all (false: not now, e.g. its node is down; its floor is then 0, so
// IdleTimeout closes its idle connections as if MinIdle were 0). A group gets
// lim.MinIdle - idle connections, never past lim.MaxPerNode open in all, none while a Get
// waits for room in it (that Get dials itself) nor before its backoff after a failed dial
// ends. dial opens one connection of variant v to k's node, bounded by the caller.
//
// plan is called without the pool's lock; dial too, up to fillParallel at once. Fill returns
// once every dial it started ended. A connection Fill opens is idle at once: counted as
// created, with the template's variant, under the plan's limits.
func (p *Pool[C]) Fill(plan func(k Key, last Limits) (Limits, bool), dial func(k Key, v Variant) (C, error)) int {
	type job struct {
		k   Key
		v   Variant
		lim Limits
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0
	}
	var cands []job
	for k, g := range p.groups {
		if g.hasTmpl {
			cands = append(cands, job{k, g.tmpl, g.tmplLim})
		}
	}
	p.mu.Unlock()

	var jobs []job
	for i := range cands {
		lim, ok := plan(cands[i].k, cands[i].lim)
		if !ok {
			lim.MinIdle = 0
		}
		p.mu.Lock()
		g := p.groups[cands[i].k]
		now := p.now()
		g.floor = lim.MinIdle
		need := lim.MinIdle - len(g.idle) - g.filling
		if lim.MaxPerNode > 0 {
			need = min(need, lim.MaxPerNode-g.open)
		}
		if p.closed || g.waiting > 0 || now.Before(g.retryAt) || g.tmpl != cands[i].v {
			need = 0 // (a Put since changed the template: the next Fill uses the new one)
		}
		for ; need > 0; need-- {
			g.open++ // reserved: a Get counts it against MaxPerNode while it is dialed
			g.filling++
			jobs = append(jobs, job{cands[i].k, cands[i].v, lim})
		}
		p.mu.Unlock()
	}

	var (
		wg     sync.WaitGroup
		sem    = make(chan struct{}, fillParallel)
		opened int
		mu     sync.Mutex
	)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := dial(j.k, j.v)
			p.mu.Lock()
			g := p.groups[j.k]
			g.filling--
			now := p.now()
			if err != nil {
				g.open--
				g.failed(now)
				g.roomMade()
				p.mu.Unlock()
				return
			}
			if p.closed {
				g.open--
				g.roomMade()
				p.mu.Unlock()
				p.closeAll([]C{c})
				return
			}
			g.backoff, g.retryAt = 0, time.Time{}
			g.st.created++
			g.idle = append(g.idle, idle[C]{c: c, v: j.v, born: now, since: now, lim: j.lim})
			g.roomMade()
			p.mu.Unlock()
			mu.Lock()
			opened++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return opened
}
