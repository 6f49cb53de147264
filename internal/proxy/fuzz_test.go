package proxy

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// FuzzSessionCommand feeds one arbitrary client packet to a session whose node answers every
// command with an OK (and a canned prepare response to COM_STMT_PREPARE). Whatever the bytes —
// malformed EXECUTE parameters, long data, change-user or kill packets — the session must not
// panic and must not hang.
func FuzzSessionCommand(f *testing.F) {
	f.Add([]byte{mysql.ComQuery, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'})
	f.Add([]byte{mysql.ComStmtPrepare, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '?'})
	f.Add([]byte{mysql.ComStmtExecute, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xfe, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{mysql.ComStmtExecute, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0, 0})
	f.Add([]byte{mysql.ComStmtSendLongData, 1, 0, 0, 0, 0, 0, 'x', 'y'})
	f.Add([]byte{mysql.ComStmtFetch, 1, 0, 0, 0, 10, 0, 0, 0})
	f.Add([]byte{mysql.ComStmtReset, 1, 0, 0, 0})
	f.Add([]byte{mysql.ComStmtClose, 1, 0, 0, 0})
	f.Add([]byte{mysql.ComChangeUser, 'a', 'p', 'p', 0, 20})
	f.Add([]byte{mysql.ComProcessKill, 1, 0, 0, 0})
	f.Add([]byte{mysql.ComQuery, 'K', 'I', 'L', 'L', ' ', '4', '2'})
	f.Add([]byte{mysql.ComFieldList, 't', 0})
	f.Add([]byte{mysql.ComBinlogDump, 0, 0, 0, 0})
	f.Add([]byte{mysql.ComSetOption, 0})
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) == 0 || len(payload) > 1<<16 {
			return
		}
		clientSide, front := net.Pipe()
		back, nodeSide := net.Pipe()
		defer clientSide.Close()
		defer nodeSide.Close()
		p := testProxy(t, Options{})
		s := p.newSession(p.endpoints["rw"], front)
		s.login.caps, s.login.user = frontCaps, &User{Name: "app"}
		bc := &backend.Conn{Conn: mysql.NewConn(back, 0, 0), Caps: frontCaps, Handshake: &mysql.Handshake{}}
		s.conns[0] = &nodeConn{Conn: bc, name: "primary"}
		s.home, s.cur, s.node, s.bc = 0, 0, p.topo.Snapshot().Nodes[0], bc
		s.homeNode = s.node
		go fakeNode(nodeSide)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("panic: %v", r)
				}
			}()
			// Prepare one statement first so that statement commands have something to name.
			s.command()
			s.command()
		}()
		go io.Copy(io.Discard, clientSide)
		c := mysql.NewConn(clientSide, 0, 0)
		_ = c.WritePacketFlush(append([]byte{mysql.ComStmtPrepare}, "SELECT ?"...))
		c.SetSeq(0)
		_ = c.WritePacketFlush(payload)
		// A command that waits for more from the client (change user's auth exchange) ends when
		// the client goes away.
		time.AfterFunc(200*time.Millisecond, func() { clientSide.Close() })
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("session hangs on %x", payload)
		}
	})
}

// fakeNode answers every command: a prepare gets one parameter and one column, a fetch the
// end of the rows, anything else OK.
func fakeNode(nc net.Conn) {
	c := mysql.NewConn(nc, 0, 0)
	col := []byte("\x03def\x00\x00\x00\x01a\x00\x0c\x21\x00\x0b\x00\x00\x00\xfd\x00\x00\x00\x00\x00")
	for {
		c.SetSeq(0)
		p, err := c.ReadPacket()
		if err != nil {
			return
		}
		switch p[0] {
		case mysql.ComStmtClose, mysql.ComStmtSendLongData:
			continue
		case mysql.ComStmtPrepare:
			_ = c.WritePacket([]byte{0, 9, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0})
			_ = c.WritePacket(col)
			_ = c.WritePacket(col)
		case mysql.ComStmtFetch, mysql.ComFieldList:
			_ = c.WritePacket([]byte{0xfe, 0, 0, 0x82, 0, 0, 0})
		default:
			_ = c.WritePacket([]byte{0, 0, 0, 2, 0, 0, 0})
		}
		if c.Flush() != nil {
			return
		}
	}
}

// FuzzHandshake feeds arbitrary bytes to a session's login: the handshake response, then one
// more packet for an auth switch or caching_sha2's exchange. Whatever they are, the session
// answers or closes, never panics or hangs, and touches no node before a login succeeds (the
// only node is one that refuses connections).
func FuzzHandshake(f *testing.F) {
	nonce := []byte("abcdefghijklmnopqrst")
	resp := func(user, plugin string, auth []byte, caps uint32) []byte {
		return mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
			Capabilities: caps, MaxPacketSize: 1 << 24, Charset: 45, User: user, AuthResponse: auth, AuthPlugin: plugin,
		})
	}
	base := mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientPluginAuth | mysql.ClientLongPassword
	f.Add(resp("app", mysql.AuthNativePassword, mysql.NativeScramble("app", nonce), base), []byte{})
	f.Add(resp("app", mysql.AuthCachingSHA2, mysql.CachingSHA2Scramble("app", nonce), base|mysql.ClientPluginAuthLenencClientData), []byte{mysql.CachingSHA2RequestKey})
	f.Add(resp("nobody", mysql.AuthCachingSHA2, []byte("x"), base), []byte("pw\x00"))
	f.Add(resp("app", "dialog", nil, base), mysql.NativeScramble("app", nonce))
	f.Add(resp("app", "", nil, base|mysql.ClientSSL), []byte{})
	f.Add([]byte{0x85, 0xa6, 0x0f, 0, 0, 0, 0, 1, 8}, []byte{})
	f.Fuzz(func(t *testing.T, response, more []byte) {
		if len(response) > 1<<16 || len(more) > 1<<16 {
			return
		}
		clientSide, front := net.Pipe()
		defer clientSide.Close()
		p := testProxy(t, Options{Users: []User{{Name: "app", Password: "app", HasPassword: true}}, ConnectTimeout: time.Second})
		s := p.newSession(p.endpoints["rw"], front)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("panic: %v", r)
				}
			}()
			_ = s.handshake()
			s.close()
		}()
		go func() {
			c := mysql.NewConn(clientSide, 0, 0)
			if _, err := c.ReadPacket(); err != nil {
				return
			}
			c.SetSeq(1)
			if c.WritePacketFlush(response) != nil {
				return
			}
			if _, err := c.ReadPacket(); err != nil {
				return
			}
			_ = c.WritePacketFlush(more)
			_, _ = io.Copy(io.Discard, clientSide)
		}()
		time.AfterFunc(200*time.Millisecond, func() { clientSide.Close() })
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("login hangs on % x / % x", response, more)
		}
	})
}
