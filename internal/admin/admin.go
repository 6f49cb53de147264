// Package admin is sluice's control plane over HTTP: the REST API that describes and changes
// the proxy while it runs (what `sluice ctl` speaks), health and readiness for orchestrators,
// and Go's profiling handlers. It declares what it reads and changes (Control); the app
// implements it. JSON in and out; errors are {"error": {"code", "message", "field"}} with the
// HTTP status that fits.
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"
)

// Control is what the API reads and changes.
type Control interface {
	// Proxy describes the whole proxy: identity, nodes, endpoints.
	Proxy() Proxy
	// Nodes describes every node as the monitor last saw it.
	Nodes() []Node
	// Endpoints describes every endpoint: settings and live figures.
	Endpoints() []Endpoint
	// PatchEndpoint changes some settings of endpoint name (setting -> JSON value), atomically,
	// validated as the configuration file is, and writes them back to the file. A map
	// (read_weights) merges as a JSON merge patch (RFC 7386): the keys given change, a null
	// removes one, the others stay.
	PatchEndpoint(name string, patch map[string]json.RawMessage) (Change, error)
	// DrainNode takes node name out of service: no new reads or bindings at once; sessions
	// leave it at their next statement boundary; what is left after timeout is closed.
	DrainNode(name string, timeout time.Duration) (Node, error)
	// UndrainNode puts node name back in service.
	UndrainNode(name string) (Node, error)
	// CreateEndpoint adds an endpoint (its settings as in the file, name and listen required)
	// and starts it; DeleteEndpoint stops one accepting, lets its sessions finish until
	// timeouts.shutdown and closes the rest. Both write the file back.
	CreateEndpoint(body map[string]json.RawMessage) (Change, error)
	DeleteEndpoint(name string) (Change, error)
	// CreateNode adds a replica (name and address required; zone, and read_weights by
	// endpoint), watched by the monitor and taking reads once it is seen answering;
	// DeleteNode removes a drained one. Both write the file back.
	CreateNode(body map[string]json.RawMessage) (Change, error)
	DeleteNode(name string) (Change, error)
	// Sessions lists the client sessions.
	Sessions() []Session
	// KillSession closes client session id and its node connections; false: no such session.
	KillSession(id uint64) bool
	// Reload re-reads the configuration file and applies what changed.
	Reload() (Change, error)
	// Readiness reports why sluice cannot serve clients yet (nil: it can); a *Degraded: it
	// serves them, but not as it should.
	Readiness() error
}

// Degraded is a Readiness answer for a sluice that serves its clients but not as it should
// (the monitor cannot log in to some nodes: routing goes on on what was last seen of them):
// /readyz answers 200 with status "degraded" and the reason, so that an orchestrator keeps
// sending clients and an operator reading it learns what to fix.
type Degraded struct{ Reason string }

func (d *Degraded) Error() string { return d.Reason }

// Proxy is GET /v1/proxy.
type Proxy struct {
	Version       string     `json:"version"`
	Started       time.Time  `json:"started"`
	UptimeSeconds float64    `json:"uptime_seconds"`
	Zone          string     `json:"zone"`
	ConfigFile    string     `json:"config_file"`
	Sessions      int        `json:"sessions"`
	Nodes         []Node     `json:"nodes"`
	Endpoints     []Endpoint `json:"endpoints"`
	// Store is the link to the store the configuration is shared through (none: absent).
	Store *StoreState `json:"store,omitempty"`
}

// Node is one node as the monitor last saw it.
type Node struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Role    string `json:"role"`
	Zone    string `json:"zone"`
	// State: up, down, auth_failed (it refused the monitor's login: Error has the server's
	// words; routed on its last known role), full, switching, detached, writable, errant, broken, unsynced, draining,
	// drained, joining. Whether a lagging replica takes reads depends on the endpoint (its
	// max_replica_lag): Endpoint.Reads says it.
	State string `json:"state"`
	// LagSeconds is the replica's lag as routing judges it against max_replica_lag (measured
	// from GTID positions, else the server's Seconds_Behind_Master); LagMs the lag from GTID
	// positions; SecondsBehind what the server says; null when unknown.
	LagSeconds     *float64 `json:"lag_seconds"`
	LagMs          *int64   `json:"lag_ms"`
	SecondsBehind  *int64   `json:"seconds_behind"`
	GTIDPosition   string   `json:"gtid_position"`
	PositionSource string   `json:"position_source"`
	Connections    int64    `json:"connections"` // this sluice's connections to the node
	Active         int64    `json:"active"`      // statements running there now
	Threads        *int64   `json:"threads_connected"`
	RTTMs          float64  `json:"rtt_ms"`
	ReadOnly       bool     `json:"read_only"`
	ServerID       uint32   `json:"server_id"`
	Version        string   `json:"version"`
	Error          string   `json:"error,omitempty"`
}

