// Package app is the composition root: it builds every part of sluice from the configuration
// and runs it until its context ends.
package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/proxy"
)

// App is a configured sluice.
type App struct {
	cfg   *config.Config
	log   *slog.Logger
	proxy *proxy.Proxy
	eps   []proxy.Endpoint

	mu    sync.Mutex
	addrs map[string]string // endpoint name -> bound address, once listening
	ready chan struct{}
}

// New builds the parts of sluice from cfg.
func New(cfg *config.Config, log *slog.Logger) (*App, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := proxy.Options{
		ConnectTimeout: cfg.Timeouts.Connect.Duration,
		ReadTimeout:    cfg.Timeouts.Read.Duration,
		WriteTimeout:   cfg.Timeouts.Write.Duration,
		IdleTimeout:    cfg.Timeouts.Idle.Duration,
		Logger:         log,

		MaxPreparedStatements: cfg.Limits.MaxPreparedStatements,
		MaxLongData:           cfg.Limits.MaxLongData,
		BackendTLS:            cfg.BackendTLS.Mode,
		BackendCompress:       cfg.BackendCompress,
	}
	if cfg.TLS.Cert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	btls := &tls.Config{InsecureSkipVerify: !cfg.BackendTLS.Verify, ServerName: cfg.BackendTLS.ServerName, MinVersion: tls.VersionTLS12}
	if cfg.BackendTLS.CA != "" {
		pem, err := os.ReadFile(cfg.BackendTLS.CA)
		if err != nil {
			return nil, fmt.Errorf("backend_tls.ca: %w", err)
		}
		btls.RootCAs = x509.NewCertPool()
		btls.RootCAs.AppendCertsFromPEM(pem)
	}
	opts.BackendTLSConfig = btls
	for _, u := range cfg.Users {
		pu := proxy.User{Name: u.Name, Plugin: u.AuthPlugin, RequireTLS: u.RequireTLS}
		if u.PasswordHash != "" {
			h, err := mysql.ParseNativeHash(u.PasswordHash)
			if err != nil {
				return nil, fmt.Errorf("user %s: %w", u.Name, err)
			}
			pu.Hash, pu.HasHash = h, true
		} else {
			pu.Password, pu.HasPassword = u.Password, true
		}
		opts.Users = append(opts.Users, pu)
	}
	for _, b := range cfg.Backends {
		opts.Nodes = append(opts.Nodes, proxy.Node{Name: b.Name, Address: b.Address, Role: b.Role})
	}
	p, err := proxy.New(opts)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, log: log, proxy: p, addrs: map[string]string{}, ready: make(chan struct{})}
	for _, e := range cfg.Endpoints {
		a.eps = append(a.eps, proxy.Endpoint{
			Name: e.Name, Listen: e.Listen, Mode: e.Mode,
			MaxConnections: e.MaxConnections, ReadWeights: e.ReadWeights, TLS: e.TLS,
			Balance: e.Balance, SplitTransactions: e.TransactionSplit, MultiStatements: e.MultiStatements,
		})
	}
	return a, nil
}

// Run listens on every endpoint and serves until ctx ends, then shuts down gracefully: it stops
// accepting, lets running statements finish for up to timeouts.shutdown, and closes the rest.
func (a *App) Run(ctx context.Context) error {
	probeCtx, cancel := context.WithTimeout(ctx, a.cfg.Timeouts.Connect.Duration+time.Second)
	if err := a.proxy.Probe(probeCtx); err != nil {
		a.log.Warn("primary not reachable yet; clients will get an error until it is", "err", err)
	}
	cancel()
	var lns []net.Listener
	for _, ep := range a.eps {
		ln, err := a.proxy.Listen(ep)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return err
		}
		lns = append(lns, ln)
		a.mu.Lock()
		a.addrs[ep.Name] = ln.Addr().String()
		a.mu.Unlock()
		a.log.Info("endpoint listening", "endpoint", ep.Name, "address", ln.Addr().String(), "mode", ep.Mode)
	}
	close(a.ready)
	errc := make(chan error, len(lns))
	for i, ep := range a.eps {
		go func() { errc <- a.proxy.Serve(ep, lns[i]) }()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	a.log.Info("shutting down (a second signal ends sluice at once)", "sessions", a.proxy.Sessions(), "grace", a.cfg.Timeouts.Shutdown.Duration)
	sctx, scancel := context.WithTimeout(context.Background(), a.cfg.Timeouts.Shutdown.Duration)
	defer scancel()
	if err := a.proxy.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	} else if err != nil {
		a.log.Warn("shutdown grace period over; closed the remaining sessions")
	}
	return serveErr
}

// Ready is closed once every endpoint listens.
func (a *App) Ready() <-chan struct{} { return a.ready }

// Addr returns the address endpoint name listens on (after Ready).
func (a *App) Addr(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addrs[name]
}
