package binlog

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

const guardPassword = "monitor-secret"

// fakeNode is a scripted node: it greets with plugin (TLS offered when tlsCfg is set, and then
// required), runs script on the login, and answers OK to every command after it. It reports
// what the client sent after the handshake response, packet by packet.
func fakeNode(t *testing.T, plugin string, tlsCfg *tls.Config, script func(c *mysql.Conn, nonce []byte) bool) (addr string, sent chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sent = make(chan []byte, 64)
	nonce := []byte("abcdefghijklmnopqrst")
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		defer close(sent)
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := mysql.NewConn(nc, 0, 0)
		caps := uint32(mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientPluginAuth | mysql.ClientLongPassword |
			mysql.ClientTransactions | mysql.ClientLongFlag | mysql.ClientPluginAuthLenencClientData | mysql.ClientConnectWithDB)
		if tlsCfg != nil {
			caps |= mysql.ClientSSL
		}
		hs := &mysql.Handshake{ServerVersion: "8.0.40", ConnectionID: 7, Nonce: nonce, Capabilities: caps, Charset: 45,
			Status: mysql.StatusAutocommit, AuthPlugin: plugin}
		if err := c.WritePacketFlush(mysql.AppendHandshake(nil, hs)); err != nil {
			return
		}
		p, err := c.ReadPacket()
		if err != nil {
			return
		}
		if tlsCfg != nil {
			r, err := mysql.ParseHandshakeResponse(p)
			if err != nil || !r.SSLRequest {
				return
			}
			tc := tls.Server(c.Upgradable(), tlsCfg)
			if err := tc.Handshake(); err != nil {
				return
			}
			seq := c.Seq()
			c = mysql.NewConn(tc, 0, 0)
			c.SetSeq(seq)
			if _, err := c.ReadPacket(); err != nil {
				return
			}
		}
		if !script(c, nonce) {
			// Record whatever else the client sends, until it closes.
			for {
				p, err := c.ReadPacket()
				if err != nil {
					return
				}
				sent <- append([]byte(nil), p...)
			}
		}
		_ = c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, caps))
		for {
			c.SetSeq(0)
			if _, err := c.ReadPacket(); err != nil {
				return
			}
			_ = c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, caps))
		}
	}()
	return ln.Addr().String(), sent
}

// guardedLogin logs in to addr with go-mysql's client through the login guard, as the stream
// does.
func guardedLogin(addr string, g guard) error {
	nc := &conns{ctx: context.Background(), guard: g}
	defer nc.closeAll()
	s := &stream{o: Options{TLS: g.tls}}
	c, err := client.ConnectWithDialer(context.Background(), "", addr, "monitor", guardPassword, "", nc.dial, func(c *client.Conn) error {
		c.SetTLSConfig(s.localTLS())
		return nil
	})
	if err != nil {
		return err
	}
	return c.Close()
}

// collect returns what the fake node reported being sent, once it is done.
func collect(sent chan []byte) [][]byte {
	var out [][]byte
	for p := range sent {
		out = append(out, p)
	}
	return out
}

func nodeCert(t *testing.T) (server, verified *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// fullAuthNode asks for caching_sha2_password's full authentication and, asked for its key,
// offers its own (as a node that wants the password would). It reports what the client sent
// after the request: the first packet on first, the rest on rest.
func fullAuthNode(t *testing.T, tlsCfg *tls.Config) (addr string, first, rest chan []byte) {
	key, err := mysql.GenerateRSAKey()
	if err != nil {
		t.Fatal(err)
	}
	first = make(chan []byte, 1)
	addr, rest = fakeNode(t, mysql.AuthCachingSHA2, tlsCfg, func(c *mysql.Conn, nonce []byte) bool {
		defer close(first)
		_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
		p, err := c.ReadPacket()
		if err != nil {
			return false
		}
		first <- append([]byte(nil), p...)
		if bytes.Equal(p, []byte{mysql.CachingSHA2RequestKey}) {
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.PublicKeyPEM(key)...))
		}
		return false
	})
	return addr, first, rest
}

