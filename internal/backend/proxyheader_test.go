package backend

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// TestDialProxyHeader: Options.ProxyHeader comes first on the connection, whole, before the
// handshake response, whether the node reads it before greeting (HAProxy-style) or after
// (MariaDB greets at once and reads the header with the client's first bytes); without it,
// the handshake response comes first.
func TestDialProxyHeader(t *testing.T) {
	header := []byte("PROXY TCP4 127.0.0.2 127.0.0.1 50000 6033\r\n")
	for _, tc := range []struct {
		name        string
		header      []byte
		greetsFirst bool
	}{
		{"greeting first", header, true},
		{"header first", header, false},
		{"no header", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan []byte, 1)
			go func() {
				defer close(got)
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
				c := mysql.NewConn(nc, 0, 0)
				greet := func() bool { return c.WritePacketFlush(mysql.AppendHandshake(nil, mariaDBHandshake())) == nil }
				if tc.greetsFirst && !greet() {
					return
				}
				// The bytes before the handshake response: as many as the header has (none
				// without one; the response would not parse after stray bytes).
				pre := make([]byte, len(tc.header))
				if _, err := io.ReadFull(nc, pre); err != nil {
					return
				}
				if !tc.greetsFirst && !greet() {
					return
				}
				p, err := c.ReadPacket()
				if err != nil {
					return
				}
				if r, err := mysql.ParseHandshakeResponse(p); err != nil || r.User != "app" {
					return
				}
				writeOK(c)
				got <- pre
			}()
			bc, err := dialScripted(ln.Addr().String(), Options{ProxyHeader: tc.header})
			if err != nil {
				t.Fatal(err)
			}
			defer bc.Close()
			if pre := <-got; pre == nil || !bytes.Equal(pre, tc.header) {
				t.Fatalf("the node read %q before the handshake response, want %q", pre, tc.header)
			}
		})
	}
}

// TestDialProxyHeaderRefused: a node that refuses the client named in the header (MariaDB:
// 1130 after its greeting, before reading the handshake response) is the node's refusal, as
// the node worded it.
func TestDialProxyHeaderRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	header := []byte("PROXY TCP4 127.0.0.2 127.0.0.1 50000 6033\r\n")
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := mysql.NewConn(nc, 0, 0)
		if c.WritePacketFlush(mysql.AppendHandshake(nil, mariaDBHandshake())) != nil {
			return
		}
		if _, err := io.ReadFull(nc, make([]byte, len(header))); err != nil {
			return
		}
		c.SetSeq(1)
		_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1130, "HY000", "Host '127.0.0.2' is not allowed to connect to this MariaDB server")))
		time.Sleep(200 * time.Millisecond) // the handshake response arrives; the node has hung up by then on a real server too
	}()
	_, err = dialScripted(ln.Addr().String(), Options{ProxyHeader: header})
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Code != 1130 {
		t.Fatalf("got %v, want the node's 1130", err)
	}
}

// TestDialProxyHeaderRefusedBeforeTLS: under backend TLS, the node's refusal of the header's
// client comes where the TLS handshake expected the node's first record: it is still the
// node's own ERR.
func TestDialProxyHeaderRefusedBeforeTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	header := []byte("PROXY TCP4 127.0.0.2 127.0.0.1 50000 6033\r\n")
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		c := mysql.NewConn(nc, 0, 0)
		hs := mariaDBHandshake()
		hs.Capabilities |= mysql.ClientSSL
		if c.WritePacketFlush(mysql.AppendHandshake(nil, hs)) != nil {
			return
		}
		if _, err := io.ReadFull(nc, make([]byte, len(header))); err != nil {
			return
		}
		c.SetSeq(1)
		_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1130, "HY000", "Host '127.0.0.2' is not allowed to connect to this MariaDB server")))
		_, _ = io.Copy(io.Discard, nc) // until the client hangs up
	}()
	_, err = dialScripted(ln.Addr().String(), Options{ProxyHeader: header, TLS: &tls.Config{InsecureSkipVerify: true}, TLSRequired: true})
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Code != 1130 || !strings.Contains(se.Message, "127.0.0.2") {
		t.Fatalf("got %v, want the node's 1130", err)
	}
}