// Endpoint is one endpoint: its settings and live figures.
type Endpoint struct {
	Name     string           `json:"name"`
	Listen   string           `json:"listen"`
	Address  string           `json:"address"` // bound address
	Settings EndpointSettings `json:"settings"`
	Sessions int64            `json:"sessions"`
	// Statements counts the statements its sessions sent to the nodes; StatementsByNode
	// splits them by node (node name -> count), reads and writes alike.
	Statements       uint64            `json:"statements"`
	StatementsByNode map[string]uint64 `json:"statements_by_node"`
	// Reads says, for every node, whether it takes this endpoint's new reads now (a read-only
	// endpoint's: new sessions' bindings) and why not.
	Reads []NodeReads `json:"reads"`
}

// NodeReads says whether one node takes an endpoint's new reads now, and why not: down,
// draining, drained, joining, errant, broken, detached, unsynced, "weight 0", "lag 40s over
// max_replica_lag 30s", "primary: this endpoint reads from replicas only"...
type NodeReads struct {
	Node  string `json:"node"`
	Reads bool   `json:"reads"`
	Why   string `json:"why,omitempty"`
}

// EndpointSettings are an endpoint's settings, as in the configuration file.
type EndpointSettings struct {
	Mode               string         `json:"mode"`
	ReadWeights        map[string]int `json:"read_weights"`
	Balance            string         `json:"balance"`
	ConnectionsFrom    string         `json:"connections_from"`
	NearestZone        bool           `json:"nearest_zone"`
	MaxReplicaLag      string         `json:"max_replica_lag"`
	Consistency        string         `json:"consistency"`
	ConsistencyTimeout string         `json:"consistency_timeout"`
	TransactionSplit   bool           `json:"transaction_split"`
	MaxConnections     int            `json:"max_connections"`
	MultiStatements    string         `json:"multi_statements"`
	TLS                string         `json:"tls"`
	Allow              []string       `json:"allow"`
	PoolMode           string         `json:"pool_mode"`
	Pool               PoolSettings   `json:"pool"`
}

// PoolSettings are an endpoint's pool limits in force (its own, or the top-level pool's).
type PoolSettings struct {
	MaxPerNode     int    `json:"max_per_node"`
	IdleTimeout    string `json:"idle_timeout"`
	MaxLifetime    string `json:"max_lifetime"`
	AcquireTimeout string `json:"acquire_timeout"`
	MinIdle        int    `json:"min_idle"`
}

// Session is one client session.
type Session struct {
	ID            uint64   `json:"id"`
	User          string   `json:"user"`
	Client        string   `json:"client"`
	Endpoint      string   `json:"endpoint"`
	Nodes         []string `json:"nodes"` // nodes it holds a connection to
	InTransaction bool     `json:"in_transaction"`
	Pins          []string `json:"pins"` // what holds it on the primary: temporary_table, lock_tables, user_lock, session_variable, multi_statement
	AgeSeconds    float64  `json:"age_seconds"`
	// StatementSeconds is how long its current statement has run; null when idle.
	StatementSeconds *float64 `json:"statement_seconds"`
}

// Change is the answer to a change: what it changed and whether the file keeps it.
type Change struct {
	Endpoint  *Endpoint `json:"endpoint,omitempty"`
	Node      *Node     `json:"node,omitempty"`
	Changed   []string  `json:"changed"`
	Persisted bool      `json:"persisted"`
	// PersistError says why the configuration file was not written.
	PersistError string `json:"persist_error,omitempty"`
	// Restart lists what changed in the file but takes effect only at a restart.
	Restart []string `json:"restart,omitempty"`
}

// Options configure a Server.
type Options struct {
	Control Control
	// Token: every request but /healthz, /readyz and /metrics must carry it as a bearer token;
	// empty: none needed (a loopback listener, as the configuration enforces).
	Token string
	// TLS serves HTTPS when not nil.
	TLS *tls.Config
	// Metrics serves /metrics when not nil.
	Metrics http.Handler
	// Pools serves GET /v1/pools when not nil.
	Pools Pools
	// Cluster serves GET /v1/cluster and GET, PUT /v1/config when not nil.
	Cluster Cluster
	// Peers serves POST /v1/cluster/commits when not nil.
	Peers  Peers
	Logger *slog.Logger
}

