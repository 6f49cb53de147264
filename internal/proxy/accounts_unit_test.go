package proxy

import (
	"net/netip"
	"testing"
)

// TestHostMatches: the server's host patterns against a client address. The addresses are
// only compared as values; nothing is dialed.
func TestHostMatches(t *testing.T) {
	for _, c := range []struct {
		host, ip string
		want     bool
	}{
		{"%", "10.1.2.3", true},
		{"", "10.1.2.3", true},
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "127.0.0.2", false},
		{"localhost", "127.0.0.1", true},
		{"localhost", "::1", true},
		{"LOCALHOST", "127.0.0.1", true},
		{"localhost", "10.0.0.1", false},
		{"10.%", "10.1.2.3", true},
		{"10.%", "110.1.2.3", false},
		{"10.1._.3", "10.1.2.3", true},
		{"10.1._.3", "10.1.22.3", false},
		{"10.0.0.0/255.0.0.0", "10.200.0.1", true},
		{"10.0.0.0/255.0.0.0", "11.0.0.1", false},
		{"10.0.0.0/255.0.255.0", "10.0.0.1", false}, // not a contiguous mask
		{"10.0.0.1/255.0.0.0", "10.0.0.1", false},   // host bits set: the server lets nobody in
		{"%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%2", "1111:1111:1111:1111:1111:1111:1111:1111", false},
		{"1%", "1111:1111:1111:1111:1111:1111:1111:1111", true},
		{"%:1111", "1111:1111:1111:1111:1111:1111:1111:1111", true},
		{"1_.%.3", "10.1.2.3", true},
		{"192.168.0.0/16", "192.168.4.5", true},
		{"192.168.0.0/16", "192.169.4.5", false},
		{"db.example.com", "10.0.0.1", false}, // names are not resolved
		{"%", "::ffff:10.0.0.1", true},
		{"10.%", "::ffff:10.0.0.1", true},
	} {
		if got := hostMatches(c.host, netip.MustParseAddr(c.ip)); got != c.want {
			t.Errorf("host %q, client %s: %v, want %v", c.host, c.ip, got, c.want)
		}
	}
}

// TestAccountOrder: a user's accounts are tried most specific host first, as the server does.
func TestAccountOrder(t *testing.T) {
	p := &Proxy{}
	p.SetAccounts([]Account{{User: "u", Host: "%"}, {User: "u", Host: "127.%"}, {User: "u", Host: "127.0.0.0/255.0.0.0"},
		{User: "u", Host: "127.0.0.1"}, {User: "v", Host: "10.%"}})
	ip := netip.MustParseAddr("127.0.0.1")
	for _, want := range []string{"127.0.0.1", "127.0.0.0/255.0.0.0", "127.%", "%"} {
		a, known := p.accounts.Load().match("u", ip)
		if a == nil || !known || a.Host != want {
			t.Fatalf("best match %+v, want host %s", a, want)
		}
		// Drop it, as the research note did, and look again.
		var rest []Account
		for _, x := range p.accounts.Load().byUser["u"] {
			if x.Host != want {
				rest = append(rest, x)
			}
		}
		p.SetAccounts(append(rest, Account{User: "v", Host: "10.%"}))
	}
	if a, known := p.accounts.Load().match("v", ip); a != nil || !known {
		t.Errorf("v@10.%% from 127.0.0.1: %+v %v, want known and no match (1130)", a, known)
	}
	if a, known := p.accounts.Load().match("w", ip); a != nil || known {
		t.Errorf("unknown user: %+v %v", a, known)
	}
}
