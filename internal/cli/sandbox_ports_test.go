package cli

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSandboxPortsInUse: sluice sandbox (and sandbox up) finds a taken admin or endpoint port
// before it starts anything, names the flag that chooses it, and words the message without a
// stray space ("sluice sandbox: ...", not "sluice sandbox : ...").
func TestSandboxPortsInUse(t *testing.T) {
	hold := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	admin, ro := hold(), hold()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sandbox", "--base-port", "0", "--rw", "0", "--ro", "0", "--admin-port", admin},
			"sluice sandbox: port " + admin + " (admin API) is already in use on 127.0.0.1: stop what uses it, or choose another with --admin-port (0 = a free port)\n"},
		{[]string{"sandbox", "--base-port", "0", "--rw", "0", "--ro", "127.0.0.1:" + ro, "--admin-port", admin},
			"sluice sandbox: ports " + ro + " (endpoint ro), " + admin + " (admin API) are already in use on 127.0.0.1: stop what uses them, or choose others with --ro, --admin-port (0 = free ports)\n"},
		{[]string{"sandbox", "up", "--dir", filepath.Join(t.TempDir(), "c"), "--base-port", "0", "--rw-port", "0", "--ro-port", ro, "--admin-port", "0"},
			"sluice sandbox up: port " + ro + " (endpoint ro) is already in use on 127.0.0.1: stop what uses it, or choose another with --ro-port (0 = a free port)\n"},
	} {
		var out, errOut strings.Builder
		code := Run(c.args, &out, &errOut)
		if code != 1 || errOut.String() != c.want || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out.String(), errOut.String(), c.want)
		}
	}
}
