package monitor

import (
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/topology"
)

func pos(t *testing.T, s string) gtid.Position {
	t.Helper()
	p, err := gtid.Parse(gtid.MariaDB, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHistoryLag: lag is how long ago the primary first moved past what the replica applied.
func TestHistoryLag(t *testing.T) {
	var h history
	t0 := time.Unix(1000, 0)
	keep := time.Minute
	h.add(t0, pos(t, "0-1-10"), keep)
	h.add(t0.Add(time.Second), pos(t, "0-1-10"), keep) // unchanged: no entry
	h.add(t0.Add(2*time.Second), pos(t, "0-1-12"), keep)
	h.add(t0.Add(3*time.Second), pos(t, "0-1-15"), keep)
	now := t0.Add(5 * time.Second)
	for _, tc := range []struct {
		applied string
		want    time.Duration
	}{
		{"0-1-15", 0},               // has everything
		{"0-1-16", 0},               // ahead (a write on the replica would do that)
		{"0-1-12", 2 * time.Second}, // missing what the primary had from t0+3s
		{"0-1-11", 3 * time.Second}, // missing what the primary had from t0+2s
		{"0-1-10", 3 * time.Second},
		{"0-1-5", 5 * time.Second}, // behind the whole history: at least its span
		{"", 5 * time.Second},      // has nothing
	} {
		if got := h.lag(now, pos(t, tc.applied)); got != tc.want {
			t.Errorf("applied %q: lag %s, want %s", tc.applied, got, tc.want)
		}
	}
	// Old entries go; the newest always stays.
	h.add(t0.Add(2*time.Minute), pos(t, "0-1-15"), keep)
	if len(h.entries) != 1 {
		t.Fatalf("%d entries kept after the window passed", len(h.entries))
	}
	if got := h.lag(t0.Add(2*time.Minute), pos(t, "0-1-14")); got != 2*time.Minute-3*time.Second {
		t.Fatalf("lag past the window: %s", got)
	}
}

// TestFailedHealth: a refused connection is down at once; other failures count to DownAfter;
// "too many connections" is full, not down; what the node said last stays visible.
func TestFailedHealth(t *testing.T) {
	m := &Monitor{opts: Options{DownAfter: 3}, log: slog.New(slog.DiscardHandler)}
	n := &topology.Node{Name: "replica1"}
	up := &topology.NodeState{Health: topology.Healthy, Version: "10.11", Applied: "0-1-5"}
	timeout := errors.New("i/o timeout")
	refusedErr := fmt.Errorf("dial: %w", syscall.ECONNREFUSED)

	st := m.failed(n, up, refusedErr, refused(refusedErr))
	if st.Health != topology.Down || st.Applied != "0-1-5" || st.LastErr == "" {
		t.Fatalf("refused: %+v", st)
	}
	st = up
	for i := 1; i <= 3; i++ {
		st = m.failed(n, st, timeout, false)
		want := topology.Healthy
		if i == 3 {
			want = topology.Down
		}
		if st.Health != want || st.Failures != i {
			t.Fatalf("failure %d: %v (%d failures), want %v", i, st.Health, st.Failures, want)
		}
	}
	full := m.failed(n, up, mysql.NewError(mysql.ErrConCount, "08004", "Too many connections"), false)
	if full.Health != topology.Full {
		t.Fatalf("1040: %v", full.Health)
	}
	if first := m.failed(n, nil, timeout, false); first.Health != topology.Unknown || first.Failures != 1 {
		t.Fatalf("first check failed: %+v", first)
	}
	// A refused login (1045) is an answer: never down however often, what was seen stays,
	// and the server's words are kept.
	denied := mysql.NewError(mysql.ErrAccessDenied, "28000", "Access denied for user 'mon'@'localhost' (using password: YES)")
	st = up
	for range 5 {
		st = m.failed(n, st, denied, false)
	}
	if st.Health != topology.Healthy || st.AuthFailed != denied.Message || st.Applied != "0-1-5" {
		t.Fatalf("1045 after a good check: %+v", st)
	}
	if first := m.failed(n, nil, denied, false); first.Health != topology.Unknown || first.AuthFailed == "" {
		t.Fatalf("1045 at the first check: %+v", first)
	}
	if back := m.failed(n, &topology.NodeState{Health: topology.Down, Failures: 4}, denied, false); back.Health == topology.Down {
		t.Fatalf("a down node that answers with 1045 stays down: %+v", back)
	}
}
