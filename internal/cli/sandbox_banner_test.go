package cli

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/sandbox"
)

// TestSandboxBannersCallTheExecutable: the commands the sandbox's banners suggest call sluice
// by the running executable's full path (it is often not on PATH), quoted for the shell when
// needed; never a bare "sluice ..." while the path is known.
func TestSandboxBannersCallTheExecutable(t *testing.T) {
	c := &sandbox.Cluster{Dir: "/tmp/sbx", Flavor: sandbox.FlavorMariaDB, Version: "10.11.6", RW: "127.0.0.1:6033", RO: "127.0.0.1:6034",
		Admin: "127.0.0.1:6080", Nodes: []sandbox.Node{
			{Name: "primary", Role: sandbox.RolePrimary, Address: "127.0.0.1:23306"},
			{Name: "replica1", Role: sandbox.RoleReplica, Address: "127.0.0.1:23307"}}}
	self := commandFor("/home/me/src/sluice/.cache/bin/sluice", nil)
	var run, up strings.Builder
	printConnectInfo(&run, c, self)
	printUpInfo(&up, c, self)
	for _, w := range []struct {
		name, out string
		want      []string
	}{
		{"sluice sandbox", run.String(), []string{
			"(/home/me/src/sluice/.cache/bin/sluice ctl --admin 127.0.0.1:6080 status)",
			"From another terminal: /home/me/src/sluice/.cache/bin/sluice sandbox status --dir /tmp/sbx"}},
		{"sluice sandbox up", up.String(), []string{
			"run the proxy:   /home/me/src/sluice/.cache/bin/sluice serve --config /tmp/sbx/sluice.yaml",
			"(/home/me/src/sluice/.cache/bin/sluice ctl --config /tmp/sbx/sluice.yaml status)",
			"stop it all:     /home/me/src/sluice/.cache/bin/sluice sandbox down --dir /tmp/sbx"}},
	} {
		for _, s := range w.want {
			if !strings.Contains(w.out, s) {
				t.Errorf("%s's banner lacks %q:\n%s", w.name, s, w.out)
			}
		}
		if bare := regexp.MustCompile(`(^|[\s(])sluice (ctl|serve|sandbox \w+ --dir)`).FindString(w.out); bare != "" {
			t.Errorf("%s's banner suggests a bare %q:\n%s", w.name, bare, w.out)
		}
	}
	for _, c := range []struct {
		path string
		err  error
		want string
	}{
		{"/usr/local/bin/sluice", nil, "/usr/local/bin/sluice"},
		{"/opt/my tools/sluice", nil, "'/opt/my tools/sluice'"},
		{"/opt/it's/sluice", nil, `'/opt/it'\''s/sluice'`},
		{"/tmp/go-build1234/b001/exe/sluice", nil, "sluice"}, // go run: gone at exit
		{"", errors.New("no /proc"), "sluice"},
	} {
		if got := commandFor(c.path, c.err); got != c.want {
			t.Errorf("commandFor(%q, %v) = %q, want %q", c.path, c.err, got, c.want)
		}
	}
}
