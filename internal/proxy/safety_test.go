package proxy_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
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

// TestCachingSHA2HidesUnknownUsers: with caching_sha2_password, an unknown user gets the same
// first answer as a known one whose password sluice has not cached (full authentication), not
// an immediate 1045 that tells the two apart.
func TestCachingSHA2HidesUnknownUsers(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Users = append(c.Users, config.User{Name: "sha2", Password: "sha2pw", AuthPlugin: smysql.AuthCachingSHA2})
	})
	first := func(user string) []byte {
		nc, err := net.DialTimeout("tcp", s.rw, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := smysql.NewConn(nc, 0, 0)
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		hs, err := smysql.ParseHandshake(p)
		if err != nil {
			t.Fatal(err)
		}
		resp := smysql.AppendHandshakeResponse(nil, &smysql.HandshakeResponse{
			Capabilities: smysql.ClientProtocol41 | smysql.ClientSecureConnection | smysql.ClientPluginAuth |
				smysql.ClientLongPassword | smysql.ClientPluginAuthLenencClientData,
			MaxPacketSize: 1 << 24, Charset: 45, User: user,
			AuthResponse: smysql.CachingSHA2Scramble("guess", hs.Nonce), AuthPlugin: smysql.AuthCachingSHA2,
		})
		if err := c.WritePacketFlush(resp); err != nil {
			t.Fatal(err)
		}
		if p, err = c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		return append([]byte(nil), p...)
	}
	known, unknown := first("sha2"), first("nobody")
	if !bytes.Equal(known, unknown) {
		t.Fatalf("known user: % x, unknown user: % x", known, unknown)
	}
	if !bytes.Equal(known, []byte{smysql.AuthMoreDataHeader, smysql.CachingSHA2FullAuth}) {
		t.Fatalf("first answer % x, want full authentication", known)
	}
}
