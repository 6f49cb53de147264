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

// globalReadOnly is a node's answer to SELECT @@global.read_only: one row, v.
func globalReadOnly(v string) []byte {
	return packets(1, []byte{1}, benchColumn, append([]byte{byte(len(v))}, v...), []byte{0xfe, 0, 0, 2, 0, 0, 0})
}

// TestPrimaryReadOnlyRefusal: an autocommit write the primary refuses as read-only is kept from
// the client only when a monitor runs (it names the new primary), only for the read-only
// option, and only when the node confirms it is read-only (an application can raise 1290
// itself); it then waits for a new primary up to switchover_timeout and, with none, gets the
// read-only error saying so. Any other 1290 (--secure-file-priv) reaches the client as is.
func TestPrimaryReadOnlyRefusal(t *testing.T) {
	replicating := &topology.NodeState{Health: topology.Healthy, Replica: &topology.ReplicaStatus{}}
	for _, tc := range []struct {
		name      string
		monitor   bool
		option    string
		readOnly  string // the node's @@global.read_only, when asked
		want      string // in the client's error message
		switching bool
		stmt      string // default: an INSERT
	}{
		{"read-only, monitored", true, "--read-only", "1", "switchover_timeout", true, ""},
		{"read-only, no monitor", false, "--read-only", "", "--read-only option so", false, ""},
		{"another option", true, "--secure-file-priv", "", "--secure-file-priv", false, ""},
		{"raised by the application (SIGNAL in a trigger)", true, "--read-only", "0", "--read-only option so", false, ""},
		// A procedure may have committed its first statements before one was refused: it is
		// never sent again.
		{"a CALL", true, "--read-only", "1", "--read-only option so", false, "CALL p()"},
		{"a batch", true, "--read-only", "1", "--read-only option so", false, "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := &memConn{}
			r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
			r.s.p.opts.SwitchoverTimeout = 50 * time.Millisecond
			topo := r.s.p.topo.(*topology.Topology)
			if tc.monitor {
				topo.Observe([]*topology.NodeState{{Health: topology.Healthy}, replicating})
			}
			answer := err1290(tc.option)
			if tc.readOnly != "" {
				answer = append(answer, globalReadOnly(tc.readOnly)...)
			}
			primary.load(answer)
			stmt := tc.stmt
			if stmt == "" {
				stmt = "INSERT INTO t VALUES (1)"
			}
			r.client.load(packets(0, append([]byte{mysql.ComQuery}, stmt...)))
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
