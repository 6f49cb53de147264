package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// tlsTestProxy is testProxy with TLS offered to clients (optional).
func tlsTestProxy(t *testing.T, opts Options) *Proxy {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	opts.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	topo, err := topology.New(topology.Options{Nodes: []topology.Node{{Name: "primary", Address: "127.0.0.1:1", Role: topology.Primary}}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Topology = topo
	opts.Endpoints = []Endpoint{{Name: "rw", Listen: "127.0.0.1:0", TLS: TLSOptional,
		Routing: route.Settings{Mode: route.ReadWrite, Weights: []int{100}, Policy: &route.LeastActive{}}}}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSHandshakeBytesBudgeted: what a client sends in its TLS handshake, before its login, is
// charged to the logins' budget (limits.max_pending_login_bytes) as the packets of a plain
// login are: Go's TLS server buffers a ClientHello of up to 64 KiB as it arrives. Before, 100
// connections each sending 60 KiB of a ClientHello were all kept (about 80 KiB of heap each)
// with a budget of 1 MiB, which they passed six times over, and the budget showed nothing.
func TestTLSHandshakeBytesBudgeted(t *testing.T) {
	const n = 100
	p := tlsTestProxy(t, Options{MaxPendingLogins: 2 * n, MaxPendingLoginBytes: 1 << 20, LoginTimeout: time.Minute})
	addr := serveTest(t, p)
	ssl := mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
		Capabilities:  mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientSSL | mysql.ClientPluginAuth,
		MaxPacketSize: 1 << 24, Charset: 45, SSLRequest: true})
	// A ClientHello announced at 64 KiB - 1, sent in records of 16 KiB: 60 KiB of it.
	hello := []byte{1, 0x00, 0xff, 0xff}
	hello = append(hello, make([]byte, 60<<10-len(hello))...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	for range n {
		nc, c, err := greeted(t, addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		c.SetSeq(1)
		if err := c.WritePacketFlush(ssl); err != nil {
			t.Fatal(err)
		}
		var out []byte
		for rest := hello; len(rest) > 0; {
			m := min(len(rest), 16<<10)
			out = append(out, 0x16, 3, 1, byte(m>>8), byte(m))
			out = append(out, rest[:m]...)
			rest = rest[m:]
		}
		// The connection may be refused part way: what is left unwritten does not matter.
		_ = nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, _ = nc.Write(out)
	}
	// Every connection's bytes read, or the connection refused.
	time.Sleep(500 * time.Millisecond)
	waitFor(t, "the ClientHellos read", func() bool {
		runtime.GC()
		runtime.ReadMemStats(&after)
		return true
	})
	pending, bytes := p.PendingLogins()
	perConn := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("%d of %d connections pending, budget %d bytes used, heap +%d KiB per connection", pending, n, bytes, perConn>>10)
	if bytes > 1<<20 {
		t.Errorf("the budget shows %d bytes, past its 1 MiB", bytes)
	}
	// 1 MiB holds 17 ClientHellos of 60 KiB: the others must have been refused.
	if pending > 20 {
		t.Errorf("%d connections kept their 60 KiB ClientHellos under a budget of 1 MiB (%d bytes charged)", pending, bytes)
	}
	for _, nc := range conns {
		nc.Close()
	}
	waitFor(t, "no login pending", func() bool { c, b := p.PendingLogins(); return c == 0 && b == 0 })
}

// TestFailedLoginsReleaseTheirShare: however a login ends before its password is proven (the
// client leaves after the greeting, in the middle of a packet, of its TLS handshake, of an auth
// switch or of caching_sha2_password's key exchange; a malformed or oversized packet; a wrong
// password; the login timeout), its connection leaves the pending count and its bytes the
// budget: after many of each, both are back to 0.
func TestFailedLoginsReleaseTheirShare(t *testing.T) {
	p := tlsTestProxy(t, Options{LoginTimeout: 200 * time.Millisecond,
		Users: []User{{Name: "app", Password: "pw", HasPassword: true}, {Name: "sha", Password: "pw", HasPassword: true, Plugin: mysql.AuthCachingSHA2}}})
	addr := serveTest(t, p)
	response := func(user, plugin string, caps uint32) []byte {
		return mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
			Capabilities:  mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientPluginAuth | caps,
			MaxPacketSize: 1 << 24, Charset: 45, User: user, AuthResponse: []byte("12345678901234567890"), AuthPlugin: plugin})
	}
	ways := map[string]func(nc net.Conn, c *mysql.Conn){
		"leaves after the greeting": func(nc net.Conn, c *mysql.Conn) {},
		"leaves in a packet": func(nc net.Conn, c *mysql.Conn) {
			_, _ = nc.Write(append([]byte{0x00, 0x80, 0, 1}, make([]byte, 20<<10)...))
			time.Sleep(20 * time.Millisecond)
		},
		"oversized packet": func(nc net.Conn, c *mysql.Conn) {
			_, _ = nc.Write(append([]byte{0xff, 0xff, 0x01, 1}, make([]byte, 70<<10)...))
			_, _ = c.ReadPacket()
		},
		"malformed response": func(nc net.Conn, c *mysql.Conn) {
			c.SetSeq(1)
			_ = c.WritePacketFlush([]byte{1, 2, 3})
			_, _ = c.ReadPacket()
		},
		"wrong password": func(nc net.Conn, c *mysql.Conn) {
			c.SetSeq(1)
			_ = c.WritePacketFlush(response("app", mysql.AuthNativePassword, 0))
			_, _ = c.ReadPacket()
		},
		"leaves in an auth switch": func(nc net.Conn, c *mysql.Conn) {
			c.SetSeq(1)
			_ = c.WritePacketFlush(response("ghost", "dialog", 0))
			_, _ = c.ReadPacket()
		},
		"leaves in the key exchange": func(nc net.Conn, c *mysql.Conn) {
			c.SetSeq(1)
			_ = c.WritePacketFlush(response("sha", mysql.AuthCachingSHA2, 0))
			if p, err := c.ReadPacket(); err != nil || len(p) != 2 {
				return // full authentication requested
			}
			_ = c.WritePacketFlush([]byte{mysql.CachingSHA2RequestKey})
			_, _ = c.ReadPacket()
		},
		"leaves in the TLS handshake": func(nc net.Conn, c *mysql.Conn) {
			c.SetSeq(1)
			_ = c.WritePacketFlush(response("", "", mysql.ClientSSL)[:32])
			_, _ = nc.Write([]byte{0x16, 3, 1, 0x40, 0, 1, 0, 0x3f, 0xfc})
			time.Sleep(20 * time.Millisecond)
		},
		"login timeout in TLS": func(nc net.Conn, c *mysql.Conn) {
			c.SetSeq(1)
			_ = c.WritePacketFlush(response("", "", mysql.ClientSSL)[:32])
			_, _ = nc.Write([]byte{0x16, 3, 1, 0x40, 0, 1, 0, 0x3f, 0xfc})
			_, _ = io.ReadAll(nc)
		},
	}
	for name, way := range ways {
		for range 20 {
			nc, c, err := greeted(t, addr)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			way(nc, c)
			nc.Close()
		}
	}
	waitFor(t, "every login's share released", func() bool { c, b := p.PendingLogins(); return c == 0 && b == 0 })
}
