package cli

import (
	"runtime/debug"
	"strings"
	"sync"
)

// version is what sluice reports as its version (sluice version, the admin API, the start-up
// log line): Version as stamped, else what the Go toolchain recorded of the build.
var version = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return formatVersion(Version, info)
})

// formatVersion describes a build: stamped (cli.Version, set with -ldflags) when it is not
// "dev", else the main module's version when it is a release (go install ...@v1.2.0), else
// "dev"; then, in parentheses, the commit and its time and whether the tree had uncommitted
// changes, as `go build` records them in a git checkout (vcs.revision, vcs.time,
// vcs.modified; not in a linked git worktree, golang/go#58218), and the Go version. info may
// be nil (a binary without build information).
func formatVersion(stamped string, info *debug.BuildInfo) string {
	v := stamped
	if info == nil {
		return v
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if short := rev; v == "dev" {
		if len(short) > 12 {
			short = short[:12]
		}
		// A pseudo-version (v0.0.0-20261201200239-c9ae6cf1a2b3+dirty) only repeats the
		// commit shown below; a release's version says more than "dev".
		if mv := info.Main.Version; mv != "" && mv != "(devel)" && (short == "" || !strings.Contains(mv, short)) {
			v = mv
		}
	}
	var details []string
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		details = append(details, "commit "+rev)
	}
	if at != "" {
		details = append(details, at)
	}
	if modified {
		details = append(details, "modified")
	}
	if info.GoVersion != "" {
		details = append(details, info.GoVersion)
	}
	if len(details) == 0 {
		return v
	}
	return v + " (" + strings.Join(details, ", ") + ")"
}
