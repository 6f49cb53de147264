package proxy

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/pool"
	"github.com/sluicedb/sluice/internal/topology"
)

// The session-level pool (pool_mode session). A session's node connections come from the
// proxy's pool (acquire, the node set's dial hook) and, when the session ends between two
// commands, go back to it after a reset (recycle); everything else about them is as before:
// the node set owns them while the session lives.
//
// The pool lives here, not in backend, because what makes a connection reusable is the
// session's business: how it ended (between commands, no cursor, no XA), whether its node is
// still one sessions may use, what a reset leaves (the database, the handshake's character set)
// and what a new session must apply on top (its database, the read-only guard, GTID tracking).
// internal/pool itself knows nothing of the protocol.

// errPoolWaitEnded: the session ended (killed, shut down) while it waited for a pooled
// connection. It says nothing of the node's health.
var errPoolWaitEnded = errors.New("the session ended while it waited for a node connection (pool.max_per_node)")

// PoolMode is what an endpoint does with a session's node connections when its client leaves.
type PoolMode uint8

const (
	PoolOff         PoolMode = iota // closed
	PoolSession                     // reset and kept for the next session of the same user
	PoolTransaction                 // given back between transactions; reset when its session ends
)

// ParsePoolMode reads an endpoint's pool_mode as the configuration spells it.
func ParsePoolMode(s string) (PoolMode, error) {
	switch s {
	case "off":
		return PoolOff, nil
	case "", "session":
		return PoolSession, nil
	case "transaction":
		return PoolTransaction, nil
	}
	return PoolOff, fmt.Errorf("unknown pool_mode %q (want off, session or transaction)", s)
}

// PoolSettings are an endpoint's pool mode and limits (part of EndpointSettings: they change
// live). Users holds whole limits for the users that override the endpoint's.
type PoolSettings struct {
	Mode   PoolMode
	Limits pool.Limits
	Users  map[string]pool.Limits

	// endpoint is the endpoint these settings are stored for (of): the Origin of the limits
	// limitsOf gives, which the pool's top-up reads the limits in force from (fillPlan).
	endpoint string
}

// limitsOf is user's limits under s.
func (s *PoolSettings) limitsOf(user string) pool.Limits {
	l, ok := s.Users[user]
	if !ok {
		l = s.Limits
	}
	l.Origin = s.endpoint
	return l
}

// of marks s as endpoint's settings and returns it.
func (s *PoolSettings) of(endpoint string) *PoolSettings {
	s.endpoint = endpoint
	return s
}

// clonePool is a copy of s that shares nothing with it.
func clonePool(s PoolSettings) *PoolSettings {
	s.Users = maps.Clone(s.Users)
	return &s
}

// nodePool is the proxy's pool of node connections.
type nodePool = pool.Pool[*backend.Conn]

// resetTimeout bounds the reset of a connection on its way back to the pool; pingTimeout the
// ping of one idle long. (backend.QuitWriteTimeout bounds the COM_QUIT of one it closes.)
const (
	resetTimeout = 2 * time.Second
	pingTimeout  = time.Second
)

func newNodePool() *nodePool {
	return pool.New(pool.Options[*backend.Conn]{Ops: pool.Ops[*backend.Conn]{
		Ping: func(c *backend.Conn) error {
			nc := c.NetConn()
			_ = nc.SetDeadline(time.Now().Add(pingTimeout))
			defer func() { _ = nc.SetDeadline(time.Time{}) }()
			return c.Command([]byte{mysql.ComPing})
		},
		// An idle connection, or one whose reset failed (a broken one's COM_QUIT fails at
		// once): COM_QUIT lets the node end the thread without an "aborted connection".
		Close: (*backend.Conn).Quit,
	}})
}

// poolKey and poolVariant say which pooled connections a session of login l may use on node n.
func (p *Proxy) poolKey(l *login, n *topology.Node) pool.Key {
	return pool.Key{Node: n.Name, User: l.creds.User}
}

func (p *Proxy) poolVariant(l *login, n *topology.Node, readOnly bool) pool.Variant {
	cfg, _ := p.backendTLS(n, l.tls)
	return pool.Variant{Caps: l.caps, MariaDBCaps: l.mcaps, Charset: l.charset, ReadOnly: readOnly, TLS: cfg != nil, Attrs: l.attrsSum,
		Client: proxiedClient(l, n)}
}

// sumAttrs identifies a login's connection attributes (pool.Variant.Attrs): computed once per
// login, not per statement.
func sumAttrs(attrs []byte) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(attrs)
	return h.Sum64()
}

