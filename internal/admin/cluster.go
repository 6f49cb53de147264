package admin

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// Cluster is what the cluster's part of the API reads and changes: the store several sluice
// nodes share their configuration through, and the nodes that are live.
type Cluster interface {
	// ClusterInfo is GET /v1/cluster; a NotFound error without a store.
	ClusterInfo() (ClusterInfo, error)
	// SharedConfig is GET /v1/config: the configuration in force, as stored (with a store) or
	// as the file holds it.
	SharedConfig() (SharedConfig, error)
	// ImportConfig is PUT /v1/config: text replaces the stored configuration if it is still
	// at revision rev (0: at the revision this sluice applied), validated as a change is.
	ImportConfig(text []byte, rev int64) (Change, error)
}

// StoreState is this sluice's link to the store: GET /v1/proxy's store and /v1/cluster's.
type StoreState struct {
	Kind      string   `json:"kind"` // "etcd"
	Endpoints []string `json:"endpoints"`
	Prefix    string   `json:"prefix"`
	Name      string   `json:"name"` // this sluice's name among the nodes
	Connected bool     `json:"connected"`
	// Since is when Connected last changed; LastError the last failure's reason.
	Since     time.Time `json:"since"`
	LastError string    `json:"last_error,omitempty"`
	// NameTakenBy: another live sluice is registered under this one's name (its host, pid and
	// start); this one is not listed until that one's registration ends.
	NameTakenBy string `json:"name_taken_by,omitempty"`
	// Revision is the stored configuration's newest revision this sluice has seen; Applied the
	// one in force here. Refused says why a newer one is not (RefusedRevision).
	Revision        int64  `json:"revision"`
	Applied         int64  `json:"applied_revision"`
	Refused         string `json:"refused,omitempty"`
	RefusedRevision int64  `json:"refused_revision,omitempty"`
	// PendingRestart lists the settings the stored configuration changed that take effect
	// here only at a restart.
	PendingRestart []string `json:"pending_restart,omitempty"`
	// PeersStreaming is how many other nodes this one streams its commits to now;
	// CommitWaits how many latest-level writes waited for them before their OK, and
	// CommitWaitTimeouts how many stopped waiting at the timeout (a peer too slow).
	PeersStreaming     int    `json:"peers_streaming"`
	CommitWaits        uint64 `json:"commit_waits"`
	CommitWaitTimeouts uint64 `json:"commit_wait_timeouts"`
}

// Member is one live sluice node, as it registered itself in the store.
type Member struct {
	Name        string            `json:"name"`
	Zone        string            `json:"zone,omitempty"`
	Admin       string            `json:"admin,omitempty"`
	Endpoints   map[string]string `json:"endpoints,omitempty"`
	Version     string            `json:"version"`
	Started     time.Time         `json:"started"`
	Host        string            `json:"host,omitempty"`
	PID         int               `json:"pid,omitempty"`
	Applied     int64             `json:"applied_revision"`
	Connections map[string]int64  `json:"connections,omitempty"`
	Self        bool              `json:"self"`
	// Refused says why the node does not run the newest stored configuration
	// (RefusedRevision): a key it does not know, a ${NAME} its environment lacks...
	Refused         string `json:"refused,omitempty"`
	RefusedRevision int64  `json:"refused_revision,omitempty"`
}

// ClusterInfo is GET /v1/cluster.
type ClusterInfo struct {
	Store   StoreState `json:"store"`
	Members []Member   `json:"members"`
	// MembersAsOf is when the list was read from the store (older while it is unreachable).
	MembersAsOf time.Time `json:"members_as_of"`
}

// SharedConfig is GET /v1/config.
type SharedConfig struct {
	Source   string `json:"source"` // "etcd:/prefix/config" or the file's path
	Revision int64  `json:"revision"`
	Config   string `json:"config"`
}

// Peers takes what the other sluice nodes of the cluster share with this one.
type Peers interface {
	// PeerSecret is the cluster's shared secret a peer proves itself with ("": none yet).
	PeerSecret() string
	// LearnCommits takes one position from a peer's stream of acknowledged commits: "mariadb
	// POSITION" or "mysql GTID-SET".
	LearnCommits(pos string) error
}

