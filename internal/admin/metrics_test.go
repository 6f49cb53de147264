package admin

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardUsesOurMetrics: every sluice_ metric the shipped Grafana dashboard queries is
// one /metrics exports (a renamed metric must not leave a dashboard panel empty).
func TestDashboardUsesOurMetrics(t *testing.T) {
	data, err := os.ReadFile("../../deploy/grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 64)
	(&collector{}).Describe(ch)
	close(ch)
	have := map[string]bool{}
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		m := name.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		have[m[1]] = true
	}
	used := regexp.MustCompile(`sluice_[a-z_]+`).FindAllString(string(data), -1)
	if len(used) < 10 {
		t.Fatalf("the dashboard names only %d sluice metrics", len(used))
	}
	for _, u := range used {
		base := u
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(u, suffix); ok && have[b] {
				base = b
			}
		}
		if !have[base] {
			t.Errorf("the dashboard queries %s, which sluice does not export", u)
		}
	}
}
