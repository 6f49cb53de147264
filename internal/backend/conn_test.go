package backend

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
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
func scriptedNode(t testing.TB, hs *mysql.Handshake, script func(c *mysql.Conn, r *mysql.HandshakeResponse)) string {
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
	for _, first := range []string{"client_ed25519", mysql.AuthCachingSHA2} {
		t.Run("auth switch from "+first+" to mysql_native_password with a new nonce", func(t *testing.T) {
			hs := mariaDBHandshake()
			hs.AuthPlugin = first
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
	}
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

// commandNode is a scripted node that logs any client in, then reads its commands one by one:
// each is copied to the returned channel and answered by answer (nil: an OK). caps are the
// capabilities the client asked for. The channel is closed when the connection ends; past its
// 1024 buffered packets, no more are recorded.
func commandNode(t testing.TB, hs *mysql.Handshake, answer func(c *mysql.Conn, caps uint32, p []byte)) (string, <-chan []byte) {
	t.Helper()
	got := make(chan []byte, 1024)
	addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
		defer close(got)
		writeOK(c)
		for {
			c.SetSeq(0)
			p, err := c.ReadPacket()
			if err != nil {
				return
			}
			select {
			case got <- append([]byte(nil), p...):
			default: // a benchmark: nobody reads them
			}
			if answer == nil {
				writeOK(c)
			} else {
				answer(c, r.Capabilities, p)
			}
		}
	})
	return addr, got
}

// testDial dials addr as user app with password app.
func testDial(t testing.TB, addr string, o Options) *Conn {
	t.Helper()
	o.Address, o.ConnectTimeout = addr, 5*time.Second
	if o.Credentials.User == "" {
		o.Credentials = Credentials{User: "app", Password: "app", HasPassword: true}
	}
	bc, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	return bc
}

// query is a COM_QUERY packet.
func query(s string) []byte { return append([]byte{mysql.ComQuery}, s...) }

// expectPackets checks that the node received exactly want, in order, and then the sentinel
// COM_PING the client sends last (so that "nothing" can be asserted without waiting).
func expectPackets(t *testing.T, bc *Conn, got <-chan []byte, want ...[]byte) {
	t.Helper()
	if err := bc.Command([]byte{mysql.ComPing}); err != nil {
		t.Fatal(err)
	}
	want = append(want, []byte{mysql.ComPing})
	for i, w := range want {
		select {
		case p := <-got:
			if !bytes.Equal(p, w) {
				t.Fatalf("packet %d: node received %q, want %q", i, p, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("packet %d: node received nothing, want %q", i, w)
		}
	}
}

// testCert is a self-signed certificate for 127.0.0.1, and a client configuration trusting it.
func testCert(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return server, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// tlsNode is a scripted node offering TLS: it takes the client's SSL request, upgrades, and
// hands the handshake response read over TLS to script.
func tlsNode(t *testing.T, hs *mysql.Handshake, cfg *tls.Config, script func(c *mysql.Conn, r *mysql.HandshakeResponse)) string {
	t.Helper()
	hs.Capabilities |= mysql.ClientSSL
	return scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
		if !r.SSLRequest {
			_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1045, "28000", "TLS expected")))
			return
		}
		tc := tls.Server(c.Upgradable(), cfg)
		if err := tc.Handshake(); err != nil {
			return
		}
		seq := c.Seq()
		c = mysql.NewConn(tc, 0, 0)
		c.SetSeq(seq)
		p, err := c.ReadPacket()
		if err != nil {
			return
		}
		r, err = mysql.ParseHandshakeResponse(p)
		if err != nil {
			return
		}
		script(c, r)
	})
}

