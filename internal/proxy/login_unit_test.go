package proxy

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// serveTest serves endpoint rw of p on a free loopback port until the test ends.
func serveTest(t *testing.T, p *Proxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Serve("rw", ln) }()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// loginTranscript logs in to addr as user with a wrong password, announcing plugin, and plays
// whatever exchange sluice leads to its end. It returns what sluice sent, each packet reduced
// to what does not change from one connection to the next (an auth switch's plugin and nonce
// length, caching_sha2_password's state, the ERR with the user's name taken out), so that two
// users' transcripts compare equal exactly when they cannot be told apart.
func loginTranscript(t *testing.T, addr, user, plugin string) []string {
	t.Helper()
	return loginTranscriptWith(t, addr, user, plugin, "not-the-password")
}

// loginTranscriptWith is loginTranscript with the given password.
func loginTranscriptWith(t *testing.T, addr, user, plugin, password string) []string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := mysql.NewConn(nc, 0, 0)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	hs, err := mysql.ParseHandshake(p)
	if err != nil {
		t.Fatal(err)
	}
	scramble := func(plugin string, nonce []byte) []byte {
		if plugin == mysql.AuthCachingSHA2 {
			return mysql.CachingSHA2Scramble(password, nonce)
		}
		return mysql.NativeScramble(password, nonce)
	}
	nonce := hs.Nonce
	resp := mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
		Capabilities: mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientPluginAuth |
			mysql.ClientLongPassword | mysql.ClientTransactions,
		MaxPacketSize: 1 << 24, Charset: 45, User: user, AuthResponse: scramble(plugin, nonce), AuthPlugin: plugin,
	})
	if err := c.WritePacketFlush(resp); err != nil {
		t.Fatal(err)
	}
	var out []string
	for range 10 {
		p, err := c.ReadPacket()
		if err != nil {
			return append(out, "read: "+err.Error())
		}
		switch {
		case mysql.IsERR(p):
			e := mysql.ParseERR(p)
			return append(out, strings.ReplaceAll(e.Error(), "'"+user+"'", "'USER'"))
		case mysql.IsOK(p):
			return append(out, "OK")
		case p[0] == 0xfe:
			plugin, nonce, err = mysql.ParseAuthSwitchRequest(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("switch %s nonce %d", plugin, len(nonce)))
			if len(nonce) > 20 {
				nonce = nonce[:20]
			}
			if err := c.WritePacketFlush(scramble(plugin, nonce)); err != nil {
				t.Fatal(err)
			}
		case p[0] == mysql.AuthMoreDataHeader && len(p) == 2:
			out = append(out, fmt.Sprintf("more %d", p[1]))
			if p[1] == mysql.CachingSHA2FullAuth {
				if err := c.WritePacketFlush([]byte{mysql.CachingSHA2RequestKey}); err != nil {
					t.Fatal(err)
				}
				key, err := c.ReadPacket()
				if err != nil || len(key) < 2 {
					t.Fatalf("public key: %v", err)
				}
				out = append(out, fmt.Sprintf("key %d", len(key)))
				enc, err := mysql.EncryptPassword(key[1:], password, nonce)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.WritePacketFlush(enc); err != nil {
					t.Fatal(err)
				}
			}
		default:
			out = append(out, fmt.Sprintf("packet 0x%02x len %d", p[0], len(p)))
		}
	}
	return out
}

// TestUnknownUserLooksKnown: before its password is proven, a user sluice does not know gets
// exactly what a known one gets: the same auth switch (or none), the same caching_sha2_password
// exchange, the same 1045; so does an account whose plugin sluice cannot verify (which used to
// name its plugin at once). Whichever plugin the client announces.
func TestUnknownUserLooksKnown(t *testing.T) {
	p := testProxy(t, Options{Users: []User{{Name: "listed", Password: "pw", HasPassword: true, Plugin: mysql.AuthNativePassword}}})
	p.SetAccounts([]Account{
		{User: "acct", Host: "%", Plugin: mysql.AuthNativePassword, Hash: mysql.NativeHash("pw")},
		{User: "ed", Host: "%", Plugin: "ed25519"},
	}, HostRules{})
	addr := serveTest(t, p)
	for _, plugin := range []string{mysql.AuthNativePassword, mysql.AuthCachingSHA2, "dialog"} {
		want := loginTranscript(t, addr, "acct", plugin)
		for _, user := range []string{"listed", "ed", "ghost", "ghost2", ""} {
			if got := loginTranscript(t, addr, user, plugin); !slices.Equal(got, want) {
				t.Errorf("client plugin %s: user %q sees %q, a known user %q", plugin, user, got, want)
			}
		}
	}
}

