package admin

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics in Prometheus' text format. Nothing is counted here: at each scrape the collector
// asks for Stats, which the proxy keeps in its sessions' own counters, folded at that moment,
// so the statement path pays no metric library.

// Stats is everything /metrics reports, read at one scrape.
type Stats struct {
	Endpoints []EndpointStat
	Nodes     []NodeStat
	// Consistency levels: replica reads that waited for a position, those that timed out (and
	// went to the primary), and readings of the primary's position for the global level.
	ConsistencyWaits, ConsistencyTimeouts, PrimaryPositionReads uint64
	// AuthBlocked counts the client addresses blocked for too many authentication failures.
	AuthBlocked uint64
	// AdminChanges counts the admin API's changes by kind and outcome ({"patch_endpoint",
	// "applied"}, ...).
	AdminChanges map[[2]string]uint64
	// Pools are the session-level pool's figures by node and user.
	Pools []Pool
}

// EndpointStat is one endpoint's figures.
type EndpointStat struct {
	Name     string
	Sessions int64
	Routes   []RouteStat
	// Client side: connections that logged in, those refused by reason (every reason, zeros
	// too, so that a rate exists from the start), failed authentications, the error packets
	// the clients got by code (sluice's own and the nodes'), and the bytes the clients sent
	// (in) and received (out).
	Accepted          uint64
	Refused           map[string]uint64
	AuthFailures      uint64
	Errors            map[uint16]uint64
	BytesIn, BytesOut uint64
	// Pinned counts the live sessions held on the primary, by pin reason (every reason, zeros
	// too; a session held for two reasons counts under both).
	Pinned map[string]int64
}

// RouteStat counts the statements sent to one node for one reason.
type RouteStat struct {
	Node, Reason string
	Statements   uint64
}

// NodeStat is one node's figures.
type NodeStat struct {
	Name, Role, State  string
	Connections        int64 // this sluice's
	Active             int64 // statements running there now
	LagSeconds         *float64
	RTTSeconds         *float64
	ThreadsConnected   *int64
	Latency            Histogram
	ReplicationRunning *bool
	// ReadOnly is the node's @@read_only (nil: not known yet): a replica with read_only off
	// would take a write that reached it (sluice_node_read_only 0 on a replica is a warning).
	ReadOnly *bool
}

// Histogram is a latency histogram: Counts per bucket (not cumulative), the last one above every
// bound; Sum in seconds.
type Histogram struct {
	Bounds []float64
	Counts []uint64
	Sum    float64
}

// NodeStates are the states a node can be in, each a sluice_node_state series.
var NodeStates = []string{"up", "down", "auth_failed", "full", "lagging", "switching", "errant", "broken", "unsynced", "writable", "detached",
	"draining", "drained", "joining"}

// MetricsHandler serves /metrics from stats, with Go's runtime and the process's figures.
func MetricsHandler(stats func() Stats) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&collector{stats: stats})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4})
}

var (
	descStatements = prometheus.NewDesc("sluice_statements_total", "Statements sent to the nodes, by endpoint, node and routing reason.",
		[]string{"endpoint", "node", "reason"}, nil)
	descSessions = prometheus.NewDesc("sluice_client_sessions", "Client sessions open, by endpoint.", []string{"endpoint"}, nil)
	descPinned   = prometheus.NewDesc("sluice_pinned_sessions",
		"Client sessions held on the primary now, by endpoint and pin reason (temporary_table, lock_tables, user_lock, "+
			"session_variable, multi_statement); a session held for two reasons counts under both.",
		[]string{"endpoint", "reason"}, nil)
	descNodeConns  = prometheus.NewDesc("sluice_node_connections", "This sluice's open connections to the node.", []string{"node"}, nil)
	descNodeActive = prometheus.NewDesc("sluice_node_active_statements", "Statements running on the node now, sent by this sluice.",
		[]string{"node"}, nil)
	descNodeState = prometheus.NewDesc("sluice_node_state", "1 for the node's current state, 0 for the others.",
		[]string{"node", "state"}, nil)
	descNodePrimary  = prometheus.NewDesc("sluice_node_primary", "1 when the node is the primary.", []string{"node"}, nil)
	descNodeLag      = prometheus.NewDesc("sluice_node_lag_seconds", "The replica's lag, measured from GTID positions.", []string{"node"}, nil)
	descNodeReadOnly = prometheus.NewDesc("sluice_node_read_only",
		"1 when the node runs with read_only on, 0 when off (on a replica: it would take a write that reached it).", []string{"node"}, nil)
	descNodeRTT     = prometheus.NewDesc("sluice_node_rtt_seconds", "Round trip of the monitor's last check of the node.", []string{"node"}, nil)
	descNodeThreads = prometheus.NewDesc("sluice_node_threads_connected", "The node's Threads_connected (every client of it).",
		[]string{"node"}, nil)
	descLatency = prometheus.NewDesc("sluice_statement_duration_seconds",
		"Statements from their arrival to the end of their answer, by the node that answered.", []string{"node"}, nil)
	descWaits = prometheus.NewDesc("sluice_consistency_waits_total",
		"Replica reads that waited for the position their consistency level needs.", nil, nil)
	descTimeouts = prometheus.NewDesc("sluice_consistency_timeouts_total",
		"Replica reads whose position no replica reached within consistency_timeout: they went to the primary.", nil, nil)
	descPositionReads = prometheus.NewDesc("sluice_primary_position_reads_total",
		"Readings of the primary's position for global-level reads (shared by the reads that arrive together).", nil, nil)
	descAuthBlocked = prometheus.NewDesc("sluice_auth_blocked_total",
		"Client addresses blocked for too many authentication failures (limits.max_auth_failures).", nil, nil)
	descAdmin = prometheus.NewDesc("sluice_admin_changes_total", "Changes asked of the admin API, by kind and outcome.",
		[]string{"kind", "outcome"}, nil)
	descAccepted = prometheus.NewDesc("sluice_client_connections_accepted_total",
		"Client connections that logged in, by endpoint.", []string{"endpoint"}, nil)
	descRefused = prometheus.NewDesc("sluice_client_connections_refused_total",
		"Client connections that ended before they logged in, by endpoint and reason (max_connections, too_many_logins, "+
			"not_allowed, blocked, tls_required, handshake, login_timeout, auth_failed, no_node, shutting_down, "+
			"max_user_connections).",
		[]string{"endpoint", "reason"}, nil)
	descAuthFailures = prometheus.NewDesc("sluice_client_auth_failures_total",
		"Failed authentications (logins and COM_CHANGE_USER), by endpoint.", []string{"endpoint"}, nil)
	descClientErrors = prometheus.NewDesc("sluice_client_errors_total",
		"Error packets the clients got, by endpoint and error code: sluice's own and those relayed from the nodes.",
		[]string{"endpoint", "code"}, nil)
	descBytesIn = prometheus.NewDesc("sluice_client_received_bytes_total",
		"Bytes sluice read from its clients' connections, by endpoint (live sessions: as of their last command).",
		[]string{"endpoint"}, nil)
	descBytesOut = prometheus.NewDesc("sluice_client_sent_bytes_total",
		"Bytes sluice wrote to its clients' connections, by endpoint (live sessions: as of their last command).",
		[]string{"endpoint"}, nil)
)