// TestNegotiate: what sluice asks a node for, as a table over the node's handshake and the
// Options.
func TestNegotiate(t *testing.T) {
	mysqlNode := mariaDBHandshake()
	mysqlNode.Capabilities |= mysql.ClientLongPassword // CLIENT_MYSQL: no extended capabilities
	noDB := mariaDBHandshake()
	noDB.Capabilities &^= mysql.ClientConnectWithDB
	withSSL := mariaDBHandshake()
	withSSL.Capabilities |= mysql.ClientSSL
	ext := mysql.MariaDBClientExtendedMetadata
	for _, tc := range []struct {
		name      string
		hs        *mysql.Handshake
		o         Options
		set, nset uint32 // capabilities that must be set, must not be set
		mcaps     uint32
		charset   uint8
	}{
		{name: "MariaDB node, extended asked and offered", hs: mariaDBHandshake(), o: Options{MariaDBCapabilities: ext | mysql.MariaDBClientCacheMetadata},
			nset: mysql.ClientLongPassword, mcaps: ext, charset: 45},
		{name: "MariaDB node, none asked: CLIENT_MYSQL stays", hs: mariaDBHandshake(), set: mysql.ClientLongPassword, charset: 45},
		{name: "MariaDB node, asked but not offered", hs: mariaDBHandshake(), o: Options{MariaDBCapabilities: mysql.MariaDBClientBulkUnitResults},
			set: mysql.ClientLongPassword, charset: 45},
		{name: "MySQL node (CLIENT_MYSQL set): never extended", hs: mysqlNode, o: Options{MariaDBCapabilities: ext},
			set: mysql.ClientLongPassword, charset: 45},
		{name: "mirrored and offered only", hs: mariaDBHandshake(), o: Options{Capabilities: mysql.ClientDeprecateEOF | mysql.ClientMultiStatements | mysql.ClientSSL | mysql.ClientCompress, Charset: 33},
			set: mysql.ClientDeprecateEOF | AlwaysCaps, nset: mysql.ClientMultiStatements | mysql.ClientSSL | mysql.ClientCompress, charset: 33},
		{name: "schema at connect when offered", hs: mariaDBHandshake(), o: Options{Database: "d"}, set: mysql.ClientConnectWithDB, charset: 45},
		{name: "schema at connect not offered", hs: noDB, o: Options{Database: "d"}, nset: mysql.ClientConnectWithDB, charset: 45},
		{name: "TLS offered and wanted", hs: withSSL, o: Options{TLS: &tls.Config{}}, set: mysql.ClientSSL, charset: 45},
		{name: "TLS offered, not wanted", hs: withSSL, nset: mysql.ClientSSL, charset: 45},
		{name: "TLS wanted, not offered", hs: mariaDBHandshake(), o: Options{TLS: &tls.Config{}}, nset: mysql.ClientSSL, charset: 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := negotiate(tc.hs, tc.o)
			if n.caps&tc.set != tc.set || n.caps&tc.nset != 0 || n.mcaps != tc.mcaps || n.charset != tc.charset {
				t.Fatalf("caps %#x (want set %#x, unset %#x), MariaDB caps %#x (want %#x), charset %d (want %d)",
					n.caps, tc.set, tc.nset, n.mcaps, tc.mcaps, n.charset, tc.charset)
			}
		})
	}
}

