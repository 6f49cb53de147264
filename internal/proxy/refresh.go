package proxy

import (
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
	"github.com/sluicedb/sluice/internal/route"
)

// refresh handles COM_REFRESH, the old binary form of FLUSH and RESET: its one-byte argument is
// a bitmask (0x01 grant tables, 0x02 logs, 0x04 tables, 0x08 hosts, 0x10 status, 0x20 threads,
// 0x40 RESET SLAVE, 0x80 RESET MASTER). Every bit changes the node it runs on, and several its
// binlog or replication (a RESET MASTER on a replica forks its GTIDs; a replica cannot be reset
// through sluice): a read-only endpoint refuses it whole (1290, as the server refuses a write
// under read_only), and a read-write one runs it on the primary only, like FLUSH and RESET as
// statements.
func (s *session) refresh(n int) error {
	set := s.settings.current()
	if set.Mode == route.ReadOnly {
		return s.refuse(&request{n: n, unread: true}, mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
			"The sluice endpoint '%s' is read-only: COM_REFRESH (FLUSH, RESET) cannot be executed there", set.Name))
	}
	if snap := s.p.topo.Snapshot(); s.nodes.home() != snap.Primary {
		// A session whose home could not follow a switchover yet (it holds state on the old
		// primary): its home is no primary now.
		return s.refuse(&request{n: n, unread: true}, mysql.NewError(mysql.ErrOptionPreventsStm, "HY000",
			"sluice: COM_REFRESH runs on the primary only, and this session is not on the primary now"))
	}
	return s.homeCommand(n, relay.Single)
}
