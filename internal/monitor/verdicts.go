package monitor

import (
	"log/slog"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/topology"
)

// The monitor's verdicts on the replicas, the third line of defence after the classifier and the
// read-only guard of replica connections: whatever reached a replica, the nodes' own positions
// and replication status say so.
//
//   - errant: the replica holds transactions the primary does not. Its executed GTIDs
//     (@@gtid_current_pos and @@gtid_binlog_pos, which include writes made on it directly,
//     the latter also those made under another server_id; MySQL @@gtid_executed) are not
//     contained in the primary's. Not "a GTID of the replica's own server id": SUPER
//     can set server_id, and an old primary legitimately holds its own. A replica is compared
//     only with a reading of the primary's position that began after the replica's own check
//     ended: everything the replica had then came from the primary before, so a replica seen
//     ahead of an older reading (the race between the two checks) is never taken for errant,
//     and one behind (lagging) is not errant either. The verdict stays until the primary is
//     seen holding what the replica had (the errant GTIDs were injected there), or the replica
//     no longer holds it (rebuilt).
//   - broken: its replication stopped with an error (ReplicaStatus.Failure).
//   - unsynced: the primary's position went backwards (RESET MASTER: a domain's sequence number
//     went down or a domain vanished; MySQL: the executed set no longer contains what it did).
//     MariaDB orders GTIDs within a domain by sequence number alone, so from then on a
//     replica's position proves nothing: every replica is unsynced until a check shows it
//     holding the primary's new position and nothing the primary does not.
//
// Each verdict takes the node out of rotation (topology.Snapshot.TakesNoReads) and is logged
// once when it is reached and once when it ends. A replica running with read_only=OFF is
// warned about the same way (it would take a write that reached it).

// verdicts is what the rounds concluded; the round goroutine's own.
type verdicts struct {
	primary *topology.Node // whose readings reads and last are
	// reads are the primary's recent readings (oldest first), each with when its check began.
	reads []reading
	last  gtid.Position // the primary's last reading: a new one must contain it
	// resetAt is the primary's position when it went backwards (zero: it did not): an
	// unsynced replica must hold it (and nothing more than the primary) to be synced again.
	resetAt gtid.Position
	nodes   map[*topology.Node]*verdict
}

// reading is one check's reading of the primary's position.
type reading struct {
	began time.Time
	pos   gtid.Position
}

// maxReadings bounds the primary's readings kept: a replica's check is compared with the first
// reading that began after it ended, which comes within a round or two.
const maxReadings = 16

// verdict is what the rounds concluded of one node.
type verdict struct {
	errant    string        // "" or what it holds that the primary does not
	errantPos gtid.Position // the node's position when found errant
	broken    string
	unsynced  bool
	writable  bool // seen with read_only=OFF (warned)
	// pending are the node's checks not compared with the primary yet (oldest first).
	pending []pendingCheck
}

type pendingCheck struct {
	checked time.Time
	applied gtid.Position
}

// primaryRead takes the primary's (node p) latest state as a reading of its position, and
// reports whether that position went backwards.
func (v *verdicts) primaryRead(snap *topology.Snapshot, p int, st *topology.NodeState, fl gtid.Flavor, log *slog.Logger) bool {
	if p < 0 || p >= len(snap.Nodes) {
		return false
	}
	if n := snap.Nodes[p]; v.primary != n {
		// A new primary (a switchover): its readings start afresh.
		v.primary, v.reads, v.last = n, nil, gtid.Position{}
	}
	if st == nil || st.Began.IsZero() || (len(v.reads) > 0 && !st.Began.After(v.reads[len(v.reads)-1].began)) {
		return false // no new good reading
	}
	binlog, err1 := gtid.Parse(fl, st.BinlogPos)
	applied, err2 := gtid.Parse(fl, st.Applied)
	if err1 != nil || err2 != nil {
		return false
	}
	// What the primary holds: its binlog, and what it applied as a replica before it was the
	// primary (a server without log_slave_updates has that in gtid_current_pos only).
	pos := binlog.Merge(applied)
	went := !v.last.IsZero() && !binlog.Contains(v.last)
	if went {
		log.Error("the primary's GTID position went backwards (RESET MASTER?): every replica's position is unknown until it is seen caught up with the new one; reads that need a consistency level go to the primary",
			"node", snap.Nodes[p].Name, "was", v.last.String(), "now", binlog.String())
		v.reads, v.resetAt = nil, binlog
		for n, nv := range v.nodes {
			if n != snap.Nodes[p] {
				nv.unsynced, nv.pending = true, nil
			}
		}
		for i, n := range snap.Nodes {
			if i != p && !snap.IsRemoved(i) {
				v.of(n).unsynced = true
			}
		}
	}
	v.last = binlog
	v.reads = append(v.reads, reading{began: st.Began, pos: pos})
	if len(v.reads) > maxReadings {
		v.reads = v.reads[len(v.reads)-maxReadings:]
	}
	return went
}