// TestDialAuth: the auth exchange against scripted nodes, path by path.
func TestDialAuth(t *testing.T) {
	creds := Credentials{User: "app", Password: "app", HasPassword: true}
	dial := func(addr string, o Options) (*Conn, error) {
		o.Address, o.ConnectTimeout = addr, 5*time.Second
		if o.Credentials.User == "" {
			o.Credentials = creds
		}
		return Dial(context.Background(), o)
	}
	deny := func(c *mysql.Conn) {
		_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.AccessDenied("app", "h", true)))
	}
	t.Run("mysql_native_password", func(t *testing.T) {
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			if r.User != "app" || r.AuthPlugin != mysql.AuthNativePassword || !bytes.Equal(r.AuthResponse, mysql.NativeScramble("app", mariaDBHandshake().Nonce)) {
				deny(c)
				return
			}
			_ = c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit | mysql.StatusInTrans}, AlwaysCaps))
		})
		bc, err := dial(addr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		if bc.Status != mysql.StatusAutocommit|mysql.StatusInTrans || bc.TLS || bc.Handshake.ConnectionID != 9 {
			t.Fatalf("status %#x, TLS %v, handshake %+v", bc.Status, bc.TLS, bc.Handshake)
		}
	})
	t.Run("mysql_native_password from SHA1(password)", func(t *testing.T) {
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			if !bytes.Equal(r.AuthResponse, mysql.NativeScramble("app", mariaDBHandshake().Nonce)) {
				deny(c)
				return
			}
			writeOK(c)
		})
		bc, err := dial(addr, Options{Credentials: Credentials{User: "app", Stage1: sha1.Sum([]byte("app")), HasStage1: true}})
		if err != nil {
			t.Fatal(err)
		}
		bc.Close()
	})
	// nodeAfterFullAuth is a caching_sha2_password node that asks for full authentication and
	// reports every byte sluice sends after that (until sluice closes or 2 s pass), offering
	// its own public key (as a fake node would) if asked for one.
	nodeAfterFullAuth := func(t *testing.T, key *rsa.PrivateKey) (addr string, sent <-chan []byte) {
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		ch := make(chan []byte, 1)
		addr = scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
			_ = c.NetConn().SetReadDeadline(time.Now().Add(2 * time.Second))
			var got []byte
			for {
				p, err := c.ReadPacket()
				if err != nil {
					break
				}
				got = append(got, p...)
				if bytes.Equal(p, []byte{mysql.CachingSHA2RequestKey}) {
					_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.PublicKeyPEM(key)...))
				}
			}
			ch <- got
		})
		return addr, ch
	}
	t.Run("caching_sha2_password full authentication without verified TLS or a configured key: refused, nothing sent", func(t *testing.T) {
		key, err := mysql.GenerateRSAKey()
		if err != nil {
			t.Fatal(err)
		}
		addr, sent := nodeAfterFullAuth(t, key)
		_, err = dial(addr, Options{})
		if err == nil || !strings.Contains(err.Error(), "backend_tls.server_public_key") {
			t.Fatalf("got %v, want the refusal naming what to configure", err)
		}
		if got := <-sent; len(got) != 0 {
			t.Fatalf("sluice sent % x after the full-authentication request (a key request or the password)", got)
		}
	})
	t.Run("caching_sha2_password full authentication over unverified TLS: refused, nothing sent", func(t *testing.T) {
		server, _ := testCert(t)
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		sent := make(chan []byte, 1)
		addr := tlsNode(t, hs, server, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
			_ = c.NetConn().SetReadDeadline(time.Now().Add(2 * time.Second))
			p, _ := c.ReadPacket()
			sent <- p
		})
		_, err := dial(addr, Options{TLS: &tls.Config{InsecureSkipVerify: true}, TLSRequired: true})
		if err == nil || !strings.Contains(err.Error(), "verified TLS") {
			t.Fatalf("got %v, want the refusal", err)
		}
		if got := <-sent; len(got) != 0 {
			t.Fatalf("sluice sent %q over unverified TLS", got)
		}
	})
	t.Run("caching_sha2_password full authentication with the configured public key", func(t *testing.T) {
		key, err := mysql.GenerateRSAKey()
		if err != nil {
			t.Fatal(err)
		}
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		decrypted := make(chan string, 1)
		addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
			p, err := c.ReadPacket()
			if err != nil {
				return
			}
			pw, err := mysql.DecryptPassword(key, p, hs.Nonce)
			decrypted <- pw
			if err != nil || pw != "app" {
				deny(c)
				return
			}
			writeOK(c)
		})
		bc, err := dial(addr, Options{ServerPublicKey: mysql.PublicKeyPEM(key)})
		if err != nil {
			t.Fatal(err)
		}
		bc.Close()
		if pw := <-decrypted; pw != "app" {
			t.Fatalf("node decrypted %q", pw)
		}
	})
	t.Run("caching_sha2_password full authentication: a node with another key than the configured one learns nothing", func(t *testing.T) {
		nodeKey, err := mysql.GenerateRSAKey()
		if err != nil {
			t.Fatal(err)
		}
		configured, err := mysql.GenerateRSAKey()
		if err != nil {
			t.Fatal(err)
		}
		addr, sent := nodeAfterFullAuth(t, nodeKey)
		_, _ = dial(addr, Options{ServerPublicKey: mysql.PublicKeyPEM(configured)})
		got := <-sent
		if bytes.Equal(got, []byte{mysql.CachingSHA2RequestKey}) || len(got) == 0 {
			t.Fatalf("sluice sent % x, want the password encrypted to the configured key", got)
		}
		if pw, err := mysql.DecryptPassword(nodeKey, got, mariaDBHandshake().Nonce); err == nil && pw == "app" {
			t.Fatal("the node decrypted the password with its own key")
		}
		if pw, err := mysql.DecryptPassword(configured, got, mariaDBHandshake().Nonce); err != nil || pw != "app" {
			t.Fatalf("the configured key's owner reads %q, %v", pw, err)
		}
	})
	t.Run("mysql_clear_password and dialog switches without verified TLS: refused, nothing sent", func(t *testing.T) {
		for _, plugin := range []string{mysql.AuthClearPassword, "dialog", mysql.AuthSHA256Password} {
			sent := make(chan []byte, 1)
			addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) {
				_ = c.WritePacketFlush(mysql.AppendAuthSwitchRequest(nil, plugin, []byte("\x04Password: ")))
				_ = c.NetConn().SetReadDeadline(time.Now().Add(2 * time.Second))
				p, _ := c.ReadPacket()
				sent <- p
			})
			_, err := dial(addr, Options{})
			if err == nil || !strings.Contains(err.Error(), "verified TLS") {
				t.Errorf("%s: got %v, want the refusal", plugin, err)
			}
			if got := <-sent; len(got) != 0 {
				t.Errorf("%s: sluice sent %q", plugin, got)
			}
		}
	})
	t.Run("mysql_clear_password over verified TLS: the password", func(t *testing.T) {
		server, client := testCert(t)
		addr := tlsNode(t, mariaDBHandshake(), server, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthSwitchRequest(nil, mysql.AuthClearPassword, nil))
			if p, err := c.ReadPacket(); err != nil || string(p) != "app\x00" {
				deny(c)
				return
			}
			writeOK(c)
		})
		bc, err := dial(addr, Options{TLS: client, TLSRequired: true})
		if err != nil {
			t.Fatal(err)
		}
		bc.Close()
	})
	t.Run("caching_sha2_password full authentication over TLS: the password as it is", func(t *testing.T) {
		server, client := testCert(t)
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		addr := tlsNode(t, hs, server, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			if r.Capabilities&mysql.ClientSSL == 0 || !bytes.Equal(r.AuthResponse, mysql.CachingSHA2Scramble("app", hs.Nonce)) {
				deny(c)
				return
			}
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
			if p, err := c.ReadPacket(); err != nil || string(p) != "app\x00" {
				deny(c)
				return
			}
			writeOK(c)
		})
		bc, err := dial(addr, Options{TLS: client, TLSRequired: true})
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		if !bc.TLS || bc.Caps&mysql.ClientSSL == 0 {
			t.Fatalf("TLS %v, caps %#x", bc.TLS, bc.Caps)
		}
	})
	t.Run("caching_sha2_password full authentication refused for a user configured by hash", func(t *testing.T) {
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) { deny(c) })
		_, err := dial(addr, Options{Credentials: Credentials{User: "app", Stage1: sha1.Sum([]byte("app")), HasStage1: true}})
		if err == nil || !strings.Contains(err.Error(), "mysql_native_password hash") {
			t.Fatalf("got %v, want the error naming the hash", err)
		}
		var se *mysql.SQLError
		if errors.As(err, &se) {
			t.Fatalf("got the node's error %v: sluice should have refused first", err)
		}
	})
	t.Run("caching_sha2_password full authentication refused without a plaintext password", func(t *testing.T) {
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
		})
		_, err := dial(addr, Options{Credentials: Credentials{User: "nopw"}})
		if err == nil || !strings.Contains(err.Error(), "configure password instead of password_hash") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("auth switch to caching_sha2_password for a user configured by hash", func(t *testing.T) {
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthSwitchRequest(nil, mysql.AuthCachingSHA2, []byte("ABCDEFGHIJKLMNOPQRST")))
		})
		_, err := dial(addr, Options{Credentials: Credentials{User: "app", Stage1: sha1.Sum([]byte("app")), HasStage1: true}})
		if err == nil || !strings.Contains(err.Error(), "cannot log in with caching_sha2_password") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("ERR during auth: the node's error", func(t *testing.T) {
		key, err := mysql.GenerateRSAKey()
		if err != nil {
			t.Fatal(err)
		}
		hs := mariaDBHandshake()
		hs.AuthPlugin = mysql.AuthCachingSHA2
		addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
			if _, err := c.ReadPacket(); err != nil { // the encrypted password
				return
			}
			_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.AccessDenied("app", "h", true)))
		})
		_, err = dial(addr, Options{ServerPublicKey: mysql.PublicKeyPEM(key)})
		var se *mysql.SQLError
		var ce *ConnectError
		if !errors.As(err, &se) || se.Code != mysql.ErrAccessDenied || errors.As(err, &ce) {
			t.Fatalf("got %v, want the node's 1045", err)
		}
	})
	t.Run("TLS required, node without TLS: nothing sent", func(t *testing.T) {
		sent := make(chan int, 1)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
			c := mysql.NewConn(nc, 0, 0)
			_ = c.WritePacketFlush(mysql.AppendHandshake(nil, mariaDBHandshake()))
			n, _ := io.Copy(io.Discard, nc)
			sent <- int(n)
		}()
		_, client := testCert(t)
		_, err = dial(ln.Addr().String(), Options{TLS: client, TLSRequired: true})
		var ce *ConnectError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "TLS") {
			t.Fatalf("got %v", err)
		}
		if n := <-sent; n != 0 {
			t.Fatalf("sluice sent %d bytes to a node that does not offer TLS", n)
		}
	})
	t.Run("TLS preferred, node without TLS: plain", func(t *testing.T) {
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) { writeOK(c) })
		_, client := testCert(t)
		bc, err := dial(addr, Options{TLS: client})
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		if bc.TLS {
			t.Fatal("TLS on a node without it")
		}
	})
	t.Run("unsupported plugin after a switch", func(t *testing.T) {
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(mysql.AppendAuthSwitchRequest(nil, "client_ed25519", []byte("ABCDEFGHIJKLMNOPQRST")))
		})
		if _, err := dial(addr, Options{}); err == nil || !strings.Contains(err.Error(), "client_ed25519") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestDialSetup: what a new connection runs and carries.
