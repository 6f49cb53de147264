package proxy

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// infileSession is a session of endpoint rw whose primary is played by node (over net.Pipe), and
// the client's end of its connection.
func infileSession(t *testing.T, node func(c *mysql.Conn)) (*session, *mysql.Conn) {
	t.Helper()
	clientSide, front := net.Pipe()
	back, nodeSide := net.Pipe()
	t.Cleanup(func() { clientSide.Close(); nodeSide.Close(); front.Close(); back.Close() })
	p := testProxy(t, Options{})
	s := p.newSession(p.endpoints["rw"], front)
	s.login.caps, s.login.user = frontCaps|mysql.ClientLocalFiles, &User{Name: "app"}
	bc := &backend.Conn{Conn: mysql.NewConn(back, 0, 0), Caps: frontCaps | mysql.ClientLocalFiles, Handshake: &mysql.Handshake{}}
	s.conns[0] = &nodeConn{Conn: bc, name: "primary"}
	s.home, s.cur, s.node, s.bc = 0, 0, p.topo.Snapshot().Nodes[0], bc
	s.homeNode = s.node
	go node(mysql.NewConn(nodeSide, 0, 0))
	_ = clientSide.SetDeadline(time.Now().Add(10 * time.Second))
	_ = nodeSide.SetDeadline(time.Now().Add(10 * time.Second))
	return s, mysql.NewConn(clientSide, 0, 0)
}

// runCommand has the session run the client's next command; the result comes on the channel.
func runCommand(s *session) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.command()
		done <- err
	}()
	return done
}

var infileOK = []byte{0, 0, 0, 2, 0, 0, 0}

