package app

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

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
