package proxy

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Statements sluice answers itself: SLUICE SHOW … and /*PROXY_INTERNAL*/ SHOW … commands.

// errSpecificAccessDenied is the server's ER_SPECIFIC_ACCESS_DENIED_ERROR: what a user not in
// accounts.topology_users gets for SHOW NODES.
const errSpecificAccessDenied = 1227

// proxyCommand answers a statement addressed to sluice: an unknown command with the list of
// the known ones (a node would answer a misleading syntax error), SHOW NODES only to the users
// allowed to see the topology.
func (s *session) proxyCommand(cmd classify.ProxyCommand) error {
	if err := mayRun(cmd, s.login.user, s.p.opts.TopologyUsers); err != nil {
		s.resp.Failed, s.resp.Code = true, err.Code
		return writeErr(s.client, err)
	}
	var cols []string
	var rows [][]cell
	switch cmd {
	case classify.ShowNodes:
		cols, rows = nodeRows(s.p.topo.Snapshot(), s.settings.current(), s.p.opts.Positions)
	case classify.ShowCluster:
		v, ok := ClusterView{}, false
		if s.p.opts.Cluster != nil {
			v, ok = s.p.opts.Cluster()
		}
		if !ok {
			err := mysql.NewError(mysql.ErrUnknown, "HY000", "sluice: this sluice shares no store (store.etcd): it is a cluster of one")
			s.resp.Failed, s.resp.Code = true, err.Code
			return writeErr(s.client, err)
		}
		cols, rows = clusterRows(v)
	case classify.ShowConsistency:
		set := s.settings.current()
		n := func(v int64) cell { return text(strconv.FormatInt(v, 10)) }
		cols = []string{"endpoint", "consistency", "consistency_timeout_ms", "waits", "timeouts", "primary_position_reads"}
		rows = [][]cell{{text(s.ep.cfg.Name), text(set.Consistency.String()), n(set.ConsistencyTimeout.Milliseconds()),
			n(s.p.consistencyWaits.Load()), n(s.p.consistencyTimeouts.Load()), n(int64(s.p.primaryPos.readings()))}}
	default:
		cols, rows = lastRouteRow(s.view.lastRoute(), s.rs.Pins|s.nodes.share.pins, s.p.topo.Snapshot())
	}
	b, err := writeResult(s.client, s.client.Scratch(), resultFormat{caps: s.login.caps, mcaps: s.login.mcaps, status: s.status}, cols, rows)
	keepScratch(s.client, b)
	return err
}

// mayRun is the error a user (nil: not logged in) gets for cmd, or nil when it may run it:
// an unknown command is refused with the list of the known ones; SHOW NODES, when
// topologyUsers is not empty, is for the users it names.
func mayRun(cmd classify.ProxyCommand, user *User, topologyUsers []string) *mysql.SQLError {
	switch cmd {
	case classify.ShowLastRoute, classify.ShowConsistency:
		return nil
	case classify.ShowNodes, classify.ShowCluster:
		if len(topologyUsers) == 0 || user != nil && slices.Contains(topologyUsers, user.Name) {
			return nil
		}
		what := "NODES"
		if cmd == classify.ShowCluster {
			what = "CLUSTER"
		}
		return mysql.NewError(errSpecificAccessDenied, "42000",
			"Access denied: SLUICE SHOW %s is for the users in sluice's accounts.topology_users", what)
	}
	return mysql.NewError(mysql.ErrUnknown, "HY000",
		"sluice: unknown sluice command; the known ones are %s (also as /*PROXY_INTERNAL*/ SHOW …)", classify.ProxyCommands)
}

// lastRouteRow is SHOW LAST ROUTE's answer: the node the previous statement ran on, its role
// now, and why it went there (all empty before the session's first statement); and what pins
// the session to the primary now (pins, as the statements so far left them: route.PinNames
// joined by commas, empty when nothing does).
func lastRouteRow(r routeInfo, pins route.Pin, snap *topology.Snapshot) ([]string, [][]cell) {
	node, role, reason := "", "", ""
	if r.valid {
		reason = r.reason.String()
		if r.node >= 0 {
			node, role = snap.Nodes[r.node].Name, topology.Replica.String()
			if snap.IsPrimary(r.node) {
				role = topology.Primary.String()
			}
		} else {
			node, role = "sluice", "proxy"
		}
	}
	return []string{"node", "role", "reason", "pins"}, [][]cell{{text(node), text(role), text(reason), text(pins.String())}}
}

