package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// greeted dials addr and reads sluice's greeting (so its session is in its login, reading the
// handshake response). It returns the connection, or the ERR sluice sent in place of it.
func greeted(t *testing.T, addr string) (net.Conn, *mysql.Conn, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	c := mysql.NewConn(nc, 0, 0)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("greeting: %v", err)
	}
	if mysql.IsERR(p) {
		return nc, c, mysql.ParseERR(p)
	}
	return nc, c, nil
}

// sqlErr is the MySQL error err holds, or fails the test.
func sqlErr(t *testing.T, err error) *mysql.SQLError {
	t.Helper()
	var e *mysql.SQLError
	if !errors.As(err, &e) {
		t.Fatalf("%v: want a MySQL error", err)
	}
	return e
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPreLoginMemoryBounded: connections that announce a 65 KiB handshake response and send 10
// bytes of it cost sluice what arrived, not what was announced: the heap grows by a few dozen KiB
// per connection (its buffers), and the logins' budget holds 4 KiB per connection. Before, each
// such connection allocated 64 KiB for the packet up front (3 000 of them: 123 MB of RSS).
func TestPreLoginMemoryBounded(t *testing.T) {
	const n = 1500
	p := testProxy(t, Options{MaxPendingLogins: 2 * n, MaxPendingLoginBytes: 1 << 30, LoginTimeout: time.Minute})
	addr := serveTest(t, p)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		nc, _, err := greeted(t, addr)
		if err != nil {
			t.Fatal(err)
		}
		// 65 KiB + 0 announced (seq 1), then 10 bytes of it.
		if _, err := nc.Write(append([]byte{0x00, 0x04, 0x01, 1}, make([]byte, 10)...)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every connection's 10 bytes read", func() bool {
		conns, bytes := p.PendingLogins()
		return conns == n && bytes >= n*10
	})
	runtime.GC()
	runtime.ReadMemStats(&after)
	conns, bytes := p.PendingLogins()
	perConn := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d connections in their login: heap +%d KiB per connection, %d bytes of packet buffers in all", conns, perConn>>10, bytes)
	if bytes > n*4<<10 {
		t.Errorf("the logins hold %d bytes of packet buffers, want at most 4 KiB per connection (%d)", bytes, n*4<<10)
	}
	// A session's own buffers (16 KiB to read, 16 KiB to write) and its state, not the
	// 64 KiB announced.
	if perConn > 56<<10 {
		t.Errorf("heap grew by %d KiB per connection in its login", perConn>>10)
	}
}

// TestPendingLoginsCapped: past limits.max_pending_logins, a new connection gets error 1040 in
// place of the greeting; once a login ends, connections are greeted again.
func TestPendingLoginsCapped(t *testing.T) {
	p := testProxy(t, Options{MaxPendingLogins: 3, LoginTimeout: time.Minute})
	addr := serveTest(t, p)
	var first net.Conn
	for i := range 3 {
		nc, _, err := greeted(t, addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if i == 0 {
			first = nc
		}
	}
	_, _, err := greeted(t, addr)
	if e := sqlErr(t, err); e.Code != mysql.ErrConCount || e.State != "08004" {
		t.Fatalf("the fourth connection: %v, want 1040 (08004)", e)
	}
	first.Close()
	waitFor(t, "a login slot freed", func() bool { c, _ := p.PendingLogins(); return c < 3 })
	if _, _, err := greeted(t, addr); err != nil {
		t.Fatalf("after one login ended: %v", err)
	}
}

// TestPendingLoginBytesCapped: the logins' packet buffers together are bounded by
// limits.max_pending_login_bytes: a login whose packet would pass it gets 1040.
func TestPendingLoginBytesCapped(t *testing.T) {
	p := testProxy(t, Options{MaxPendingLoginBytes: 100 << 10, LoginTimeout: time.Minute})
	addr := serveTest(t, p)
	// Two connections each send 60 KiB of a 64 KiB handshake response: the second passes the
	// 100 KiB budget.
	announce := func(nc net.Conn) {
		if _, err := nc.Write(append([]byte{0x00, 0x00, 0x01, 1}, make([]byte, 60<<10)...)); err != nil {
			t.Fatal(err)
		}
	}
	nc1, _, err := greeted(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	announce(nc1)
	waitFor(t, "the first 60 KiB read", func() bool { _, b := p.PendingLogins(); return b >= 60<<10 })
	nc2, c2, err := greeted(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	announce(nc2)
	c2.SetSeq(2)
	pk, err := c2.ReadPacket()
	if err != nil || !mysql.IsERR(pk) {
		t.Fatalf("the second login: % x %v, want an ERR", pk, err)
	}
	if e := mysql.ParseERR(pk); e.Code != mysql.ErrConCount {
		t.Fatalf("the second login: %v, want 1040", e)
	}
	if _, b := p.PendingLogins(); b > 100<<10 {
		t.Errorf("the logins hold %d bytes, past the 100 KiB budget", b)
	}
}

// TestLoginTimeout: a client that does not finish its login within timeouts.login gets error
// 1159 and is closed, whether it sends nothing or a byte at a time.
func TestLoginTimeout(t *testing.T) {
	p := testProxy(t, Options{LoginTimeout: 300 * time.Millisecond})
	addr := serveTest(t, p)
	for _, drip := range []bool{false, true} {
		nc, c, err := greeted(t, addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if drip {
			go func() {
				for _, b := range []byte{0x40, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0} {
					if _, err := nc.Write([]byte{b}); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
		}
		c.SetSeq(1)
		if drip {
			// The ERR follows the bytes sent so far: read straight from the socket.
			buf, _ := io.ReadAll(nc)
			if len(buf) < 5 || buf[4] != 0xff {
				t.Fatalf("drip: sluice sent % x, want an ERR", buf)
			}
			if e := mysql.ParseERR(buf[4:]); e.Code != mysql.ErrNetReadInterrupted {
				t.Fatalf("drip: %v, want 1159", e)
			}
		} else {
			pk, err := c.ReadPacket()
			if err != nil || !mysql.IsERR(pk) {
				t.Fatalf("silent client: % x %v, want an ERR", pk, err)
			}
			if e := mysql.ParseERR(pk); e.Code != mysql.ErrNetReadInterrupted || e.State != "08S01" {
				t.Fatalf("silent client: %v, want 1159 (08S01)", e)
			}
			if _, err := c.ReadPacket(); err == nil || os.IsTimeout(err) {
				t.Fatalf("after the ERR: %v, want the connection closed", err)
			}
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("drip %v: closed after %s, want about 300ms", drip, d)
		}
	}
	waitFor(t, "no login pending", func() bool { c, b := p.PendingLogins(); return c == 0 && b == 0 })
}
