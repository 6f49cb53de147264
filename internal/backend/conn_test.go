package backend

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// hangingNode is a scripted node: it completes the handshake and login, then reads the first
// query and never answers it.
func hangingNode(t *testing.T) string {
	t.Helper()
	return scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ *mysql.HandshakeResponse) {
		writeOK(c)
		c.SetSeq(0)
		_, _ = c.ReadPacket() // the setup statement, never answered
		time.Sleep(time.Minute)
	})
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

// scriptedNode accepts one connection, sends hs and hands the parsed handshake response to
// script, which plays the rest of the login.
func scriptedNode(t *testing.T, hs *mysql.Handshake, script func(c *mysql.Conn, r *mysql.HandshakeResponse)) string {
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
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := mysql.NewConn(nc, 0, 0)
		if err := c.WritePacketFlush(mysql.AppendHandshake(nil, hs)); err != nil {
			return
		}
		p, err := c.ReadPacket()
		if err != nil {
			return
		}
		r, err := mysql.ParseHandshakeResponse(p)
		if err != nil {
			return
		}
		script(c, r)
	}()
	return ln.Addr().String()
}

func mariaDBHandshake() *mysql.Handshake {
	return &mysql.Handshake{ServerVersion: "5.5.5-10.11.0-MariaDB", ConnectionID: 9, Nonce: []byte("abcdefghijklmnopqrst"),
		Capabilities: (AlwaysCaps | mysql.ClientConnectWithDB | mysql.ClientDeprecateEOF) &^ mysql.ClientLongPassword,
		Charset:      45, Status: mysql.StatusAutocommit, AuthPlugin: mysql.AuthNativePassword,
		MariaDBCapabilities: mysql.MariaDBClientExtendedMetadata | mysql.MariaDBClientStmtBulkOperations | mysql.MariaDBClientProgress}
}

func writeOK(c *mysql.Conn) {
	_ = c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, AlwaysCaps))
}

// TestDialVariants: the login paths against scripted nodes.
func TestDialVariants(t *testing.T) {
	creds := Credentials{User: "app", Password: "app", HasPassword: true}
	dial := func(addr string, o Options) (*Conn, error) {
		o.Address, o.Credentials, o.ConnectTimeout = addr, creds, 2*time.Second
		return Dial(context.Background(), o)
	}
	t.Run("MariaDB extended capabilities: only what was asked and offered", func(t *testing.T) {
		got := make(chan *mysql.HandshakeResponse, 1)
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) { got <- r; writeOK(c) })
		bc, err := dial(addr, Options{MariaDBCapabilities: mysql.MariaDBClientExtendedMetadata | mysql.MariaDBClientCacheMetadata})
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		r := <-got
		if r.Capabilities&mysql.ClientLongPassword != 0 || r.MariaDBCapabilities != mysql.MariaDBClientExtendedMetadata ||
			bc.MariaDBCaps != mysql.MariaDBClientExtendedMetadata {
			t.Fatalf("caps %#x, MariaDB caps sent %#x, negotiated %#x", r.Capabilities, r.MariaDBCapabilities, bc.MariaDBCaps)
		}
	})
	t.Run("no extended capabilities asked: CLIENT_MYSQL stays", func(t *testing.T) {
		got := make(chan *mysql.HandshakeResponse, 1)
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) { got <- r; writeOK(c) })
		bc, err := dial(addr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		if r := <-got; r.Capabilities&mysql.ClientLongPassword == 0 || r.MariaDBCapabilities != 0 {
			t.Fatalf("caps %#x, MariaDB caps %#x", r.Capabilities, r.MariaDBCapabilities)
		}
	})
	t.Run("auth switch to mysql_native_password", func(t *testing.T) {
		hs := mariaDBHandshake()
		hs.AuthPlugin = "client_ed25519"
		nonce := []byte("ABCDEFGHIJKLMNOPQRST")
		addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthSwitchRequest(nil, mysql.AuthNativePassword, nonce))
			p, err := c.ReadPacket()
			if err != nil || string(p) != string(mysql.NativeScramble("app", nonce)) {
				_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.AccessDenied("app", "h", true)))
				return
			}
			writeOK(c)
		})
		bc, err := dial(addr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		bc.Close()
	})
	t.Run("the node refuses: its own error", func(t *testing.T) {
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1040, "08004", "Too many connections")))
		})
		_, err := dial(addr, Options{})
		var se *mysql.SQLError
		if !errors.As(err, &se) || se.Code != 1040 {
			t.Fatalf("got %v, want the node's 1040", err)
		}
	})
	t.Run("a node without protocol 4.1", func(t *testing.T) {
		hs := mariaDBHandshake()
		hs.Capabilities &^= mysql.ClientProtocol41
		addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {})
		if _, err := dial(addr, Options{}); err == nil {
			t.Fatal("dial succeeded")
		}
	})
	t.Run("caching_sha2_password fast path", func(t *testing.T) {
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			if r.AuthPlugin != mysql.AuthCachingSHA2 || string(r.AuthResponse) != string(mysql.CachingSHA2Scramble("app", hs.Nonce)) {
				_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.AccessDenied("app", "h", true)))
				return
			}
			_ = c.WritePacket(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FastOK))
			writeOK(c)
		})
		bc, err := dial(addr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		bc.Close()
	})
}
