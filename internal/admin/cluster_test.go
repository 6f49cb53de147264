package admin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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

// openStream dials s's admin listener at addr and upgrades to the commit stream.
func openStream(t *testing.T, addr, secret string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /v1/cluster/commits HTTP/1.1\r\nHost: %s\r\n%s: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\nContent-Length: 0\r\n\r\n",
		addr, PeerHeader, secret, PeerProtocol)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	return c, br
}

// The commit stream: each "VERSION KIND POSITION" line is learned and acknowledged with its
// version; a line past the bound ends the stream. A peer's stream stays open for as long as
// the peer lives: Shutdown must end it rather than wait for it (sluice gives the admin server
// 1 s).
func TestPeerStream(t *testing.T) {
	peers := &fakePeers{}
	s := New(Options{Control: &fake{}, Peers: peers, Token: "t"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	c, br := openStream(t, ln.Addr().String(), peers.PeerSecret())
	fmt.Fprintf(c, "7 mariadb 0-1-5\n8 mariadb 0-1-6\n")
	for _, want := range []string{"7\n", "8\n"} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if line, err := br.ReadString('\n'); err != nil || line != want {
			t.Fatalf("acknowledgement %q %v, want %q", line, err, want)
		}
	}
	if n := peers.lines.Load(); n != 2 {
		t.Fatalf("%d positions learned, want 2", n)
	}
	// A line past the bound closes the stream.
	c2, br2 := openStream(t, ln.Addr().String(), peers.PeerSecret())
	go func() { _, _ = c2.Write([]byte("1 mariadb " + strings.Repeat("9", maxCommitLine+10))) }()
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br2.ReadString('\n'); err == nil {
		t.Fatal("a line past the bound was acknowledged")
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
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := br.ReadString('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("the stream after Shutdown: %v, want it closed", err)
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