// descs are every metric the collector exports besides Go's and the process's.
var descs = []*prometheus.Desc{descStatements, descSessions, descPinned, descNodeConns, descNodeActive, descNodeState, descNodePrimary,
	descNodeLag, descNodeReadOnly, descNodeRTT, descNodeThreads, descLatency, descWaits, descTimeouts, descPositionReads,
	descAuthBlocked, descAdmin, descAccepted, descRefused, descAuthFailures, descClientErrors, descBytesIn, descBytesOut}

type collector struct{ stats func() Stats }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
	for _, d := range poolDescs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	collectPools(ch, st.Pools)
	for _, e := range st.Endpoints {
		gauge(descSessions, float64(e.Sessions), e.Name)
		for reason, n := range e.Pinned {
			gauge(descPinned, float64(n), e.Name, reason)
		}
		for _, r := range e.Routes {
			counter(descStatements, r.Statements, e.Name, r.Node, r.Reason)
		}
		counter(descAccepted, e.Accepted, e.Name)
		for reason, n := range e.Refused {
			counter(descRefused, n, e.Name, reason)
		}
		counter(descAuthFailures, e.AuthFailures, e.Name)
		for code, n := range e.Errors {
			counter(descClientErrors, n, e.Name, strconv.Itoa(int(code)))
		}
		counter(descBytesIn, e.BytesIn, e.Name)
		counter(descBytesOut, e.BytesOut, e.Name)
	}
	for _, n := range st.Nodes {
		gauge(descNodeConns, float64(n.Connections), n.Name)
		gauge(descNodeActive, float64(n.Active), n.Name)
		for _, s := range NodeStates {
			v := 0.0
			if s == n.State {
				v = 1
			}
			gauge(descNodeState, v, n.Name, s)
		}
		primary := 0.0
		if n.Role == "primary" {
			primary = 1
		}
		gauge(descNodePrimary, primary, n.Name)
		if n.LagSeconds != nil {
			gauge(descNodeLag, *n.LagSeconds, n.Name)
		}
		if n.ReadOnly != nil {
			ro := 0.0
			if *n.ReadOnly {
				ro = 1
			}
			gauge(descNodeReadOnly, ro, n.Name)
		}
		if n.RTTSeconds != nil {
			gauge(descNodeRTT, *n.RTTSeconds, n.Name)
		}
		if n.ThreadsConnected != nil {
			gauge(descNodeThreads, float64(*n.ThreadsConnected), n.Name)
		}
		h := n.Latency
		buckets := make(map[float64]uint64, len(h.Bounds))
		var total uint64
		for i, b := range h.Bounds {
			if i < len(h.Counts) {
				total += h.Counts[i]
			}
			buckets[b] = total
		}
		if len(h.Counts) > len(h.Bounds) {
			total += h.Counts[len(h.Bounds)]
		}
		ch <- prometheus.MustNewConstHistogram(descLatency, total, h.Sum, buckets, n.Name)
	}
	counter(descWaits, st.ConsistencyWaits)
	counter(descTimeouts, st.ConsistencyTimeouts)
	counter(descPositionReads, st.PrimaryPositionReads)
	counter(descAuthBlocked, st.AuthBlocked)
	for k, v := range st.AdminChanges {
		counter(descAdmin, v, k[0], k[1])
	}
}
