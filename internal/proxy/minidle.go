package proxy

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/pool"
	"github.com/sluicedb/sluice/internal/topology"
)

// pool.min_idle: the pool tops each (node, user) up to min_idle idle connections in the
// background (Proxy.RunPool's tick, pool.Fill). What a top-up opens a connection as is the
// pool's template of the group: the variant of the connection the user's last session on that
// node gave back. To dial one, the proxy needs more than the variant says: the credentials
// (for a user configured by password hash, only a client's login yields what the node takes)
// and the attributes themselves, not their hash. fillTemplates keeps, per group and variant,
// the login that last dialed a connection of that variant; every connection in the pool was
// dialed once by some login, so every template the pool can hold has one, as long as sluice
// runs (a restart starts with both empty: no top-up before the first session).

// fillTemplateMax bounds the variants remembered per (node, user): a client that varies its
// attributes on every login must not grow the table; the template the pool asks for is the
// last session's, whose login is among the most recent.
const fillTemplateMax = 4

// fillTemplates are the logins the top-up dials as, by (node, user) and variant. Written by
// the sessions' goroutines (dialNode), read by RunPool's; safe from any goroutine.
type fillTemplates struct {
	mu sync.Mutex
	m  map[pool.Key]map[pool.Variant]*login
}

// remember keeps what of login l a top-up of node n needs to dial as l did, read-only or not.
// Only for the configured users (the only ones pooled).
func (p *Proxy) remember(l *login, n *topology.Node, readOnly bool) {
	if _, configured := p.users[l.creds.User]; !configured {
		return
	}
	k, v := p.poolKey(l, n), p.poolVariant(l, n, readOnly)
	t := &p.fillFrom
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[pool.Key]map[pool.Variant]*login{}
	}
	byV := t.m[k]
	if byV == nil {
		byV = map[pool.Variant]*login{}
		t.m[k] = byV
	}
	if _, ok := byV[v]; !ok && len(byV) >= fillTemplateMax {
		for old := range byV {
			delete(byV, old) // any one: a variant the pool still needs comes back with its next dial
			break
		}
	}
	// A copy of what dialNode reads: the session's login lives on and changes (COM_CHANGE_USER).
	byV[v] = &login{creds: l.creds, caps: l.caps, mcaps: l.mcaps, tls: l.tls, charset: l.charset,
		attrs: append([]byte(nil), l.attrs...), attrsSum: l.attrsSum, from: l.from, to: l.to}
}

// template is the login a top-up of k in variant v dials as (nil: none known).
func (p *Proxy) template(k pool.Key, v pool.Variant) *login {
	t := &p.fillFrom
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k][v]
}

// routableNode is the node named name in the topology now, when it takes new work (up, not
// draining, not removed); else nil.
func (p *Proxy) routableNode(name string) *topology.Node {
	snap := p.topo.Snapshot()
	for i, n := range snap.Nodes {
		if n != nil && n.Name == name {
			if poolable(snap, i, n) {
				return n
			}
			return nil
		}
	}
	return nil
}

// fillPlan is the top-up's plan for group k, whose last connection was given back under last:
// the limits in force now at the endpoint that session came through (last.Origin, read at each
// tick, so a PATCH or reload of min_idle takes effect within a second), when the group is to
// be topped up at all: the endpoint still exists with pool_mode session, the user is still a
// configured one, its min_idle there is above 0, and the node takes new work.
func (p *Proxy) fillPlan(k pool.Key, last pool.Limits) (pool.Limits, bool) {
	ep := p.endpoint(last.Origin)
	if ep == nil {
		return pool.Limits{}, false
	}
	ps := ep.pool.Load()
	if ps.Mode != PoolSession {
		return pool.Limits{}, false
	}
	if _, configured := p.users[k.User]; !configured {
		return pool.Limits{}, false
	}
	lim := ps.limitsOf(k.User)
	return lim, lim.MinIdle > 0 && p.routableNode(k.Node) != nil
}

// fillDial opens one connection of variant v to k's node for the top-up, as the login that
// last dialed that variant did, without a database (the most reusable: a session with a
// database selects its own on the connection, one without could not take a connection that
// has one). Bounded by the connect timeout and by ctx (RunPool's: shutdown does not wait for
// a dial).
func (p *Proxy) fillDial(ctx context.Context, k pool.Key, v pool.Variant) (c *backend.Conn, err error) {
	defer func() {
		if err != nil {
			p.log.Debug("pool: opening an idle connection for min_idle failed; retried after a backoff",
				"node", k.Node, "user", k.User, "err", err)
		}
	}()
	n := p.routableNode(k.Node)
	if n == nil {
		return nil, fmt.Errorf("node %s takes no new connections", k.Node)
	}
	l := p.template(k, v)
	if l == nil {
		return nil, fmt.Errorf("no login of user %s to open node %s's connections as", k.User, k.Node)
	}
	c, err = p.dialNodeCtx(ctx, l, n, v.ReadOnly, &backend.State{}, nil)
	if err != nil {
		return nil, err
	}
	if got := p.poolVariant(l, n, v.ReadOnly); got != v {
		// The backend TLS settings changed since: the connection is not the one asked for.
		c.Quit()
		return nil, fmt.Errorf("node %s: a connection opened now is not of the pool's variant", k.Node)
	}
	return c, nil
}
