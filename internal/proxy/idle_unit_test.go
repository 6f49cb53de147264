package proxy

import (
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// idleRig is an idle watch over in-memory pipes: the client's connection and two node
// connections, with the ends the test plays.
type idleRig struct {
	w              idleWatch
	c              *mysql.Conn
	server, client net.Conn    // the client's connection: sluice's end, the client's
	nodes, peers   [2]net.Conn // node connections: sluice's ends, the nodes'
	lost           atomic.Int32
	calls          atomic.Int32
	keep           bool // what nodeWatch.lost answers
	watch          nodeWatch
}

func newIdleRig(t *testing.T, idle time.Duration, keep bool) *idleRig {
	r := &idleRig{keep: keep}
	r.server, r.client = net.Pipe()
	for i := range r.nodes {
		r.nodes[i], r.peers[i] = net.Pipe()
	}
	t.Cleanup(func() {
		r.server.Close()
		r.client.Close()
		for i := range r.nodes {
			r.nodes[i].Close()
			r.peers[i].Close()
		}
	})
	r.w = newIdleWatch(r.server, idle, 0)
	r.c = mysql.NewConn(r.server, 0, 0)
	r.watch = nodeWatch{
		conns: func(dst []net.Conn) []net.Conn {
			r.calls.Add(1)
			return append(dst, r.nodes[0], r.nodes[1])
		},
		lost: func(i int, err error) bool {
			r.lost.Store(int32(i) + 1)
			return r.keep
		},
	}
	return r
}

// send writes a COM_PING from the client.
func (r *idleRig) send() {
	go func() { _, _ = r.client.Write([]byte{1, 0, 0, 0, mysql.ComPing}) }()
}

func TestIdleWatchCommandInTime(t *testing.T) {
	r := newIdleRig(t, 0, true)
	r.send()
	if err := r.w.wait(r.c, &r.watch, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r.calls.Load() != 0 || len(r.w.lostConns()) != 0 {
		t.Fatal("a command within idleProbe started the watch")
	}
	w := newIdleWatch(nil, 0, 5*time.Second)
	if r.w.stallLimit() != 30*time.Second || w.stallLimit() != 5*time.Second {
		t.Fatal("stall limit: timeouts.write, or 30 s")
	}
}

// A node that closes its connection while the client is idle: a connection the session can
// do without is let go (dropped once the client speaks), the others stay watched and usable.
func TestIdleWatchNodeLostKept(t *testing.T) {
	r := newIdleRig(t, 0, true)
	done := make(chan error, 1)
	go func() { done <- r.w.wait(r.c, &r.watch, time.Now()) }()
	time.Sleep(idleProbe + 200*time.Millisecond)
	if r.calls.Load() != 1 {
		t.Fatalf("watch started %d times after idleProbe", r.calls.Load())
	}
	r.peers[1].Close()
	waitFor(t, "the watcher to see node 1 lost", func() bool { return r.lost.Load() == 2 })
	r.send()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := r.w.lostConns(); !slices.Equal(got, []int{1}) {
		t.Fatalf("lost connections %v, want [1]", got)
	}
	// Node 0's connection is usable again: no deadline left on it.
	go func() { _, _ = r.peers[0].Write([]byte{7}) }()
	var b [1]byte
	if _, err := r.nodes[0].Read(b[:]); err != nil || b[0] != 7 {
		t.Fatalf("node 0 after the watch: %v", err)
	}
}

// A node connection the session cannot do without: the client's connection is closed.
func TestIdleWatchNodeLostFatal(t *testing.T) {
	r := newIdleRig(t, 0, false)
	done := make(chan error, 1)
	go func() { done <- r.w.wait(r.c, &r.watch, time.Now()) }()
	time.Sleep(idleProbe + 200*time.Millisecond)
	r.peers[0].Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the session lives on without its node")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client's connection was not closed")
	}
	if _, err := r.client.Write([]byte{0}); err == nil {
		t.Fatal("the client's connection is still open")
	}
}

