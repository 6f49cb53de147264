// Package clientaddr tests, on a real cluster whose nodes take the PROXY protocol from
// sluice's address (sandbox Options.ProxyProtocol), that the nodes see each client's own
// address through sluice (backends[].proxy_protocol): USER(), the processlist, the server's
// host rules, and pooled connections that never pass from one client address to another.
// Clients connect from 127.0.0.2 and up (Linux routes all of 127.0.0.0/8 to loopback).
package clientaddr

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/app"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestMain(m *testing.M) {
	registerDialers()
	os.Exit(testutil.Main(m, sandbox.Options{Replicas: 1, ProxyProtocol: true}))
}

// The test accounts, created on the primary (and replicated): pp_app from the client
// addresses the tests use, pp_only from 127.0.0.3 alone.
const (
	appUser, appPassword   = "pp_app", "pp-app"
	onlyUser, onlyPassword = "pp_only", "pp-only"
)

// sources are the client addresses the tests connect from; each has a go-sql-driver network
// "from<addr>" dialing from it, which records the local address of every connection it opens.
var sources = []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}

var (
	dialedMu sync.Mutex
	dialed   = map[string]string{} // network -> the local address of its last connection
)

func registerDialers() {
	for _, src := range sources {
		network := "from" + src
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
		mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				dialedMu.Lock()
				dialed[network] = c.LocalAddr().String()
				dialedMu.Unlock()
			}
			return c, err
		})
	}
}

// lastDialed is the local address ("127.0.0.2:40000") of the last connection opened from src.
func lastDialed(src string) string {
	dialedMu.Lock()
	defer dialedMu.Unlock()
	return dialed["from"+src]
}

var accountsOnce sync.Once

// accounts creates the test accounts once (on the primary; the replica applies them) and
// waits for the replica to have them.
func accounts(t *testing.T) {
	t.Helper()
	c := testutil.Cluster(t)
	accountsOnce.Do(func() {
		db, err := c.AdminDB("primary")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var stmts []string
		for _, host := range []string{"127.0.0.2", "127.0.0.4"} {
			stmts = append(stmts,
				fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY '%s'", appUser, host, appPassword),
				fmt.Sprintf("GRANT SELECT ON *.* TO '%s'@'%s'", appUser, host))
		}
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER IF NOT EXISTS '%s'@'127.0.0.3' IDENTIFIED BY '%s'", onlyUser, onlyPassword),
			fmt.Sprintf("GRANT SELECT ON *.* TO '%s'@'127.0.0.3'", onlyUser))
		for _, q := range stmts {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	})
}

// startSluice runs sluice in front of the cluster with the sandbox's sluice.yaml (every
// backend with proxy_protocol: v2), the test users added, changed by edit.
func startSluice(t *testing.T, edit func(*config.Config)) *app.App {
	t.Helper()
	c := testutil.Cluster(t)
	cfg, err := config.Load(filepath.Join(c.Dir, sandbox.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Endpoints {
		cfg.Endpoints[i].Listen = "127.0.0.1:0"
		cfg.Endpoints[i].Consistency = config.ConsistencyEventual
	}
	cfg.Users = append(cfg.Users, config.User{Name: appUser, Password: appPassword}, config.User{Name: onlyUser, Password: onlyPassword})
	cfg.Timeouts.Shutdown.Duration = 5 * time.Second
	if edit != nil {
		edit(cfg)
	}
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	a, err := app.New(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("sluice did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sluice: %v", err)
		}
	})
	return a
}

// session is one client session through sluice, from one source address.
type session struct {
	db    *sql.DB
	c     *sql.Conn
	local string // the client connection's own address
}

// connect opens a session to addr from src as user; the error is the login's.
func connect(t *testing.T, src, addr, user, password string) (*session, error) {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, password
	cfg.Net, cfg.Addr = "from"+src, addr
	cfg.Timeout = 10 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	c, err := db.Conn(context.Background())
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &session{db: db, c: c, local: lastDialed(src)}
	t.Cleanup(s.leave)
	return s, nil
}

func mustConnect(t *testing.T, src, addr, user, password string) *session {
	t.Helper()
	s, err := connect(t, src, addr, user, password)
	if err != nil {
		t.Fatalf("connecting from %s as %s: %v", src, user, err)
	}
	return s
}

// leave ends the session (COM_QUIT).
func (s *session) leave() {
	s.c.Close()
	s.db.Close()
}

// seen is what the node a statement went to says of the session's connection.
type seen struct {
	serverID int
	user     string // USER()
	host     string // the connection's host in the processlist ("127.0.0.2:40000")
	thread   int64  // the node's thread id
}

// ask asks node (a FORCE_NODE hint) what it sees of the session.
func (s *session) ask(t *testing.T, node string) seen {
	t.Helper()
	var w seen
	// @@pseudo_thread_id is the node's connection id (CONNECTION_ID() is routed to the home
	// node, whose thread sluice knows).
	q := fmt.Sprintf("/*FORCE_NODE='%s'*/ SELECT @@server_id, USER(), "+
		"(SELECT host FROM information_schema.processlist WHERE id = @@pseudo_thread_id), @@pseudo_thread_id", node)
	if err := s.c.QueryRowContext(context.Background(), q).Scan(&w.serverID, &w.user, &w.host, &w.thread); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return w
}
