package cli

import (
	"io"
	"testing"
)

// TestSandboxProxyProtocolFlag: --proxy-protocol asks the sandbox for nodes that take the PROXY
// protocol (and a sluice.yaml that sends it); without it, none.
func TestSandboxProxyProtocolFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{{nil, false}, {[]string{"--proxy-protocol"}, true}} {
		var c clusterFlags
		f := newSandboxFlags("up", "", io.Discard, io.Discard)
		c.register(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := c.options("/d", 0, 0, nil).ProxyProtocol; got != tc.want {
			t.Errorf("%q: ProxyProtocol %v, want %v", tc.args, got, tc.want)
		}
	}
}
