package store

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/sandbox"
)

// startStore starts a real etcd (Debian's etcd-server) and opens a Store on it.
func startStore(t *testing.T) (*Store, *sandbox.Etcd) {
	t.Helper()
	if _, err := sandbox.EtcdBinary(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	e, err := sandbox.StartEtcd(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	s, err := Open(Options{Endpoints: []string{e.ClientAddr}, Prefix: "/sluice/t/", DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, e
}

// TestConfigCompareAndSwap: the first Put creates (on revision 0), a Put on the revision read
// replaces, one on an older revision is refused with ErrConflict and changes nothing; a watch
// delivers each stored version in order.
func TestConfigCompareAndSwap(t *testing.T) {
	s, _ := startStore(t)
	ctx := context.Background()
	if _, found, err := s.Load(ctx); err != nil || found {
		t.Fatalf("empty store: found %v, %v", found, err)
	}
	got := make(chan Doc, 10)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go s.Watch(wctx, 0, func(d Doc, err error) {
		if err == nil {
			got <- d
		}
	})
	r1, err := s.Put(ctx, []byte("a: 1\n"), 0, "p1", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, []byte("a: 2\n"), 0, "p2", "v1"); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second create: %v, want ErrConflict", err)
	}
	r2, err := s.Put(ctx, []byte("a: 3\n"), r1, "p2", "v1")
	if err != nil || r2 <= r1 {
		t.Fatalf("put on the revision read: %d %v", r2, err)
	}
	if _, err := s.Put(ctx, []byte("a: 4\n"), r1, "p1", "v1"); !errors.Is(err, ErrConflict) {
		t.Fatalf("put on an old revision: %v, want ErrConflict", err)
	}
	d, found, err := s.Load(ctx)
	if err != nil || !found || string(d.Text) != "a: 3\n" || d.Rev != r2 || d.Writer != "p2" || d.Format != Format {
		t.Fatalf("load: %+v %v %v", d, found, err)
	}
	for _, want := range []string{"a: 1\n", "a: 3\n"} {
		select {
		case d := <-got:
			if string(d.Text) != want {
				t.Fatalf("watch delivered %q, want %q", d.Text, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("watch did not deliver %q", want)
		}
	}
	if st := s.State(); !st.Connected || st.Rev != r2 {
		t.Errorf("state %+v", st)
	}
}

// TestUnavailable: with etcd stopped, requests fail within the dial timeout with
// ErrUnavailable and the state says not connected; once it is back they work again.
func TestUnavailable(t *testing.T) {
	s, e := startStore(t)
	ctx := context.Background()
	rev, err := s.Put(ctx, []byte("a: 1\n"), 0, "p1", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Put(ctx, []byte("a: 2\n"), rev, "p1", "v1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("put with etcd down: %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the failed put took %v (dial timeout 1 s)", d)
	}
	if s.State().Connected {
		t.Error("state connected with etcd down")
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := s.Probe(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not reconnected")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := s.Put(ctx, []byte("a: 2\n"), rev, "p1", "v1"); err != nil {
		t.Fatalf("put after etcd came back: %v", err)
	}
}

// TestMembersAndDrains: a registered member is listed until its context ends (its lease is
// revoked at once); a second registration under the same name waits for the first to end;
// drains are put, watched and deleted; the peer secret is made once.
func TestMembersAndDrains(t *testing.T) {
	s, _ := startStore(t)
	ctx := context.Background()
	names := func() []string {
		ms, err := s.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Name+"/"+m.Instance)
		}
		return out
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not within 10 s: %s (members %v)", what, names())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	c1, stop1 := context.WithCancel(ctx)
	done1 := make(chan struct{})
	go func() { s.Register(c1, Member{Name: "p1", Instance: "a"}, nil); close(done1) }()
	waitFor("p1 listed", func() bool { return len(names()) == 1 && names()[0] == "p1/a" })
	c2, stop2 := context.WithCancel(ctx)
	defer stop2()
	go s.Register(c2, Member{Name: "p1", Instance: "b"}, nil)
	time.Sleep(1500 * time.Millisecond)
	if n := names(); len(n) != 1 || n[0] != "p1/a" {
		t.Fatalf("a second p1 took the name of a live one: %v", n)
	}
	stop1()
	<-done1
	waitFor("the second p1 registered once the first ended", func() bool { n := names(); return len(n) == 1 && n[0] == "p1/b" })

	seen := make(chan map[string]Drain, 10)
	wctx, stopW := context.WithCancel(ctx)
	defer stopW()
	go s.WatchDrains(wctx, func(m map[string]Drain) { seen <- m })
	next := func() map[string]Drain {
		select {
		case m := <-seen:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no drains delivered")
		}
		return nil
	}
	if m := next(); len(m) != 0 {
		t.Fatalf("drains at start: %v", m)
	}
	if err := s.PutDrain(ctx, Drain{Node: "replica1", Timeout: time.Minute, By: "p1"}); err != nil {
		t.Fatal(err)
	}
	if m := next(); m["replica1"].Timeout != time.Minute || m["replica1"].By != "p1" {
		t.Fatalf("after a drain: %v", m)
	}
	if err := s.DeleteDrain(ctx, "replica1"); err != nil {
		t.Fatal(err)
	}
	if m := next(); len(m) != 0 {
		t.Fatalf("after the undrain: %v", m)
	}
	a, err := s.PeerSecret(ctx)
	if err != nil || len(a) != 64 {
		t.Fatalf("peer secret %q %v", a, err)
	}
	if b, err := s.PeerSecret(ctx); err != nil || b != a {
		t.Fatalf("a second node got another secret: %q %v", b, err)
	}
}

// A configuration larger than etcd takes is the change's fault, not the link's: ErrTooLarge,
// not ErrUnavailable (a 503 that says etcd is away), and the link stays up.
func TestPutTooLarge(t *testing.T) {
	s, _ := startStore(t)
	rev, err := s.Put(context.Background(), []byte("backends: []\n"), 0, "a", "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1600 << 10, 3 << 20} { // past etcd's 1.5 MiB; past its client's 2 MiB
		big := []byte("# " + strings.Repeat("x", size) + "\n")
		_, err := s.Put(context.Background(), big, rev, "a", "test")
		if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("%d bytes: err = %v, want ErrTooLarge", size, err)
		}
		if st := s.State(); !st.Connected {
			t.Fatalf("%d bytes: the link is marked down: %+v", size, st)
		}
	}
}
