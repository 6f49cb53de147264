package proxy

import (
	"net"
	"net/netip"
	"testing"

	"github.com/sluicedb/sluice/internal/proxyproto"
	"github.com/sluicedb/sluice/internal/topology"
)

// TestProxiedClient: a pooled connection's variant names the client address only for a node
// told of it (proxy_protocol on): there, sessions from two addresses get different variants,
// and from one address (any port) the same; elsewhere every address shares them.
func TestProxiedClient(t *testing.T) {
	p := &Proxy{}
	a := &login{from: netip.MustParseAddrPort("127.0.0.2:40000"), to: netip.MustParseAddrPort("127.0.0.1:6033")}
	a2 := &login{from: netip.MustParseAddrPort("127.0.0.2:40001"), to: a.to}
	b := &login{from: netip.MustParseAddrPort("127.0.0.4:40000"), to: a.to}
	off := &topology.Node{Name: "n", Address: "127.0.0.1:3306"}
	on := &topology.Node{Name: "n", Address: "127.0.0.1:3306", ProxyProtocol: proxyproto.V2}
	if p.poolVariant(a, off, false) != p.poolVariant(b, off, false) {
		t.Error("without proxy_protocol, two client addresses got different variants")
	}
	if p.poolVariant(a, on, false) == p.poolVariant(b, on, false) {
		t.Error("with proxy_protocol, two client addresses share a variant")
	}
	if p.poolVariant(a, on, false) != p.poolVariant(a2, on, false) {
		t.Error("with proxy_protocol, two ports of one address got different variants")
	}
	if got := p.poolVariant(a, on, false).Client; got != netip.MustParseAddr("127.0.0.2") {
		t.Errorf("variant client %v", got)
	}
}

// TestAddrPort: what a PROXY header names of a client connection: its TCP address, an
// IPv4-mapped one as IPv4; nothing for a connection that is not TCP.
func TestAddrPort(t *testing.T) {
	mapped := &net.TCPAddr{IP: net.ParseIP("::ffff:127.1.2.3"), Port: 5}
	if got := addrPort(mapped); got != netip.MustParseAddrPort("127.1.2.3:5") {
		t.Errorf("mapped: %v", got)
	}
	if got := addrPort(&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 6}); got != netip.MustParseAddrPort("[2001:db8::1]:6") {
		t.Errorf("v6: %v", got)
	}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	if got := addrPort(c1.RemoteAddr()); got.IsValid() {
		t.Errorf("pipe: %v", got)
	}
}
