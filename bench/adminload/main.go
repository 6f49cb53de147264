// Command adminload calls a sluice's admin API in a loop, as an operator's tooling and a metrics
// scraper would, until -duration passes or -rounds are done: each round a describe (GET
// /v1/proxy), a change of endpoint -endpoint (PATCH of its max_replica_lag, alternating 30s and
// 31s, so that every call really changes the settings in force) and a /metrics scrape (-calls
// picks some of them), over one keep-alive HTTP client. It prints one JSON object: calls made,
// failures, the p50/p99/max latency of a call in milliseconds, and the size of the last
// /metrics answer. bench/run.sh runs it beside a point-select load (system sluice-pa) and, for
// the cost of a scrape, beside 1 000 idle sessions; bench/switchover.sh's phase D beside a
// point-select load too. It talks to 127.0.0.1 only.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	admin := flag.String("admin", "127.0.0.1:6080", "the admin API's address (host:port on 127.0.0.1)")
	token := flag.String("token", "", "the admin token, if any")
	endpoint := flag.String("endpoint", "rw", "the endpoint whose max_replica_lag is changed")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	rate := flag.Float64("rate", 0, "rounds per second (0: as fast as they answer)")
	rounds := flag.Int("rounds", 0, "rounds to make (0: until -duration has passed)")
	callList := flag.String("calls", "describe,patch,metrics", "the calls of a round, among describe, patch and metrics")
	flag.Parse()
	want := map[string]bool{}
	for _, c := range strings.Split(*callList, ",") {
		if c != "describe" && c != "patch" && c != "metrics" {
			fmt.Fprintf(os.Stderr, "adminload: -calls: unknown call %q (want describe, patch, metrics)\n", c)
			os.Exit(2)
		}
		want[c] = true
	}
	if !strings.HasPrefix(*admin, "127.0.0.1:") && !strings.HasPrefix(*admin, "localhost:") {
		fmt.Fprintln(os.Stderr, "adminload: -admin must be on 127.0.0.1")
		os.Exit(2)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + *admin
	var lat []time.Duration
	calls, failures, metricsBytes := 0, 0, int64(0)
	var firstErr string
	call := func(method, path string, body []byte) {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if *token != "" {
			req.Header.Set("Authorization", "Bearer "+*token)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err == nil {
			n, _ := io.Copy(io.Discard, resp.Body)
			if path == "/metrics" {
				metricsBytes = n
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				err = fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
			}
		}
		lat = append(lat, time.Since(start))
		calls++
		if err != nil {
			failures++
			if firstErr == "" {
				firstErr = err.Error()
			}
		}
	}
	var tick <-chan time.Time
	if *rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / *rate))
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	end := start.Add(*duration)
	for i := 0; (*rounds > 0 && i < *rounds) || (*rounds == 0 && time.Now().Before(end)); i++ {
		if want["describe"] {
			call("GET", "/v1/proxy", nil)
		}
		if want["patch"] {
			call("PATCH", "/v1/endpoints/"+*endpoint, []byte(fmt.Sprintf(`{"max_replica_lag": "%ds"}`, 30+i%2)))
		}
		if want["metrics"] {
			call("GET", "/metrics", nil)
		}
		if tick != nil {
			<-tick
		}
	}
	if want["patch"] {
		call("PATCH", "/v1/endpoints/"+*endpoint, []byte(`{"max_replica_lag": null}`))
	}
	slices.Sort(lat)
	ms := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	out, _ := json.Marshal(map[string]any{"calls": calls, "failures": failures, "first_error": firstErr,
		"p50_ms": ms(0.5), "p99_ms": ms(0.99), "max_ms": ms(1), "seconds": time.Since(start).Seconds(), "metrics_bytes": metricsBytes})
	fmt.Println(string(out))
	if failures > 0 {
		os.Exit(1)
	}
}