// TestUnknownUserDecoyPlugin: where known users are switched to either plugin (a users-list
// user follows the client's choice, accounts from the primary are mysql_native_password), an
// unknown user is switched to one of them, the same one at every try.
func TestUnknownUserDecoyPlugin(t *testing.T) {
	p := testProxy(t, Options{Users: []User{{Name: "listed", Password: "pw", HasPassword: true}}})
	p.SetAccounts([]Account{{User: "acct", Host: "%", Plugin: mysql.AuthNativePassword, Hash: mysql.NativeHash("pw")}}, HostRules{})
	addr := serveTest(t, p)
	known := [][]string{
		loginTranscript(t, addr, "listed", mysql.AuthCachingSHA2),
		loginTranscript(t, addr, "acct", mysql.AuthCachingSHA2),
	}
	if slices.Equal(known[0], known[1]) {
		t.Fatalf("the two known users look alike (%q): the test needs them to differ", known[0])
	}
	for i := range 8 {
		user := fmt.Sprintf("ghost%d", i)
		first := loginTranscript(t, addr, user, mysql.AuthCachingSHA2)
		if !slices.Equal(first, known[0]) && !slices.Equal(first, known[1]) {
			t.Errorf("%s sees %q, like no known user (%q)", user, first, known)
		}
		if again := loginTranscript(t, addr, user, mysql.AuthCachingSHA2); !slices.Equal(again, first) {
			t.Errorf("%s sees %q, then %q", user, first, again)
		}
	}
}

// TestUnknownUserNotSlower: an unknown user's refusal does not wait for the accounts to be
// read again from the primary (here a reload that takes 300 ms): the medians of a known and
// an unknown user's failed logins are within a few milliseconds.
func TestUnknownUserNotSlower(t *testing.T) {
	reloads := make(chan struct{}, 100)
	p := testProxy(t, Options{RefreshAccounts: func() {
		time.Sleep(300 * time.Millisecond)
		reloads <- struct{}{}
	}})
	p.SetAccounts([]Account{{User: "acct", Host: "%", Plugin: mysql.AuthNativePassword, Hash: mysql.NativeHash("pw")}}, HostRules{})
	addr := serveTest(t, p)
	median := func(user string) time.Duration {
		var ds []time.Duration
		for range 9 {
			start := time.Now()
			loginTranscript(t, addr, user, mysql.AuthNativePassword)
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	known, unknown := median("acct"), median("ghost")
	t.Logf("median failed login: known user %v, unknown user %v", known, unknown)
	if unknown > 3*known+50*time.Millisecond {
		t.Errorf("an unknown user's refusal takes %v, a known user's %v", unknown, known)
	}
	select {
	case <-reloads: // the unknown user did make sluice read the accounts again
	case <-time.After(5 * time.Second):
		t.Error("no reload of the accounts after an unknown user's login")
	}
}

// TestHostDeniedRightPasswordLooksWrong: a client on a host none of the user's accounts lets in
// sees the same exchange and the same 1045 with the right password as with a wrong one: no 1130
// after the right one, and no caching_sha2_password fast path (the fast OK would say the
// password is the one cached since a login from an allowed host). Before, the right password got
// 1130, and, once cached, a fast OK.
func TestHostDeniedRightPasswordLooksWrong(t *testing.T) {
	p := testProxy(t, Options{Users: []User{{Name: "sha", Password: "pw", HasPassword: true, Plugin: mysql.AuthCachingSHA2}}})
	p.SetAccounts([]Account{
		{User: "sha", Host: "10.%", Plugin: mysql.AuthNativePassword, Hash: mysql.NativeHash("pw")},
		{User: "far", Host: "10.%", Plugin: mysql.AuthNativePassword, Hash: mysql.NativeHash("pw")},
	}, HostRules{})
	p.sha2Remember("sha", "pw") // as after a login from 10.x
	addr := serveTest(t, p)
	for _, c := range []struct{ user, plugin string }{{"sha", mysql.AuthCachingSHA2}, {"far", mysql.AuthNativePassword}} {
		right := loginTranscriptWith(t, addr, c.user, c.plugin, "pw")
		wrong := loginTranscriptWith(t, addr, c.user, c.plugin, "wrong")
		if !slices.Equal(right, wrong) {
			t.Errorf("%s from a host its accounts do not cover: the right password sees %q, a wrong one %q", c.user, right, wrong)
		}
	}
}
