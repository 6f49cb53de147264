package admin

import (
	"net/http/httptest"
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

// TestNodeVerdictMetrics: a replica's verdict is a sluice_node_state series, and read_only off
// on a node is sluice_node_read_only 0 (on: 1; unknown: no series).
func TestNodeVerdictMetrics(t *testing.T) {
	off, on := false, true
	h := MetricsHandler(func() Stats {
		return Stats{Nodes: []NodeStat{
			{Name: "primary", Role: "primary", State: "up", ReadOnly: &off},
			{Name: "replica1", Role: "replica", State: "errant", ReadOnly: &off},
			{Name: "replica2", Role: "replica", State: "unsynced", ReadOnly: &on},
			{Name: "replica3", Role: "replica", State: "broken"},
		}}
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`sluice_node_state{node="replica1",state="errant"} 1`,
		`sluice_node_state{node="replica2",state="unsynced"} 1`,
		`sluice_node_state{node="replica3",state="broken"} 1`,
		`sluice_node_state{node="replica1",state="up"} 0`,
		`sluice_node_read_only{node="primary"} 0`,
		`sluice_node_read_only{node="replica1"} 0`,
		`sluice_node_read_only{node="replica2"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `sluice_node_read_only{node="replica3"}`) {
		t.Error("read_only exported for a node whose read_only is not known")
	}
}