// acquire is the node set's dial hook under pool_mode session and transaction: a connection
// to node n for login l from the pool, brought in line with what the session wants (ready);
// else a new one (dialNode). Under pool_mode transaction it prefers a connection given back
// unreset that carries a prefix of the session's state (backend.Conn.Continues: nothing to
// send but the rest), then any given back unreset, then one reset at its last session's end.
// Waits at pool.max_per_node are bounded by acquire_timeout and by the session's life (done).
func (p *Proxy) acquire(l *login, ps *PoolSettings, done <-chan struct{}, n *topology.Node, readOnly bool, st *backend.State, primary func(*backend.Conn)) (*backend.Conn, error) {
	if !p.pooled(l, ps) {
		return p.dialNode(l, n, readOnly, st, primary)
	}
	lim := ps.limitsOf(l.creds.User)
	k, v := p.poolKey(l, n), p.poolVariant(l, n, readOnly)
	w := pool.Want[*backend.Conn]{Variant: v, Accept: func(c *backend.Conn) bool {
		// COM_RESET_CONNECTION keeps the database: a session that has none cannot take a
		// connection that has one (nothing takes a connection back to no database).
		return c.Addr == n.Address && (st.DB != "" || c.Fingerprint().DB == "")
	}}
	if ps.Mode == PoolTransaction {
		shared := v
		shared.Shared = true
		w.Variant, w.Also = shared, &v
		w.Prefer = func(c *backend.Conn) bool { return c.Continues(st) }
	}
	c, got, reused := p.pool.TakeIdle(k, w)
	if !reused {
		var err error
		var fresh bool
		if c, got, fresh, err = p.takeOrDial(k, w, lim, done, l, n, readOnly, st, primary); err != nil {
			return c, err
		}
		if !fresh {
			return p.trackAll(c, ps, n)
		}
	}
	if err := p.ready(c, got.Shared, n, readOnly, st, primary); err != nil {
		p.pool.Discard(c, false)
		return nil, err
	}
	return p.trackAll(c, ps, n)
}

// trackAll makes c, under pool_mode transaction, report every session variable a statement
// changes (backend.Conn.TrackAllVars), where it tracks the node's default list still (fresh, or
// reset: COM_RESET_CONNECTION puts the list back, mariadb-facts.md §9): a stored function's or
// trigger's SET SESSION is then reported, and holds the connection (route.PinProgram, learn)
// instead of staying on it for the next session. The client is shown only what its own list
// would have reported (the relay hides the rest). A node that refuses the SET leaves the
// connection as it was (such a SET is then not seen, as before); any other failure closes it.
func (p *Proxy) trackAll(c *backend.Conn, ps *PoolSettings, n *topology.Node) (*backend.Conn, error) {
	if ps.Mode != PoolTransaction || !c.CanTrackAll() {
		return c, nil
	}
	nc := c.NetConn()
	_ = nc.SetDeadline(time.Now().Add(resetTimeout))
	err := c.TrackAllVars()
	_ = nc.SetDeadline(time.Time{})
	var se *mysql.SQLError
	if err != nil && !errors.As(err, &se) {
		p.pool.Discard(c, false)
		return nil, &backend.ConnectError{Addr: n.Address, Err: fmt.Errorf("tracking every session variable: %w", err)}
	}
	return c, nil
}

