package admin

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
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
	// LearnCommits takes one line of a peer's stream of acknowledged commits.
	LearnCommits(line string) error
}

// PeerHeader carries the cluster's peer secret on a peer's requests.
const PeerHeader = "X-Sluice-Peer"

// maxCommitLine bounds one line of a peer's commit stream (a GTID position).
const maxCommitLine = 64 << 10

// commits serves POST /v1/cluster/commits: a peer's stream of the positions of the commits it
// acknowledged, one per line, for as long as the peer keeps it open. Its own secret (the
// cluster's, from the store), not the admin token: the nodes' tokens are their own.
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
	// The stream lasts as long as the peer keeps it: no read deadline, until Shutdown, which
	// would otherwise wait for it (and leave it running once its own time is up).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	var mu sync.Mutex
	returned := false
	defer func() {
		mu.Lock()
		returned = true
		mu.Unlock()
	}()
	go func() {
		select {
		case <-s.stopping:
		case <-r.Context().Done():
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !returned {
			_ = rc.SetReadDeadline(time.Now())
		}
	}()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 0, 4096), maxCommitLine)
	for sc.Scan() {
		if err := p.LearnCommits(sc.Text()); err != nil {
			w.Header().Set("Connection", "close")
			writeError(w, Errorf(BadRequest, "", "%v", err))
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
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
