package proxy

import (
	"net/netip"
	"testing"
)

// TestHostMatches: the server's host patterns against a client address. The addresses are
// only compared as values; nothing is dialed.
func TestHostMatches(t *testing.T) {
	// The addresses below are account host patterns and client addresses matched as values in
	// memory: host matching has to be tested on networks other than loopback too. Nothing here
	// opens a connection to any of them.
	mysql8 := HostRules{CIDR: true}
	resolving := HostRules{ResolveNames: true}
	for _, c := range []struct {
		host, ip string
		want     bool
		rules    HostRules // zero: MariaDB under skip-name-resolve (the sandbox's)
	}{
		{"%", "10.1.2.3", true, HostRules{}},
		{"", "10.1.2.3", true, HostRules{}},
		{"127.0.0.1", "127.0.0.1", true, HostRules{}},
		{"127.0.0.1", "127.0.0.2", false, HostRules{}},
		// localhost is a loopback client only where the server resolves names; under
		// skip-name-resolve it matches unix-socket clients only.
		{"localhost", "127.0.0.1", true, resolving},
		{"localhost", "::1", true, resolving},
		{"LOCALHOST", "127.0.0.1", true, resolving},
		{"localhost", "10.0.0.1", false, resolving},
		{"localhost", "127.0.0.1", false, HostRules{}},
		{"localhost", "127.0.0.1", false, mysql8},
		{"local%", "127.0.0.1", true, resolving},
		{"local%", "127.0.0.1", false, HostRules{}},
		{"10.%", "10.1.2.3", true, HostRules{}},
		{"10.%", "110.1.2.3", false, HostRules{}},
		{"10.1._.3", "10.1.2.3", true, HostRules{}},
		{"10.1._.3", "10.1.22.3", false, HostRules{}},
		{"10.0.0.0/255.0.0.0", "10.200.0.1", true, HostRules{}},
		{"10.0.0.0/255.0.0.0", "11.0.0.1", false, HostRules{}},
		{"10.0.0.0/255.0.255.0", "10.0.0.1", false, HostRules{}}, // not a contiguous mask
		{"10.0.0.1/255.0.0.0", "10.0.0.1", false, HostRules{}},   // host bits set: the server lets nobody in
		{"%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%1%2", "1111:1111:1111:1111:1111:1111:1111:1111", false, HostRules{}},
		{"1%", "1111:1111:1111:1111:1111:1111:1111:1111", true, HostRules{}},
		{"%:1111", "1111:1111:1111:1111:1111:1111:1111:1111", true, HostRules{}},
		{"1_.%.3", "10.1.2.3", true, HostRules{}},
		// IP/prefix-length: a network on MySQL 8.0.23+, a literal pattern on MariaDB.
		{"192.168.0.0/16", "192.168.4.5", true, mysql8},
		{"192.168.0.0/16", "192.169.4.5", false, mysql8},
		{"192.168.0.0/16", "192.168.4.5", false, HostRules{}},
		{"127.0.0.0/8", "127.0.0.1", false, HostRules{}},
		{"127.0.0.0/8", "127.0.0.1", true, mysql8},
		{"127.0.0.0/08", "127.0.0.1", false, mysql8},
		{"127.0.0.0/255.0.0.0", "127.0.0.1", true, mysql8},
		{"db.example.com", "10.0.0.1", false, HostRules{}}, // names are not resolved
		{"%", "::ffff:10.0.0.1", true, HostRules{}},
		{"10.%", "::ffff:10.0.0.1", true, HostRules{}},
	} {
		if got := hostMatches(c.host, netip.MustParseAddr(c.ip), c.rules); got != c.want {
			t.Errorf("host %q, client %s, %+v: %v, want %v", c.host, c.ip, c.rules, got, c.want)
		}
	}
}

// TestAccountOrder: a user's accounts are tried most specific host first, as the server does.
func TestAccountOrder(t *testing.T) {
	p := &Proxy{}
	p.SetAccounts([]Account{{User: "u", Host: "%"}, {User: "u", Host: "127.%"}, {User: "u", Host: "127.0.0.0/255.0.0.0"},
		{User: "u", Host: "127.0.0.1"}, {User: "v", Host: "10.%"}}, HostRules{})
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
		p.SetAccounts(append(rest, Account{User: "v", Host: "10.%"}), HostRules{})
	}
	if a, known := p.accounts.Load().match("v", ip); a != nil || !known {
		t.Errorf("v@10.%% from 127.0.0.1: %+v %v, want known and no match (1130)", a, known)
	}
	if a, known := p.accounts.Load().match("w", ip); a != nil || known {
		t.Errorf("unknown user: %+v %v", a, known)
	}
}

// TestAnonymousAccounts: an anonymous account (an empty user name) takes part in the server's ordering:
// a more specific host than all of a user's own takes the user's login, an equally specific
// one loses to the named account, and a user with no account of its own logs in as the
// anonymous account whose host matches.
func TestAnonymousAccounts(t *testing.T) {
	p := &Proxy{}
	p.SetAccounts([]Account{{User: "named", Host: "%"}, {User: "", Host: "127.0.0.%"}, {User: "exact", Host: "127.0.0.1"},
		{User: "same", Host: "127.0.0.%"}, {User: "", Host: "10.%"}}, HostRules{})
	tab := p.accounts.Load()
	ip := netip.MustParseAddr("127.0.0.1")
	for _, c := range []struct {
		user, wantUser, wantHost string
		known                    bool
	}{
		{"named", "", "127.0.0.%", true}, // shadowed by the anonymous account
		{"exact", "exact", "127.0.0.1", true},
		{"same", "same", "127.0.0.%", true}, // equally specific: the named account first
		{"nobody", "", "127.0.0.%", false},
	} {
		a, known := tab.match(c.user, ip)
		if a == nil || a.User != c.wantUser || a.Host != c.wantHost || known != c.known {
			t.Errorf("%s from 127.0.0.1: %+v known %v, want %q@%q known %v", c.user, a, known, c.wantUser, c.wantHost, c.known)
		}
	}
	if a, _ := tab.match("nobody", netip.MustParseAddr("127.1.0.1")); a != nil {
		t.Errorf("nobody from 127.1.0.1: %+v, want no account", a)
	}
}