// nodeRows is SHOW NODES's answer: one row per node, as the topology's snapshot has it, seen
// from the endpoint routed by ep (the state lagging past its max_replica_lag; reads: whether
// the node takes its new reads now, else "no: " and why, route's words); where each node's
// position is learnt, from positions when there is a monitor.
func nodeRows(snap *topology.Snapshot, ep *route.Settings, positions *topology.Positions) ([]string, [][]cell) {
	cols := []string{"name", "address", "role", "zone", "state", "lag_ms", "seconds_behind", "gtid_position",
		"connections", "threads_connected", "rtt_ms", "last_error", "position_source", "read_only", "reads"}
	var rows [][]cell
	for i, n := range snap.Nodes {
		if snap.IsRemoved(i) {
			continue
		}
		role := topology.Replica
		if snap.IsPrimary(i) {
			role = topology.Primary
		}
		reads := "yes"
		if why := route.WhyNoReads(ep, snap, i); why != "" {
			reads = "no: " + why
		}
		row := []cell{text(n.Name), text(n.Address), text(role.String()), text(n.Zone), text(snap.StateName(i, ep.MaxLag)),
			null, null, null, text(strconv.FormatInt(snap.Load[i].Conns.Load(), 10)), null, null, null, null, null, text(reads)}
		if positions != nil {
			// Where the consistency levels learn the node's position: its binlog stream (real
			// time), or the monitor's checks.
			row[12] = text("poll")
			if positions.Streaming(i) {
				row[12] = text("stream")
			}
		}
		if st := snap.State[i]; st != nil {
			if st.LagKnown {
				row[5] = text(strconv.FormatInt(st.Lag.Milliseconds(), 10))
			}
			if st.Replica != nil && st.Replica.SecondsBehind != nil {
				row[6] = text(strconv.FormatInt(*st.Replica.SecondsBehind, 10))
			}
			if st.Version != "" {
				row[7] = text(st.Applied)
				row[9] = text(strconv.FormatInt(st.ThreadsConnected, 10))
				row[10] = text(strconv.FormatFloat(float64(st.RTT.Microseconds())/1000, 'f', 3, 64))
				// read_only: OFF on a replica is a warning (it would take a write that reached it).
				row[13] = text("ON")
				if !st.ReadOnly {
					row[13] = text("OFF")
				}
			}
			if e := topology.Problem(st); e != "" {
				row[11] = text(e)
			}
		}
		rows = append(rows, row)
	}
	return cols, rows
}

// clusterRows is SHOW CLUSTER's answer: one row per live sluice node, with the revision of the
// stored configuration it applied beside the newest this sluice has seen (stored_revision, on
// every row); this sluice's row (this: yes) also has its link to the store (store: connected,
// or since when not and why), the revision it refused and why, and the settings waiting for
// its restart, which the other rows have as NULL (this sluice does not know them).
func clusterRows(v ClusterView) ([]string, [][]cell) {
	cols := []string{"name", "this", "zone", "version", "started", "applied_revision", "stored_revision", "store",
		"refused", "pending_restart", "admin", "endpoints"}
	stored := text(strconv.FormatInt(v.Revision, 10))
	var rows [][]cell
	for _, m := range v.Members {
		row := []cell{text(m.Name), text("no"), text(m.Zone), text(m.Version), null, text(strconv.FormatInt(m.Applied, 10)),
			stored, null, null, null, text(m.Admin), text(endpointList(m.Endpoints))}
		if !m.Started.IsZero() {
			row[4] = text(m.Started.UTC().Format(time.DateTime))
		}
		if m.Self {
			row[1] = text("yes")
			link := "connected"
			if !v.Connected {
				link = "not connected since " + v.Since.UTC().Format(time.DateTime)
				if v.LastError != "" {
					link += ": " + v.LastError
				}
			}
			refused := ""
			if v.Refused != "" {
				refused = "revision " + strconv.FormatInt(v.RefusedRevision, 10) + ": " + v.Refused
			}
			row[7], row[8], row[9] = text(link), text(refused), text(strings.Join(v.PendingRestart, ","))
		}
		rows = append(rows, row)
	}
	return cols, rows
}

// endpointList is endpoint addresses as name=address,... in name order.
func endpointList(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, n := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, n+"="+m[n])
	}
	return strings.Join(parts, ",")
}

// cell is one value of a result sluice builds: text, or NULL.
type cell struct {
	s    string
	null bool
}

func text(s string) cell { return cell{s: s} }

var null = cell{null: true}

// resultFormat is how a result sluice builds is framed for its client: the capabilities it
// negotiated (EOF or OK terminators, MariaDB's extended metadata) and the server status to
// report.
type resultFormat struct {
	caps, mcaps uint32
	status      uint16
}