func TestDialSetup(t *testing.T) {
	t.Run("read-only: InitSQL, then the guard", func(t *testing.T) {
		addr, got := commandNode(t, mariaDBHandshake(), nil)
		bc := testDial(t, addr, Options{Database: "shop", Epoch: 3, ReadOnly: true, InitSQL: []string{"SET NAMES utf8mb4"}})
		if !bc.ReadOnly() {
			t.Fatal("not read-only")
		}
		if fp := bc.Fingerprint(); fp != (Fingerprint{DB: "shop", Epoch: 3}) {
			t.Fatalf("fingerprint %+v", fp)
		}
		expectPackets(t, bc, got, query("SET NAMES utf8mb4"), query(ReadOnlyGuard))
	})
	t.Run("read-write: nothing", func(t *testing.T) {
		addr, got := commandNode(t, mariaDBHandshake(), nil)
		bc := testDial(t, addr, Options{})
		if bc.ReadOnly() {
			t.Fatal("read-only")
		}
		if err := bc.Guard(); err != nil {
			t.Fatal(err)
		}
		expectPackets(t, bc, got)
	})
	t.Run("the guard refused: the node's error", func(t *testing.T) {
		addr, _ := commandNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ uint32, p []byte) {
			_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1227, "42000", "Access denied")))
		})
		_, err := Dial(context.Background(), Options{Address: addr, ReadOnly: true, ConnectTimeout: 5 * time.Second})
		var se *mysql.SQLError
		if !errors.As(err, &se) || se.Code != 1227 {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("node without CLIENT_CONNECT_WITH_DB: no schema carried", func(t *testing.T) {
		hs := mariaDBHandshake()
		hs.Capabilities &^= mysql.ClientConnectWithDB
		addr, _ := commandNode(t, hs, nil)
		bc := testDial(t, addr, Options{Database: "shop"})
		if fp := bc.Fingerprint(); fp != (Fingerprint{}) {
			t.Fatalf("fingerprint %+v", fp)
		}
	})
}

