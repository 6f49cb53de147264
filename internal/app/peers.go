package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/store"
)

// The latest level across sluice nodes. A node knows at once of the commits it acknowledged
// itself; another node's, only once its own binlog stream of the primary delivered them
// (measured here: about a third of the reads sent right after a write through another node
// missed it, p99 11 ms). So each node streams the position of what it acknowledged to every
// other live node, over their admin listeners (POST /v1/cluster/commits, a long request
// whose body is one position per line), as each commit moves it (coalesced: a slow peer gets
// the newest position, never a queue). The signal is raised before the client gets its OK, so
// the position is on its way to the other nodes before the client can send them a read.
// Peers prove themselves with the cluster's secret kept in etcd (PREFIX/peer-secret).

// peers is this node's links to the others.
type peers struct {
	secret atomic.Pointer[string]
	mu     sync.Mutex
	links  map[string]*peerLink // by member instance
	newest atomic.Pointer[string]
}

// peerLink streams positions to one other node.
type peerLink struct {
	url    string
	cancel context.CancelFunc
	wake   chan struct{}
}

// PeerSecret implements admin.Peers.
func (a *App) PeerSecret() string {
	if a.cluster == nil {
		return ""
	}
	if s := a.cluster.peers.secret.Load(); s != nil {
		return *s
	}
	return ""
}

// LearnCommits implements admin.Peers: "mariadb POSITION" or "mysql GTID-SET".
func (a *App) LearnCommits(line string) error {
	kind, text, ok := strings.Cut(line, " ")
	if !ok || text == "" {
		return fmt.Errorf("not a position line: %.80q", line)
	}
	var f gtid.Flavor
	switch kind {
	case "mariadb":
		f = gtid.MariaDB
	case "mysql":
		f = gtid.MySQL
	default:
		return fmt.Errorf("unknown flavor %.20q", kind)
	}
	pos, err := gtid.Parse(f, text)
	if err != nil {
		return err
	}
	a.proxy.LearnCommits(pos)
	return nil
}

// sharePositions runs until ctx ends: it learns the cluster's secret, then streams every move
// of this node's known commits to the live members.
func (a *App) sharePositions(ctx context.Context) {
	c := a.cluster
	for ctx.Err() == nil {
		s, err := c.st.PeerSecret(ctx)
		if err == nil {
			c.peers.secret.Store(&s)
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	moved := a.proxy.CommitsMoved()
	for {
		select {
		case <-ctx.Done():
			c.peers.mu.Lock()
			for _, l := range c.peers.links {
				l.cancel()
			}
			c.peers.mu.Unlock()
			return
		case <-moved:
		}
		pos := a.proxy.KnownCommits()
		if pos.IsZero() {
			continue
		}
		kind := "mariadb"
		if pos.Flavor() == gtid.MySQL {
			kind = "mysql"
		}
		line := kind + " " + pos.String() + "\n"
		c.peers.newest.Store(&line)
		c.peers.mu.Lock()
		for _, l := range c.peers.links {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
		c.peers.mu.Unlock()
	}
}

// linkPeers keeps one link per other live member with an admin address (called with each new
// member list).
func (a *App) linkPeers(ctx context.Context, ms []store.Member) {
	c := a.cluster
	c.peers.mu.Lock()
	defer c.peers.mu.Unlock()
	if c.peers.links == nil {
		c.peers.links = map[string]*peerLink{}
	}
	live := map[string]bool{}
	for _, m := range ms {
		if m.Instance == c.instance || m.Admin == "" {
			continue
		}
		live[m.Instance] = true
		if _, ok := c.peers.links[m.Instance]; ok {
			continue
		}
		scheme := "http"
		if m.AdminTLS {
			scheme = "https"
		}
		lctx, cancel := context.WithCancel(ctx)
		l := &peerLink{url: scheme + "://" + m.Admin + "/v1/cluster/commits", cancel: cancel, wake: make(chan struct{}, 1)}
		c.peers.links[m.Instance] = l
		// In the cluster's group (linkPeers runs in one of its goroutines): stopCluster waits
		// for the links too.
		c.wg.Go(func() { a.streamTo(lctx, l) })
	}
	for id, l := range c.peers.links {
		if !live[id] {
			l.cancel()
			delete(c.peers.links, id)
		}
	}
}

// streamTo keeps one streaming request open to a peer and writes the newest position on each
// wake; it reconnects after a failure. A link that keeps failing (a peer that refuses the
// secret, an address this host cannot reach, a certificate it does not trust) is logged, once
// until it streams again: latest reads through the peer miss this node's commits meanwhile.
// A refused secret is read from the store again (the key was deleted and made anew).
func (a *App) streamTo(ctx context.Context, l *peerLink) {
	c := a.cluster
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, ResponseHeaderTimeout: 0}}
	defer client.CloseIdleConnections()
	failures, logged := 0, false
	for ctx.Err() == nil {
		pr, pw := io.Pipe()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, pr)
		if err != nil {
			return
		}
		req.Header.Set(admin.PeerHeader, a.PeerSecret())
		req.Header.Set("Content-Type", "text/plain")
		done := make(chan struct{})
		var failed string // why the stream ended, unless the peer ended it (204)
		var refused bool
		start := time.Now()
		go func() {
			defer close(done)
			resp, err := client.Do(req)
			if err != nil {
				failed = err.Error()
			} else {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					failed = fmt.Sprintf("%s: %.200s", resp.Status, body)
					refused = resp.StatusCode == http.StatusUnauthorized
				}
			}
			pr.CloseWithError(io.EOF)
		}()
		var last *string
	write:
		for {
			if s := c.peers.newest.Load(); s != nil && s != last {
				if _, err := io.WriteString(pw, *s); err != nil {
					break write
				}
				last = s
			}
			select {
			case <-ctx.Done():
				break write
			case <-done:
				break write
			case <-l.wake:
			}
		}
		pw.Close()
		<-done
		if ctx.Err() != nil {
			return
		}
		switch {
		case failed == "" || time.Since(start) >= 5*time.Second:
			if logged {
				a.log.Info("peer link: streaming commits again", "peer", l.url)
			}
			failures, logged = 0, false
		default:
			failures++
			if failures >= 3 && !logged {
				a.log.Warn("peer link: this node's commits do not reach a peer (latest reads through it may miss them); retrying",
					"peer", l.url, "err", failed)
				logged = true
			}
			if refused {
				if s, err := c.st.PeerSecret(ctx); err == nil {
					c.peers.secret.Store(&s)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}
