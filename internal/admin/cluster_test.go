package admin

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

type fakePeers struct{ lines atomic.Int64 }

func (p *fakePeers) PeerSecret() string { return "0123456789abcdef0123456789abcdef" }
func (p *fakePeers) LearnCommits(string) error {
	p.lines.Add(1)
	return nil
}

// A peer's commit stream stays open for as long as the peer lives: Shutdown must end it rather
// than wait for it (sluice gives the admin server 1 s, and left the handler running after).
func TestShutdownEndsPeerStreams(t *testing.T) {
	peers := &fakePeers{}
	s := New(Options{Control: &fake{}, Peers: peers, Token: "t"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/cluster/commits", pr)
	req.Header.Set(PeerHeader, peers.PeerSecret())
	ended := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		ended <- err
	}()
	if _, err := io.WriteString(pw, "mariadb 0-1-5\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); peers.lines.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream's first line never arrived")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a peer stream open: %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown took %v with a peer stream open", d)
	}
	select {
	case <-ended:
	case <-time.After(3 * time.Second):
		t.Fatal("the peer's request still open after Shutdown")
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// A peer refused (a wrong secret) learns it at once, though its stream has sent nothing yet:
// Go's server would otherwise read the body to its end first, i.e. until its read timeout.
func TestPeerRefusedAtOnce(t *testing.T) {
	s := New(Options{Control: &fake{}, Peers: &fakePeers{}, Token: "t"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	defer s.Shutdown(context.Background())
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/cluster/commits", pr)
	req.Header.Set(PeerHeader, "not the secret")
	got := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	select {
	case code := <-got:
		if code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", code)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no answer within 3 s to a refused peer stream")
	}
}
