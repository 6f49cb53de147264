package topology

import "time"

// Health is what the last checks said of a node.
type Health uint8

const (
	Unknown Health = iota // not checked yet
	Healthy               // answered the last check
	Down                  // refused a connection, or failed DownAfter checks in a row
	Full                  // answered 1040 (too many connections): up for the connections it has
)

func (h Health) String() string {
	switch h {
	case Healthy:
		return "up"
	case Down:
		return "down"
	case Full:
		return "full"
	}
	return "unknown"
}

// NodeState is what the monitor last saw of a node. Immutable once published.
type NodeState struct {
	// Node is the node checked (nil: the slot's node, whichever it is): a state of a node
	// since removed does not describe the node that took its slot.
	Node    *Node
	Checked time.Time // when the last check ended
	// Began is when the last check began: everything it read, it read after then (zero after
	// a failed check, whose positions are the last good check's).
	Began  time.Time
	Health Health
	// Failures counts the checks failed in a row (0 after a success).
	Failures int
	LastErr  string // the last check's error, "" after a success
	// AuthFailed is the server's message when it refused the monitor's login (error 1045: the
	// monitor's user or password is wrong there); "" otherwise. The node answered, so it is
	// not known down: it keeps the health and role last seen (none: as configured), and the
	// sessions, which log in as their own users, keep using it.
	AuthFailed string
	RTT        time.Duration

	Version  string
	ReadOnly bool // @@read_only (MySQL: or @@super_read_only)
	ServerID uint32
	// BinlogPos is what the node wrote to its binlog; Applied what it has applied (MariaDB
	// @@gtid_current_pos; MySQL @@gtid_executed).
	BinlogPos, Applied string
	// Replica is the node's replication status; nil when it does not replicate.
	Replica *ReplicaStatus

	ThreadsConnected, ThreadsRunning int64

	// Lag is how long ago the primary first moved past what this node has applied (0 when it
	// has everything); LagKnown is false when positions cannot be compared (then
	// Seconds_Behind_Master, in Replica, is all there is), when its replication broke, and
	// while it is Unsynced: a position that says nothing is not "no lag".
	Lag      time.Duration
	LagKnown bool

	// The monitor's verdicts on a replica (never on the primary); each takes the node out of
	// rotation (Snapshot.TakesNoReads).
	//
	// Errant says which transactions the node holds that the primary does not ("" when none):
	// its executed GTIDs are not contained in the primary's, read after its own. Written on
	// the node itself, they fork its data from the primary's.
	Errant string
	// Broken is the error its replication stopped with ("" when none): Last_SQL_Error or
	// Last_IO_Error of a thread that is not running. It applies nothing any more.
	Broken string
	// Unsynced: the primary's GTID position went backwards (RESET MASTER) and this node has not
	// been seen caught up with the new one since. MariaDB orders a domain's GTIDs by sequence
	// number alone, so its position proves nothing of what it holds: reads that must see a
	// position (session and global consistency) do not go to it.
	Unsynced bool
}

// Faulty reports whether the monitor found the node errant or its replication broken.
func (st *NodeState) Faulty() bool { return st != nil && (st.Errant != "" || st.Broken != "") }

// Problem words what is wrong with the node in state st ("" when nothing is): the last check's
// error, else the monitor's verdicts.
func Problem(st *NodeState) string {
	switch {
	case st == nil:
		return ""
	case st.LastErr != "":
		return st.LastErr
	case st.Errant != "":
		return "errant transactions: " + st.Errant
	case st.Broken != "":
		return "replication stopped: " + st.Broken
	case st.Unsynced:
		return "the primary's GTID position went backwards since this node was last seen caught up"
	}
	return ""
}
