package app

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/proxyproto"
)

// TestNodesProxyProtocol: backends[].proxy_protocol reaches the node in the topology, at start
// and for a node added by POST /v1/nodes (which takes the key, validated as in the file, and
// writes it there); a reload that changes it lists it for a restart.
func TestNodesProxyProtocol(t *testing.T) {
	text := strings.Replace(offline, "role: replica}", "role: replica, proxy_protocol: v1}", 1)
	a, _, path := offlineApp(t, text)
	snap := a.topo.Snapshot()
	if got := snap.Nodes[1].ProxyProtocol; got != proxyproto.V1 || snap.Nodes[0].ProxyProtocol != proxyproto.Off {
		t.Fatalf("at start: primary %v, replica %v; want off, v1", snap.Nodes[0].ProxyProtocol, got)
	}
	body := func(v string) map[string]json.RawMessage {
		return map[string]json.RawMessage{"name": json.RawMessage(`"replica9"`), "address": json.RawMessage(`"127.0.0.1:9"`),
			"proxy_protocol": json.RawMessage(`"` + v + `"`)}
	}
	if _, err := a.CreateNode(body("v3")); err == nil || !strings.Contains(err.Error(), "proxy_protocol") {
		t.Fatalf("POST a node with proxy_protocol v3: %v, want it refused", err)
	}
	if _, err := a.CreateNode(body("v2")); err != nil {
		t.Fatal(err)
	}
	snap = a.topo.Snapshot()
	if n := snap.Nodes[len(snap.Nodes)-1]; n.Name != "replica9" || n.ProxyProtocol != proxyproto.V2 {
		t.Fatalf("the added node %s: proxy_protocol %v, want v2", n.Name, n.ProxyProtocol)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "proxy_protocol: v2") {
		t.Fatalf("the file after POST: %v\n%s", err, data)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), "proxy_protocol: v1", "proxy_protocol: off", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	ch, err := a.Reload()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range ch.Restart {
		found = found || strings.HasSuffix(r, ".proxy_protocol")
	}
	if !found {
		t.Errorf("a reload changing a node's proxy_protocol: restart %q, want it listed", ch.Restart)
	}
}

// TestMonitorProxyHeader: with proxy_protocol, the monitor's login (here `serve --check`'s)
// starts with a header naming no client (v1 UNKNOWN, v2 LOCAL), so the node keeps sluice's
// address for it and refuses it where it refuses sessions' headers; without, nothing comes
// before the login.
func TestMonitorProxyHeader(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    string
	}{
		{"v1", "PROXY UNKNOWN\r\n"},
		{"v2", "\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00"},
		{"off", ""},
	} {
		t.Run(tc.version, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan []byte, 1)
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					close(got)
					return
				}
				defer nc.Close()
				// No greeting: what the client sends first, then it times out.
				_ = nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				b, _ := io.ReadAll(nc)
				got <- b
			}()
			text := strings.Replace(offline, "address: 127.0.0.1:1,", "address: "+ln.Addr().String()+", proxy_protocol: "+tc.version+",", 1) +
				"monitor: {user: mon, password: mon}\ntimeouts: {connect: 500ms}\n"
			cfg := loadText(t, text)
			logins, err := CheckMonitor(context.Background(), cfg)
			if err != nil || len(logins) == 0 || logins[0].Err == nil {
				t.Fatalf("CheckMonitor: %+v, %v", logins, err)
			}
			if b := <-got; string(b) != tc.want {
				t.Errorf("the node read %q first, want %q", b, tc.want)
			}
		})
	}
}

// loadText loads a configuration file with text.
func loadText(t *testing.T, text string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
