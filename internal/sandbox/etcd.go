//go:build unix

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/pause"
)

// Etcd is a one-member etcd server on loopback, for a cluster of sluice nodes that share their
// configuration (sluice sandbox --proxies, and the tests). It runs Debian's etcd binary
// (package etcd-server), found on PATH or in SLUICE_ETCD.
type Etcd struct {
	bin, dir   string
	client     int // client port
	peer       int // peer port (one member: only its own)
	pid        int
	exited     <-chan struct{}
	ClientAddr string // 127.0.0.1:port, what sluice's store.etcd.endpoints lists
}

// EtcdBinary is the etcd server binary the sandbox runs: SLUICE_ETCD, else etcd on PATH (or
// /usr/bin/etcd), with how to install it when there is none.
func EtcdBinary() (string, error) {
	if p := os.Getenv("SLUICE_ETCD"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd", nil
	}
	return "", errors.New("sandbox: no etcd server found (install Debian's etcd-server package: apt-get install etcd-server; or set SLUICE_ETCD to an etcd binary)")
}

// StartEtcd starts an etcd server with its data in dir (created; an existing one is kept, so a
// restart finds its data) on free loopback ports, and waits until it answers.
func StartEtcd(ctx context.Context, dir string) (*Etcd, error) {
	bin, err := EtcdBinary()
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	e := &Etcd{bin: bin, dir: dir, client: ports[0], peer: ports[1]}
	e.ClientAddr = "127.0.0.1:" + strconv.Itoa(e.client)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return e, e.Start(ctx)
}

// Start starts the server again on the same ports and data (after Stop or Kill).
func (e *Etcd) Start(ctx context.Context) error {
	if e.pid != 0 && !exitedChan(e.exited) {
		return fmt.Errorf("sandbox: etcd is running already (pid %d)", e.pid)
	}
	peer := "http://127.0.0.1:" + strconv.Itoa(e.peer)
	client := "http://" + e.ClientAddr
	args := []string{
		"--name", "sandbox",
		"--data-dir", filepath.Join(e.dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "sandbox=" + peer,
		// A small store for a sandbox: no auto-compaction surprises, quick snapshots.
		"--snapshot-count", "10000",
		"--log-level", "warn",
	}
	pid, exited, err := startDetached(e.bin, args, filepath.Join(e.dir, "etcd.log"))
	if err != nil {
		return fmt.Errorf("sandbox: starting etcd: %w", err)
	}
	e.pid, e.exited = pid, exited
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		if exitedChan(exited) {
			return fmt.Errorf("sandbox: etcd exited at start; see %s", filepath.Join(e.dir, "etcd.log"))
		}
		if resp, err := hc.Get(client + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !pause.For(ctx, 50*time.Millisecond) {
			_ = e.Kill()
			return fmt.Errorf("sandbox: etcd did not answer on %s: %w", e.ClientAddr, ctx.Err())
		}
	}
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits until it is gone.
func (e *Etcd) Stop() error { return e.signal(syscall.SIGTERM, 10*time.Second) }

// Kill ends the server at once, like a crash, and waits until it is gone.
func (e *Etcd) Kill() error { return e.signal(syscall.SIGKILL, 10*time.Second) }

// Pause stops the server's process (SIGSTOP) without closing its sockets: clients' requests
// hang, as across a network partition. Resume continues it.
func (e *Etcd) Pause() error { return signalPID(e.pid, syscall.SIGSTOP) }

// Resume continues a paused server.
func (e *Etcd) Resume() error { return signalPID(e.pid, syscall.SIGCONT) }

func (e *Etcd) signal(sig syscall.Signal, grace time.Duration) error {
	if e.pid == 0 || exitedChan(e.exited) {
		return nil
	}
	_ = signalPID(e.pid, syscall.SIGCONT)
	if err := signalPID(e.pid, sig); err != nil {
		return err
	}
	select {
	case <-e.exited:
		return nil
	case <-time.After(grace):
	}
	if err := signalPID(e.pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-e.exited
	return nil
}

func exitedChan(c <-chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Dial reports whether the client port accepts a connection now.
func (e *Etcd) Dial() bool {
	c, err := net.DialTimeout("tcp", e.ClientAddr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