// Server is the admin HTTP server.
type Server struct {
	o   Options
	srv *http.Server
	// stopping is closed when Shutdown starts: long requests (a peer's commit stream) end.
	stopping chan struct{}
}

// create serves a POST that makes something (an endpoint, a node) from the JSON body.
func (s *Server) create(mk func(map[string]json.RawMessage) (Change, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		if err := readJSON(r, &body); err != nil {
			writeError(w, err)
			return
		}
		ch, err := mk(body)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, ch)
	}
}

// remove serves a DELETE of the thing the path names.
func (s *Server) remove(del func(name string) (Change, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ch, err := del(r.PathValue("name"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, ch)
	}
}

// maxBody bounds a request's body: settings, never bulk data.
const maxBody = 64 << 10

// New makes the server.
func New(o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, stopping: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		err := o.Control.Readiness()
		var d *Degraded
		if errors.As(err, &d) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "degraded", "reason": d.Reason})
			return
		}
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	mux.HandleFunc("GET /v1/proxy", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, o.Control.Proxy())
	}))
	mux.HandleFunc("GET /v1/nodes", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"nodes": o.Control.Nodes()})
	}))
	mux.HandleFunc("GET /v1/nodes/{name}", s.auth(func(w http.ResponseWriter, r *http.Request) {
		for _, n := range o.Control.Nodes() {
			if n.Name == r.PathValue("name") {
				writeJSON(w, http.StatusOK, n)
				return
			}
		}
		writeError(w, Errorf(NotFound, "", "no node is named %q", r.PathValue("name")))
	}))
	mux.HandleFunc("POST /v1/nodes", s.auth(s.create(o.Control.CreateNode)))
	mux.HandleFunc("DELETE /v1/nodes/{name}", s.auth(s.remove(o.Control.DeleteNode)))
	mux.HandleFunc("POST /v1/nodes/{name}/drain", s.auth(s.drain))
	mux.HandleFunc("POST /v1/nodes/{name}/undrain", s.auth(func(w http.ResponseWriter, r *http.Request) {
		n, err := o.Control.UndrainNode(r.PathValue("name"))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, n)
	}))
	mux.HandleFunc("GET /v1/endpoints", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"endpoints": o.Control.Endpoints()})
	}))
	mux.HandleFunc("GET /v1/endpoints/{name}", s.auth(func(w http.ResponseWriter, r *http.Request) {
		if e, ok := findEndpoint(o.Control.Endpoints(), r.PathValue("name")); ok {
			writeJSON(w, http.StatusOK, e)
			return
		}
		writeError(w, Errorf(NotFound, "", "no endpoint is named %q", r.PathValue("name")))
	}))
	mux.HandleFunc("PATCH /v1/endpoints/{name}", s.auth(s.patchEndpoint))
	mux.HandleFunc("POST /v1/endpoints", s.auth(s.create(o.Control.CreateEndpoint)))
	mux.HandleFunc("DELETE /v1/endpoints/{name}", s.auth(s.remove(o.Control.DeleteEndpoint)))
	if o.Pools != nil {
		mux.HandleFunc("GET /v1/pools", s.auth(servePools(o.Pools)))
	}
	s.clusterRoutes(mux)
	mux.HandleFunc("GET /v1/sessions", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"sessions": o.Control.Sessions()})
	}))
	mux.HandleFunc("DELETE /v1/sessions/{id}", s.auth(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
		if err != nil {
			writeError(w, Errorf(BadRequest, "id", "invalid session id %q (want a number)", r.PathValue("id")))
			return
		}
		if !o.Control.KillSession(id) {
			writeError(w, Errorf(NotFound, "", "no session has id %d", id))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"killed": id})
	}))
	mux.HandleFunc("POST /v1/reload", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		ch, err := o.Control.Reload()
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, ch)
	}))
	// Go's profiling handlers expose the process's memory: behind the token.
	mux.HandleFunc("GET /debug/pprof/", s.auth(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/cmdline", s.auth(pprof.Cmdline))
	mux.HandleFunc("GET /debug/pprof/profile", s.auth(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/symbol", s.auth(pprof.Symbol))
	mux.HandleFunc("GET /debug/pprof/trace", s.auth(pprof.Trace))
	mux.HandleFunc("/", s.auth(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, Errorf(NotFound, "", "no such resource: %s %s", r.Method, r.URL.Path))
	}))
	// Browsers: a page the operator visits must not drive the API (cross-site requests are
	// refused, GETs too: a GET of /debug/pprof/profile or /trace costs the process CPU for as
	// long as it asks, and without a token nothing else stops it); without a token, neither
	// through a name it rebinds to 127.0.0.1 (only loopback Host headers are served).
	var h http.Handler = sameOriginOnly(mux)
	if o.Token == "" {
		h = loopbackHostOnly(h)
	}
	s.srv = &http.Server{
		Handler:           h,
		TLSConfig:         o.TLS,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A CPU profile or trace takes as long as it is asked to.
		WriteTimeout:   5 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 16 << 10,
		ErrorLog:       slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug),
	}
	s.srv.RegisterOnShutdown(func() { close(s.stopping) })
	return s
}

