package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
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
		Routing: route.Settings{Mode: route.ReadWrite, Weights: []int{100}, Policy: route.LeastActive{}}}}
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
