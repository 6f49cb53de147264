package clientaddr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// version sets every backend's proxy_protocol.
func version(v string) func(*config.Config) {
	return func(c *config.Config) {
		for i := range c.Backends {
			c.Backends[i].ProxyProtocol = v
		}
	}
}

// TestNodesSeeTheClient: through sluice with proxy_protocol v1 and v2, the primary and the
// replica both see a client from 127.0.0.2 as itself: USER() is pp_app@127.0.0.2 (the account
// of that host, which sluice's own address has none of), the processlist names the client's
// own address and port, to the session itself and to an administrator on each node.
func TestNodesSeeTheClient(t *testing.T) {
	accounts(t)
	c := testutil.Cluster(t)
	for _, v := range []string{config.ProxyProtocolV1, config.ProxyProtocolV2} {
		t.Run(v, func(t *testing.T) {
			a := startSluice(t, version(v))
			// The monitor logs in with its own header (naming no client): the nodes take it.
			deadline := time.Now().Add(10 * time.Second)
			for _, n := range a.Nodes() {
				for n.State != "up" || n.ServerID == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("node %s: state %s, server_id %d, error %q: the monitor has not logged in", n.Name, n.State, n.ServerID, n.Error)
					}
					time.Sleep(50 * time.Millisecond)
					for _, m := range a.Nodes() {
						if m.Name == n.Name {
							n = m
						}
					}
				}
			}
			s := mustConnect(t, "127.0.0.2", a.Addr("rw"), appUser, appPassword)
			for _, node := range []string{"primary", "replica1"} {
				w := s.ask(t, node)
				wantID := 1
				if node != "primary" {
					wantID = 2
				}
				if w.serverID != wantID {
					t.Fatalf("%s: server_id %d, want %d (the hint did not reach the node)", node, w.serverID, wantID)
				}
				if w.user != appUser+"@127.0.0.2" {
					t.Errorf("%s: USER() = %q, want %s@127.0.0.2", node, w.user, appUser)
				}
				if w.host != s.local {
					t.Errorf("%s: the processlist says host %q, want the client's own address %s", node, w.host, s.local)
				}
				// What an operator sees on the node: the same thread, the client's address.
				db, err := c.AdminDB(node)
				if err != nil {
					t.Fatal(err)
				}
				var host string
				err = db.QueryRow("SELECT host FROM information_schema.processlist WHERE id = ?", w.thread).Scan(&host)
				db.Close()
				if err != nil || host != s.local {
					t.Errorf("%s: an administrator sees thread %d from %q (%v), want %s", node, w.thread, host, err, s.local)
				}
			}
		})
	}
}

// TestWithoutProxyProtocol: with proxy_protocol off, the same nodes (which would take a
// header from sluice) see every client as sluice: a client from 127.0.0.2 is app@127.0.0.1.
func TestWithoutProxyProtocol(t *testing.T) {
	a := startSluice(t, version(config.ProxyProtocolOff))
	s := mustConnect(t, "127.0.0.2", a.Addr("rw"), "app", "app")
	for _, node := range []string{"primary", "replica1"} {
		if w := s.ask(t, node); w.user != "app@127.0.0.1" || !strings.HasPrefix(w.host, "127.0.0.1:") {
			t.Errorf("%s: USER() %q, host %q: want sluice's address", node, w.user, w.host)
		}
	}
}

// TestServerHostRules: the node's own host rules apply to the client's address. sluice's
// users list (which checks no host) has pp_only, whose only account is pp_only@127.0.0.3:
// from 127.0.0.3 it logs in and is that account; from 127.0.0.2 the node refuses it (1045:
// that host has accounts, not this one), and from 127.0.0.5 (no account at all) with 1130,
// each as the node words it, naming the client's address.
func TestServerHostRules(t *testing.T) {
	accounts(t)
	a := startSluice(t, version(config.ProxyProtocolV2))
	s := mustConnect(t, "127.0.0.3", a.Addr("rw"), onlyUser, onlyPassword)
	if w := s.ask(t, "primary"); w.user != onlyUser+"@127.0.0.3" {
		t.Errorf("USER() = %q, want %s@127.0.0.3", w.user, onlyUser)
	}
	for _, tc := range []struct {
		src  string
		code uint16
		msg  string
	}{
		{"127.0.0.2", 1045, fmt.Sprintf("Access denied for user '%s'@'127.0.0.2' (using password: YES)", onlyUser)},
		{"127.0.0.5", 1130, "Host '127.0.0.5' is not allowed to connect to this MariaDB server"},
	} {
		_, err := connect(t, tc.src, a.Addr("rw"), onlyUser, onlyPassword)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != tc.code || me.Message != tc.msg {
			t.Errorf("from %s: got %v, want the node's %d %q", tc.src, err, tc.code, tc.msg)
		}
	}
}

// TestPoolsKeepClientsApart: a pooled node connection told its node of one client address is
// never handed to a session from another, under pool_mode session and transaction, with
// max_per_node 1 so that the pool would hand the one connection on if it could. From the
// same address it is reused (the same node thread).
func TestPoolsKeepClientsApart(t *testing.T) {
	accounts(t)
	for _, mode := range []string{config.PoolModeSession, config.PoolModeTransaction} {
		t.Run(mode, func(t *testing.T) {
			a := startSluice(t, func(c *config.Config) {
				version(config.ProxyProtocolV2)(c)
				for i := range c.Endpoints {
					c.Endpoints[i].PoolMode = mode
					c.Endpoints[i].Pool.MaxPerNode = 1
					c.Endpoints[i].Pool.AcquireTimeout.Duration = 5 * time.Second
				}
			})
			rw := a.Addr("rw")
			first := mustConnect(t, "127.0.0.2", rw, appUser, appPassword)
			w1 := first.ask(t, "primary")
			first.leave()
			again := mustConnect(t, "127.0.0.2", rw, appUser, appPassword)
			if w := again.ask(t, "primary"); w.thread != w1.thread || w.user != appUser+"@127.0.0.2" {
				t.Errorf("a second session from 127.0.0.2: thread %d as %q, want the pooled thread %d as %s@127.0.0.2",
					w.thread, w.user, w1.thread, appUser)
			}
			again.leave()
			other := mustConnect(t, "127.0.0.4", rw, appUser, appPassword)
			if w := other.ask(t, "primary"); w.thread == w1.thread || w.user != appUser+"@127.0.0.4" || w.host != other.local {
				t.Errorf("a session from 127.0.0.4: thread %d as %q from %q, want a thread of its own (not %d) as %s@127.0.0.4 from %s",
					w.thread, w.user, w.host, w1.thread, appUser, other.local)
			}
			other.leave()
			if mode != config.PoolModeTransaction {
				return
			}
			// Under pool_mode transaction the connection goes back after every statement:
			// two sessions from two addresses, interleaved, each always on its own.
			x := mustConnect(t, "127.0.0.2", rw, appUser, appPassword)
			y := mustConnect(t, "127.0.0.4", rw, appUser, appPassword)
			for i := range 10 {
				for _, s := range []struct {
					s    *session
					want string
				}{{x, "127.0.0.2"}, {y, "127.0.0.4"}} {
					var user string
					if err := s.s.c.QueryRowContext(context.Background(), "/*FORCE_NODE='primary'*/ SELECT USER()").Scan(&user); err != nil {
						t.Fatal(err)
					}
					if user != appUser+"@"+s.want {
						t.Fatalf("round %d: a session from %s is %q on the node", i, s.want, user)
					}
				}
			}
		})
	}
}
