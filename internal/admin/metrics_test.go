package admin

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.yaml.in/yaml/v3"
)

// registered are the names of every metric sluice's /metrics exports: its own and Go's and the
// process's collectors' (a histogram's series add _bucket, _sum and _count).
func registered(t *testing.T) map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc, 256)
	for _, c := range []prometheus.Collector{&collector{}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		c.Describe(ch)
	}
	close(ch)
	have := map[string]bool{}
	name := regexp.MustCompile(`fqName: "([a-zA-Z0-9_:]+)"`)
	for d := range ch {
		m := name.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		have[m[1]] = true
	}
	return have
}

// queried are the metric names expr reads: the names of sluice's, Go's and the process's
// families (a PromQL reader would be heavier than the names it has to find).
var queried = regexp.MustCompile(`\b(?:sluice|go|process)_[a-zA-Z0-9_]+`)

// checkNames reports every metric expr queries that sluice does not export.
func checkNames(t *testing.T, where, expr string, have map[string]bool) int {
	t.Helper()
	used := queried.FindAllString(expr, -1)
	for _, u := range used {
		base := u
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(u, suffix); ok && have[b] {
				base = b
			}
		}
		if !have[base] {
			t.Errorf("%s queries %s, which sluice does not export", where, u)
		}
	}
	return len(used)
}

// TestDashboardUsesOurMetrics: the shipped Grafana dashboard takes job and cluster (and
// instance) as template variables, every panel query is filtered by them, and every metric it
// queries is one /metrics exports (a renamed metric must not leave a panel empty); the client
// counters, the pools' metrics and the pinned sessions have their panels.
func TestDashboardUsesOurMetrics(t *testing.T) {
	data, err := os.ReadFile("../../deploy/grafana/sluice.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct{ Name, Query string }
		}
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Query
	}
	for _, v := range []string{"job", "cluster", "instance"} {
		if _, ok := vars[v]; !ok {
			t.Errorf("the dashboard has no $%s variable", v)
		}
	}
	have := registered(t)
	for v, q := range vars {
		if v != "datasource" {
			checkNames(t, "variable $"+v, q, have)
		}
	}
	names, exprs := 0, ""
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, v := range []string{`job=~"$job"`, `cluster=~"$cluster"`, `instance=~"$instance"`} {
				if !strings.Contains(tg.Expr, v) {
					t.Errorf("panel %q: %s is not filtered by %s", p.Title, tg.Expr, v)
				}
			}
			names += checkNames(t, "panel "+strconv.Quote(p.Title), tg.Expr, have)
			exprs += tg.Expr + "\n"
		}
	}
	if names < 10 {
		t.Fatalf("the dashboard names only %d metrics", names)
	}
	for _, m := range []string{"sluice_client_connections_accepted_total", "sluice_client_connections_refused_total",
		"sluice_client_auth_failures_total", "sluice_client_errors_total", "sluice_client_received_bytes_total",
		"sluice_client_sent_bytes_total"} {
		if !strings.Contains(exprs, m) {
			t.Errorf("no panel shows %s", m)
		}
	}
	// Every pool metric (a new one too) and the pins have their panels.
	fq := regexp.MustCompile(`fqName: "([a-zA-Z0-9_:]+)"`)
	for _, d := range append(slices.Clone(poolDescs), descPinned) {
		if m := fq.FindStringSubmatch(d.String()); m == nil || !regexp.MustCompile(`\b`+m[1]+`\b`).MatchString(exprs) {
			t.Errorf("no panel shows %s", d)
		}
	}
}

// TestAlertRulesUseOurMetrics: deploy/prometheus/alerts.yml parses, prometheus.yml loads it,
// every rule has a name, an expression and a summary, and every metric a rule reads is one
// sluice exports (up is Prometheus' own, for the scrape).
func TestAlertRulesUseOurMetrics(t *testing.T) {
	data, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert       string
				Expr        string
				For         string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	have := registered(t)
	alerts := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
				t.Errorf("rule %q: name, expr, severity and summary are required", r.Alert)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("rule %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			alerts[r.Alert] = true
			if checkNames(t, "rule "+r.Alert, r.Expr, have) == 0 && !strings.HasPrefix(r.Expr, `up{job="sluice"}`) {
				t.Errorf("rule %s reads no sluice metric: %s", r.Alert, r.Expr)
			}
		}
	}
	for _, a := range []string{"SluiceNodeDown", "SluiceReplicaLag", "SluiceErrantReplica", "SluiceNoPrimary",
		"SluiceSwitchoverStuck", "SluiceAuthFailureSpike"} {
		if !alerts[a] {
			t.Errorf("no rule %s", a)
		}
	}
	prom, err := os.ReadFile("../../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var pc struct {
		RuleFiles []string `yaml:"rule_files"`
	}
	if err := yaml.Unmarshal(prom, &pc); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pc.RuleFiles, "alerts.yml") {
		t.Errorf("prometheus.yml's rule_files %v do not load alerts.yml", pc.RuleFiles)
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

// TestPinnedSessionsMetric: each endpoint's pinned sessions are a sluice_pinned_sessions gauge
// per reason, zeros included (as the app hands every reason over).
func TestPinnedSessionsMetric(t *testing.T) {
	h := MetricsHandler(func() Stats {
		return Stats{Endpoints: []EndpointStat{
			{Name: "rw", Pinned: map[string]int64{"temporary_table": 2, "user_lock": 1, "lock_tables": 0}},
			{Name: "ro", Pinned: map[string]int64{"temporary_table": 0}},
		}}
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`sluice_pinned_sessions{endpoint="rw",reason="temporary_table"} 2`,
		`sluice_pinned_sessions{endpoint="rw",reason="user_lock"} 1`,
		`sluice_pinned_sessions{endpoint="rw",reason="lock_tables"} 0`,
		`sluice_pinned_sessions{endpoint="ro",reason="temporary_table"} 0`,
		"# TYPE sluice_pinned_sessions gauge",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
