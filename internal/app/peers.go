package app

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
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
// (measured: about a third of the reads sent through another node right after a write missed
// it, p99 11 ms). So each node streams the position of what it acknowledged to every other
// live node, over a connection to their admin listeners upgraded to a line protocol (POST
// /v1/cluster/commits, admin.PeerProtocol): "VERSION KIND POSITION" one way, "VERSION" back
// once the peer has folded it in. A write through an endpoint at the latest level holds its OK
// until every connected peer acknowledged a version that holds it (at most the endpoint's
// consistency_timeout: a peer that does not answer in time is not waited for again until it
// catches up): a read the client sends to any node after its OK then finds the write. Peers
// prove themselves with the cluster's secret kept in etcd (PREFIX/peer-secret).

// peers is this node's links to the others.
type peers struct {
	secret atomic.Pointer[string]
	mu     sync.Mutex
	links  map[string]*peerLink // by member instance
	// live is links as a list, for the gate (lock-free); acked is closed (and replaced) each
	// time a link's acknowledged version moves.
	live  atomic.Pointer[[]*peerLink]
	acked atomic.Pointer[chan struct{}]
	// newest is the newest position to send; nudge asks the sharer to read it again (the gate,
	// for a version moved without a signal).
	newest atomic.Pointer[peerLine]
	nudge  chan struct{}
	// waits counts the writes whose OK waited for the peers; timeouts those that stopped
	// waiting at the timeout.
	waits, timeouts atomic.Uint64
}

// peerLine is one position to send, of known-commits version v.
type peerLine struct {
	v    uint64
	text string
}

// peerRoots are the certificates a peer's admin API may present (admin.tls): the system's
// roots, and the certificates of this node's own tls.cert file (the configuration is shared,
// so the nodes serve the same certificate, or ones its chain's CA signed).
func (a *App) peerRoots() *x509.CertPool {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if f := a.boot.TLS.Cert; f != "" {
		if pem, err := os.ReadFile(f); err == nil {
			pool.AppendCertsFromPEM(pem)
		}
	}
	return pool
}

// errPeerRefused: the peer refused this node's secret.
var errPeerRefused = errors.New("the peer refused the cluster's secret")

