// Package store keeps the configuration several sluice nodes share, and the list of live nodes,
// in etcd: the configuration at PREFIX/config (a compare-and-swap on its revision for every
// change), each live node at PREFIX/members/NAME under a lease. It knows nothing of what the
// configuration says: the app parses, applies and refuses it.
package store

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Format is the version of the stored configuration's envelope and rules that this sluice
// writes and reads. A node finds a higher one, written by a newer sluice, and refuses it
// rather than misapply it.
const Format = 1

// MemberTTL is how long a node that stopped renewing its lease stays listed.
const MemberTTL = 5 * time.Second

// Options say how to reach etcd and where this cluster's keys are.
type Options struct {
	Endpoints   []string
	Prefix      string // starts and ends with "/"
	DialTimeout time.Duration
	Username    string
	Password    string
	TLS         *tls.Config // nil: plain
	Logger      *slog.Logger
}

// Doc is one stored version of the shared configuration.
type Doc struct {
	Text    []byte    // the configuration's YAML text (no local keys)
	Rev     int64     // etcd's mod revision of the key: what a change compares against
	Format  int       // the envelope's format (Format, or higher from a newer sluice)
	Writer  string    // the sluice node that stored it ("" from sluice ctl import through etcd)
	Version string    // that node's sluice version
	Written time.Time // when
}

// envelope is the stored value: the text with what says who wrote it and in which format.
type envelope struct {
	Format  int       `json:"format"`
	Writer  string    `json:"writer,omitempty"`
	Version string    `json:"version,omitempty"`
	Written time.Time `json:"written"`
	Config  string    `json:"config"`
}

// Errors a change can meet.
var (
	// ErrConflict: the stored configuration is not the revision the change was made on.
	ErrConflict = errors.New("the stored configuration changed since this sluice applied it")
	// ErrUnavailable: etcd did not answer (no quorum reachable) within the dial timeout.
	ErrUnavailable = errors.New("the store (etcd) is not reachable")
	// ErrTooLarge: the configuration is larger than etcd takes in one request (its
	// --max-request-bytes, 1.5 MiB by default).
	ErrTooLarge = errors.New("the configuration is larger than etcd takes (its --max-request-bytes, 1.5 MiB by default)")
)

// tooLarge is whether err is etcd's refusal of a request past its size limit, or the client's
// own (past its 2 MiB send limit): the request's fault, not the link's.
func tooLarge(err error) bool {
	return errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) ||
		status.Code(err) == codes.ResourceExhausted
}

// Store is a connection to the cluster's keys in etcd.
type Store struct {
	cli     *clientv3.Client
	prefix  string
	timeout time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	state State
}

// State is what this node knows of its link to the store.
type State struct {
	Connected bool      `json:"connected"`
	Since     time.Time `json:"since"`                // when Connected last changed
	LastError string    `json:"last_error,omitempty"` // the last failure's reason
	Rev       int64     `json:"revision"`             // the stored configuration's revision last seen
	// NameTakenBy says which other live sluice holds this one's name in the list of members
	// (its host, pid and start), while this one waits for its registration to end: unlisted,
	// this sluice's connections count nowhere and no peer streams its commits to it.
	NameTakenBy string `json:"name_taken_by,omitempty"`
}

// nameTaken records who holds this sluice's name ("": no one, or this sluice).
func (s *Store) nameTaken(by string) {
	s.mu.Lock()
	s.state.NameTakenBy = by
	s.mu.Unlock()
}

// Open connects (lazily: etcd need not be up yet).
func Open(o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	eps := make([]string, len(o.Endpoints))
	for i, e := range o.Endpoints {
		if o.TLS != nil && !strings.Contains(e, "://") {
			e = "https://" + e
		}
		eps[i] = e
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            eps,
		DialTimeout:          o.DialTimeout,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: o.DialTimeout,
		Username:             o.Username,
		Password:             o.Password,
		TLS:                  o.TLS,
		// etcd's client logs through zap; sluice reports the store's state itself.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return &Store{cli: cli, prefix: o.Prefix, timeout: o.DialTimeout, log: o.Logger, state: State{Since: time.Now()}}, nil
}

// Close ends the connection.
func (s *Store) Close() error { return s.cli.Close() }

// ConfigKey is the stored configuration's key.
func (s *Store) ConfigKey() string { return s.prefix + "config" }

// Prefix is the cluster's key prefix.
func (s *Store) Prefix() string { return s.prefix }

// State is the link's state now.
func (s *Store) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// saw records the outcome of a request to etcd.
func (s *Store) saw(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	up := err == nil
	if up != s.state.Connected {
		s.state.Connected, s.state.Since = up, time.Now()
		if up {
			s.log.Info("store: etcd reachable again")
		} else {
			s.log.Warn("store: etcd not reachable; the configuration last applied stays in force", "err", err)
		}
	}
	if err != nil {
		s.state.LastError = err.Error()
	}
}

// seenRev records the stored configuration's revision.
func (s *Store) seenRev(rev int64) {
	s.mu.Lock()
	if rev > s.state.Rev {
		s.state.Rev = rev
	}
	s.mu.Unlock()
}

func (s *Store) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(clientv3.WithRequireLeader(parent), s.timeout)
}

