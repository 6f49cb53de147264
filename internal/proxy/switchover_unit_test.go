package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

// err1290 is a node's ERR 1290 (ER_OPTION_PREVENTS_STATEMENT) naming option, sequence id 1.
func err1290(option string) []byte {
	msg := "The MariaDB server is running with the " + option + " option so it cannot execute this statement"
	return packets(1, append([]byte{0xff, 0x0a, 0x05, '#', 'H', 'Y', '0', '0', '0'}, msg...))
}

// TestPrimaryReadOnlyRefusal: an autocommit write the primary refuses as read-only is kept from
// the client only when a monitor runs (it names the new primary) and only for the read-only
// option; it then waits for a new primary up to switchover_timeout and, with none, gets the
// read-only error saying so. Any other 1290 (--secure-file-priv) reaches the client as is.
func TestPrimaryReadOnlyRefusal(t *testing.T) {
	insert := packets(0, append([]byte{mysql.ComQuery}, "INSERT INTO t VALUES (1)"...))
	replicating := &topology.NodeState{Health: topology.Healthy, Replica: &topology.ReplicaStatus{}}
	for _, tc := range []struct {
		name      string
		monitor   bool
		option    string
		want      string // in the client's error message
		switching bool
	}{
		{"read-only, monitored", true, "--read-only", "switchover_timeout", true},
		{"read-only, no monitor", false, "--read-only", "--read-only option so", false},
		{"another option", true, "--secure-file-priv", "--secure-file-priv", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := &memConn{}
			r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
			r.s.p.opts.SwitchoverTimeout = 50 * time.Millisecond
			topo := r.s.p.topo.(*topology.Topology)
			if tc.monitor {
				topo.Observe([]*topology.NodeState{{Health: topology.Healthy}, replicating})
			}
			primary.load(err1290(tc.option))
			r.client.load(insert)
			start := time.Now()
			if _, err := r.command(); err != nil {
				t.Fatalf("session ended: %v", err)
			}
			_ = r.s.client.Flush()
			if code := errCode(r.client.out); code != mysql.ErrOptionPreventsStm {
				t.Fatalf("client got % x, want ERR 1290", r.client.out)
			}
			if msg := string(r.client.out); !strings.Contains(msg, tc.want) {
				t.Fatalf("client's error %q does not say %q", msg, tc.want)
			}
			if s := topo.Snapshot(); s.Switching != tc.switching {
				t.Fatalf("switching %v, want %v", s.Switching, tc.switching)
			}
			if waited := time.Since(start); tc.switching && waited < 50*time.Millisecond {
				t.Fatalf("answered after %s, before switchover_timeout", waited)
			}
		})
	}
}
