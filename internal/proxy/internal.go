package proxy

import (
	"strconv"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// Statements sluice answers itself: /*PROXY_INTERNAL*/ commands.

// proxyCommand answers /*PROXY_INTERNAL*/ statements.
func (s *session) proxyCommand(cmd classify.ProxyCommand) error {
	switch cmd {
	case classify.ShowNodes:
		return s.showNodes()
	case classify.ShowConsistency:
		set := s.settings()
		n := func(v int64) cell { return text(strconv.FormatInt(v, 10)) }
		return s.writeResult([]string{"endpoint", "consistency", "consistency_timeout_ms", "waits", "timeouts", "primary_position_reads"},
			[][]cell{{text(s.ep.cfg.Name), text(set.Consistency.String()), n(set.ConsistencyTimeout.Milliseconds()),
				n(s.p.consistencyWaits.Load()), n(s.p.consistencyTimeouts.Load()), n(int64(s.p.primaryPos.readings()))}})
	}
	r := s.last
	node, role, reason := "", "", ""
	if r.valid {
		reason = r.reason.String()
		if r.node >= 0 {
			node, role = s.p.nodeOf(r.node).Name, topology.Replica.String()
			if s.p.topo.Snapshot().IsPrimary(r.node) {
				role = topology.Primary.String()
			}
		} else {
			node, role = "sluice", "proxy"
		}
	}
	return s.writeResult([]string{"node", "role", "reason"}, [][]cell{{text(node), text(role), text(reason)}})
}

// showNodes answers SHOW NODES: one row per node, as the topology's snapshot has it.
func (s *session) showNodes() error {
	snap, set := s.p.topo.Snapshot(), s.settings()
	cols := []string{"name", "address", "role", "zone", "state", "lag_ms", "seconds_behind", "gtid_position",
		"connections", "threads_connected", "rtt_ms", "last_error", "position_source", "read_only"}
	var rows [][]cell
	for i, n := range snap.Nodes {
		if snap.IsRemoved(i) {
			continue
		}
		role := topology.Replica
		if snap.IsPrimary(i) {
			role = topology.Primary
		}
		row := []cell{text(n.Name), text(n.Address), text(role.String()), text(n.Zone), text(snap.StateName(i, set.MaxLag)),
			null, null, null, text(strconv.FormatInt(snap.Load[i].Conns.Load(), 10)), null, null, null, null, null}
		if pos := s.p.opts.Positions; pos != nil {
			// Where the consistency levels learn the node's position: its binlog stream (real
			// time), or the monitor's checks.
			row[12] = text("poll")
			if pos.Streaming(i) {
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
	return s.writeResult(cols, rows)
}

// cell is one value of a result sluice builds: text, or NULL.
type cell struct {
	s    string
	null bool
}

func text(s string) cell { return cell{s: s} }

var null = cell{null: true}

// writeResult sends a text result set of string columns built by sluice itself.
func (s *session) writeResult(cols []string, rows [][]cell) error {
	b := s.scratch[:0]
	b = mysql.AppendLenEncInt(b, uint64(len(cols)))
	if err := s.client.WritePacket(b); err != nil {
		return err
	}
	for _, name := range cols {
		b = b[:0]
		b = mysql.AppendLenEncString(b, []byte("def"))
		b = mysql.AppendLenEncString(b, nil) // schema
		b = mysql.AppendLenEncString(b, nil) // table
		b = mysql.AppendLenEncString(b, nil) // org_table
		b = mysql.AppendLenEncString(b, []byte(name))
		b = mysql.AppendLenEncString(b, []byte(name))
		if s.mcaps&mysql.MariaDBClientExtendedMetadata != 0 {
			b = append(b, 0) // no extended type information
		}
		b = append(b, 0x0c, 45, 0, 0, 1, 0, 0, 0xfd, 0, 0, 0x27, 0, 0) // utf8mb4, length 256, VAR_STRING, decimals 39
		if err := s.client.WritePacket(b); err != nil {
			return err
		}
	}
	status := s.status &^ mysql.StatusMoreResultsExists
	if s.caps&mysql.ClientDeprecateEOF == 0 {
		if err := s.client.WritePacket(mysql.AppendEOF(b[:0], 0, status)); err != nil {
			return err
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
		if err := s.client.WritePacket(b); err != nil {
			return err
		}
	}
	if s.caps&mysql.ClientDeprecateEOF == 0 {
		b = mysql.AppendEOF(b[:0], 0, status)
	} else {
		b = mysql.AppendOK(b[:0], mysql.OK{Header: 0xfe, Status: status}, s.caps)
	}
	s.scratch = b
	if err := s.client.WritePacket(b); err != nil {
		return err
	}
	return s.client.Flush()
}
