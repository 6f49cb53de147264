// Command adminload calls a sluice's admin API in a loop, as an operator's tooling and a metrics
// scraper would, until its standard input closes or -duration passes: each round a describe
// (GET /v1/proxy), a change of endpoint -endpoint (PATCH of its max_replica_lag, alternating
// 30s and 31s, so that every call really changes the settings in force) and a /metrics scrape,
// over one keep-alive HTTP client. It prints one JSON object: calls made, failures, and the
// p50/p99/max latency of a call in milliseconds. bench/switchover.sh's phase D runs it beside a
// point-select load. It talks to 127.0.0.1 only.
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
	flag.Parse()
	if !strings.HasPrefix(*admin, "127.0.0.1:") && !strings.HasPrefix(*admin, "localhost:") {
		fmt.Fprintln(os.Stderr, "adminload: -admin must be on 127.0.0.1")
		os.Exit(2)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + *admin
	var lat []time.Duration
	calls, failures := 0, 0
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
			_, _ = io.Copy(io.Discard, resp.Body)
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
	end := time.Now().Add(*duration)
	for i := 0; time.Now().Before(end); i++ {
		call("GET", "/v1/proxy", nil)
		call("PATCH", "/v1/endpoints/"+*endpoint, []byte(fmt.Sprintf(`{"max_replica_lag": "%ds"}`, 30+i%2)))
		call("GET", "/metrics", nil)
		if tick != nil {
			<-tick
		}
	}
	call("PATCH", "/v1/endpoints/"+*endpoint, []byte(`{"max_replica_lag": null}`))
	slices.Sort(lat)
	ms := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	out, _ := json.Marshal(map[string]any{"calls": calls, "failures": failures, "first_error": firstErr,
		"p50_ms": ms(0.5), "p99_ms": ms(0.99), "max_ms": ms(1), "seconds": duration.Seconds()})
	fmt.Println(string(out))
	if failures > 0 {
		os.Exit(1)
	}
}
