package proxy

import (
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// Statements sluice answers itself: /*PROXY_INTERNAL*/ commands.

// proxyCommand answers /*PROXY_INTERNAL*/ statements.
func (s *session) proxyCommand(cmd classify.ProxyCommand) error {
	r := s.last
	node, role, reason := "", "", ""
	if r.valid {
		reason = r.reason.String()
		if r.node >= 0 {
			node, role = s.nodeOf(r.node).Name, topology.Replica.String()
			if s.p.topo.Snapshot().IsPrimary(r.node) {
				role = topology.Primary.String()
			}
		} else {
			node, role = "sluice", "proxy"
		}
	}
	return s.writeResult([]string{"node", "role", "reason"}, [][]string{{node, role, reason}})
}

// writeResult sends a text result set of string columns built by sluice itself.
func (s *session) writeResult(cols []string, rows [][]string) error {
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
			b = mysql.AppendLenEncString(b, []byte(v))
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