// TestGuardRefusesUnsafeAuth: go-mysql, which the binlog streams log in with, never gets to send
// the password to a node that asks for it without verified TLS: not for caching_sha2_password's
// full authentication (in clear, or to the node's own key), not for a switch to
// mysql_clear_password, dialog or sha256_password. The login fails with sluice's reason.
func TestGuardRefusesUnsafeAuth(t *testing.T) {
	server, _ := nodeCert(t)
	unverified := &tls.Config{InsecureSkipVerify: true}
	for _, tc := range []struct {
		name string
		tls  *tls.Config
	}{{"plain TCP", nil}, {"TLS without verification", unverified}} {
		t.Run("caching_sha2_password full authentication, "+tc.name, func(t *testing.T) {
			var nodeTLS *tls.Config
			if tc.tls != nil {
				nodeTLS = server
			}
			addr, first, rest := fullAuthNode(t, nodeTLS)
			err := guardedLogin(addr, guard{tls: tc.tls})
			if err == nil || !strings.Contains(err.Error(), "sluice refused") {
				t.Errorf("login: %v, want sluice's refusal", err)
			}
			if got := append(collect(first), collect(rest)...); len(got) != 0 {
				t.Errorf("the node received %q after asking for full authentication", got)
			}
		})
		for _, plugin := range []string{mysql.AuthClearPassword, "dialog", mysql.AuthSHA256Password} {
			t.Run("switch to "+plugin+", "+tc.name, func(t *testing.T) {
				var nodeTLS *tls.Config
				if tc.tls != nil {
					nodeTLS = server
				}
				addr, sent := fakeNode(t, mysql.AuthNativePassword, nodeTLS, func(c *mysql.Conn, nonce []byte) bool {
					_ = c.WritePacketFlush(mysql.AppendAuthSwitchRequest(nil, plugin, nonce))
					return false
				})
				err := guardedLogin(addr, guard{tls: tc.tls})
				if err == nil {
					t.Error("login succeeded")
				}
				for _, p := range collect(sent) {
					if bytes.Contains(p, []byte(guardPassword)) || len(p) > 0 {
						t.Errorf("the node received %q after its switch to %s", p, plugin)
					}
				}
			})
		}
	}
	t.Run("sha256_password greeting over TLS without verification", func(t *testing.T) {
		addr, _ := fakeNode(t, mysql.AuthSHA256Password, server, func(c *mysql.Conn, nonce []byte) bool { return false })
		err := guardedLogin(addr, guard{tls: unverified})
		if err == nil || !strings.Contains(err.Error(), "sluice refused") {
			t.Errorf("login: %v, want sluice's refusal", err)
		}
	})
}

// TestGuardSendsWhereSafe: over verified TLS the password goes to the node as go-mysql sends
// it; with a configured public key it goes encrypted to that key, which the node's own key does
// not open, over plain TCP and over unverified TLS alike; a native login passes untouched.
func TestGuardSendsWhereSafe(t *testing.T) {
	server, verified := nodeCert(t)
	t.Run("verified TLS: full authentication", func(t *testing.T) {
		addr, sent := fakeNode(t, mysql.AuthCachingSHA2, server, func(c *mysql.Conn, nonce []byte) bool {
			_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
			p, err := c.ReadPacket()
			return err == nil && string(p) == guardPassword+"\x00"
		})
		if err := guardedLogin(addr, guard{tls: verified}); err != nil {
			t.Fatal(err)
		}
		collect(sent)
	})
	configured, err := mysql.GenerateRSAKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		nodeTLS, ourTLS *tls.Config
	}{{"plain TCP", nil, nil}, {"TLS without verification", server, &tls.Config{InsecureSkipVerify: true}}} {
		t.Run("configured key, "+tc.name, func(t *testing.T) {
			own, err := mysql.GenerateRSAKey()
			if err != nil {
				t.Fatal(err)
			}
			decrypted := make(chan string, 1)
			addr, sent := fakeNode(t, mysql.AuthCachingSHA2, tc.nodeTLS, func(c *mysql.Conn, nonce []byte) bool {
				_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth))
				p, err := c.ReadPacket()
				if err != nil {
					return false
				}
				if bytes.Equal(p, []byte{mysql.CachingSHA2RequestKey}) {
					t.Error("the node was asked for its key")
					_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.PublicKeyPEM(own)...))
					return false
				}
				if _, err := mysql.DecryptPassword(own, p, nonce); err == nil {
					t.Error("the node's own key opens what it was sent")
				}
				pw, err := mysql.DecryptPassword(configured, p, nonce)
				decrypted <- pw
				return err == nil && pw == guardPassword
			})
			if err := guardedLogin(addr, guard{tls: tc.ourTLS, pubKey: mysql.PublicKeyPEM(configured)}); err != nil {
				t.Fatal(err)
			}
			collect(sent)
			if pw := <-decrypted; pw != guardPassword {
				t.Fatalf("the configured key's owner reads %q", pw)
			}
		})
	}
	t.Run("mysql_native_password, plain TCP", func(t *testing.T) {
		addr, sent := fakeNode(t, mysql.AuthNativePassword, nil, func(c *mysql.Conn, nonce []byte) bool { return true })
		if err := guardedLogin(addr, guard{}); err != nil {
			t.Fatal(err)
		}
		collect(sent)
	})
}

