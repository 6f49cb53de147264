package monitor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// Conn is a monitor connection to a node: one query at a time, from one goroutine.
type Conn interface {
	Query(q string) (*backend.Rows, error)
	Close() error
}

// DialFunc opens a monitor connection to n (as the monitor account), bounded by ctx.
type DialFunc func(ctx context.Context, n *topology.Node) (Conn, error)

// Publisher is where the monitor's rounds go: the topology. Observe is called from the
// monitor's goroutine once per round and must not block.
type Publisher interface {
	Snapshot() *topology.Snapshot
	Observe(states []*topology.NodeState)
}

// Options configure a Monitor.
type Options struct {
	Interval time.Duration // between checks of a node (0: 1 s)
	// DownAfter is how many checks in a row must fail (time out, break) before a node is down;
	// a node that refuses connections is down at once (0: 3).
	DownAfter int
	// Timeout bounds one check (0: the interval, at least 1 s).
	Timeout time.Duration
	Dial    DialFunc
	Logger  *slog.Logger
	// History is how far back the primary's positions are kept to measure lag (0: 10 min):
	// a replica further behind shows at least that much.
	History time.Duration
	// Positions, when set, is told each node's applied position after every round (one of its
	// sources; the binlog streams are faster).
	Positions *topology.Positions
}

// Monitor checks the nodes and publishes what it sees.
type Monitor struct {
	opts Options
	log  *slog.Logger
	pub  Publisher

	mu sync.Mutex // guards latest
	// latest is each slot's last check, with the node it checked (a slot may change hands
	// as nodes are removed and added).
	latest []checked

	hist history  // the primary's positions; the round goroutine's own
	v    verdicts // what the rounds concluded of the nodes; the round goroutine's own
}

// checked is the state a watcher last saw of its node.
type checked struct {
	n  *topology.Node
	st *topology.NodeState
}

// New returns a monitor of pub's nodes.
func New(pub Publisher, opts Options) *Monitor {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.DownAfter <= 0 {
		opts.DownAfter = 3
	}
	if opts.Timeout <= 0 {
		opts.Timeout = max(opts.Interval, time.Second)
	}
	if opts.History <= 0 {
		opts.History = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Monitor{opts: opts, log: opts.Logger, pub: pub}
}

// Run checks every node until ctx ends, following the nodes as they are added and removed.
func (m *Monitor) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { topology.Follow(ctx, m.pub.Snapshot, m.watch) })
	wg.Go(func() { m.rounds(ctx) })
	wg.Wait()
}

// watch checks node i every interval, keeping one connection open between checks.
func (m *Monitor) watch(ctx context.Context, i int, n *topology.Node) {
	var c Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var prev *topology.NodeState
	tick := time.NewTimer(m.opts.Interval)
	defer tick.Stop()
	for {
		start := time.Now()
		st := m.check(ctx, n, &c, prev)
		prev = st
		m.mu.Lock()
		if ctx.Err() == nil { // else the node is gone: its slot is not its own any more
			if i >= len(m.latest) {
				m.latest = append(m.latest, make([]checked, i+1-len(m.latest))...)
			}
			m.latest[i] = checked{n: n, st: st}
		}
		m.mu.Unlock()
		if !m.wait(ctx, tick, start) {
			return
		}
	}
}

// wait returns once the pace has passed since start (false: ctx ended first). A switchover
// that starts meanwhile shortens the wait at once.
func (m *Monitor) wait(ctx context.Context, t *time.Timer, start time.Time) bool {
	for {
		snap := m.pub.Snapshot()
		d := m.paceOf(snap) - time.Since(start)
		if d <= 0 {
			return ctx.Err() == nil
		}
		t.Reset(d)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-snap.Changed():
			t.Stop() // and again, under the new snapshot
		}
	}
}

// switchingInterval is how often the nodes are checked while a switchover is under way (no node
// takes writes): writes wait for the monitor to see the new primary.
const switchingInterval = 100 * time.Millisecond

// paceOf is the time between two checks (and rounds) under snap: the interval, shorter during a
// switchover.
func (m *Monitor) paceOf(snap *topology.Snapshot) time.Duration {
	if snap.Switching {
		return min(m.opts.Interval, switchingInterval)
	}
	return m.opts.Interval
}