// Handler is the server's HTTP handler (tests).
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Serve answers requests on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	var err error
	if s.o.TLS != nil {
		err = s.srv.ServeTLS(ln, "", "")
	} else {
		err = s.srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server, letting requests under way finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// sameOriginOnly refuses cross-origin requests from browsers (by Sec-Fetch-Site, else Origin
// against Host; requests without either, from non-browser clients, pass) whatever their method,
// except to the probes and /metrics, which carry no secrets and no side effects and which
// dashboards on other origins may read. Go's CrossOriginProtection alone lets every GET through.
func sameOriginOnly(h http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			h.ServeHTTP(w, r)
			return
		}
		check := r
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
			// Judge a safe method as CrossOriginProtection judges an unsafe one.
			check = r.Clone(r.Context())
			check.Method = http.MethodPost
		}
		if err := cop.Check(check); err != nil {
			writeError(w, Errorf(Forbidden, "", "cross-origin request refused: %v", err))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHostOnly refuses requests whose Host header is not a loopback address or localhost.
func loopbackHostOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hst, _, err := net.SplitHostPort(host); err == nil {
			host = hst
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			writeError(w, Errorf(Forbidden, "", "without admin.token the API answers only requests to a loopback address (Host %q)", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// auth wraps h: with a token, a request without it gets 401.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.o.Token == "" {
		return h
	}
	// Digests of equal length: ConstantTimeCompare would return at once on a length mismatch,
	// telling the token's length.
	want := sha256.Sum256([]byte("Bearer " + s.o.Token))
	return func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			writeError(w, Errorf(Unauthorized, "", "this request needs the admin token (Authorization: Bearer TOKEN)"))
			return
		}
		h(w, r)
	}
}

func (s *Server) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	var patch map[string]json.RawMessage
	if err := readJSON(r, &patch); err != nil {
		writeError(w, err)
		return
	}
	if len(patch) == 0 {
		writeError(w, Errorf(BadRequest, "", "the body names no setting to change"))
		return
	}
	ch, err := s.o.Control.PatchEndpoint(r.PathValue("name"), patch)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ch)
}

// DefaultDrainTimeout is how long a drain waits for sessions to leave the node before it closes
// what is left; MaxDrainTimeout bounds what a request may ask.
const (
	DefaultDrainTimeout = 30 * time.Second
	MaxDrainTimeout     = 24 * time.Hour
)

func (s *Server) drain(w http.ResponseWriter, r *http.Request) {
	timeout := DefaultDrainTimeout
	if r.ContentLength != 0 {
		var body struct {
			Timeout string `json:"timeout"`
		}
		if err := readJSON(r, &body); err != nil {
			writeError(w, err)
			return
		}
		if body.Timeout != "" {
			d, err := time.ParseDuration(body.Timeout)
			if err != nil || d <= 0 || d > MaxDrainTimeout {
				writeError(w, Errorf(Invalid, "timeout", "invalid value %q (want a duration from 1ms to %s, such as 30s)", body.Timeout, MaxDrainTimeout))
				return
			}
			timeout = d
		}
	}
	n, err := s.o.Control.DrainNode(r.PathValue("name"), timeout)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}

func findEndpoint(es []Endpoint, name string) (Endpoint, bool) {
	for _, e := range es {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// readJSON decodes r's body, a JSON object of at most maxBody bytes, into v.
func readJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		// The refusal stays (a cross-site HTML form can send only a form's or text's type, and
		// so cannot change settings); the message says what to add, curl's -d sending a form's.
		return Errorf(NotJSON, "", "the body must be declared JSON: add the header Content-Type: application/json "+
			"(curl: -H 'Content-Type: application/json'); %s is refused, as a web page's form could send it", ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return Errorf(BadRequest, "", "reading the body: %v", err)
	}
	if len(body) > maxBody {
		return Errorf(TooLarge, "", "the body is larger than %d bytes", maxBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return Errorf(BadRequest, "", "the body is not a JSON object: %v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = Errorf(Internal, "", "%v", err)
	}
	writeJSON(w, httpStatus(e.Kind), map[string]*Error{"error": e})
}