// of returns node n's verdict, made on first use.
func (v *verdicts) of(n *topology.Node) *verdict {
	if v.nodes == nil {
		v.nodes = map[*topology.Node]*verdict{}
	}
	nv := v.nodes[n]
	if nv == nil {
		nv = &verdict{}
		v.nodes[n] = nv
	}
	return nv
}

// judge sets the verdicts on st, the published copy of a replica's state whose applied position
// is applied (ok: it could be read), and logs what changed.
func (v *verdicts) judge(st *topology.NodeState, applied gtid.Position, ok bool, log *slog.Logger) {
	if st.Node == nil {
		return
	}
	nv := v.of(st.Node)
	name := st.Node.Name
	good := st.Health == topology.Healthy && st.Failures == 0 && !st.Began.IsZero()
	if good {
		if broken := st.Replica.Failure(); broken != nv.broken {
			if broken != "" {
				log.Error("replication stopped with an error on a replica: it takes no reads until it replicates again", "node", name, "err", broken)
			} else {
				log.Info("replication runs again on the replica", "node", name)
			}
			nv.broken = broken
		}
		if writable := !st.ReadOnly; writable != nv.writable {
			if writable {
				log.Warn("a replica runs with read_only=OFF: a write that reaches it forks its data and stops its replication (set read_only=ON)", "node", name)
			} else {
				log.Info("the replica is read-only again", "node", name)
			}
			nv.writable = writable
		}
		if ok && (len(nv.pending) == 0 || st.Checked.After(nv.pending[len(nv.pending)-1].checked)) {
			nv.pending = append(nv.pending, pendingCheck{checked: st.Checked, applied: applied})
			if len(nv.pending) > maxReadings {
				nv.pending = nv.pending[len(nv.pending)-maxReadings:]
			}
		}
		v.compare(nv, name, log)
	}
	st.Errant, st.Broken, st.Unsynced = nv.errant, nv.broken, nv.unsynced
}

// compare judges the newest of nv's pending checks that a reading of the primary began after,
// and forgets it and the older ones.
func (v *verdicts) compare(nv *verdict, name string, log *slog.Logger) {
	for k := len(nv.pending) - 1; k >= 0; k-- {
		c := nv.pending[k]
		var primary gtid.Position
		for _, r := range v.reads {
			if r.began.After(c.checked) {
				primary = r.pos
				break
			}
		}
		if primary.IsZero() {
			continue
		}
		nv.pending = append(nv.pending[:0], nv.pending[k+1:]...)
		ahead := !primary.Contains(c.applied)
		switch {
		case ahead && nv.errant == "":
			nv.errant, nv.errantPos = "holds "+c.applied.String()+", beyond the primary's "+primary.String(), c.applied
			log.Error("errant transactions on a replica: it holds GTIDs the primary does not (written on it directly); it takes no reads until the primary holds them or the replica is rebuilt",
				"node", name, "replica", c.applied.String(), "primary", primary.String())
		case !ahead && nv.errant != "" && (primary.Contains(nv.errantPos) || !c.applied.Contains(nv.errantPos)):
			log.Info("the replica holds nothing the primary does not any more", "node", name, "replica", c.applied.String())
			nv.errant, nv.errantPos = "", gtid.Position{}
		}
		if nv.unsynced && !ahead && nv.broken == "" && c.applied.Contains(v.resetAt) {
			log.Info("the replica is caught up with the primary's new position", "node", name, "replica", c.applied.String())
			nv.unsynced = false
		}
		return
	}
}

// prune forgets the verdicts of nodes no longer in snap.
func (v *verdicts) prune(snap *topology.Snapshot) {
	for n := range v.nodes {
		i := n.Index
		if i < 0 || i >= len(snap.Nodes) || snap.Nodes[i] != n || snap.IsRemoved(i) {
			delete(v.nodes, n)
		}
	}
}
