package proxy

import (
	"net/netip"
	"testing"
)

// TestAllowMappedForms: an allow entry in IPv6 form covers the IPv4 clients it maps
// (::ffff:127.0.0.0/104 is 127.0.0.0/8; ::/0 is every client), whichever form the client's
// address arrives in. (config.ParseAllow also rewrites a mapped network to IPv4: its test.)
func TestAllowMappedForms(t *testing.T) {
	for _, c := range []struct {
		allow, client string
		want          bool
	}{
		{"::ffff:127.0.0.0/104", "127.0.0.1", true},
		{"::ffff:127.0.0.0/104", "::ffff:127.0.0.1", true},
		{"::ffff:127.0.0.0/104", "10.0.0.1", false},
		{"::ffff:127.0.0.1/128", "127.0.0.1", true},
		{"::/0", "127.0.0.1", true},
		{"::/0", "::1", true},
		{"::ffff:0:0/96", "192.0.2.1", true},
		{"2001:db8::/32", "127.0.0.1", false},
		{"127.0.0.0/8", "::ffff:127.0.0.2", true},
		{"127.0.0.0/8", "::1", false},
		{"0.0.0.0/0", "::1", false},
	} {
		p := netip.MustParsePrefix(c.allow)
		ep := &endpoint{}
		ep.admit.Store(&admission{allow: []netip.Prefix{p}})
		if got := ep.allowed(netip.MustParseAddr(c.client)); got != c.want {
			t.Errorf("allow %s, client %s: allowed = %v, want %v", c.allow, c.client, got, c.want)
		}
	}
}
