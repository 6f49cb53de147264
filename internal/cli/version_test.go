package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestFormatVersion: a build without a stamped version still says which commit it is, when
// it was made, whether the tree had changes and the Go version; a release module version or a
// stamped one is shown as is, a pseudo-version is not repeated next to its commit.
func TestFormatVersion(t *testing.T) {
	vcs := func(mod string, kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/sluicedb/sluice", Version: mod}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	const rev = "c9ae6cf1a2b3d4e5f60718293a4b5c6d7e8f9012"
	for _, c := range []struct {
		name, stamped string
		info          *debug.BuildInfo
		want          string
	}{
		{"no build information", "dev", nil, "dev"},
		{"a git checkout, clean", "dev", vcs("(devel)", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-12-01T20:02:39Z", "vcs.modified", "false"),
			"dev (commit c9ae6cf1a2b3, 2026-12-01T20:02:39Z, go1.26.8)"},
		{"a git checkout with changes", "dev", vcs("v0.0.0-20261201200239-c9ae6cf1a2b3+dirty", "vcs.revision", rev, "vcs.time", "2026-12-01T20:02:39Z", "vcs.modified", "true"),
			"dev (commit c9ae6cf1a2b3, 2026-12-01T20:02:39Z, modified, go1.26.8)"},
		{"go install @version", "dev", vcs("v1.4.0"), "v1.4.0 (go1.26.8)"},
		{"stamped", "1.4.0", vcs("(devel)", "vcs.revision", rev), "1.4.0 (commit c9ae6cf1a2b3, go1.26.8)"},
		{"no VCS (a worktree, -buildvcs=false)", "dev", vcs("(devel)"), "dev (go1.26.8)"},
	} {
		if got := formatVersion(c.stamped, c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// What sluice version prints is that, after "sluice ".
	var out, errOut strings.Builder
	if code := Run([]string{"version"}, &out, &errOut); code != 0 || out.String() != "sluice "+version()+"\n" {
		t.Errorf("sluice version: exit %d, %q", code, out.String())
	}
}
