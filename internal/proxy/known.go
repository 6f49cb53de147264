package proxy

import (
	"sync/atomic"

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
// The position is immutable and published by an atomic pointer: reads load it without a lock;
// writers merge and compare-and-swap. The proxy owns one; any session goroutine may call it.
//
// It is kept only once an endpoint reads at latest (use): until then noteCommit returns at once,
// so that the write path of a proxy that does not use the level pays nothing (a commit that
// moves the position allocates the merged one). Once on it stays on: a level switched off and
// on again must not find a position that missed the commits in between.
type knownCommits struct {
	cur atomic.Pointer[gtid.Position]
	on  atomic.Bool
}

// use starts keeping the position when level is route.Latest (an endpoint added or changed to
// read at it). Any goroutine.
func (k *knownCommits) use(level route.Consistency) {
	if level == route.Latest && !k.on.Load() {
		k.on.Store(true)
	}
}

// noteCommit merges g, the GTID of one commit as a primary connection's OK reported it
// (MariaDB's last_gtid, MySQL's OWN_GTID), into the known position. A GTID already contained
// costs no allocation (MariaDB); one that moves the position allocates the merged one.
func (k *knownCommits) noteCommit(g []byte) {
	if len(g) == 0 || !k.on.Load() {
		return
	}
	flavor := gtid.MariaDB
	for _, c := range g {
		if c == ':' {
			flavor = gtid.MySQL // uuid:n; MariaDB's domain-server-seq has no colon
			break
		}
	}
	var q gtid.Position
	for {
		cur := k.cur.Load()
		if cur != nil && cur.ContainsGTID(g) {
			return
		}
		if q.IsZero() {
			var err error
			if q, err = gtid.Parse(flavor, string(g)); err != nil {
				return // not a GTID: nothing to know
			}
		}
		next := q
		if cur != nil {
			if cur.Contains(q) {
				return
			}
			next = cur.Merge(q)
		}
		if k.cur.CompareAndSwap(cur, &next) {
			return
		}
	}
}

// target returns the position a latest-level read must see: the known position with primary
// (the primary's position as its stream or the monitor reported it; zero when unknown) merged
// in. When primary has something the known position lacks, the merge is published, so that the
// reads after this one find it without merging again. The zero Position: nothing is known (no
// commit seen, the primary's position not yet reported).
func (k *knownCommits) target(primary gtid.Position) gtid.Position {
	for {
		cur := k.cur.Load()
		switch {
		case cur == nil && primary.IsZero():
			return gtid.Position{}
		case cur == nil:
			first := primary // its own variable: primary itself must not move to the heap
			if k.cur.CompareAndSwap(nil, &first) {
				return first
			}
			continue
		case primary.IsZero() || cur.Contains(primary):
			return *cur
		}
		next := cur.Merge(primary)
		if next.String() == cur.String() {
			return *cur // nothing to merge (another flavour): nothing to publish
		}
		if k.cur.CompareAndSwap(cur, &next) {
			return next
		}
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