// check runs one check of n over *c (opened, or reopened after a failure), and returns the
// node's new state. prev is the state the last check returned.
func (m *Monitor) check(ctx context.Context, n *topology.Node, c *Conn, prev *topology.NodeState) (st *topology.NodeState) {
	st = &topology.NodeState{}
	began := time.Now()
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("node check panicked", "node", n.Name, "panic", r)
			st = m.failed(n, prev, fmt.Errorf("check panicked: %v", r), false)
		}
		st.Checked, st.Node = time.Now(), n
		if st.Failures == 0 && st.Health == topology.Healthy {
			st.Began = began
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	if *c == nil {
		conn, err := m.opts.Dial(ctx, n)
		if err != nil {
			return m.failed(n, prev, err, refused(err))
		}
		*c = conn
		if prev != nil {
			m.forget(n) // a connection again after one failed: the node may have restarted
		}
	}
	// A check that outlives its timeout is ended by closing its connection: the one it
	// uses then, captured (the closure runs on a goroutine of its own, and *c may be nil by
	// then: read there, it raced with the redial below and crashed the process).
	cur := *c
	stop := context.AfterFunc(ctx, func() { cur.Close() })
	defer func() { stop() }()
	start := time.Now()
	ver, err := (*c).Query("SELECT @@version")
	var se *mysql.SQLError
	if err != nil && !errors.As(err, &se) && prev != nil && prev.Failures == 0 {
		// The connection kept from the last check broke (the node restarted, or died): the
		// check is whether the node takes a new one, so that one that refuses is down now.
		(*c).Close()
		*c = nil
		conn, derr := m.opts.Dial(ctx, n)
		if derr != nil {
			return m.failed(n, prev, derr, refused(derr))
		}
		*c = conn
		m.forget(n)
		// The timeout now ends the new connection (the old one is closed already; its
		// AfterFunc, if it ran, closed it again, which does nothing).
		stop()
		stop = context.AfterFunc(ctx, func() { conn.Close() })
		start = time.Now()
		ver, err = (*c).Query("SELECT @@version")
	}
	if err == nil && (len(ver.Values) != 1 || len(ver.Values[0]) != 1) {
		err = errors.New("SELECT @@version: no row")
	}
	if err != nil {
		(*c).Close()
		*c = nil
		return m.failed(n, prev, err, false)
	}
	st.RTT = time.Since(start)
	st.Version = ver.Values[0][0].S
	fl := gtid.FlavorOf(st.Version)
	if err := m.read(*c, fl, st); err != nil {
		if !errors.As(err, &se) {
			(*c).Close()
			*c = nil
		}
		return m.failed(n, prev, err, false)
	}
	st.Health = topology.Healthy
	return st
}

// checkQuery returns one row for the monitor's check: version, read-only (MySQL: read_only or
// super_read_only), server id, binlog position, applied position.
func checkQuery(f gtid.Flavor) string {
	if f == gtid.MariaDB {
		return "SELECT @@version, @@global.read_only, @@server_id, @@global.gtid_binlog_pos, @@global.gtid_current_pos"
	}
	return "SELECT @@version, @@global.read_only OR @@global.super_read_only, @@server_id, @@global.gtid_executed, @@global.gtid_executed"
}

// threadsQuery returns the rows Threads_connected and Threads_running (Variable_name, Value).
const threadsQuery = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_connected', 'Threads_running')"

// read fills st from the node's answers to the check queries.
func (m *Monitor) read(c Conn, fl gtid.Flavor, st *topology.NodeState) error {
	r, err := c.Query(checkQuery(fl))
	if err != nil {
		return err
	}
	if len(r.Values) != 1 || len(r.Values[0]) < 5 {
		return errors.New("check query: no row")
	}
	row := r.Values[0]
	st.ReadOnly = row[1].S == "1"
	id, _ := strconv.ParseUint(row[2].S, 10, 32)
	st.ServerID = uint32(id)
	st.BinlogPos, st.Applied = row[3].S, row[4].S
	if r, err = c.Query(gtid.ReplicaStatusQuery(fl)); err != nil {
		return err
	}
	if len(r.Values) > 0 {
		row := r.Map(0)
		rs := topology.ParseReplicaStatus(func(name string) (string, bool) {
			v, ok := row[name]
			return v, ok
		})
		st.Replica = &rs
	}
	if r, err = c.Query(threadsQuery); err != nil {
		return err
	}
	for i := range r.Values {
		if len(r.Values[i]) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(r.Values[i][1].S, 10, 64)
		switch r.Values[i][0].S {
		case "Threads_connected":
			st.ThreadsConnected = v
		case "Threads_running":
			st.ThreadsRunning = v
		}
	}
	return nil
}

// failed is the state of node n after a failed check: a node that refused the connection is
// down at once, one that answered "too many connections" is full, one that refused the
// monitor's login is auth_failed (not down: it answered), any other failure counts toward
// DownAfter.
func (m *Monitor) failed(n *topology.Node, prev *topology.NodeState, err error, refusedConn bool) *topology.NodeState {
	// Until it counts as down (or full), a node keeps the health it had.
	st := &topology.NodeState{LastErr: err.Error(), Failures: 1}
	if prev != nil {
		st.Failures = prev.Failures + 1
		st.Health = prev.Health
		// What the node said last stays visible while it fails.
		st.Version, st.ReadOnly, st.ServerID = prev.Version, prev.ReadOnly, prev.ServerID
		st.BinlogPos, st.Applied, st.Replica = prev.BinlogPos, prev.Applied, prev.Replica
	}
	var se *mysql.SQLError
	switch {
	case errors.As(err, &se) && se.Code == mysql.ErrConCount:
		st.Health = topology.Full
	case errors.As(err, &se) && se.Code == mysql.ErrAccessDenied:
		// The node answered and refused the monitor's credentials: it is not known down,
		// and says nothing new of itself. Routing goes on with what was last seen of it.
		st.AuthFailed = se.Message
		if st.Health == topology.Down {
			st.Health = topology.Unknown // it answers again
		}
		if prev == nil || prev.AuthFailed == "" {
			m.log.Error("the monitor cannot log in to the node: check monitor.user and monitor.password and the account's grants there; routing on its last known role",
				"node", n.Name, "err", err)
		}
	case refusedConn || st.Failures >= m.opts.DownAfter:
		st.Health = topology.Down
	}
	return st
}

