package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one live sluice node as it registered itself.
type Member struct {
	Name      string            `json:"name"`
	Zone      string            `json:"zone,omitempty"`
	Admin     string            `json:"admin,omitempty"`     // admin API address
	AdminTLS  bool              `json:"admin_tls,omitempty"` // the admin API serves HTTPS
	Endpoints map[string]string `json:"endpoints,omitempty"` // endpoint name -> listen address
	Version   string            `json:"version"`
	Started   time.Time         `json:"started"`
	Host      string            `json:"host,omitempty"`
	PID       int               `json:"pid,omitempty"`
	// Instance tells this process from an earlier one of the same name whose lease has not
	// ended yet (a node killed and restarted at once).
	Instance string `json:"instance"`
	// Applied is the configuration revision the node has in force; Refused says why it does
	// not run a newer stored one (RefusedRevision).
	Applied         int64  `json:"applied_revision"`
	Refused         string `json:"refused,omitempty"`
	RefusedRevision int64  `json:"refused_revision,omitempty"`
	// Connections is the node's own client-session connections per backend (for balance
	// least-connections with connections_from: cluster).
	Connections map[string]int64 `json:"connections,omitempty"`
}

func (s *Store) memberKey(name string) string { return s.prefix + "members/" + name }

// Register keeps m registered under a lease (MemberTTL) until ctx ends, then removes it. Each
// second it calls update, which may change what m says (the revision applied, the
// connections); a changed m is written again. Another live node registered under the same
// name keeps its key: this one waits for that lease to end, and says so in the log.
func (s *Store) Register(ctx context.Context, m Member, update func(*Member)) {
	var lease clientv3.LeaseID
	var written []byte
	waitingLogged := false
	revoke := func() {
		if lease != 0 {
			c, cancel := context.WithTimeout(context.Background(), s.timeout)
			_, _ = s.cli.Revoke(c, lease)
			cancel()
			lease, written = 0, nil
		}
	}
	defer revoke()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	key := s.memberKey(m.Name)
	rounds := 0
	for {
		if update != nil {
			update(&m)
		}
		v, _ := json.Marshal(m)
		if rounds++; rounds%30 == 0 {
			written = nil // written again now and then, even unchanged: a record deleted by hand comes back
		}
		if err := s.renew(ctx, key, v, &lease, &written, &waitingLogged); err != nil {
			s.log.Debug("store: membership not renewed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// renew keeps the registration: a lease kept alive, the key written when it changed.
func (s *Store) renew(ctx context.Context, key string, v []byte, lease *clientv3.LeaseID, written *[]byte, waitingLogged *bool) error {
	c, cancel := s.ctx(ctx)
	defer cancel()
	if *lease != 0 {
		if _, err := s.cli.KeepAliveOnce(c, *lease); err != nil {
			s.saw(err)
			if rpcNotFound(err) {
				*lease, *written = 0, nil // the lease ended while etcd was away: register again
			}
			return err
		}
		if string(*written) == string(v) {
			return nil
		}
		_, err := s.cli.Put(c, key, string(v), clientv3.WithLease(*lease))
		s.saw(err)
		if err == nil {
			*written = v
		}
		return err
	}
	g, err := s.cli.Grant(c, int64(MemberTTL/time.Second))
	s.saw(err)
	if err != nil {
		return err
	}
	r, err := s.cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(v), clientv3.WithLease(g.ID))).Else(clientv3.OpGet(key)).Commit()
	s.saw(err)
	if err != nil || !r.Succeeded {
		_, _ = s.cli.Revoke(c, g.ID)
		var other Member
		if err == nil {
			if kv := r.Responses[0].GetResponseRange().GetKvs(); len(kv) > 0 {
				_ = json.Unmarshal(kv[0].Value, &other)
			}
			s.nameTaken(fmt.Sprintf("host %s pid %d started %s", orDash(other.Host), other.PID, other.Started.Format(time.RFC3339)))
		}
		if err == nil && !*waitingLogged {
			s.log.Warn("store: another sluice is registered under this name; waiting for its registration to end",
				"name", other.Name, "its_host", other.Host, "its_pid", other.PID, "its_start", other.Started, "ttl", MemberTTL)
			*waitingLogged = true
		}
		return err
	}
	*lease, *written, *waitingLogged = g.ID, v, false
	s.nameTaken("")
	s.log.Info("store: registered as a live sluice node", "key", key)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func rpcNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "requested lease not found")
}

// Members lists the live nodes, by name.
func (s *Store) Members(ctx context.Context) ([]Member, error) {
	c, cancel := s.ctx(ctx)
	defer cancel()
	r, err := s.cli.Get(c, s.prefix+"members/", clientv3.WithPrefix())
	s.saw(err)
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]Member, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		var m Member
		if json.Unmarshal(kv.Value, &m) == nil {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// WatchMembers calls fn with the live nodes each time the list changes (and once at the
// start), until ctx ends; while etcd is away fn gets nothing.
func (s *Store) WatchMembers(ctx context.Context, fn func([]Member)) {
	for ctx.Err() == nil {
		if ms, err := s.Members(ctx); err == nil {
			fn(ms)
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wc := s.cli.Watch(wctx, s.prefix+"members/", clientv3.WithPrefix())
		for wr := range wc {
			if wr.Err() != nil {
				break
			}
			if ms, err := s.Members(ctx); err == nil {
				fn(ms)
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// Drain is a node drained through some sluice node's API: every node drains it.
type Drain struct {
	Node    string        `json:"node"`
	Timeout time.Duration `json:"timeout"`
	By      string        `json:"by"` // the sluice node whose API drained it
	At      time.Time     `json:"at"`
}

func (s *Store) drainKey(node string) string { return s.prefix + "drains/" + node }

// PutDrain records that node is drained, for every sluice node.
func (s *Store) PutDrain(ctx context.Context, d Drain) error {
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	c, cancel := s.ctx(ctx)
	defer cancel()
	_, err = s.cli.Put(c, s.drainKey(d.Node), string(v))
	s.saw(err)
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// DeleteDrain records that node is back in service (or gone), for every sluice node.
func (s *Store) DeleteDrain(ctx context.Context, node string) error {
	c, cancel := s.ctx(ctx)
	defer cancel()
	_, err := s.cli.Delete(c, s.drainKey(node))
	s.saw(err)
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// WatchDrains calls fn with every drained node's record each time the set changes (and once at
// the start, and after each reconnection), until ctx ends.
func (s *Store) WatchDrains(ctx context.Context, fn func(map[string]Drain)) {
	for ctx.Err() == nil {
		c, cancel := s.ctx(ctx)
		r, err := s.cli.Get(c, s.prefix+"drains/", clientv3.WithPrefix())
		cancel()
		s.saw(err)
		if err == nil {
			fn(decodeDrains(r.Kvs))
			wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			wc := s.cli.Watch(wctx, s.prefix+"drains/", clientv3.WithPrefix(), clientv3.WithRev(r.Header.Revision+1))
			for wr := range wc {
				if wr.Err() != nil {
					break
				}
				c, cancel := s.ctx(ctx)
				r, err := s.cli.Get(c, s.prefix+"drains/", clientv3.WithPrefix())
				cancel()
				if err != nil {
					break
				}
				fn(decodeDrains(r.Kvs))
			}
			wcancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func decodeDrains(kvs []*mvccpb.KeyValue) map[string]Drain {
	out := make(map[string]Drain, len(kvs))
	for _, kv := range kvs {
		var d Drain
		if json.Unmarshal(kv.Value, &d) == nil && d.Node != "" {
			out[d.Node] = d
		}
	}
	return out
}
