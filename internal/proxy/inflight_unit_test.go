package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Reads waiting on a hung replica (inflight.go), over a two-node session whose replica is one
// end of a net.Pipe played by the test: it reads the command and answers only when told.

// hungReplica is a two-node session (weights: every read to replica1) whose replica is a pipe,
// tracked by its proxy as a live session (the watcher finds it there).
type hungReplica struct {
	*twoNodeSession
	primary *memConn
	far     net.Conn // the replica's side of the pipe
}

func newHungReplica(t *testing.T) *hungReplica {
	t.Helper()
	near, far := net.Pipe()
	t.Cleanup(func() { near.Close(); far.Close() })
	_ = far.SetDeadline(time.Now().Add(20 * time.Second))
	primary := &memConn{}
	r := newTwoNodeSession(t, []int{0, 100}, primary, near)
	r.s.nodes.publish()
	p := r.s.p
	p.mu.Lock()
	p.sessions[r.s] = struct{}{}
	p.mu.Unlock()
	return &hungReplica{twoNodeSession: r, primary: primary, far: far}
}

// start runs the client's next command (stmt) in its own goroutine; the returned channel gives
// its outcome. The replica's side has read the command when start returns.
func (h *hungReplica) start(t *testing.T, stmt string) <-chan error {
	t.Helper()
	h.client.load(packets(0, append([]byte{mysql.ComQuery}, stmt...)))
	done := make(chan error, 1)
	go func() {
		_, err := h.command()
		done <- err
	}()
	var hdr [4]byte
	if _, err := io.ReadFull(h.far, hdr[:]); err != nil {
		t.Fatalf("the replica did not get the command: %v", err)
	}
	if _, err := io.ReadFull(h.far, make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)); err != nil {
		t.Fatal(err)
	}
	return done
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the command is still waiting")
		return nil
	}
}

// TestDownReplicaReadRunsElsewhere: a read waits on replica1, which never answers: for the
// read's answer, or for the replay of the session's state (a schema the connection does not
// have yet) before it; the monitor marks replica1 down: the watcher interrupts the wait at
// once, the read runs on the primary (the only node left), the client gets the primary's
// answer and no error, and the interrupted connection is closed and dropped.
func TestDownReplicaReadRunsElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*hungReplica)
		// primary is what the primary answers before the read's answer (the schema's OK).
		primary []byte
	}{
		{"waiting for the answer", nil, nil},
		{"waiting for the session state's replay", func(h *hungReplica) { h.s.nodes.state().DB = "other" }, okPacket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHungReplica(t)
			if tc.setup != nil {
				tc.setup(h)
			}
			p := h.s.p
			ctx, cancel := context.WithCancel(context.Background())
			watching := make(chan struct{})
			go func() { defer close(watching); p.WatchDown(ctx) }()
			defer func() { cancel(); <-watching }()

			answer := resultSet(1)
			h.primary.load(append(append([]byte(nil), tc.primary...), answer...))
			done := h.start(t, "SELECT v FROM t WHERE id = 42")
			start := time.Now()
			p.topo.NodeFailed(1, errors.New("test: found down"))
			if err := wait(t, done); err != nil {
				t.Fatalf("the session ended: %v", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the read ran elsewhere %v after its node was found down", took)
			}
			if !bytes.Equal(h.client.out, answer) {
				t.Fatalf("client got %x, want the primary's answer %x", h.client.out, answer)
			}
			if !bytes.Contains(h.primary.out, []byte("SELECT v FROM t WHERE id = 42")) {
				t.Fatalf("the primary got %q, not the read", h.primary.out)
			}
			if h.s.nodes.at(1) != nil {
				t.Fatal("the interrupted connection to replica1 is still the session's")
			}
			if _, err := h.far.Read(make([]byte, 1)); err == nil {
				t.Fatal("the interrupted connection to replica1 was not closed")
			}
		})
	}
}