// refused reports whether err is a refused connection (nothing listens: the node is down).
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// rounds gathers the nodes' latest states every interval, measures lag, and publishes.
func (m *Monitor) rounds(ctx context.Context) {
	tick := time.NewTimer(m.opts.Interval)
	defer tick.Stop()
	for start := time.Now(); m.wait(ctx, tick, start); {
		start = time.Now()
		m.round(start)
	}
}

// round publishes the latest states, each with its lag.
func (m *Monitor) round(now time.Time) {
	snap := m.pub.Snapshot()
	states := make([]*topology.NodeState, len(snap.Nodes))
	m.mu.Lock()
	for i, c := range m.latest {
		if i < len(states) && c.n == snap.Nodes[i] && !snap.IsRemoved(i) {
			states[i] = c.st
		}
	}
	m.mu.Unlock()
	// Lag is measured against the primary this round's states show (after a switchover, the
	// new one: its positions continue the old one's).
	p, _, _ := topology.ChoosePrimary(snap, states)
	var primaryPos gtid.Position
	fl := gtid.MariaDB
	if ps := states[p]; ps != nil && ps.Version != "" {
		fl = gtid.FlavorOf(ps.Version)
		if pos, err := gtid.Parse(fl, ps.BinlogPos); err == nil {
			primaryPos = pos
			m.hist.add(now, pos, m.opts.History)
		}
	}
	if m.v.primaryRead(snap, p, states[p], fl, m.log) {
		// The primary's position went backwards: what was measured against the old one, and
		// every node's known position, say nothing any more.
		m.hist = history{}
		if !primaryPos.IsZero() {
			m.hist.add(now, primaryPos, m.opts.History)
		}
		if m.opts.Positions != nil {
			for i := range snap.Nodes {
				m.opts.Positions.Reset(i)
			}
		}
	}
	out := make([]*topology.NodeState, len(states))
	for i, st := range states {
		if st == nil {
			continue
		}
		c := *st // the published state is a copy: the watcher's own stays unchanged
		c.Lag, c.LagKnown = 0, false
		applied, err := gtid.Parse(fl, c.Applied)
		if i != p {
			// What it executed: @@gtid_current_pos takes a domain's GTID from the binlog only
			// when the node's own server_id wrote it, so a write made under another server_id
			// (SUPER can set it) shows in @@gtid_binlog_pos alone.
			executed := applied
			if binlog, berr := gtid.Parse(fl, c.BinlogPos); berr == nil && err == nil {
				executed = applied.Merge(binlog)
			}
			m.v.judge(&c, executed, err == nil, m.log)
		}
		if err == nil && c.Health == topology.Healthy && m.opts.Positions != nil && !c.Faulty() && !c.Unsynced {
			m.opts.Positions.AdvanceNode(c.Node, applied)
		}
		if err == nil && i != p && m.opts.Positions != nil {
			// A replica that reports less than a wait found there has gone back.
			m.opts.Positions.CheckNode(c.Node, applied, c.Began)
		}
		if (i == p || i == snap.Primary) && m.opts.Positions != nil {
			// What sluice knows the primary wrote: its last check, and what its binlog stream
			// (or an earlier check) reported since. A new primary must hold all of it
			// (topology.ChoosePrimary, against the primary in force), even when the old one
			// died before a check saw its last acknowledged writes.
			if known, _ := m.opts.Positions.At(i); !known.IsZero() {
				if binlog, berr := gtid.Parse(fl, c.BinlogPos); berr == nil && !binlog.Contains(known) {
					c.BinlogPos = binlog.Merge(known).String()
				}
			}
		}
		switch {
		case i == p:
			c.LagKnown = true
		case c.AuthFailed != "":
			// What it has applied now is not known (the monitor cannot log in): unknown.
		case c.Broken != "" || c.Unsynced:
			// Its position says nothing of how far behind it is: unknown, not 0.
		case !primaryPos.IsZero() && err == nil:
			c.Lag, c.LagKnown = m.hist.lag(now, applied), true
		}
		out[i] = &c
	}
	m.v.prune(snap)
	m.pub.Observe(out)
}

// forget drops what node n was known to have applied and made visible (topology.Positions):
// the monitor's connection to it broke, so it may have restarted, perhaps on older data (a
// restore), and a read must not skip its consistency wait on what was confirmed before.
func (m *Monitor) forget(n *topology.Node) {
	if m.opts.Positions != nil {
		m.opts.Positions.ForgetNode(n)
	}
}