// PeerHeader carries the cluster's peer secret on a peer's requests; PeerProtocol is the
// Upgrade token of the commit stream.
const (
	PeerHeader   = "X-Sluice-Peer"
	PeerProtocol = "sluice-commits/1"
)

// maxCommitLine bounds one line of a peer's commit stream (a version and a GTID position).
const maxCommitLine = 64 << 10

// commits serves POST /v1/cluster/commits, upgraded (HTTP 101) to a peer's stream of the
// positions of the commits it acknowledged: it sends "VERSION KIND POSITION\n", this node
// folds the position in and answers "VERSION\n", which the peer waits for before it lets a
// latest-level write's OK go (SetPeerGate). Its own secret (the cluster's, from the store),
// not the admin token: the nodes' tokens are their own.
func (s *Server) commits(w http.ResponseWriter, r *http.Request) {
	p := s.o.Peers
	secret := p.PeerSecret()
	want := sha256.Sum256([]byte(secret))
	got := sha256.Sum256([]byte(r.Header.Get(PeerHeader)))
	if secret == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		// The body is a stream that may have nothing to send for long: Go's server would read
		// it to its end before answering (to keep the connection), and the peer would learn
		// of its refusal only at the read timeout (30 s). The connection ends instead.
		w.Header().Set("Connection", "close")
		writeError(w, Errorf(Unauthorized, "", "a peer request needs the cluster's peer secret"))
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), PeerProtocol) {
		w.Header().Set("Connection", "close")
		writeError(w, Errorf(BadRequest, "", "the commit stream needs Upgrade: %s", PeerProtocol))
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		writeError(w, Errorf(Internal, "", "%v", err))
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return
	}
	s.streams[conn] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	_ = conn.SetDeadline(time.Time{})
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: " + PeerProtocol + "\r\nConnection: Upgrade\r\n\r\n")
	if brw.Flush() != nil {
		return
	}
	rd := bufio.NewReaderSize(brw.Reader, maxCommitLine)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return // the peer left, or sent a line past maxCommitLine
		}
		v, pos, ok := strings.Cut(strings.TrimSuffix(string(line), "\n"), " ")
		if !ok {
			return
		}
		if err := p.LearnCommits(pos); err != nil {
			s.o.Logger.Warn("a peer sent a position this sluice cannot read; its stream is closed", "peer", r.RemoteAddr, "err", err)
			return
		}
		_, _ = brw.WriteString(v + "\n")
		if rd.Buffered() == 0 && brw.Flush() != nil {
			return
		}
	}
}

// closeStreams ends the peers' commit streams (hijacked: the HTTP server's Shutdown does not
// know them).
func (s *Server) closeStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.streams {
		c.Close()
	}
}

// maxConfigBody bounds PUT /v1/config's body: a whole configuration's text.
const maxConfigBody = 4 << 20

func (s *Server) clusterRoutes(mux *http.ServeMux) {
	if s.o.Peers != nil {
		mux.HandleFunc("POST /v1/cluster/commits", s.commits)
	}
	c := s.o.Cluster
	if c == nil {
		return
	}
	mux.HandleFunc("GET /v1/cluster", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		info, err := c.ClusterInfo()
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, info)
	}))
	mux.HandleFunc("GET /v1/config", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		sc, err := c.SharedConfig()
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, sc)
	}))
	mux.HandleFunc("PUT /v1/config", s.auth(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Config   *string `json:"config"`
			Revision int64   `json:"revision"`
		}
		if err := readJSONLimit(r, &body, maxConfigBody); err != nil {
			writeError(w, err)
			return
		}
		if body.Config == nil || strings.TrimSpace(*body.Config) == "" {
			writeError(w, Errorf(BadRequest, "config", "required: the configuration's YAML text"))
			return
		}
		ch, err := c.ImportConfig([]byte(*body.Config), body.Revision)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, ch)
	}))
}

// readJSONLimit is readJSON with its own bound on the body.
func readJSONLimit(r *http.Request, v any, limit int64) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return Errorf(NotJSON, "", "the body must be declared JSON: add the header Content-Type: application/json; %s is refused", ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return Errorf(BadRequest, "", "reading the body: %v", err)
	}
	if int64(len(body)) > limit {
		return Errorf(TooLarge, "", "the body is larger than %d bytes", limit)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return Errorf(BadRequest, "", "the body is not a JSON object: %v", err)
	}
	return nil
}