// TestLocalInfileOnlyForLoadDataLocal: a node's LOCAL INFILE request reaches the client only for
// a LOAD DATA LOCAL the client sent. For any other statement the node gets the empty packet
// that sends no file, and the client a clear error, never the request (before, it was relayed
// for any statement: a hostile node read the client's files); the session goes on. A node that
// asks and then claims more results is out of step: its connection ends, still without the
// client seeing a file request.
func TestLocalInfileOnlyForLoadDataLocal(t *testing.T) {
	request := append([]byte{0xfb}, "/etc/passwd"...)

	t.Run("not a LOAD DATA LOCAL", func(t *testing.T) {
		got := make(chan []byte, 4)
		s, client := infileSession(t, func(c *mysql.Conn) {
			for {
				c.SetSeq(0)
				p, err := c.ReadPacket()
				if err != nil {
					return
				}
				if !bytes.HasPrefix(p[1:], []byte("SELECT")) {
					return
				}
				if bytes.Equal(p[1:], []byte("SELECT 2")) {
					_ = c.WritePacketFlush(infileOK)
					continue
				}
				_ = c.WritePacketFlush(request)
				answer, err := c.ReadPacket()
				if err != nil {
					return
				}
				got <- append([]byte{c.Seq() - 1}, answer...)
				_ = c.WritePacketFlush(infileOK)
			}
		})
		for _, q := range []string{"SELECT 1", "SELECT 1; SELECT 3"} {
			done := runCommand(s)
			client.SetSeq(0)
			if err := client.WritePacketFlush(append([]byte{mysql.ComQuery}, q...)); err != nil {
				t.Fatal(err)
			}
			p, err := client.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			if !mysql.IsERR(p) {
				t.Fatalf("%s: the client got % x, want an error (never the node's file request)", q, p)
			}
			if se := mysql.ParseERR(p); se.Code != mysql.ErrUnknown || se.State != "HY000" || !bytes.Contains([]byte(se.Message), []byte("LOCAL INFILE")) {
				t.Fatalf("%s: %v", q, se)
			}
			if err := <-done; err != nil {
				t.Fatalf("%s: the session ended: %v", q, err)
			}
			if a := <-got; len(a) != 1 || a[0] != 2 {
				t.Fatalf("%s: the node got % x (sequence id, payload), want the empty packet with sequence id 2", q, a)
			}
		}
		// The session goes on.
		done := runCommand(s)
		client.SetSeq(0)
		_ = client.WritePacketFlush(append([]byte{mysql.ComQuery}, "SELECT 2"...))
		if p, err := client.ReadPacket(); err != nil || !mysql.IsOK(p) {
			t.Fatalf("after the refusal: % x %v", p, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LOAD DATA LOCAL", func(t *testing.T) {
		file := make(chan []byte, 1)
		s, client := infileSession(t, func(c *mysql.Conn) {
			c.SetSeq(0)
			if _, err := c.ReadPacket(); err != nil {
				return
			}
			_ = c.WritePacketFlush(append([]byte{0xfb}, "data.csv"...))
			var all []byte
			for {
				p, err := c.ReadPacket()
				if err != nil {
					return
				}
				if len(p) == 0 {
					break
				}
				all = append(all, p...)
			}
			file <- all
			_ = c.WritePacketFlush([]byte{0, 1, 0, 2, 0, 0, 0})
		})
		done := runCommand(s)
		client.SetSeq(0)
		_ = client.WritePacketFlush(append([]byte{mysql.ComQuery}, "LOAD DATA LOCAL INFILE 'data.csv' INTO TABLE t"...))
		p, err := client.ReadPacket()
		if err != nil || !bytes.Equal(p, append([]byte{0xfb}, "data.csv"...)) {
			t.Fatalf("the client got % x %v, want the node's file request", p, err)
		}
		_ = client.WritePacket([]byte("1,2\n"))
		_ = client.WritePacketFlush(nil)
		if p, err := client.ReadPacket(); err != nil || !mysql.IsOK(p) {
			t.Fatalf("after the file: % x %v", p, err)
		}
		if f := <-file; string(f) != "1,2\n" {
			t.Fatalf("the node got %q", f)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})

	// A LOAD DATA LOCAL of one file: the node may ask for that file, once; not for another.
	for _, tc := range []struct {
		name string
		asks [][]byte // the node's requests, in turn
		ok   bool     // the first goes to the client
	}{
		{"another file", [][]byte{append([]byte{0xfb}, "/etc/passwd"...)}, false},
		{"the file, then another", [][]byte{append([]byte{0xfb}, "data.csv"...), append([]byte{0xfb}, "/etc/passwd"...)}, true},
	} {
		t.Run("LOAD DATA LOCAL, "+tc.name, func(t *testing.T) {
			answers := make(chan []byte, 4)
			s, client := infileSession(t, func(c *mysql.Conn) {
				c.SetSeq(0)
				if _, err := c.ReadPacket(); err != nil {
					return
				}
				for _, ask := range tc.asks {
					_ = c.WritePacketFlush(ask)
					var got []byte
					for {
						p, err := c.ReadPacket()
						if err != nil {
							return
						}
						if len(p) == 0 {
							break
						}
						got = append(got, p...)
					}
					answers <- got
				}
				_ = c.WritePacketFlush(infileOK)
			})
			done := runCommand(s)
			client.SetSeq(0)
			_ = client.WritePacketFlush(append([]byte{mysql.ComQuery}, "LOAD DATA LOCAL INFILE 'data.csv' INTO TABLE t"...))
			p, err := client.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			if tc.ok {
				if !bytes.Equal(p, tc.asks[0]) {
					t.Fatalf("the client got % x, want the request for its file", p)
				}
				_ = client.WritePacket([]byte("1,2\n"))
				_ = client.WritePacketFlush(nil)
				if f := <-answers; string(f) != "1,2\n" {
					t.Fatalf("the node got %q", f)
				}
				if p, err = client.ReadPacket(); err != nil {
					t.Fatal(err)
				}
			}
			if !mysql.IsERR(p) || !strings.Contains(mysql.ParseERR(p).Message, "LOCAL INFILE") {
				t.Fatalf("the client got % x, want sluice's error (never a request for another file)", p)
			}
			if f := <-answers; len(f) != 0 {
				t.Fatalf("the node got %q for the file the statement did not name", f)
			}
			if err := <-done; err != nil {
				t.Fatalf("the session ended: %v", err)
			}
		})
	}

	t.Run("out of step after the refusal", func(t *testing.T) {
		s, client := infileSession(t, func(c *mysql.Conn) {
			c.SetSeq(0)
			if _, err := c.ReadPacket(); err != nil {
				return
			}
			_ = c.WritePacketFlush(request)
			if _, err := c.ReadPacket(); err != nil {
				return
			}
			_ = c.WritePacketFlush([]byte{0, 0, 0, 0x0a, 0, 0, 0}) // more results exist
			_ = c.WritePacketFlush(request)
		})
		done := runCommand(s)
		client.SetSeq(0)
		_ = client.WritePacketFlush(append([]byte{mysql.ComQuery}, "DO 1"...))
		go func() {
			for {
				p, err := client.ReadPacket()
				if err != nil {
					return
				}
				if len(p) > 0 && p[0] == 0xfb {
					t.Errorf("the client got a file request: % x", p)
				}
			}
		}()
		if err := <-done; err == nil {
			t.Fatal("the session went on with a node connection out of step")
		}
	})
}

// TestSameFileName: a node names the file as it read the statement's literal: doubled quotes as
// one, backslash escapes undone, or (NO_BACKSLASH_ESCAPES) backslashes as they are.
func TestSameFileName(t *testing.T) {
	for _, tc := range []struct {
		name, lit string
		want      bool
	}{
		{"data.csv", "data.csv", true},
		{"/etc/passwd", "data.csv", false},
		{"data.csv", "data.csv2", false},
		{"it's.csv", "it''s.csv", true},
		{"it's.csv", "it\\'s.csv", true},
		{`C:\data\x.csv`, `C:\\data\\x.csv`, true},
		{`C:\data\x.csv`, `C:\data\x.csv`, true},
		{"a\nb", `a\nb`, true},
		{"", "", true},
	} {
		got := sameFileName([]byte(tc.name), []byte(tc.lit), true) || sameFileName([]byte(tc.name), []byte(tc.lit), false)
		if got != tc.want {
			t.Errorf("node names %q, statement writes %q: %v, want %v", tc.name, tc.lit, got, tc.want)
		}
	}
}