// peerLink streams positions to one other node.
type peerLink struct {
	name   string
	addr   string
	tls    bool
	cancel context.CancelFunc
	wake   chan struct{}
	// up: the stream is open; acked: the newest version the peer acknowledged; slow: it did
	// not acknowledge in time, so writes do not wait for it until it catches up (acked at or
	// past slowAt).
	up     atomic.Bool
	acked  atomic.Uint64
	slow   atomic.Bool
	slowAt atomic.Uint64
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
		return fmt.Errorf("not a position: %.80q", line)
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

// sharePositions runs until ctx ends: it learns the cluster's secret, then sends every move
// of this node's known commits to the linked peers.
func (a *App) sharePositions(ctx context.Context) {
	c := a.cluster
	p := &c.peers
	for ctx.Err() == nil {
		s, err := c.st.PeerSecret(ctx)
		if err == nil {
			p.secret.Store(&s)
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	moved := a.proxy.CommitsMoved()
	a.proxy.SetPeerGate(a.peerGate)
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			for _, l := range p.links {
				l.cancel()
			}
			p.mu.Unlock()
			return
		case <-moved:
		case <-p.nudge:
		}
		v := a.proxy.KnownVersion()
		pos := a.proxy.OwnCommits()
		if pos.IsZero() {
			continue
		}
		kind := "mariadb"
		if pos.Flavor() == gtid.MySQL {
			kind = "mysql"
		}
		p.newest.Store(&peerLine{v: v, text: strconv.FormatUint(v, 10) + " " + kind + " " + pos.String() + "\n"})
		if ls := p.live.Load(); ls != nil {
			for _, l := range *ls {
				select {
				case l.wake <- struct{}{}:
				default:
				}
			}
		}
	}
}

// peerGate holds a latest-level write's OK until every connected peer that keeps up has
// acknowledged version v, for at most timeout (proxy.SetPeerGate).
func (a *App) peerGate(v uint64, timeout time.Duration) {
	p := &a.cluster.peers
	ls := p.live.Load()
	if ls == nil || len(*ls) == 0 {
		return
	}
	waiting := func() bool {
		for _, l := range *ls {
			if l.up.Load() && !l.slow.Load() && l.acked.Load() < v {
				return true
			}
		}
		return false
	}
	if !waiting() {
		return
	}
	p.waits.Add(1)
	select { // a version moved without a signal (a position folded in) is sent too
	case p.nudge <- struct{}{}:
	default:
	}
	var timer *time.Timer
	for {
		ch := p.acked.Load()
		if !waiting() {
			break
		}
		if timer == nil {
			timer = time.NewTimer(timeout)
		}
		select {
		case <-*ch:
			continue
		case <-timer.C:
		}
		// Past the timeout: the peers that have not answered are not waited for again until
		// they catch up (a slow or stuck peer must not slow every write).
		p.timeouts.Add(1)
		for _, l := range *ls {
			if l.up.Load() && l.acked.Load() < v {
				l.slowAt.Store(v)
				l.slow.Store(true)
				a.log.Warn("a sluice node did not acknowledge a commit's position in time; writes stop waiting for it until it catches up",
					"peer", l.name, "timeout", timeout)
			}
		}
		return
	}
	if timer != nil {
		timer.Stop()
	}
}

// linkPeers keeps one link per other live member with an admin address (called with each new
// member list).
func (a *App) linkPeers(ctx context.Context, ms []store.Member) {
	c := a.cluster
	p := &c.peers
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.links == nil {
		p.links = map[string]*peerLink{}
	}
	live := map[string]bool{}
	for _, m := range ms {
		if m.Instance == c.instance || m.Admin == "" {
			continue
		}
		live[m.Instance] = true
		if _, ok := p.links[m.Instance]; ok {
			continue
		}
		lctx, cancel := context.WithCancel(ctx)
		l := &peerLink{name: m.Name, addr: m.Admin, tls: m.AdminTLS, cancel: cancel, wake: make(chan struct{}, 1)}
		p.links[m.Instance] = l
		// In the cluster's group (linkPeers runs in one of its goroutines): stopCluster waits
		// for the links too.
		c.wg.Go(func() { a.streamTo(lctx, l) })
	}
	for id, l := range p.links {
		if !live[id] {
			l.cancel()
			delete(p.links, id)
		}
	}
	list := make([]*peerLink, 0, len(p.links))
	for _, l := range p.links {
		list = append(list, l)
	}
	p.live.Store(&list)
}

// ackMoved wakes the gates waiting for acknowledgements.
func (p *peers) ackMoved() {
	next := make(chan struct{})
	if old := p.acked.Swap(&next); old != nil {
		close(*old)
	}
}

// streamTo keeps the commit stream to one peer open, sending the newest position on each
// wake and reading its acknowledgements; it reconnects after a failure. A link that keeps
// failing (a peer that refuses the secret, an address this host cannot reach, a certificate it
// does not trust) is logged, once until it streams again: latest reads through the peer miss
// this node's commits meanwhile. A refused secret is read from the store again (the key was
// deleted and made anew).
func (a *App) streamTo(ctx context.Context, l *peerLink) {
	c := a.cluster
	failures, logged := 0, false
	for ctx.Err() == nil {
		start := time.Now()
		err := a.streamOnce(ctx, l)
		l.up.Store(false)
		a.cluster.peers.ackMoved() // a gate waiting for this link stops waiting
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil || time.Since(start) >= 5*time.Second:
			if logged {
				a.log.Info("peer link: streaming commits again", "peer", l.name)
			}
			failures, logged = 0, false
		default:
			failures++
			if failures >= 3 && !logged {
				a.log.Warn("peer link: this node's commits do not reach a peer (latest reads through it may miss them); retrying",
					"peer", l.name, "address", l.addr, "err", err)
				logged = true
			}
			if errors.Is(err, errPeerRefused) {
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

// streamOnce runs one connection of the commit stream to l until it fails or ctx ends.
func (a *App) streamOnce(ctx context.Context, l *peerLink) error {
	p := &a.cluster.peers
	d := net.Dialer{Timeout: 2 * time.Second}
	var conn net.Conn
	var err error
	if l.tls {
		host, _, _ := net.SplitHostPort(l.addr)
		conn, err = (&tls.Dialer{NetDialer: &d, Config: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, RootCAs: a.peerRoots()}}).DialContext(ctx, "tcp", l.addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", l.addr)
	}
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := "POST /v1/cluster/commits HTTP/1.1\r\nHost: " + l.addr + "\r\n" + admin.PeerHeader + ": " + a.PeerSecret() +
		"\r\nConnection: Upgrade\r\nUpgrade: " + admin.PeerProtocol + "\r\nContent-Length: 0\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		err := fmt.Errorf("the peer answered %s: %.200s", resp.Status, body)
		if resp.StatusCode == http.StatusUnauthorized {
			err = fmt.Errorf("%w: %v", errPeerRefused, err)
		}
		return err
	}
	_ = conn.SetDeadline(time.Time{})
	l.up.Store(true)
	// The acknowledgements, read beside the sends.
	done := make(chan error, 1)
	go func() {
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				done <- err
				return
			}
			v, err := strconv.ParseUint(strings.TrimSpace(string(line)), 10, 64)
			if err != nil {
				done <- fmt.Errorf("the peer's acknowledgement %.40q: %v", line, err)
				return
			}
			if v > l.acked.Load() {
				l.acked.Store(v)
				if l.slow.Load() && v >= l.slowAt.Load() {
					l.slow.Store(false)
				}
				p.ackMoved()
			}
		}
	}()
	var sent uint64
	for {
		if s := p.newest.Load(); s != nil && s.v > sent {
			_ = conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := conn.Write([]byte(s.text)); err != nil {
				return err
			}
			sent = s.v
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-done:
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		case <-l.wake:
		}
	}
}