func TestReadHandshake(t *testing.T) {
	addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, r *mysql.HandshakeResponse) {})
	hs, err := ReadHandshake(context.Background(), addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if hs.ServerVersion != "5.5.5-10.11.0-MariaDB" || hs.MariaDBCapabilities != mariaDBHandshake().MariaDBCapabilities {
		t.Fatalf("%+v", hs)
	}
}

// dialScripted logs in to a scripted node as app/app.
func dialScripted(addr string, o Options) (*Conn, error) {
	o.Address = addr
	o.Credentials = Credentials{User: "app", Password: "app", HasPassword: true}
	o.ConnectTimeout = 2 * time.Second
	return Dial(context.Background(), o)
}

// TestEmptyPacketsRefused: a node that answers with an empty packet (where the first byte must
// say what the packet is) gets an error, not a panic: during login, and after a statement.
func TestEmptyPacketsRefused(t *testing.T) {
	t.Run("login", func(t *testing.T) {
		addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ *mysql.HandshakeResponse) {
			_ = c.WritePacketFlush(nil)
		})
		if _, err := dialScripted(addr, Options{}); err == nil || !strings.Contains(err.Error(), "empty packet") {
			t.Fatalf("dial: %v", err)
		}
	})
	for _, run := range []struct {
		name string
		do   func(*Conn) error
	}{
		{"Exec", func(c *Conn) error { return c.Exec("SELECT 1") }},
		{"Query", func(c *Conn) error { _, err := c.Query("SELECT 1"); return err }},
		{"Command", func(c *Conn) error { return c.Command([]byte{mysql.ComPing}) }},
	} {
		t.Run(run.name, func(t *testing.T) {
			addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ *mysql.HandshakeResponse) {
				writeOK(c)
				c.SetSeq(0)
				if _, err := c.ReadPacket(); err != nil {
					return
				}
				_ = c.WritePacketFlush(nil)
			})
			bc, err := dialScripted(addr, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer bc.Close()
			if err := run.do(bc); err == nil {
				t.Fatal("an empty answer was accepted")
			}
		})
	}
}