func TestIdleWatchIdleTimeout(t *testing.T) {
	r := newIdleRig(t, 100*time.Millisecond, true)
	start := time.Now()
	err := r.w.wait(r.c, &r.watch, time.Now())
	if err == nil || !strings.Contains(err.Error(), "timeouts.idle") {
		t.Fatalf("err %v", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("idle timeout after %v", took)
	}
	if r.calls.Load() != 0 {
		t.Fatal("watched before idleProbe")
	}
	if errors.Is(err, net.ErrClosed) {
		t.Fatal("closed, not timed out")
	}
}

// TestIdleWatchParks: over TCP, a client idle past idleProbe has its buffers parked, and the
// session's node connections theirs (nodeWatch.park), while the watch runs; the command that
// ends the idle spell is read whole, and every connection has its buffers back when wait
// returns.
func TestIdleWatchParks(t *testing.T) {
	server, client := tcpPair(t)
	c := mysql.NewConn(server, 0, 0)
	w := newIdleWatch(server, 0, 0)
	var nodes, peers [1]net.Conn
	nodes[0], peers[0] = tcpPair(t)
	node := mysql.NewConn(nodes[0], 0, 4<<10)
	var parks, unparks atomic.Int32
	watch := nodeWatch{
		conns: func(dst []net.Conn) []net.Conn { return append(dst, nodes[0]) },
		lost:  func(int, error) bool { return true },
		park: func(park bool) {
			if park {
				if node.Park() {
					parks.Add(1)
				}
				return
			}
			node.Unpark()
			unparks.Add(1)
		},
	}
	done := make(chan error, 1)
	go func() { done <- w.wait(c, &watch, time.Now()) }()
	time.Sleep(idleProbe + 200*time.Millisecond)
	if parks.Load() != 1 {
		t.Fatal("the node connection did not park with the watch")
	}
	if _, err := client.Write([]byte{1, 0, 0, 0, mysql.ComPing}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c.Parked() || node.Parked() || unparks.Load() != 1 {
		t.Fatal("a connection is still parked after the wait")
	}
	if p, err := c.ReadPacket(); err != nil || len(p) != 1 || p[0] != mysql.ComPing {
		t.Fatalf("the command after the idle spell: %q, %v", p, err)
	}
}

// tcpPair returns both ends of a loopback TCP connection, closed at cleanup.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return b, a
}

// TestIdleWatchDeadlineLeftArmed: the wait's deadline is set once and left armed (loose)
// between commands: the next wait takes it up without setting another, a read of the command
// is not bound by it, and one armed by an earlier wait that comes before this wait's own is
// re-armed when reached, without starting the watch early; the idle timeout still ends an
// idle client after timeouts.idle.
func TestIdleWatchDeadlineLeftArmed(t *testing.T) {
	server, client := tcpPair(t)
	c := mysql.NewConn(server, 0, 0)
	w := newIdleWatch(server, 0, 0)
	var calls atomic.Int32
	watch := nodeWatch{
		conns: func(dst []net.Conn) []net.Conn { calls.Add(1); return dst },
		lost:  func(int, error) bool { return true },
	}
	ping := func(after time.Duration) {
		go func() {
			time.Sleep(after)
			_, _ = client.Write([]byte{1, 0, 0, 0, mysql.ComPing})
		}()
	}
	command := func(what string) {
		t.Helper()
		if err := w.wait(c, &watch, time.Now()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		c.SetSeq(0)
		if p, err := c.ReadPacket(); err != nil || len(p) != 1 || p[0] != mysql.ComPing {
			t.Fatalf("%s: the command: %q, %v", what, p, err)
		}
	}

	ping(0)
	command("first")
	armed := c.ReadDeadline()
	if armed.IsZero() || time.Until(armed) > idleProbe {
		t.Fatalf("after the first command the deadline is %v, want the wait's, left armed", armed)
	}
	ping(10 * time.Millisecond)
	command("second")
	if !c.ReadDeadline().Equal(armed) {
		t.Fatal("the second wait set a deadline of its own: want the first one's, taken up again")
	}

	// Left armed, it binds no read of the command: the rest of one that comes after it.
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	ping(0)
	if err := w.wait(c, &watch, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond) // past the loose deadline
	// The command's next packet, 20 ms later.
	go func() { time.Sleep(20 * time.Millisecond); _, _ = client.Write([]byte{1, 0, 0, 1, 'x'}) }()
	c.SetSeq(0)
	if _, err := c.ReadPacket(); err != nil {
		t.Fatal(err)
	}
	if p, err := c.ReadPacket(); err != nil || string(p) != "x" {
		t.Fatalf("a read of the command past the loose deadline: %q, %v", p, err)
	}

	// An earlier wait's deadline, 30 ms ahead, reached 30 ms into this wait: re-armed, the
	// watch does not start before idleProbe, the command that comes later is read.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	c.LoosenReadDeadline()
	ping(150 * time.Millisecond)
	start := time.Now()
	command("after an early deadline")
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("the wait returned after %v, before the command was sent", took)
	}
	if calls.Load() != 0 {
		t.Fatal("the watch started before idleProbe")
	}

	// The idle timeout: an armed deadline from a command does not put it off or bring it on.
	w = newIdleWatch(server, 150*time.Millisecond, 0)
	ping(0)
	command("under timeouts.idle")
	start = time.Now()
	err := w.wait(c, &watch, start)
	if err == nil || !strings.Contains(err.Error(), "timeouts.idle") {
		t.Fatalf("idle client: %v, want the idle timeout", err)
	}
	if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second {
		t.Fatalf("idle timeout after %v, want 150ms", took)
	}
}
