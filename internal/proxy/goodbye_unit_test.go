package proxy

import (
	"bytes"
	"testing"
)

// comQuit is a COM_QUIT packet as a node reads it.
var comQuit = []byte{1, 0, 0, 0, 0x01}

// saidGoodbye reports whether the last bytes written on c were a COM_QUIT, and c was closed.
func saidGoodbye(c *fakeNodeConn) bool { return c.closed && bytes.HasSuffix(c.out, comQuit) }

// TestNodeSetSaysGoodbye: the node set closes a connection it lets go of between two commands
// (drop, closeAll, reset, a session's end between commands) with a COM_QUIT; one a command
// failed on (dropFailed) without one; and at a session's end in the middle of a command, the
// current connection gets its COM_QUIT after what the node still sent was read (here: all
// of it).
func TestNodeSetSaysGoodbye(t *testing.T) {
	topo := threeNodes(t)
	ns, d := newTestNodeSet(t, topo)
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if _, err := ns.use(i); err != nil {
			t.Fatal(err)
		}
	}
	ns.drop(2)
	if !saidGoodbye(d.conns[2]) {
		t.Errorf("drop: closed %v, wrote % x: want a COM_QUIT", d.conns[2].closed, d.conns[2].out)
	}
	before := len(d.conns[1].out)
	ns.dropFailed(1)
	if !d.conns[1].closed || len(d.conns[1].out) != before {
		t.Errorf("dropFailed: closed %v, wrote % x more: want it closed, nothing sent", d.conns[1].closed, d.conns[1].out[before:])
	}
	ns.reset() // closes every connection but the home's
	if d.conns[0].closed {
		t.Fatal("reset closed the home connection")
	}
	ns.closeAll()
	if !saidGoodbye(d.conns[0]) {
		t.Errorf("closeAll: closed %v, wrote % x: want a COM_QUIT", d.conns[0].closed, d.conns[0].out)
	}

	// A session that ends in the middle of a command on replica1: the rest of the answer is
	// read before the COM_QUIT is left (the node reads it once its answer is out).
	ns, d = newTestNodeSet(t, topo)
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.use(1); err != nil {
		t.Fatal(err)
	}
	d.conns[1].load(bytes.Repeat([]byte{0xfb}, 100<<10)) // what is still on its way
	ns.releaseAll(nil)
	if !saidGoodbye(d.conns[0]) || !saidGoodbye(d.conns[1]) {
		t.Errorf("releaseAll in the middle of a command: home closed %v wrote % x; current closed %v wrote % x: want COM_QUIT on both",
			d.conns[0].closed, d.conns[0].out, d.conns[1].closed, d.conns[1].out)
	}
	if d.conns[1].off != len(d.conns[1].in) {
		t.Errorf("releaseAll in the middle of a command: %d of the %d bytes still on their way were read, want all", d.conns[1].off, len(d.conns[1].in))
	}

	// A session that ends between two commands: nothing is read.
	ns, d = newTestNodeSet(t, topo)
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	d.conns[0].load([]byte{0xfb, 0xfb})
	ns.settle()
	ns.releaseAll(nil)
	if !saidGoodbye(d.conns[0]) || d.conns[0].off != 0 {
		t.Errorf("releaseAll between two commands: closed %v wrote % x, read %d bytes: want a COM_QUIT and nothing read",
			d.conns[0].closed, d.conns[0].out, d.conns[0].off)
	}
}
