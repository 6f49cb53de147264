package proxy

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// knownCommits is the latest position sluice knows the primary committed: the GTID of every
// commit acknowledged to any of its sessions (each OK from a primary connection that says one,
// noteCommit), merged per replication domain (MariaDB: per domain the highest sequence number;
// MySQL: the union of the sets), and the primary's position as its binlog stream (or the
// monitor) last reported it, folded in by the reads that find it ahead (target). It is the
// latest level's target: a read waits for it on a replica, with no statement to the primary.
//
// A write acknowledged through sluice is in it before the client gets the OK (the relay hands
// the OK to the session before copying it: relay.Observer), so a read that arrives after the
// acknowledgement — on any connection — finds it. A write that bypassed sluice, or whose OK
// said no GTID (a primary connection that does not track last_gtid), is in it once the
// primary's stream delivered it.
//
// Writers (noteCommit, and target folding the primary's position in) take mu and move the
// per-domain table, which costs no allocation for a domain seen before (MariaDB; MySQL's sets
// are merged, which allocates), and count the move in version. Readers load the position built
// for the current version, lock-free; the first reader after a move builds it (under mu, once
// per move, not per read). The proxy owns one; any session goroutine may call it.
//
// It is kept only once an endpoint reads at latest (use): until then noteCommit returns at once,
// so that the write path of a proxy that does not use the level pays nothing. Once on it stays
// on: a level switched off and on again must not find a position that missed the commits in
// between.
type knownCommits struct {
	on atomic.Bool
	// version counts the moves of the known position (under mu); built is the position as of
	// one version (nil: none built yet).
	version atomic.Uint64
	built   atomic.Pointer[builtPosition]

	mu sync.Mutex
	// known: a commit or the primary's position was seen (before, nothing is known: the zero
	// Position). domains: MariaDB, the last GTID of each domain seen; mysql: MySQL, the union
	// of what was seen.
	known   bool
	domains []gtid.GTID
	mysql   gtid.Position
	scratch []gtid.GTID // target's, to fold the primary's position in

	// shared: other sluice nodes are told of this one's commits (Proxy.CommitsMoved): a
	// commit that moves own signals moved (never blocking). own holds only the commits
	// acknowledged by this sluice's own sessions since then: what is streamed to the others.
	// What they stream back is folded into the known position, never into own, so a position
	// one node learned is not passed on (a wrong one stops at the node that received it).
	shared atomic.Bool
	moved  chan struct{}
	own    atomic.Pointer[knownCommits]
}

// builtPosition is the known position as of version, immutable once published.
type builtPosition struct {
	version uint64
	pos     gtid.Position
}

// use starts keeping the position when level is route.Latest (an endpoint added or changed to
// read at it). Any goroutine.
func (k *knownCommits) use(level route.Consistency) {
	if level == route.Latest && !k.on.Load() {
		k.on.Store(true)
	}
}

// noteCommit merges g, the GTID of one commit as a primary connection's OK reported it
// (MariaDB's last_gtid, MySQL's OWN_GTID), into the known position (and into own, once this
// sluice shares its commits). A MariaDB GTID costs no allocation; one already contained in the
// position built last takes no lock either.
func (k *knownCommits) noteCommit(g []byte) {
	if len(g) == 0 || !k.on.Load() {
		return
	}
	if o := k.own.Load(); o != nil && o.add(g) {
		k.signal()
	}
	k.add(g)
}

// add merges g into the position, reporting whether it moved.
func (k *knownCommits) add(g []byte) bool {
	if one, ok := gtid.ParseGTID(g); ok {
		if b := k.built.Load(); b != nil && b.pos.ContainsGTID(g) {
			return false
		}
		k.mu.Lock()
		changed := k.addLocked(one) || !k.known
		if changed {
			k.known = true
			k.version.Add(1)
		}
		k.mu.Unlock()
		return changed
	}
	if bytes.IndexByte(g, ':') < 0 {
		return false // neither a MariaDB GTID nor a MySQL one (uuid:n): nothing to know
	}
	q, err := gtid.Parse(gtid.MySQL, string(g))
	if err != nil {
		return false
	}
	k.mu.Lock()
	changed := !k.mysql.Contains(q) || !k.known
	if changed {
		k.mysql = k.mysql.Merge(q)
		k.known = true
		k.version.Add(1)
	}
	k.mu.Unlock()
	return changed
}

// signal tells the goroutine that shares this node's commits that the position moved.
func (k *knownCommits) signal() {
	if k.shared.Load() {
		select {
		case k.moved <- struct{}{}:
		default: // a signal is pending already: the sharer reads the newest position
		}
	}
}