// TestNotInterrupted: what a node found down does not interrupt: an answer that began to
// arrive (it goes to the client; the node's failure in its middle would end the client's
// connection, as before), and reads that must not run twice elsewhere (in a transaction on
// the replica). Each one finishes when the replica answers.
func TestNotInterrupted(t *testing.T) {
	answer := resultSet(1)
	head, column := answer[:5], answer[5:5+4+len(benchColumn)]
	for _, tc := range []struct {
		name  string
		setup func(*hungReplica)
		// begun: the replica sends the answer's first packets before it is found down.
		begun bool
	}{
		{"the answer began to arrive", nil, true},
		{"in a transaction on the replica", func(h *hungReplica) { h.s.rs.InTx, h.s.rs.TxNode = true, 1 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHungReplica(t)
			if tc.setup != nil {
				tc.setup(h)
			}
			done := h.start(t, "SELECT v FROM t WHERE id = 42")
			var sent []byte
			if tc.begun {
				// The column count, then its definition: read only after the answer was claimed.
				for _, b := range [][]byte{head, column} {
					if _, err := h.far.Write(b); err != nil {
						t.Fatal(err)
					}
					sent = append(sent, b...)
				}
			}
			p := h.s.p
			p.topo.NodeFailed(1, errors.New("test: found down"))
			if n := p.interruptReads(p.topo.Snapshot().Nodes[1]); n != 0 {
				t.Fatalf("%d reads interrupted, want none", n)
			}
			if _, err := h.far.Write(answer[len(sent):]); err != nil {
				t.Fatal(err)
			}
			if err := wait(t, done); err != nil {
				t.Fatalf("the session ended: %v", err)
			}
			if !bytes.Equal(h.client.out, answer) {
				t.Fatalf("client got %x, want the replica's answer %x", h.client.out, answer)
			}
		})
	}
}

// TestArmLooksAtTheTopology: a read decided before its replica was found down, armed after the
// watcher's sweep: arm sees the node down and refuses (the read goes elsewhere, unsent), and
// leaves the flight idle.
func TestArmLooksAtTheTopology(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &memConn{})
	c := r.s.nodes.at(1)
	if !r.s.nodes.arm(c) {
		t.Fatal("arm refused a node that is up")
	}
	if c.flight.Disarm() {
		t.Fatal("an armed flight nobody interrupted reports an interruption")
	}
	r.s.p.topo.NodeFailed(1, errors.New("test: found down"))
	if r.s.nodes.arm(c) {
		t.Fatal("arm accepted a node that is down")
	}
	if c.flight.Interrupt() {
		t.Fatal("arm left the flight armed after refusing")
	}
}

// TestArmedReadDoesNotAllocate: a read on a replica, armed, claimed and disarmed on every
// statement, allocates nothing.
func TestArmedReadDoesNotAllocate(t *testing.T) {
	replica := &memConn{}
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, replica)
	ex := textQuery(resultSet(1))
	run := func() {
		r.client.load(ex.request)
		replica.load(ex.response)
		if _, err := r.command(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.client.out, ex.response) {
			t.Fatalf("client got %x", r.client.out)
		}
	}
	run()
	if r.s.view.lastRoute().node != 1 {
		t.Fatalf("the read ran on node %d, not the replica", r.s.view.lastRoute().node)
	}
	assertNoAllocs(t, "an armed read on a replica", run)
}

// TestTimedOutReadRunsElsewhere: a read on a replica that does not answer within
// timeouts.read runs on another node at once, and the replica is marked down (which wakes
// the other reads waiting there). It is not sent to the same replica again on a new
// connection, as a kept connection that broke is: a node that did not answer would keep the
// new connection waiting for its greeting too (up to timeouts.connect).
func TestTimedOutReadRunsElsewhere(t *testing.T) {
	h := newHungReplica(t)
	p := h.s.p
	p.opts.ReadTimeout = 100 * time.Millisecond
	// replica1's address: a node that takes connections and never greets (hung).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	p.topo.Snapshot().Nodes[1].Address = ln.Addr().String() // before any dial: nothing reads it yet
	answer := resultSet(1)
	h.primary.load(answer)
	start := time.Now()
	if err := wait(t, h.start(t, "SELECT v FROM t WHERE id = 42")); err != nil {
		t.Fatalf("the session ended: %v", err)
	}
	if !bytes.Equal(h.client.out, answer) {
		t.Fatalf("client got %x, want the primary's answer %x", h.client.out, answer)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("the timed-out read was sent to the same replica again, on a new connection")
	default:
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("the read took %v with timeouts.read 100ms", took)
	}
	if p.topo.Snapshot().Up[1] {
		t.Error("the replica that did not answer within timeouts.read is still up")
	}
}

// BenchmarkReadOnReplica: a one-row read through a two-node session, on the primary (never
// armed) and on the replica (armed, claimed and disarmed: what interruptible reads add).
func BenchmarkReadOnReplica(b *testing.B) {
	for _, tc := range []struct {
		name    string
		weights []int
	}{{"primary", []int{100, 0}}, {"replica, armed", []int{0, 100}}} {
		b.Run(tc.name, func(b *testing.B) {
			primary, replica := &memConn{}, &memConn{}
			r := newTwoNodeSession(b, tc.weights, primary, replica)
			ex := textQuery(resultSet(1))
			b.ReportAllocs()
			for b.Loop() {
				r.client.load(ex.request)
				primary.load(ex.response)
				replica.load(ex.response)
				if _, err := r.command(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