// takeOrDial is acquire's slow path: no idle connection would do, so one is dialed, or waited
// for at max_per_node. fresh reports a reused connection (as Take's reused) — false for a
// dialed one, which needs nothing more.
func (p *Proxy) takeOrDial(k pool.Key, w pool.Want[*backend.Conn], lim pool.Limits, done <-chan struct{}, l *login, n *topology.Node, readOnly bool, st *backend.State, primary func(*backend.Conn)) (*backend.Conn, pool.Variant, bool, error) {
	// The wait ends with the session (KILL, shutdown): its done channel is the context's, with
	// no goroutine to watch it (one per wait cost a goroutine's start per statement while the
	// pool was at max_per_node).
	ctx := doneContext{done: done}
	var dialed bool
	c, got, reused, err := p.pool.Take(ctx, k, w, lim, func() (*backend.Conn, error) {
		dialed = true
		c, err := p.dialNode(l, n, readOnly, st, primary)
		for try := 0; try < fullRetries && nodeFull(err) && p.pool.EvictNode(n.Name) > 0; try++ {
			// The node is full, and the pool's idle connections hold some of its slots:
			// they are closed (COM_QUIT), and the node given a moment to free them.
			if !pauseFor(done, fullPause) {
				break
			}
			c, err = p.dialNode(l, n, readOnly, st, primary)
		}
		return c, err
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, got, false, &backend.ConnectError{Addr: n.Address, Err: errPoolWaitEnded}
	}
	return c, got, reused && !dialed, err
}

// doneContext is a context ended by closing done (a session's life): Err is
// context.Canceled once it is closed. No deadline, no values. Safe from any goroutine.
type doneContext struct{ done <-chan struct{} }

func (doneContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c doneContext) Done() <-chan struct{}     { return c.done }
func (doneContext) Value(any) any               { return nil }
func (c doneContext) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// ready brings c, a connection taken from the pool for node n, to what the session needs:
//
//   - given back unreset (shared) carrying a prefix of the session's statements: made the
//     session's (Continue); Sync sends the rest before its use;
//   - given back unreset carrying anything else: reset (COM_RESET_CONNECTION) first, then as
//     below;
//   - reset: it carries the database its last session left, nothing of that session's
//     statements, no read-only guard and no GTID tracking (the reset ended them): the
//     session's state from its epoch's start, the guard due at the first Sync, the session's
//     database applied now (as a new connection logs in with it: a database the node refuses
//     is the node's error to the client, at once), the guard run and GTIDs tracked.
func (p *Proxy) ready(c *backend.Conn, shared bool, n *topology.Node, readOnly bool, st *backend.State, primary func(*backend.Conn)) error {
	if shared && c.Continues(st) {
		c.Continue(st)
		if st.DB != "" && c.Fingerprint().DB != st.DB {
			// As below: a login's database the node refuses is its error at once, not an
			// accepted login whose first statement fails.
			if err := c.Sync(st); err != nil {
				var se *backend.SyncError
				if errors.As(err, &se) {
					return se.Err
				}
				return &backend.ConnectError{Addr: n.Address, Err: err}
			}
		}
		if !readOnly && primary != nil {
			// The session learns whether its primary connection reports GTIDs (its reads at
			// consistency session rely on it); one that does already is not asked again.
			primary(c)
		}
		return nil
	}
	if shared {
		nc := c.NetConn()
		_ = nc.SetDeadline(time.Now().Add(resetTimeout))
		// Shared: pool_mode transaction, where connections track every variable (trackAll):
		// asked again in the reset's round trip.
		err := c.ResetTrackingAll()
		_ = nc.SetDeadline(time.Time{})
		if err != nil {
			return &backend.ConnectError{Addr: n.Address, Err: fmt.Errorf("resetting a pooled connection: %w", err)}
		}
		c.TracksGTIDs = false
	}
	// At rest (reset with its guard on its way back, or given back untouched): nothing to do
	// but the database. Else (dialed by the pool's top-up, reset just now): as reset.
	woke := !shared && c.Wake(st.Epoch)
	if !woke {
		c.Adopt(&backend.State{DB: c.Fingerprint().DB, Options: c.Fingerprint().Options, Epoch: st.Epoch})
		c.MarkReset(st.Epoch)
	}
	if st.DB != "" && c.Fingerprint().DB != st.DB {
		if err := c.Sync(&backend.State{DB: st.DB, Options: c.Fingerprint().Options, Epoch: st.Epoch}); err != nil {
			var se *backend.SyncError
			if errors.As(err, &se) {
				return se.Err
			}
			return &backend.ConnectError{Addr: n.Address, Err: err}
		}
	}
	if readOnly {
		if woke {
			return nil // its guard is in force
		}
		if err := c.Guard(); err != nil {
			return &backend.ConnectError{Addr: n.Address, Err: err}
		}
	} else if primary != nil {
		primary(c)
	}
	return nil
}

// fullRetries and fullPause: how often, and after what pause, a dial the node refused as full
// is tried again once the pool closed idle connections to it.
const (
	fullRetries = 3
	fullPause   = 20 * time.Millisecond
)

// nodeFull reports whether err is a node's refusal of a new connection for lack of room: 1040
// (max_connections) or 1203 (the user's max_user_connections).
func nodeFull(err error) bool {
	var se *mysql.SQLError
	return err != nil && errors.As(err, &se) && (se.Code == mysql.ErrConCount || se.Code == errTooManyUserConnections)
}

// errTooManyUserConnections is the server's ER_TOO_MANY_USER_CONNECTIONS.
const errTooManyUserConnections = 1203

// pauseFor waits d, or less when done is closed first (then it reports false).
func pauseFor(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		return true
	}
}

