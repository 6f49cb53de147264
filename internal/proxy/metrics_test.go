package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
)

// scrape reads sluice's /metrics and returns each sample's value by its line's series
// ("name{labels}").
func scrape(t *testing.T, s *sluice) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.app.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

var sampleLabels = regexp.MustCompile(`(\w+)="([^"]*)"`)

// sample is the value of the series of metric name whose labels are labels ("k=v" each).
func sample(m map[string]float64, name string, labels ...string) float64 {
	want := map[string]string{}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		want[k] = v
	}
	for series, v := range m {
		n, rest, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		got := map[string]string{}
		for _, kv := range sampleLabels.FindAllStringSubmatch(rest, -1) {
			got[kv[1]] = kv[2]
		}
		if len(got) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			return v
		}
	}
	return 0
}

// TestClientMetrics: after a refused login (wrong password), a connection past max_connections,
// a node's error, one of sluice's own and a large result, /metrics counts them on their
// endpoint: connections accepted and refused by reason, authentication failures, errors by
// code, and the bytes in and out.
func TestClientMetrics(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Admin.Listen, c.Admin.Token = "127.0.0.1:0", ""
		primaryReads(c)
		for i := range c.Endpoints {
			if c.Endpoints[i].Name == "ro" {
				c.Endpoints[i].MaxConnections = 1
			}
		}
	})
	before := scrape(t, s)
	ctx := context.Background()

	// A wrong password: refused (auth_failed), an authentication failure, a 1045.
	bad := open(t, dsn(s.rw, "app", "wrong", "", ""))
	if err := bad.PingContext(ctx); mysqlErr(t, err).Number != 1045 {
		t.Fatalf("wrong password: %v", err)
	}
	// ro takes one connection; a second is refused (max_connections, 1040).
	ro := open(t, dsn(s.ro, "app", "app", "", ""))
	first, err := ro.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	var me *mysql.MySQLError
	if _, err := ro.Conn(ctx); !errors.As(err, &me) || me.Number != 1040 {
		t.Fatalf("second connection to ro: %v", err)
	}

	db := open(t, dsn(s.rw, "app", "app", "", ""))
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A node's error (relayed), and one sluice raises itself (a hint it cannot honour).
	if _, err := c.ExecContext(ctx, "SELECT * FROM test.no_such_table_metrics"); mysqlErr(t, err).Number != 1146 {
		t.Fatalf("a missing table: %v", err)
	}
	_, err = c.ExecContext(ctx, "/*FORCE_NODE='nope'*/ SELECT 1")
	own := mysqlErr(t, err).Number
	// Traffic: a result of 200 kB out, a statement of 50 kB in.
	var big string
	if err := c.QueryRowContext(ctx, "SELECT REPEAT('x', 200000)").Scan(&big); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.QueryRowContext(ctx, "SELECT LENGTH('"+strings.Repeat("y", 50000)+"')").Scan(&n); err != nil || n != 50000 {
		t.Fatalf("a long statement: %d %v", n, err)
	}

	after := scrape(t, s)
	moved := func(name string, labels ...string) float64 {
		return sample(after, name, labels...) - sample(before, name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"sluice_client_connections_refused_total", []string{"endpoint=rw", "reason=auth_failed"}, 1},
		{"sluice_client_auth_failures_total", []string{"endpoint=rw"}, 1},
		{"sluice_client_errors_total", []string{"endpoint=rw", "code=1045"}, 1},
		{"sluice_client_connections_refused_total", []string{"endpoint=ro", "reason=max_connections"}, 1},
		{"sluice_client_errors_total", []string{"endpoint=ro", "code=1040"}, 1},
		{"sluice_client_connections_accepted_total", []string{"endpoint=ro"}, 1},
		{"sluice_client_connections_accepted_total", []string{"endpoint=rw"}, 1},
		{"sluice_client_errors_total", []string{"endpoint=rw", "code=1146"}, 1},
		{"sluice_client_errors_total", []string{"endpoint=rw", fmt.Sprintf("code=%d", own)}, 1},
		{"sluice_client_sent_bytes_total", []string{"endpoint=rw"}, 200000},
		{"sluice_client_received_bytes_total", []string{"endpoint=rw"}, 50000},
	} {
		if got := moved(c.name, c.labels...); got < c.min {
			t.Errorf("%s%v moved by %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	// Nothing else was refused, and the reasons not seen are there at 0.
	if got := moved("sluice_client_connections_refused_total", "endpoint=rw", "reason=handshake"); got != 0 {
		t.Errorf("handshake refusals on rw: %v", got)
	}
	if _, ok := after[`sluice_client_connections_refused_total{endpoint="rw",reason="not_allowed"}`]; !ok {
		t.Error("a refusal reason not seen yet has no series")
	}
	if moved("sluice_client_errors_total", "endpoint=ro", "code=1146") != 0 {
		t.Error("rw's error counted on ro")
	}
}
