package backend

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// tcpPair returns both ends of a loopback TCP connection: the kernel's buffers and resets are
// what the goodbye is about, so no net.Pipe.
func tcpPair(t *testing.T) (client, server net.Conn) {
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
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestQuitSendsComQuit: Quit sends exactly one COM_QUIT packet (sequence id 0), or that packet
// in one stored frame under the compressed protocol, and closes: the node reads it, then EOF.
func TestQuitSendsComQuit(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		client, server := tcpPair(t)
		c := &Conn{Conn: mysql.NewConn(client, 0, 4<<10)}
		if compressed {
			if err := c.EnableCompression(mysql.CompressClient, 1); err != nil {
				t.Fatal(err)
			}
		}
		c.SetSeq(7) // whatever the last command left: a command starts at 0
		c.Quit()
		_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(server)
		if err != nil {
			t.Fatal(err)
		}
		want := []byte{1, 0, 0, 0, mysql.ComQuit}
		if compressed {
			want = []byte{5, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, mysql.ComQuit}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("compressed %v: the node read % x, want % x", compressed, got, want)
		}
		// What the compressed protocol's own reader makes of it: one COM_QUIT.
		if compressed {
			r := mysql.NewConn(&replay{b: got}, 0, 0)
			if err := r.EnableCompression(mysql.CompressServer, 1); err != nil {
				t.Fatal(err)
			}
			p, err := r.ReadPacket()
			if err != nil || !bytes.Equal(p, []byte{mysql.ComQuit}) || r.Seq() != 1 {
				t.Errorf("the compressed frame reads as % x (seq %d), %v", p, r.Seq(), err)
			}
		}
	}
}

// replay is a net.Conn that reads b and writes nowhere.
type replay struct {
	net.Conn
	b []byte
}

func (r *replay) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// TestQuitPendingReadsTheRest: a node in the middle of an answer larger than the sockets'
// buffers reads the COM_QUIT only once the answer is out: QuitPending reads it all, so the
// node's writes succeed and it sees the COM_QUIT, then QuitPending returns once the node
// closed (not at its bound). A node that never closes is left at the bound.
func TestQuitPendingReadsTheRest(t *testing.T) {
	client, server := tcpPair(t)
	c := &Conn{Conn: mysql.NewConn(client, 0, 4<<10)}
	const answer = 32 << 20
	nodeSaw := make(chan error, 1)
	go func() {
		// The node: the rest of its answer, then the next command, then it closes.
		_ = server.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := server.Write(make([]byte, answer)); err != nil {
			nodeSaw <- err
			return
		}
		var cmd [5]byte
		_, err := io.ReadFull(server, cmd[:])
		if err == nil && cmd != quitPlain {
			err = io.ErrUnexpectedEOF
		}
		server.Close()
		nodeSaw <- err
	}()
	time.Sleep(50 * time.Millisecond) // the node is blocked writing: the buffers are full
	start := time.Now()
	c.QuitPending(5 * time.Second)
	took := time.Since(start)
	if err := <-nodeSaw; err != nil {
		t.Fatalf("the node: %v", err)
	}
	if took > 3*time.Second {
		t.Errorf("QuitPending took %s: it waited for its bound, not for the node to close", took)
	}

	client, server = tcpPair(t)
	c = &Conn{Conn: mysql.NewConn(client, 0, 4<<10)}
	start = time.Now()
	c.QuitPending(200 * time.Millisecond)
	if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second {
		t.Errorf("against a node that never closes, QuitPending returned after %s, want its bound (200ms)", took)
	}
	_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(server); err != nil || !bytes.Equal(got, quitPlain[:]) {
		t.Errorf("the node read % x, %v", got, err)
	}
}

// TestQuitBrokenReturnsAtOnce: Quit on a connection already closed (a killed session's) does not
// wait.
func TestQuitBrokenReturnsAtOnce(t *testing.T) {
	client, _ := tcpPair(t)
	c := &Conn{Conn: mysql.NewConn(client, 0, 4<<10)}
	client.Close()
	start := time.Now()
	c.Quit()
	c.QuitPending(time.Second)
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Quit and QuitPending on a closed connection took %s", took)
	}
}
