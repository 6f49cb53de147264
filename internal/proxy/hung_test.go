package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/testutil"
)

// freeze stops node name's server process (SIGSTOP) as a disk stall or a partition without a
// reset would: its connections stay open and nothing answers. The returned thaw sends SIGCONT
// (once); it is also registered as a cleanup, so that the node runs again whatever the test
// does, and waits for the replicas to catch up.
func freeze(t *testing.T, name string) (thaw func()) {
	t.Helper()
	cl := testutil.Cluster(t)
	n, err := cl.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	pid := n.PID
	if pid <= 0 {
		t.Fatalf("%s is not running", name)
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT %s (pid %d): %v", name, pid, err)
			}
		})
	}
	t.Cleanup(func() {
		thaw()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
			t.Errorf("after %s ran again: %v", name, err)
		}
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s (pid %d): %v", name, pid, err)
	}
	// The signal is delivered asynchronously: the process shows stopped (T) shortly after.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			break // no procfs: trust the signal
		}
		if f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:])); len(f) > 0 && f[0] == "T" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is not stopped: %s", name, pid, st)
		}
	}
	return thaw
}

// read is one read of the hung-replica test: when it began, how long it took, where it ran.
type read struct {
	began    time.Time
	took     time.Duration
	serverID int
	err      error
}

// TestHungReplicaReadsMoveOn (issue 21, item 8): reads spread over two replicas through the
// read-write endpoint, from several client connections; one replica stops (SIGSTOP) for 8 s.
// The reads that were waiting on it when the monitor found it down run on the other replica at
// once: the longest read is at most the monitor's detection time (from the stop to the node
// shown down) plus 100 ms, no client gets an error, and no write reaches a replica (the
// replicas are writable in these tests; a writer runs on the primary throughout).
func TestHungReplicaReadsMoveOn(t *testing.T) {
	const (
		clients = 6
		hang    = 8 * time.Second
		hung    = "replica1"
	)
	s := startSluice(t, nil) // the monitor's defaults: every 1 s, down after 3 failed checks
	ids := serverIDs(t)
	waitNodes := time.Now().Add(20 * time.Second)
	for {
		up := 0
		for _, n := range s.app.Nodes() {
			if n.State == "up" {
				up++
			}
		}
		if up == len(ids) {
			break
		}
		if time.Now().After(waitNodes) {
			t.Fatalf("not every node is up: %+v", s.app.Nodes())
		}
		time.Sleep(50 * time.Millisecond)
	}
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	db.SetMaxIdleConns(clients + 1)
	mustExec(t, db, "CREATE TABLE IF NOT EXISTS test.hung_writes (id INT AUTO_INCREMENT PRIMARY KEY, at TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP(3))")

	// Each client's session opens its connections to both replicas first: what is measured
	// is the wait on connections open when the node hangs (a new connection to a hung node
	// waits up to timeouts.connect for the node's greeting).
	conns := make([]*sql.Conn, clients)
	for i := range conns {
		conns[i] = conn(t, db)
		for _, r := range []string{"replica1", "replica2"} {
			var id int
			if err := conns[i].QueryRowContext(context.Background(), "/*FORCE_NODE='"+r+"'*/ SELECT @@server_id").Scan(&id); err != nil {
				t.Fatal(err)
			}
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	reads := make([][]read, clients)
	for i, c := range conns {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := read{began: time.Now()}
				var sleep int
				r.err = c.QueryRowContext(context.Background(), "SELECT @@server_id, SLEEP(0.01)").Scan(&r.serverID, &sleep)
				r.took = time.Since(r.began)
				reads[i] = append(reads[i], r)
				if r.err != nil {
					return
				}
			}
		})
	}
	writeErr := make(chan error, 1)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				writeErr <- nil
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := db.Exec("INSERT INTO test.hung_writes () VALUES ()"); err != nil {
				writeErr <- err
				return
			}
		}
	})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	time.Sleep(time.Second) // reads on both replicas
	stoppedAt := time.Now()
	thaw := freeze(t, hung)
	// Detection: when the topology first shows the node down (what wakes the reads).
	var detected time.Time
	for time.Since(stoppedAt) < hang {
		if detected.IsZero() {
			for _, n := range s.app.Nodes() {
				if n.Name == hung && n.State == "down" {
					detected = time.Now()
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	thaw()
	thawedAt := time.Now()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if err := <-writeErr; err != nil {
		t.Errorf("a write through the rw endpoint failed: %v", err)
	}
	if detected.IsZero() {
		t.Fatalf("%s was never shown down during its %v hang", hung, hang)
	}
	detection := detected.Sub(stoppedAt)

	var all []read
	for _, rs := range reads {
		all = append(all, rs...)
	}
	var longest read
	hungID, woken := 0, 0
	for id, name := range ids {
		if name == hung {
			hungID = id
		}
	}
	for _, r := range all {
		if r.err != nil {
			t.Errorf("a read began %v after the stop failed: %v", r.began.Sub(stoppedAt), r.err)
		}
		if r.took > longest.took {
			longest = r
		}
		if r.began.Before(stoppedAt) && r.began.Add(r.took).After(detected) {
			woken++ // waiting when the node hung, answered after it was found down
		}
		if r.serverID == hungID && r.began.After(detected) && r.began.Add(r.took).Before(thawedAt) {
			t.Errorf("a read began %v after %s was found down and ran there", r.began.Sub(detected), hung)
		}
	}
	t.Logf("%d reads; %s stopped for %v, shown down after %v; longest read %v (began %v after the stop, answered by %s); %d reads waiting at the stop were woken",
		len(all), hung, hang, detection.Round(time.Millisecond), longest.took.Round(time.Millisecond),
		longest.began.Sub(stoppedAt).Round(time.Millisecond), ids[longest.serverID], woken)
	if woken == 0 {
		t.Fatalf("no read was waiting on %s when it stopped: the test proves nothing (reads per client: %v)", hung, lens(reads))
	}
	if limit := detection + 100*time.Millisecond; longest.took > limit {
		t.Errorf("the longest read took %v, more than the detection time %v + 100 ms", longest.took, detection)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := testutil.Cluster(t)
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if writes, err := cl.ReplicaWrites(ctx); err != nil || len(writes) > 0 {
		t.Fatalf("writes on the replicas: %v (%v)", writes, err)
	}
}

func lens(rs [][]read) []int {
	out := make([]int, 0, len(rs))
	for _, r := range rs {
		out = append(out, len(r))
	}
	return slices.Clip(out)
}
