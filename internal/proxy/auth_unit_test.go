package proxy

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// loginRig is a login checked against a proxy's users over an in-memory client connection,
// without a session: env speaks sluice's side, peer the client's.
type loginRig struct {
	l    login
	env  authEnv
	peer *mysql.Conn
}

func newLoginRig(t *testing.T, opts Options) *loginRig {
	t.Helper()
	server, client := net.Pipe()
	t.Cleanup(func() { server.Close(); client.Close() })
	_ = client.SetDeadline(time.Now().Add(10 * time.Second))
	p := testProxy(t, opts)
	r := &loginRig{
		l:    login{host: "127.0.0.9", ip: netip.MustParseAddr("127.0.0.9"), nonce: newNonce()},
		env:  authEnv{p: p, c: mysql.NewConn(server, 0, 0), log: slog.New(slog.DiscardHandler)},
		peer: mysql.NewConn(client, 0, 0),
	}
	return r
}

// answer plays the client: each packet sluice sends is read; an auth switch is answered with
// password scrambled with the switch's nonce. It returns the error sluice ended with (nil: none
// read, after an auth switch answered or when stop closes).
func (r *loginRig) answer(password string) <-chan *mysql.SQLError {
	out := make(chan *mysql.SQLError, 1)
	go func() {
		defer close(out)
		for {
			p, err := r.peer.ReadPacket()
			if err != nil {
				return
			}
			switch p[0] {
			case 0xff:
				out <- mysql.ParseERR(p)
				return
			case 0xfe:
				plugin, nonce, err := mysql.ParseAuthSwitchRequest(p)
				if err != nil || plugin != mysql.AuthNativePassword {
					return
				}
				if err := r.peer.WritePacketFlush(mysql.NativeScramble(password, nonce)); err != nil {
					return
				}
			}
		}
	}()
	return out
}

// TestLoginAuthenticate: a login's credentials checked on their own: the right password logs
// in (the user and the nodes' credentials kept), a wrong one is refused with 1045, counted for
// the address, and leaves the previous user in place; COM_CHANGE_USER's forced switch keeps the
// connection's nonce.
func TestLoginAuthenticate(t *testing.T) {
	opts := Options{Users: []User{{Name: "app", Password: "pw", HasPassword: true, Plugin: mysql.AuthNativePassword}},
		MaxAuthFailures: 2, AuthBlock: time.Minute}
	r := newLoginRig(t, opts)
	if err := r.l.authenticate(r.env, "app", mysql.AuthNativePassword, mysql.NativeScramble("pw", r.l.nonce), false); err != nil {
		t.Fatal(err)
	}
	if r.l.user == nil || r.l.user.Name != "app" || r.l.creds.User != "app" || !r.l.creds.HasPassword || !r.l.usedPassword {
		t.Fatalf("after login: user %v creds %+v", r.l.user, r.l.creds)
	}
	first := r.l.user

	errs := r.answer("wrong")
	err := r.l.authenticate(r.env, "app", "", nil, true) // as COM_CHANGE_USER
	if !errors.Is(err, errAuth) {
		t.Fatalf("wrong password: %v", err)
	}
	if se := <-errs; se == nil || se.Code != mysql.ErrAccessDenied {
		t.Fatalf("the client got %v, want 1045", se)
	}
	if r.l.user != first {
		t.Fatal("a failed change of user replaced the user")
	}
	if r.env.p.authBlock.isBlocked(r.l.ip) {
		t.Fatal("blocked after one failure of two")
	}

	nonce := string(r.l.nonce)
	errs = r.answer("pw")
	if err := r.l.authenticate(r.env, "app", "", nil, true); err != nil {
		t.Fatalf("right password after a switch: %v", err)
	}
	if string(r.l.nonce) != nonce {
		t.Fatal("COM_CHANGE_USER's switch changed the connection's nonce")
	}
	r.env.c.Close()
	if se := <-errs; se != nil {
		t.Fatalf("the client got %v after the right password", se)
	}
}

// TestLoginRules: require_tls refuses a client without TLS with 1045 after its password, and
// counts; the failures block the address, and the 1129 names its address (or the host).
func TestLoginRules(t *testing.T) {
	opts := Options{Users: []User{{Name: "sec", Password: "pw", HasPassword: true, Plugin: mysql.AuthNativePassword, RequireTLS: true}},
		MaxAuthFailures: 1, AuthBlock: time.Minute}
	r := newLoginRig(t, opts)
	errs := r.answer("pw")
	err := r.l.authenticate(r.env, "sec", mysql.AuthNativePassword, mysql.NativeScramble("pw", r.l.nonce), false)
	if !errors.Is(err, errAuth) || r.l.user != nil {
		t.Fatalf("require_tls without TLS: %v, user %v", err, r.l.user)
	}
	if se := <-errs; se == nil || se.Code != mysql.ErrAccessDenied {
		t.Fatalf("the client got %v, want 1045", se)
	}
	if !r.env.p.authBlock.isBlocked(r.l.ip) {
		t.Fatal("the refusal was not counted for the address")
	}
	if h := r.l.blockedHost(); h != "127.0.0.9" {
		t.Errorf("blocked host %q", h)
	}
	if h := (&login{host: "pipe"}).blockedHost(); h != "pipe" {
		t.Errorf("blocked host of a connection without an address: %q", h)
	}

	r = newLoginRig(t, opts)
	r.l.tls = true
	if err := r.l.authenticate(r.env, "sec", mysql.AuthNativePassword, mysql.NativeScramble("pw", r.l.nonce), false); err != nil {
		t.Fatalf("require_tls over TLS: %v", err)
	}
}

// TestLoginNegotiate: the greeting offers what the server info says (and TLS when offered),
// with a fresh nonce; the client's answer keeps what both sides have.
func TestLoginNegotiate(t *testing.T) {
	var l login
	info := &serverInfo{version: "11.4.2-MariaDB", caps: mysql.ClientProtocol41 | mysql.ClientDeprecateEOF, mcaps: 0x10, charset: 45}
	hs := l.greeting(info, 7, true)
	if hs.ConnectionID != 7 || hs.Capabilities&mysql.ClientSSL == 0 || len(l.nonce) != 20 || string(hs.Nonce) != string(l.nonce) {
		t.Fatalf("greeting %+v", hs)
	}
	if l.greeting(info, 7, false).Capabilities&mysql.ClientSSL != 0 {
		t.Fatal("TLS offered without TLS")
	}
	l.negotiate(hs, &mysql.HandshakeResponse{Capabilities: mysql.ClientProtocol41 | mysql.ClientCompress, MariaDBCapabilities: 0x30,
		Charset: 28, Attrs: []byte("a")})
	if l.caps != mysql.ClientProtocol41 || l.mcaps != 0x10 || l.charset != 28 || string(l.attrs) != "a" {
		t.Fatalf("negotiated caps %#x mcaps %#x charset %d attrs %q", l.caps, l.mcaps, l.charset, l.attrs)
	}
}