// TestLoginPacketsBounded: what a node sends before the login ends (its greeting, its answers
// in the auth exchange) is read up to a small bound, not up to the 1 GiB a logged-in connection
// allows: a node added through the API that streams a huge greeting, for every dial of every
// session and of the monitor, must not make sluice buffer it. Before, Dial and ReadHandshake
// read all 64 MiB the node sent.
func TestLoginPacketsBounded(t *testing.T) {
	const flood = 64 << 20
	// floodNode writes a packet of flood bytes (16 MiB - 1 continuation packets) as its
	// greeting, or after reading the handshake response, and reports how much of it went out.
	floodNode := func(t *testing.T, afterResponse bool) (string, <-chan int) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		wrote := make(chan int, 1)
		go func() {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			seq := byte(0)
			if afterResponse {
				c := mysql.NewConn(nc, 0, 0)
				if err := c.WritePacketFlush(mysql.AppendHandshake(nil, mariaDBHandshake())); err != nil {
					return
				}
				if _, err := c.ReadPacket(); err != nil {
					return
				}
				seq = c.Seq()
			}
			wrote <- testutil.FloodPackets(nc, seq, flood)
		}()
		return ln.Addr().String(), wrote
	}
	check := func(t *testing.T, wrote <-chan int, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("the login succeeded")
		}
		if n := <-wrote; n >= flood/2 {
			t.Fatalf("sluice read %d MiB of the node's login packet (%v)", n>>20, err)
		}
	}
	t.Run("greeting", func(t *testing.T) {
		addr, wrote := floodNode(t, false)
		_, err := dialScripted(addr, Options{})
		check(t, wrote, err)
	})
	t.Run("auth exchange", func(t *testing.T) {
		addr, wrote := floodNode(t, true)
		_, err := dialScripted(addr, Options{})
		check(t, wrote, err)
	})
	t.Run("ReadHandshake", func(t *testing.T) {
		addr, wrote := floodNode(t, false)
		_, err := ReadHandshake(context.Background(), addr, 2*time.Second)
		check(t, wrote, err)
	})
}