// addLocked records MariaDB commit g, reporting whether it moved its domain. With k.mu held.
func (k *knownCommits) addLocked(g gtid.GTID) bool {
	for i := range k.domains {
		if k.domains[i].Domain == g.Domain {
			if k.domains[i].Seq >= g.Seq {
				return false
			}
			k.domains[i] = g
			return true
		}
	}
	k.domains = append(k.domains, g) // a domain not seen before: rare
	return true
}

// position returns the known position as of now (the zero Position when nothing is known),
// building it when it moved since it was last built.
func (k *knownCommits) position() gtid.Position {
	v := k.version.Load()
	if b := k.built.Load(); b != nil && b.version == v {
		return b.pos
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	v = k.version.Load() // stable under mu
	if b := k.built.Load(); b != nil && b.version == v {
		return b.pos
	}
	var pos gtid.Position
	switch {
	case !k.known:
	case len(k.domains) > 0 || k.mysql.IsZero():
		pos = gtid.MariaDBPosition(k.domains)
	default:
		pos = k.mysql
	}
	k.built.Store(&builtPosition{version: v, pos: pos})
	return pos
}

// target returns the position a latest-level read must see: the known position with primary
// (the primary's position as its stream or the monitor reported it; zero when unknown) folded
// in. When primary has something the known position lacks, it is folded into the table, so
// that the reads after this one find it without folding again. The zero Position: nothing is
// known (no commit seen, the primary's position not yet reported).
func (k *knownCommits) target(primary gtid.Position) gtid.Position {
	pos := k.position()
	if primary.IsZero() || (!pos.IsZero() && pos.Contains(primary)) {
		return pos
	}
	k.fold(primary)
	return k.position()
}

// fold merges pos (the primary's reported position, or commits another sluice node
// acknowledged) into the known position.
func (k *knownCommits) fold(pos gtid.Position) {
	if pos.IsZero() {
		return
	}
	k.mu.Lock()
	moved := !k.known
	k.known = true
	if pos.Flavor() == gtid.MySQL {
		if !k.mysql.Contains(pos) {
			k.mysql, moved = k.mysql.Merge(pos), true
		}
	} else {
		k.scratch = pos.AppendGTIDs(k.scratch[:0])
		for _, g := range k.scratch {
			if k.addLocked(g) {
				moved = true
			}
		}
	}
	if moved {
		k.version.Add(1)
	}
	k.mu.Unlock()
}

// CommitsMoved starts sharing this sluice's acknowledged commits with the other nodes: the
// channel gets a signal (coalesced) each time a commit moves the known position; read it
// with KnownCommits. Called once, by the goroutine that shares them.
func (p *Proxy) CommitsMoved() <-chan struct{} {
	if p.known.own.Load() == nil {
		own := &knownCommits{}
		own.on.Store(true)
		p.known.own.Store(own)
	}
	p.known.shared.Store(true)
	return p.known.moved
}

// KnownVersion counts the moves of this sluice's own commits once it shares them
// (CommitsMoved): OwnCommits read after it returned v holds every commit noted before.
func (p *Proxy) KnownVersion() uint64 {
	if o := p.known.own.Load(); o != nil {
		return o.version.Load()
	}
	return 0
}

// SetPeerGate makes a write through an endpoint at the latest level wait, before its OK
// reaches the client, for gate(v, timeout): v the known position's version once the write's
// commit is in it, timeout the endpoint's consistency_timeout. The app's gate returns once
// every other sluice node it streams commits to has acknowledged a position of version v or
// later (or the timeout passed), so that a read the client sends to another node after the OK
// finds the write.
func (p *Proxy) SetPeerGate(gate func(v uint64, timeout time.Duration)) { p.peerGate.Store(&gate) }

// OwnCommits is the position of the commits this sluice's own sessions acknowledged since it
// began sharing them (CommitsMoved): what it streams to the other nodes; zero when none.
func (p *Proxy) OwnCommits() gtid.Position {
	if o := p.known.own.Load(); o != nil {
		return o.position()
	}
	return gtid.Position{}
}

// LearnCommits folds commits another sluice node acknowledged into the known position: the
// latest level's reads here then wait for them too.
func (p *Proxy) LearnCommits(pos gtid.Position) {
	if p.known.on.Load() {
		p.known.fold(pos)
	}
}

// latestPosition is the target of a latest-level read that arrives now (knownCommits.target),
// with what the known positions say snap's primary has.
func (p *Proxy) latestPosition(snap *topology.Snapshot) gtid.Position {
	var primary gtid.Position
	if positions := p.opts.Positions; positions != nil && snap.Primary >= 0 {
		primary, _ = positions.At(snap.Primary)
	}
	return p.known.target(primary)
}
