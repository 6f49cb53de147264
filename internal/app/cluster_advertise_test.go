package app

import "testing"

// A node whose admin API listens on every interface must not tell the others to dial [::]:PORT
// (their own host): it names its host.
func TestAdvertised(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"[::]:9090", "db7:9090"},
		{"0.0.0.0:9090", "db7:9090"},
		{":9090", "db7:9090"},
		{"127.0.0.1:9090", "127.0.0.1:9090"},
		{"10.0.0.5:9090", "10.0.0.5:9090"},
		{"[fe80::1]:9090", "[fe80::1]:9090"},
		{"", ""},
	} {
		if got := advertised(c.addr, "db7"); got != c.want {
			t.Errorf("advertised(%q) = %q, want %q", c.addr, got, c.want)
		}
	}
}
