package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/topology"
)

// NodeStatus is one node's state as Status saw it.
type NodeStatus struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Address string `json:"address"`
	PID     int    `json:"pid"`
	// Up: the process runs and answered. A node whose process runs but did not answer has
	// Up=false and Error set.
	Up       bool `json:"up"`
	ReadOnly bool `json:"read_only"`
	// GTID positions. MariaDB: @@gtid_binlog_pos, @@gtid_current_pos, @@gtid_slave_pos.
	// MySQL: @@gtid_executed in the first two, SlavePos empty.
	BinlogPos  string `json:"gtid_binlog_pos"`
	CurrentPos string `json:"gtid_current_pos"`
	SlavePos   string `json:"gtid_slave_pos"`
	// Replica threads as SHOW SLAVE/REPLICA STATUS reports them: Yes, No, Connecting, or ""
	// on the primary.
	IORunning  string `json:"io_running,omitempty"`
	SQLRunning string `json:"sql_running,omitempty"`
	// SecondsBehind is nil when the server reports NULL: always on the primary, and on a
	// replica whose SQL thread is stopped (paused) or whose IO thread is not connected. Do not
	// read NULL as "no lag".
	SecondsBehind *int64 `json:"seconds_behind,omitempty"`
	SQLDelay      int    `json:"sql_delay"`                     // configured MASTER_DELAY
	RemainingWait *int64 `json:"sql_remaining_delay,omitempty"` // SQL_Remaining_Delay, while it waits for the delay
	LastError     string `json:"last_error,omitempty"`          // Last_IO_Error / Last_SQL_Error
	Error         string `json:"error,omitempty"`               // why this node could not be queried
}

// Status reports every node, querying them in parallel. It fails only when ctx does; a node
// that does not answer is reported with Error set.
func (c *Cluster) Status(ctx context.Context) ([]NodeStatus, error) {
	out := make([]NodeStatus, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		n := &c.Nodes[i]
		wg.Go(func() { out[i] = c.nodeStatus(ctx, n) })
	}
	wg.Wait()
	return out, ctx.Err()
}

func (c *Cluster) nodeStatus(ctx context.Context, n *Node) NodeStatus {
	s := NodeStatus{Name: n.Name, Role: n.Role, Address: n.Address, PID: c.pid(n)}
	if !alive(s.PID, n.cnf()) {
		s.PID = 0
		return s
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db := c.adminDB(n)
	defer db.Close()
	var version string
	err := db.QueryRowContext(ctx, gtid.StateQuery(c.fl.family())).Scan(&version, &s.ReadOnly, &s.BinlogPos, &s.CurrentPos, &s.SlavePos)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Up = true
	rows, err := db.QueryContext(ctx, gtid.ReplicaStatusQuery(c.fl.family()))
	if err != nil {
		s.Error = err.Error()
		return s
	}
	all := scanAll(rows)
	if len(all) == 0 {
		return s
	}
	r := all[0]
	rs := topology.ParseReplicaStatus(func(name string) (string, bool) {
		v, ok := r[name]
		return v, ok && v != nullMarker
	})
	s.IORunning, s.SQLRunning, s.SecondsBehind = rs.IORunning, rs.SQLRunning, rs.SecondsBehind
	s.SQLDelay, s.RemainingWait, s.LastError = rs.SQLDelay, rs.RemainingWait, rs.LastError
	return s
}

// ReplicaWrites lists, for each replica that holds a transaction of its own (one that did not
// come from the primary), the replica and the GTIDs that show it: with writable replicas, the
// proof that no write reached a replica. A replica's own transactions carry its own server id
// (MariaDB: domain-server-seq in @@gtid_binlog_pos) or its own server_uuid (MySQL:
// @@gtid_executed).
func (c *Cluster) ReplicaWrites(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var found []string
	for _, n := range c.Replicas() {
		db := c.adminDB(n)
		var id, pos string
		err := db.QueryRowContext(ctx, gtid.IdentityQuery(c.fl.family())).Scan(&id, &pos)
		db.Close()
		if err != nil {
			return found, fmt.Errorf("sandbox: %s: %w", n.Name, err)
		}
		for _, g := range gtid.OwnGTIDs(c.fl.family(), id, pos) {
			found = append(found, n.Name+": "+g)
		}
	}
	return found, nil
}
