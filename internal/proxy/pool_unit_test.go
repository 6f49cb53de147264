package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/pool"
)

// TestReleaseAllLends: at the session's end, the node set lends its connections only when the
// session settled between commands, ran no XA, holds no cursor, and a connection carries no
// COM_SET_OPTION; the others are closed. Lent ones leave the node's count and their session's
// bindings, and the kill targets are gone before lend sees any.
func TestReleaseAllLends(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prep   func(ns *nodeSet)
		lendOK bool
	}{
		{"settled", func(ns *nodeSet) { ns.settle() }, true},
		{"mid-command", func(ns *nodeSet) {}, false},
		{"xa", func(ns *nodeSet) { ns.settle(); ns.taint() }, false},
		{"cursor", func(ns *nodeSet) { ns.settle(); ns.noteCursor() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := threeNodes(t)
			ns, d := newTestNodeSet(t, topo)
			if _, err := ns.openHome(0); err != nil {
				t.Fatal(err)
			}
			if _, err := ns.use(1); err != nil {
				t.Fatal(err)
			}
			tc.prep(ns)
			var lent []*backend.Conn
			ns.releaseAll(func(c *nodeConn) bool {
				if ns.killTargets() != nil {
					t.Error("a connection was lent while the kill targets were published")
				}
				lent = append(lent, c.Conn)
				return true
			})
			snap := topo.Snapshot()
			if tc.lendOK != (len(lent) == 2) || (!tc.lendOK && len(lent) != 0) {
				t.Fatalf("lent %d connections, want lending %v", len(lent), tc.lendOK)
			}
			if conns(snap, 0) != 0 || conns(snap, 1) != 0 || ns.at(0) != nil || ns.at(1) != nil || ns.conn() != nil {
				t.Fatal("the set still holds or counts a connection after releaseAll")
			}
			if len(d.closed) != 2 {
				t.Fatalf("the session unbound %d connections, want 2", len(d.closed))
			}
			for i, nc := range d.conns {
				if closed := nc.closed; closed == tc.lendOK {
					t.Errorf("connection %d closed %v, lent %v", i, closed, tc.lendOK)
				}
			}
		})
	}
}

// TestReleaseAllWaitsForKill: a KILL under way (withTargets) holds the release back: no
// connection is lent before it is done.
func TestReleaseAllWaitsForKill(t *testing.T) {
	topo := threeNodes(t)
	ns, _ := newTestNodeSet(t, topo)
	if _, err := ns.openHome(0); err != nil {
		t.Fatal(err)
	}
	ns.settle()
	inKill, killDone := make(chan struct{}), make(chan struct{})
	go ns.withTargets(func(ts []killTarget) {
		if len(ts) != 1 {
			t.Errorf("%d targets, want 1", len(ts))
		}
		close(inKill)
		<-killDone
	})
	<-inKill
	released := make(chan struct{})
	go func() {
		ns.releaseAll(func(*nodeConn) bool { return true })
		close(released)
	}()
	select {
	case <-released:
		t.Fatal("the connection was released while a KILL of its thread was under way")
	case <-time.After(50 * time.Millisecond):
	}
	close(killDone)
	<-released
	ns.withTargets(func(ts []killTarget) {
		if ts != nil {
			t.Error("targets still published after releaseAll")
		}
	})
}

// TestDoneContextEndsPoolWait: a wait at max_per_node under a session's doneContext ends when
// the session's done channel closes (KILL, shutdown), with the context's error, and the
// context reports nothing before.
func TestDoneContextEndsPoolWait(t *testing.T) {
	done := make(chan struct{})
	ctx := doneContext{done: done}
	if ctx.Err() != nil {
		t.Fatalf("Err before done: %v", ctx.Err())
	}
	p := pool.New(pool.Options[*int]{})
	k := pool.Key{Node: "n1", User: "app"}
	lim := pool.Limits{MaxPerNode: 1, AcquireTimeout: time.Hour}
	dial := func() (*int, error) { return new(int), nil }
	if _, _, err := p.Get(ctx, k, pool.Variant{}, lim, nil, dial); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, _, err := p.Get(ctx, k, pool.Variant{}, lim, nil, dial)
		ended <- err
	}()
	for waiting := 0; waiting != 1; {
		time.Sleep(time.Millisecond)
		for _, s := range p.Stats() {
			waiting = s.Waiting
		}
	}
	close(done)
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) || !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatalf("wait ended with %v (ctx %v), want context.Canceled", err, ctx.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing done did not end the wait")
	}
}