// unavailable wraps a request's failure (other than a conflict) as ErrUnavailable.
func unavailable(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

func decode(value []byte, rev int64) (Doc, error) {
	var e envelope
	if err := json.Unmarshal(value, &e); err != nil {
		return Doc{Rev: rev}, fmt.Errorf("the stored configuration (revision %d) is not one sluice wrote: %v", rev, err)
	}
	return Doc{Text: []byte(e.Config), Rev: rev, Format: e.Format, Writer: e.Writer, Version: e.Version, Written: e.Written}, nil
}

// Load reads the stored configuration; found is false when there is none yet.
func (s *Store) Load(ctx context.Context) (d Doc, found bool, err error) {
	c, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.cli.Get(c, s.ConfigKey())
	s.saw(err)
	if err != nil {
		return Doc{}, false, unavailable(err)
	}
	if len(r.Kvs) == 0 {
		return Doc{}, false, nil
	}
	kv := r.Kvs[0]
	s.seenRev(kv.ModRevision)
	d, err = decode(kv.Value, kv.ModRevision)
	return d, true, err
}

// Put stores text as the configuration if the stored one is still at revision rev (0: if
// there is none), and returns the new revision. A stored configuration at another revision
// gives ErrConflict (with the revision it is at).
func (s *Store) Put(ctx context.Context, text []byte, rev int64, writer, version string) (int64, error) {
	v, err := json.Marshal(envelope{Format: Format, Writer: writer, Version: version, Written: time.Now().UTC(), Config: string(text)})
	if err != nil {
		return 0, err
	}
	c, cancel := s.ctx(ctx)
	defer cancel()
	key := s.ConfigKey()
	r, err := s.cli.Txn(c).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, string(v))).Else(clientv3.OpGet(key, clientv3.WithKeysOnly())).Commit()
	if tooLarge(err) {
		return 0, fmt.Errorf("%w: %d bytes stored: %v", ErrTooLarge, len(v), err)
	}
	s.saw(err)
	if err != nil {
		return 0, unavailable(err)
	}
	if !r.Succeeded {
		at := int64(0)
		if g := r.Responses[0].GetResponseRange(); g != nil && len(g.Kvs) > 0 {
			at = g.Kvs[0].ModRevision
		}
		return at, fmt.Errorf("%w (stored: revision %d; this change was made on revision %d)", ErrConflict, at, rev)
	}
	s.seenRev(r.Header.Revision)
	return r.Header.Revision, nil
}

// Watch calls fn with every stored configuration after revision after, in order, until ctx
// ends; it reconnects by itself (fn gets no call while etcd is away, and the newest
// configuration when it is back: revisions in between that etcd compacted are skipped). A
// stored configuration that cannot be decoded, or a deleted one, reaches fn as an error.
func (s *Store) Watch(ctx context.Context, after int64, fn func(Doc, error)) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wc := s.cli.Watch(wctx, s.ConfigKey(), clientv3.WithRev(after+1))
		for wr := range wc {
			if err := wr.Err(); err != nil {
				s.saw(err)
				if errors.Is(err, rpctypes.ErrCompacted) {
					// The revisions we missed are gone: the newest is what counts.
					if d, found, err := s.Load(ctx); err == nil && found {
						after = d.Rev
						fn(d, nil)
					}
				}
				break
			}
			s.saw(nil)
			backoff = 100 * time.Millisecond
			for _, ev := range wr.Events {
				rev := ev.Kv.ModRevision
				after = rev
				s.seenRev(rev)
				if ev.Type == clientv3.EventTypeDelete {
					fn(Doc{Rev: rev}, fmt.Errorf("the stored configuration was deleted (revision %d)", rev))
					continue
				}
				fn(decode(ev.Kv.Value, rev))
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
		// What changed while the watch was down comes with the new watch (from after+1).
	}
}

// Probe checks the link (a linearizable read of the configuration's revision, which needs
// etcd's quorum) and returns the stored configuration's revision (0: none).
func (s *Store) Probe(ctx context.Context) (int64, error) {
	c, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.cli.Get(c, s.ConfigKey(), clientv3.WithKeysOnly())
	s.saw(err)
	if err != nil {
		return 0, unavailable(err)
	}
	if len(r.Kvs) == 0 {
		return 0, nil
	}
	s.seenRev(r.Kvs[0].ModRevision)
	return r.Kvs[0].ModRevision, nil
}

// PeerSecret is the cluster's shared secret at PREFIX/peer-secret, made (32 random bytes, hex)
// by the first node that asks: the nodes prove to each other with it that a peer request comes
// from a node of the cluster (whoever can read the prefix in etcd).
func (s *Store) PeerSecret(ctx context.Context) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	key := s.prefix + "peer-secret"
	c, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, hex.EncodeToString(b[:]))).Else(clientv3.OpGet(key)).Commit()
	s.saw(err)
	if err != nil {
		return "", unavailable(err)
	}
	if r.Succeeded {
		return hex.EncodeToString(b[:]), nil
	}
	kvs := r.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 || len(kvs[0].Value) < 32 {
		return "", fmt.Errorf("the cluster's peer secret at %s is missing or too short", key)
	}
	return string(kvs[0].Value), nil
}
