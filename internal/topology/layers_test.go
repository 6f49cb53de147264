package topology

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayers: routing is pure and reads topology, so neither may depend, even through another
// package, on what does I/O or on what sits above them (architecture.json's "never" arrows,
// checked transitively).
func TestLayers(t *testing.T) {
	const mod = "github.com/sluicedb/sluice/internal/"
	for _, pkg := range []string{"route", "topology"} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, banned := range []string{"backend", "proxy", "config", "sandbox", "app", "cli"} {
				if dep == mod+banned {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
