package admin

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Pools is what GET /v1/pools reads: the session-level pool's figures. Called from the HTTP
// server's goroutines, concurrently; it must not block.
type Pools interface {
	// Pools returns one entry per node and user that has or had pooled connections.
	Pools() []Pool
}

// Pool is one node and user's pool figures: GET /v1/pools, `sluice ctl pools`, and the
// sluice_pool_* metrics.
type Pool struct {
	Node string `json:"node"`
	User string `json:"user"`
	// Open connections (idle + in use), idle ones, in use by sessions, and sessions waiting at
	// pool.max_per_node now.
	Open    int `json:"open"`
	Idle    int `json:"idle"`
	InUse   int `json:"in_use"`
	Waiting int `json:"waiting"`
	// Created: connections dialed; Reused: taken from idle; Resets: reset and put back;
	// ResetFailures: closed because their reset failed; Waits: sessions that waited at
	// max_per_node, WaitSeconds their total wait.
	Created       uint64  `json:"created"`
	Reused        uint64  `json:"reused"`
	Resets        uint64  `json:"resets"`
	ResetFailures uint64  `json:"reset_failures"`
	Waits         uint64  `json:"waits"`
	WaitSeconds   float64 `json:"wait_seconds"`
}

// servePools is GET /v1/pools.
func servePools(p Pools) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		pools := p.Pools()
		if pools == nil {
			pools = []Pool{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"pools": pools})
	}
}

var (
	poolLabels    = []string{"node", "user"}
	descPoolConns = prometheus.NewDesc("sluice_pool_connections",
		"Pooled node connections (pool_mode session) by node, user and state (idle, in_use).", []string{"node", "user", "state"}, nil)
	descPoolWaiting = prometheus.NewDesc("sluice_pool_waiting",
		"Sessions waiting now for a node connection at pool.max_per_node.", poolLabels, nil)
	descPoolCreated = prometheus.NewDesc("sluice_pool_created_total", "Node connections the pool dialed.", poolLabels, nil)
	descPoolReused  = prometheus.NewDesc("sluice_pool_reused_total",
		"Node connections a session took from the pool instead of dialing.", poolLabels, nil)
	descPoolResets = prometheus.NewDesc("sluice_pool_resets_total",
		"Node connections reset (COM_RESET_CONNECTION) and put back when their session ended.", poolLabels, nil)
	descPoolResetFailures = prometheus.NewDesc("sluice_pool_reset_failures_total",
		"Node connections closed because their reset failed.", poolLabels, nil)
	descPoolWaits = prometheus.NewDesc("sluice_pool_waits_total",
		"Sessions that waited for a node connection at pool.max_per_node.", poolLabels, nil)
	descPoolWaitSeconds = prometheus.NewDesc("sluice_pool_wait_seconds_total",
		"Time sessions spent waiting for a node connection at pool.max_per_node.", poolLabels, nil)
	poolDescs = []*prometheus.Desc{descPoolConns, descPoolWaiting, descPoolCreated, descPoolReused, descPoolResets,
		descPoolResetFailures, descPoolWaits, descPoolWaitSeconds}
)

// collectPools sends the pool metrics of ps. Users come from the configuration (or the
// primary's accounts) and nodes from the topology: the label sets are bounded.
func collectPools(ch chan<- prometheus.Metric, ps []Pool) {
	for _, p := range ps {
		ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(p.Idle), p.Node, p.User, "idle")
		ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(p.InUse), p.Node, p.User, "in_use")
		ch <- prometheus.MustNewConstMetric(descPoolWaiting, prometheus.GaugeValue, float64(p.Waiting), p.Node, p.User)
		for _, c := range []struct {
			d *prometheus.Desc
			v float64
		}{{descPoolCreated, float64(p.Created)}, {descPoolReused, float64(p.Reused)}, {descPoolResets, float64(p.Resets)},
			{descPoolResetFailures, float64(p.ResetFailures)}, {descPoolWaits, float64(p.Waits)}, {descPoolWaitSeconds, p.WaitSeconds}} {
			ch <- prometheus.MustNewConstMetric(c.d, prometheus.CounterValue, c.v, p.Node, p.User)
		}
	}
}