// recycle resets bc (COM_RESET_CONNECTION), which a session of login l released between two
// commands, and gives it back to the pool; a connection whose reset fails or leaves it in an
// unexpected state is closed. Bounded by resetTimeout. Called after the client's connection was
// closed: the client never waits for it. A read-only connection gets its guard back in the
// same round trip (backend.Conn.ResetSession), so the next session's acquire sends it nothing.
//
// The reset keeps the node's current database, which the next session compares its own with
// (and which decides whether a session without one may take the connection). When dbSeen, the
// session saw every change of it (the node reports each in its OKs: session_track_schema, which
// the session did not touch), so bc's fingerprint says it and the reset is the only round trip;
// otherwise SELECT DATABASE() goes out in the same write as the reset and the node says it.
func (p *Proxy) recycle(bc *backend.Conn, k pool.Key, v pool.Variant, lim pool.Limits, dbSeen bool) {
	nc := bc.NetConn()
	_ = nc.SetDeadline(time.Now().Add(resetTimeout))
	db, err := bc.ResetSession(!dbSeen)
	bc.TracksGTIDs = false // the list is the global one again (trackGTIDs knows whether it has last_gtid)
	if dbSeen {
		db = bc.Fingerprint().DB
	}
	if err == nil && bc.Status&mysql.StatusInTrans != 0 {
		err = errors.New("still in a transaction after the reset")
	}
	if err != nil {
		p.log.Debug("pool: reset failed; closing the connection", "node", k.Node, "user", k.User, "err", err)
		p.pool.Discard(bc, true)
		return
	}
	_ = nc.SetDeadline(time.Time{})
	bc.Adopt(&backend.State{DB: db})
	p.pool.Put(bc, v, lim)
}

// pooled reports whether the node connections of login l are pooled under ps: pool_mode
// session, and a user of the configured users list. An account read from the primary
// (accounts.from_primary) is the node's to vouch for at each login: a pooled connection would
// skip the node's own checks of it (an account locked, dropped or given a new password there
// since), so its sessions log in to the nodes every time.
func (p *Proxy) pooled(l *login, ps *PoolSettings) bool {
	if ps == nil || ps.Mode == PoolOff {
		return false
	}
	_, configured := p.users[l.creds.User]
	return configured
}

// releaseNodes lets go of a session's node connections as it ends (its client's connection is
// closed already): under pool_mode session, those ns may lend (nodeSet.releaseAll) and whose
// node still takes work are reset and pooled for the next session of login l; the others are
// closed. dbSeen: the session saw every change of its database (see recycle).
func (p *Proxy) releaseNodes(ns *nodeSet, l *login, ps *PoolSettings, dbSeen bool) {
	if !p.pooled(l, ps) {
		ns.releaseAll(nil)
		return
	}
	type lent struct {
		bc   *backend.Conn
		k    pool.Key
		v    pool.Variant
		used bool
	}
	var out []lent
	snap := p.topo.Snapshot()
	ns.releaseAll(func(c *nodeConn) bool {
		if c.idx >= len(snap.Nodes) {
			return false
		}
		n := snap.Nodes[c.idx]
		if !poolable(snap, c.idx, n) || n.Name != c.name || n.Address != c.Addr {
			return false
		}
		out = append(out, lent{c.Conn, p.poolKey(l, n), p.poolVariant(l, n, c.ReadOnly()), c.used})
		return true
	})
	lim := ps.limitsOf(l.creds.User)
	for _, c := range out {
		if !c.used && c.bc.Rest() {
			// The session sent it nothing (a home it never read from, say: its reads went to
			// replicas) and took it clean: nothing to reset (not counted as a reset).
			p.pool.Return(c.bc, c.v, lim)
			continue
		}
		p.recycle(c.bc, c.k, c.v, lim, dbSeen)
	}
}

// poolable reports whether node i of snap may take pooled connections: still the node the
// connection was opened to, and one that takes new work (topology.Snapshot.Routable).
func poolable(snap *topology.Snapshot, i int, n *topology.Node) bool {
	return i < len(snap.Nodes) && snap.Nodes[i] == n && snap.Routable(i)
}

// RunPool closes the pool's idle connections past their idle timeout (beyond min_idle) or
// lifetime, or whose node left, is down or draining, and then tops each (node, user) up to its
// min_idle (minidle.go), every second until ctx ends; then it closes the pool.
func (p *Proxy) RunPool(ctx context.Context) {
	p.pool.Run(ctx, time.Second, func(k pool.Key) bool {
		return p.routableNode(k.Node) != nil
	}, func() {
		p.pool.Fill(p.fillPlan, func(k pool.Key, v pool.Variant) (*backend.Conn, error) { return p.fillDial(ctx, k, v) })
	})
}

// PoolStat is one (node, user)'s pool numbers.
type PoolStat = pool.Stat

// PoolStats returns the pool's numbers per node and user.
func (p *Proxy) PoolStats() []PoolStat { return p.pool.Stats() }
