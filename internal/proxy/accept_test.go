package proxy

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// failingListener fails its first Accept calls as a process out of file descriptors does.
type failingListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptErrorsDoNotStopTheEndpoint: EMFILE from accept (and any error other than a closed
// listener) is waited out; the endpoint goes on accepting. Before, Serve returned the error and
// the whole proxy shut down.
func TestAcceptErrorsDoNotStopTheEndpoint(t *testing.T) {
	p := testProxy(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &failingListener{Listener: ln}
	fl.fails.Store(5)
	done := make(chan error, 1)
	go func() { done <- p.Serve("rw", fl) }()
	nc, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := mysql.NewConn(nc, 0, 0).ReadPacket(); err != nil {
		t.Fatalf("no handshake after the accept errors: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned: %v", err)
	default:
	}
	ln.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after the listener closed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the listener closed")
	}
}
