package backend

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// hangingNode is a scripted node: it completes the handshake and login, then reads the first
// query and never answers it.
func hangingNode(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		c := mysql.NewConn(nc, 0, 0)
		hs := &mysql.Handshake{ServerVersion: "10.11.0-MariaDB", ConnectionID: 7, Nonce: []byte("abcdefghijklmnopqrst"),
			Capabilities: AlwaysCaps | mysql.ClientConnectWithDB, Charset: 45, Status: mysql.StatusAutocommit,
			AuthPlugin: mysql.AuthNativePassword}
		if err := c.WritePacketFlush(mysql.AppendHandshake(nil, hs)); err != nil {
			return
		}
		if _, err := c.ReadPacket(); err != nil {
			return
		}
		if err := c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, AlwaysCaps)); err != nil {
			return
		}
		c.SetSeq(0)
		_, _ = c.ReadPacket() // the setup statement, never answered
		time.Sleep(time.Minute)
	}()
	return ln.Addr().String()
}

// TestDialInitSQLBounded: the setup statements run under the connect deadline; a node that
// never answers them fails the dial after ConnectTimeout (before, the deadline was cleared
// first and the dial waited for ever).
func TestDialInitSQLBounded(t *testing.T) {
	addr := hangingNode(t)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := Dial(context.Background(), Options{
			Address:        addr,
			Credentials:    Credentials{User: "app", Password: "app", HasPassword: true},
			ConnectTimeout: 500 * time.Millisecond,
			InitSQL:        []string{"SET SESSION TRANSACTION READ ONLY"},
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Dial succeeded against a node that never answered the setup statement")
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("Dial took %s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Dial did not return: the setup statement is not bounded by the connect deadline")
	}
}
