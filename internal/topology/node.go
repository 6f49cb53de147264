package topology

import (
	"fmt"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/proxyproto"
)

// Role is what a node does in the replication topology.
type Role uint8

const (
	Replica Role = iota // read-only, replicates from the primary
	Primary             // takes writes
)

// String returns the configuration spelling of the role.
func (r Role) String() string {
	if r == Primary {
		return "primary"
	}
	return "replica"
}

// ParseRole reads a role as the configuration spells it.
func ParseRole(s string) (Role, error) {
	switch s {
	case "primary":
		return Primary, nil
	case "replica":
		return Replica, nil
	}
	return Replica, fmt.Errorf("unknown node role %q (want primary or replica)", s)
}

// Node is one backend server's identity and configuration. Immutable once the topology is
// built; its position in Snapshot.Nodes is Index.
type Node struct {
	Index   int
	Name    string
	Address string // host:port
	Zone    string // availability zone, "" when not configured
	// Role is the role the configuration gives the node: the initial view. Which node is the
	// primary now is Snapshot.Primary.
	Role Role
	// ProxyProtocol is the PROXY protocol header every connection sluice opens to the node
	// for a client starts with (proxyproto.Off: none).
	ProxyProtocol proxyproto.Version
}

// Load holds this proxy's live counters on one node (and the other sluice nodes' connections to
// it, as they published them). Its fields change all the time, so they are kept apart from Node
// and from the snapshot's state: a snapshot swap does not reset them.
type Load struct {
	// Active counts the statements this proxy has in flight on the node (least-active).
	Active atomic.Int64
	// Conns counts this proxy's open connections to the node (least-connections).
	Conns atomic.Int64
	// Others is the sum of the connections the other live sluice nodes of the cluster hold to
	// the node, as they last published them in their membership records (least-connections
	// with connections_from: cluster). Stored by the app when the list of members or the
	// topology changes; never per statement. 0 without a cluster.
	Others atomic.Int64
}