// writeResult sends c a text result set of string columns built by sluice itself, building
// its packets in buf, and returns buf (grown) for reuse.
func writeResult(c *mysql.Conn, buf []byte, f resultFormat, cols []string, rows [][]cell) ([]byte, error) {
	b := buf[:0]
	b = mysql.AppendLenEncInt(b, uint64(len(cols)))
	if err := c.WritePacket(b); err != nil {
		return b, err
	}
	for _, name := range cols {
		b = b[:0]
		b = mysql.AppendLenEncString(b, []byte("def"))
		b = mysql.AppendLenEncString(b, nil) // schema
		b = mysql.AppendLenEncString(b, nil) // table
		b = mysql.AppendLenEncString(b, nil) // org_table
		b = mysql.AppendLenEncString(b, []byte(name))
		b = mysql.AppendLenEncString(b, []byte(name))
		if f.mcaps&mysql.MariaDBClientExtendedMetadata != 0 {
			b = append(b, 0) // no extended type information
		}
		b = append(b, 0x0c, 45, 0, 0, 1, 0, 0, 0xfd, 0, 0, 0x27, 0, 0) // utf8mb4, length 256, VAR_STRING, decimals 39
		if err := c.WritePacket(b); err != nil {
			return b, err
		}
	}
	status := f.status &^ mysql.StatusMoreResultsExists
	if f.caps&mysql.ClientDeprecateEOF == 0 {
		if err := c.WritePacket(mysql.AppendEOF(b[:0], 0, status)); err != nil {
			return b, err
		}
	}
	for _, row := range rows {
		b = b[:0]
		for _, v := range row {
			if v.null {
				b = append(b, 0xfb)
				continue
			}
			b = mysql.AppendLenEncString(b, []byte(v.s))
		}
		if err := c.WritePacket(b); err != nil {
			return b, err
		}
	}
	return endRows(c, b, f.caps, status)
}

// writeIDResult sends c the one-row result of SELECT CONNECTION_ID(): one BIGINT UNSIGNED NOT
// NULL column named name, holding id, typed as the server types it (so that clients that read
// the column's type get a number), building its packets in buf, and returns buf for reuse.
func writeIDResult(c *mysql.Conn, buf []byte, f resultFormat, name []byte, id uint32) ([]byte, error) {
	b := mysql.AppendLenEncInt(buf[:0], 1)
	if err := c.WritePacket(b); err != nil {
		return b, err
	}
	b = b[:0]
	b = mysql.AppendLenEncString(b, []byte("def"))
	b = mysql.AppendLenEncString(b, nil) // schema
	b = mysql.AppendLenEncString(b, nil) // table
	b = mysql.AppendLenEncString(b, nil) // org_table
	b = mysql.AppendLenEncString(b, name)
	b = mysql.AppendLenEncString(b, nil) // org_name: an expression has none
	if f.mcaps&mysql.MariaDBClientExtendedMetadata != 0 {
		b = append(b, 0)
	}
	// binary, length 10, LONGLONG, NOT_NULL|UNSIGNED|BINARY, no decimals.
	b = append(b, 0x0c, 63, 0, 10, 0, 0, 0, 0x08, 0xa1, 0, 0, 0, 0)
	if err := c.WritePacket(b); err != nil {
		return b, err
	}
	status := f.status &^ mysql.StatusMoreResultsExists
	if f.caps&mysql.ClientDeprecateEOF == 0 {
		if err := c.WritePacket(mysql.AppendEOF(b[:0], 0, status)); err != nil {
			return b, err
		}
	}
	var num [10]byte
	b = mysql.AppendLenEncString(b[:0], strconv.AppendUint(num[:0], uint64(id), 10))
	if err := c.WritePacket(b); err != nil {
		return b, err
	}
	return endRows(c, b, f.caps, status)
}

// endRows ends a result set sluice writes itself (b: a buffer to build in): an EOF, or the OK
// that stands for it when the client has CLIENT_DEPRECATE_EOF; then flushes. It returns b.
func endRows(c *mysql.Conn, b []byte, caps uint32, status uint16) ([]byte, error) {
	if caps&mysql.ClientDeprecateEOF == 0 {
		b = mysql.AppendEOF(b[:0], 0, status)
	} else {
		b = mysql.AppendOK(b[:0], mysql.OK{Header: 0xfe, Status: status}, caps)
	}
	if err := c.WritePacket(b); err != nil {
		return b, err
	}
	return b, c.Flush()
}