// TestGuardReadsAuthMoreDataAsGoMySQLDoes: go-mysql takes any AuthMoreData whose first byte is
// caching_sha2_password's full-authentication request as one, whatever follows it; so must the
// guard. Before, a node that padded the request (01 04 00) got past the guard, which passes on
// what it does not recognise: go-mysql then asked the node for its key and sent the password
// encrypted to it (plain TCP), or in clear (TLS without verification).
func TestGuardReadsAuthMoreDataAsGoMySQLDoes(t *testing.T) {
	server, _ := nodeCert(t)
	for _, tc := range []struct {
		name            string
		nodeTLS, ourTLS *tls.Config
	}{{"plain TCP", nil, nil}, {"TLS without verification", server, &tls.Config{InsecureSkipVerify: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := mysql.GenerateRSAKey()
			if err != nil {
				t.Fatal(err)
			}
			harvested := make(chan string, 4)
			addr, sent := fakeNode(t, mysql.AuthCachingSHA2, tc.nodeTLS, func(c *mysql.Conn, nonce []byte) bool {
				defer close(harvested)
				_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.CachingSHA2FullAuth, 0))
				for {
					p, err := c.ReadPacket()
					if err != nil {
						return false
					}
					harvested <- string(p)
					if bytes.Equal(p, []byte{mysql.CachingSHA2RequestKey}) {
						_ = c.WritePacketFlush(mysql.AppendAuthMoreData(nil, mysql.PublicKeyPEM(key)...))
						continue
					}
					if pw, err := mysql.DecryptPassword(key, p, nonce); err == nil {
						harvested <- pw
					}
				}
			})
			err = guardedLogin(addr, guard{tls: tc.ourTLS})
			if err == nil || !strings.Contains(err.Error(), "sluice refused") {
				t.Errorf("login: %v, want sluice's refusal", err)
			}
			collect(sent)
			for p := range harvested {
				if strings.Contains(p, guardPassword) {
					t.Errorf("the node read the password: %q", p)
				}
				if p != "" {
					t.Errorf("the node received %q after asking for full authentication", p)
				}
			}
		})
	}
}

// TestGuardBoundsStreamPackets: after the login, what the node sends go-mysql passes through
// the relay packet by packet, and a packet larger than the bound (maxStreamPacket) ends the
// connection: go-mysql reads a packet whole into memory, growing it by each continuation, so a
// node that streams one endless packet would otherwise take all of sluice's memory. Before, go-
// mysql read all 64 MiB of one.
func TestGuardBoundsStreamPackets(t *testing.T) {
	const flood = 64 << 20
	wrote := make(chan int, 1)
	addr, sent := fakeNode(t, mysql.AuthNativePassword, nil, func(c *mysql.Conn, nonce []byte) bool {
		caps := uint32(mysql.ClientProtocol41 | mysql.ClientTransactions)
		if err := c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, caps)); err != nil {
			return false
		}
		c.SetSeq(0)
		if _, err := c.ReadPacket(); err != nil {
			return false
		}
		nc := c.NetConn()
		wrote <- testutil.FloodPackets(nc, 1, flood)
		return false
	})
	nc := &conns{ctx: context.Background(), guard: guard{maxPacket: 4 << 20}}
	defer nc.closeAll()
	c, err := client.ConnectWithDialer(context.Background(), "", addr, "monitor", guardPassword, "", nc.dial)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Execute("SELECT 1"); err == nil {
		t.Error("a 64 MiB answer was read")
	}
	c.Close()
	nc.closeAll()
	if n := <-wrote; n >= flood/2 {
		t.Errorf("the node sent %d MiB of one packet before the relay stopped it", n>>20)
	}
	collect(sent)
}
