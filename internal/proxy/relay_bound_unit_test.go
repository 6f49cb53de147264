package proxy

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestHugeOKFromNodeRefused: a server never sends an OK packet of 16 MiB or more; a node that
// does (an OK header, then continuation after continuation) is out of step, and its answer is
// not read into memory. Before, the relay read the whole logical packet (up to 1 GiB): all 64 MiB
// the node sent here.
func TestHugeOKFromNodeRefused(t *testing.T) {
	const flood = 64 << 20
	wrote := make(chan int, 1)
	s, client := infileSession(t, func(c *mysql.Conn) {
		c.SetSeq(0)
		if _, err := c.ReadPacket(); err != nil {
			return
		}
		nc := c.NetConn()
		_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
		wrote <- testutil.FloodPackets(nc, 1, flood)
	})
	done := runCommand(s)
	client.SetSeq(0)
	if err := client.WritePacketFlush(append([]byte{mysql.ComQuery}, "SELECT 1"...)); err != nil {
		t.Fatal(err)
	}
	go func() { // whatever reaches the client
		for {
			if _, err := client.ReadPacket(); err != nil {
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the session went on after a 16 MiB OK packet")
		}
	case <-time.After(5 * time.Second):
		t.Error("the command did not end: the session waits for the rest of the OK packet")
	}
	if n := <-wrote; n >= flood/2 { // the node's write fails once its connection is closed, or at its deadline
		t.Errorf("sluice read %d MiB of the node's OK packet", n>>20)
	}
}
