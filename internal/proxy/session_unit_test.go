package proxy

import (
	"testing"

	"github.com/sluicedb/sluice/internal/route"
)

// TestLifecycle: the life states as the command loop, shutdown and KILL move them.
func TestLifecycle(t *testing.T) {
	l := newLifecycle()
	if !l.idle() || l.killed() {
		t.Fatal("a new session is idle and alive")
	}
	if !l.begin() || l.idle() || l.begin() {
		t.Fatal("begin: idle to busy, once")
	}
	if l.drain() {
		t.Fatal("drain of a busy session closed it now")
	}
	if l.end() {
		t.Fatal("end after a drain asked the session to stop: it must not go idle")
	}
	l = newLifecycle()
	if !l.drain() || !l.killed() || l.begin() {
		t.Fatal("drain of an idle session closes it, and no command begins")
	}
	l = newLifecycle()
	l.begin()
	select {
	case <-l.done():
		t.Fatal("done before kill")
	default:
	}
	l.kill()
	l.kill() // a second KILL does not panic on the closed channel
	select {
	case <-l.done():
	default:
		t.Fatal("done not closed by kill")
	}
	if !l.killed() || l.end() {
		t.Fatal("a killed session is closed and does not go idle")
	}
}

// TestSessionSettings: the endpoint's settings under the session's mode, without allocating
// while they do not change.
func TestSessionSettings(t *testing.T) {
	ep, err := route.NewEndpoint("rw", route.Settings{Mode: route.ReadWrite, Weights: []int{0, 100}, Policy: &route.LeastActive{}})
	if err != nil {
		t.Fatal(err)
	}
	ss := newSessionSettings(ep)
	if ss.current() != ep.Settings() || ss.shared() != ep.Settings() {
		t.Fatal("same mode: the endpoint's own settings")
	}
	if err := ep.Update(route.Settings{Mode: route.ReadOnly, Weights: []int{0, 100}, Policy: &route.LeastActive{}, MaxLag: 7}); err != nil {
		t.Fatal(err)
	}
	got := ss.current()
	if got.Mode != route.ReadWrite || got.MaxLag != 7 || got == ep.Settings() {
		t.Fatalf("after the endpoint turned read-only: mode %v max lag %v", got.Mode, got.MaxLag)
	}
	if n := testing.AllocsPerRun(100, func() { got = ss.current() }); n != 0 {
		t.Errorf("current allocates %v times while the settings stay", n)
	}
	if sh := ss.shared(); sh.Mode != route.ReadWrite || sh.MaxLag != 7 || sh == got {
		t.Errorf("shared: mode %v max lag %v, or the holder's own copy", sh.Mode, sh.MaxLag)
	}
	if err := ep.Update(route.Settings{Mode: route.ReadOnly, Weights: []int{0, 100}, Policy: &route.LeastActive{}, MaxLag: 9}); err != nil {
		t.Fatal(err)
	}
	if got := ss.current(); got.MaxLag != 9 || got.Mode != route.ReadWrite {
		t.Errorf("a later change: max lag %v mode %v", got.MaxLag, got.Mode)
	}
}
