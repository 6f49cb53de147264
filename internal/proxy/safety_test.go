package proxy_test

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	smysql "github.com/sluicedb/sluice/internal/mysql"
)

// TestPreAuthPacketBound: before login, a client cannot make sluice buffer more than a small
// bound. A handshake response that announces 1 MiB is refused after the bound, and the
// connection closed, while the client is still sending.
func TestPreAuthPacketBound(t *testing.T) {
	s := startSluice(t, nil)
	for _, claimed := range []int{1 << 20, smysql.MaxPacketPayload - 1} {
		nc, err := net.DialTimeout("tcp", s.rw, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := smysql.NewConn(nc, 0, 0)
		if _, err := c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		hdr := []byte{byte(claimed), byte(claimed >> 8), byte(claimed >> 16), 1}
		if _, err := nc.Write(hdr); err != nil {
			t.Fatal(err)
		}
		// Send up to the claimed size in 64 KiB pieces; sluice closes the connection well before.
		chunk := make([]byte, 64<<10)
		sent := 0
		for sent < claimed {
			k, err := nc.Write(chunk[:min(len(chunk), claimed-sent)])
			sent += k
			if err != nil {
				break
			}
		}
		// Whatever went out, sluice has closed the connection (EOF or a reset, not a timeout).
		if _, err := io.ReadAll(nc); err != nil && os.IsTimeout(err) {
			t.Fatalf("claimed %d: the connection is still open: %v", claimed, err)
		}
		if sent > 8<<20 {
			t.Errorf("claimed %d: sluice took %d bytes of an unauthenticated packet", claimed, sent)
		}
		nc.Close()
	}
	// A normal login still works.
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
}