// TestAnswersToOwnStatementsBounded: the answer to a statement sluice sends itself (the
// read-only guard here; setup statements, replayed SETs, BEGIN, COMMIT, KILL, commands) is read
// up to MaxQueryBytes per packet, as Query's is: a node that answers with one endless packet
// fails the dial instead of making sluice buffer it. Before, all 64 MiB were read.
func TestAnswersToOwnStatementsBounded(t *testing.T) {
	const flood = 64 << 20
	wrote := make(chan int, 1)
	addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ *mysql.HandshakeResponse) {
		writeOK(c)
		c.SetSeq(0)
		if _, err := c.ReadPacket(); err != nil { // the guard
			return
		}
		nc := c.NetConn()
		wrote <- testutil.FloodPackets(nc, 1, flood)
	})
	if _, err := dialScripted(addr, Options{ReadOnly: true}); err == nil {
		t.Fatal("the dial succeeded")
	}
	if n := <-wrote; n >= flood/2 {
		t.Fatalf("sluice read %d MiB of the node's answer to the guard", n>>20)
	}
}

// TestAnswersReadWholeBounded: after the login, a packet sluice reads whole from a node (here
// the value of a consistency wait; also an OK, a prepare response, the answer to a refused
// LOCAL INFILE) is at most MaxAnswerPacket: a node that sends one endless packet is refused
// past 16 MiB. Before, such reads went up to 1 GiB: all 64 MiB the node sent.
func TestAnswersReadWholeBounded(t *testing.T) {
	const flood = 64 << 20
	wrote := make(chan int, 1)
	addr := scriptedNode(t, mariaDBHandshake(), func(c *mysql.Conn, _ *mysql.HandshakeResponse) {
		writeOK(c)
		c.SetSeq(0)
		if _, err := c.ReadPacket(); err != nil {
			return
		}
		nc := c.NetConn()
		wrote <- testutil.FloodPackets(nc, 1, flood)
	})
	bc, err := dialScripted(addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if err := bc.WriteQuery([]byte("SELECT 1")); err != nil {
		t.Fatal(err)
	}
	if err := bc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.ReadScalarIs("1"); err == nil {
		t.Fatal("a 64 MiB answer was read")
	}
	bc.Close()
	if n := <-wrote; n >= flood/2 {
		t.Fatalf("sluice read %d MiB of one packet", n>>20)
	}
}
