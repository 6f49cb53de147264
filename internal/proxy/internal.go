package proxy

import (
	"strconv"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Statements sluice answers itself: /*PROXY_INTERNAL*/ commands.

// proxyCommand answers /*PROXY_INTERNAL*/ statements.
func (s *session) proxyCommand(cmd classify.ProxyCommand) error {
	var cols []string
	var rows [][]cell
	switch cmd {
	case classify.ShowNodes:
		cols, rows = nodeRows(s.p.topo.Snapshot(), s.settings.current(), s.p.opts.Positions)
	case classify.ShowConsistency:
		set := s.settings.current()
		n := func(v int64) cell { return text(strconv.FormatInt(v, 10)) }
		cols = []string{"endpoint", "consistency", "consistency_timeout_ms", "waits", "timeouts", "primary_position_reads"}
		rows = [][]cell{{text(s.ep.cfg.Name), text(set.Consistency.String()), n(set.ConsistencyTimeout.Milliseconds()),
			n(s.p.consistencyWaits.Load()), n(s.p.consistencyTimeouts.Load()), n(int64(s.p.primaryPos.readings()))}}
	default:
		cols, rows = lastRouteRow(s.view.lastRoute(), s.p.topo.Snapshot())
	}
	b, err := writeResult(s.client, s.client.Scratch(), resultFormat{caps: s.login.caps, mcaps: s.login.mcaps, status: s.status}, cols, rows)
	keepScratch(s.client, b)
	return err
}

// lastRouteRow is SHOW LAST ROUTE's answer: the node the previous statement ran on, its role
// now, and why it went there (all empty before the session's first statement).
func lastRouteRow(r routeInfo, snap *topology.Snapshot) ([]string, [][]cell) {
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
	return []string{"node", "role", "reason"}, [][]cell{{text(node), text(role), text(reason)}}
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
	if f.caps&mysql.ClientDeprecateEOF == 0 {
		b = mysql.AppendEOF(b[:0], 0, status)
	} else {
		b = mysql.AppendOK(b[:0], mysql.OK{Header: 0xfe, Status: status}, f.caps)
	}
	if err := c.WritePacket(b); err != nil {
		return b, err
	}
	return b, c.Flush()
}
