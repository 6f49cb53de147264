package proxy

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// TestErrorCounts: codes anywhere below 65536 are counted, listed in order, and only those
// seen; counting from many goroutines loses nothing (the page a first error allocates is
// shared, never replaced); after its page exists, counting a code does not allocate.
func TestErrorCounts(t *testing.T) {
	var e errorCounts
	codes := []uint16{0, 255, 256, 1045, 1146, 2013, 4151, 65535}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				for _, c := range codes {
					e.count(c)
				}
			}
		})
	}
	wg.Wait()
	var got []uint16
	e.each(func(code uint16, n uint64) {
		got = append(got, code)
		if n != 800 {
			t.Errorf("code %d counted %d times, want 800", code, n)
		}
	})
	if len(got) != len(codes) {
		t.Fatalf("codes listed %v, want %v", got, codes)
	}
	for i := range codes {
		if got[i] != codes[i] {
			t.Fatalf("codes listed %v, want %v", got, codes)
		}
	}
	if a := testing.AllocsPerRun(100, func() { e.count(1047) }); a != 0 {
		t.Errorf("counting a code of a page already there: %v allocs", a)
	}
}

// TestRefusalReasonsLabelled: every refusal has its label, and the labels are distinct.
func TestRefusalReasonsLabelled(t *testing.T) {
	seen := map[string]bool{}
	for r, l := range RefusalReasons {
		if l == "" || seen[l] {
			t.Errorf("refusal %d: label %q empty or repeated", r, l)
		}
		seen[l] = true
	}
}

// TestLoginRefusalsCounted: each way a login ends before it is logged in is counted under its
// reason, with the error the client got under its code: a login timeout (1159), a connection
// past max_pending_logins (1040), a client outside the allow list (1130), a malformed handshake
// response (1043), a client that hangs up mid-login (handshake, no error), and a wrong
// password (auth_failed, 1045, an authentication failure).
func TestLoginRefusalsCounted(t *testing.T) {
	p := testProxy(t, Options{LoginTimeout: 300 * time.Millisecond, MaxPendingLogins: 2,
		Users: []User{{Name: "app", Password: "secret", HasPassword: true}}})
	addr := serveTest(t, p)
	refused := func(r refusal) uint64 { return p.ClientStats("rw").Refused[r] }
	ended := func(what string, r refusal, n uint64) {
		t.Helper()
		waitFor(t, what+" counted", func() bool { return refused(r) == n })
	}

	// Silent until timeouts.login.
	_, c, err := greeted(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSeq(1)
	if pk, err := c.ReadPacket(); err != nil || !mysql.IsERR(pk) {
		t.Fatalf("silent client: % x %v", pk, err)
	}
	ended("a login timeout", refusedLoginTimeout, 1)

	// Two logins pending: a third is refused before its greeting.
	nc1, _, err := greeted(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	nc2, _, err := greeted(t, addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := greeted(t, addr); sqlErr(t, err).Code != mysql.ErrConCount {
		t.Fatalf("third pending login: %v", err)
	}
	ended("too many logins", refusedTooManyLogins, 1)
	// One hangs up; the other sends a handshake response that is not one.
	nc1.Close()
	ended("a client that hung up", refusedHandshake, 1)
	if _, err := nc2.Write([]byte{1, 0, 0, 1, 0x00}); err != nil {
		t.Fatal(err)
	}
	ended("a malformed handshake", refusedHandshake, 2)

	// A wrong password.
	if tr := loginTranscriptWith(t, addr, "app", mysql.AuthNativePassword, "wrong"); len(tr) == 0 {
		t.Fatal("no transcript")
	}
	ended("a wrong password", refusedAuth, 1)

	// Outside the allow list.
	set, _ := p.EndpointSettings("rw")
	set.Allow = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	if err := p.UpdateEndpoint("rw", set); err != nil {
		t.Fatal(err)
	}
	if _, _, err := greeted(t, addr); sqlErr(t, err).Code != 1130 {
		t.Fatalf("a client outside the allow list: %v", err)
	}
	ended("a client outside the allow list", refusedNotAllowed, 1)

	st := p.ClientStats("rw")
	for code, n := range map[uint16]uint64{mysql.ErrNetReadInterrupted: 1, mysql.ErrConCount: 1, mysql.ErrHandshake: 1, 1045: 1, 1130: 1} {
		if st.Errors[code] != n {
			t.Errorf("error %d counted %d times, want %d (all: %v)", code, st.Errors[code], n, st.Errors)
		}
	}
	if st.AuthFailures != 1 || st.Accepted != 0 {
		t.Errorf("auth failures %d, accepted %d; want 1, 0", st.AuthFailures, st.Accepted)
	}
	for _, r := range []refusal{refusedMaxConnections, refusedBlocked, refusedTLSRequired, refusedNoNode, refusedShuttingDown} {
		if st.Refused[r] != 0 {
			t.Errorf("refused for %s: %d, want 0", RefusalReasons[r], st.Refused[r])
		}
	}
}
