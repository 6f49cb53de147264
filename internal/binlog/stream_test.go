package binlog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
)

func TestDerivedServerID(t *testing.T) {
	base := derivedServerID("host-a", 4242, "127.0.0.1:3306", 0)
	if base < serverIDBase || base >= serverIDBase+serverIDSpan {
		t.Fatalf("id %#x outside the derived range", base)
	}
	if again := derivedServerID("host-a", 4242, "127.0.0.1:3306", 0); again != base {
		t.Errorf("not stable: %#x then %#x", base, again)
	}
	seen := map[uint32]string{base: "base"}
	for name, id := range map[string]uint32{
		"other pid":     derivedServerID("host-a", 4243, "127.0.0.1:3306", 0),
		"other host":    derivedServerID("host-b", 4242, "127.0.0.1:3306", 0),
		"other address": derivedServerID("host-a", 4242, "127.0.0.1:3307", 0),
		"next attempt":  derivedServerID("host-a", 4242, "127.0.0.1:3306", 1),
	} {
		if id == 0 || id < serverIDBase || id >= serverIDBase+serverIDSpan {
			t.Errorf("%s: id %#x outside the derived range", name, id)
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("%s: same id as %s", name, prev)
		}
		seen[id] = name
	}
	if got := serverID(7, "", "a", 0); got != 7 {
		t.Errorf("configured id not used: %d", got)
	}
	if got := serverID(7, "", "a", 1); got < serverIDBase {
		t.Errorf("after a duplicate, configured id kept: %d", got)
	}
	if got := serverID(0, "", "a", 0); got < serverIDBase {
		t.Errorf("id 0 not derived: %d", got)
	}
	// Two sluice instances in one process (sandbox --proxies) stream the same node under
	// different ids.
	if a, b := serverID(0, "x", "a", 0), serverID(0, "y", "a", 0); a == b {
		t.Errorf("two instances derive the same id %d", a)
	}
}

func TestLogLimiter(t *testing.T) {
	var l logLimiter
	now := time.Unix(1000, 0)
	if !l.started() {
		t.Error("first start not logged")
	}
	if l.started() {
		t.Error("start logged twice in a row")
	}
	if ok, _ := l.failed("refused", now); !ok {
		t.Error("first failure not logged")
	}
	for i := range 5 {
		if ok, _ := l.failed("refused", now.Add(time.Duration(i+1)*time.Second)); ok {
			t.Errorf("repeat %d logged", i)
		}
	}
	if ok, _ := l.failed("timeout", now.Add(10*time.Second)); !ok {
		t.Error("a different failure not logged")
	}
	ok, repeats := l.failed("refused", now.Add(warnEvery+time.Second))
	if !ok || repeats != 5 {
		t.Errorf("after warnEvery: logged %v, repeats %d; want true, 5", ok, repeats)
	}
	// Flapping: start, the same failure, start, ... logs the first start, the failure and the
	// start after it, then nothing until the failure is a minute old.
	var f logLimiter
	logged := 0
	for i := range 30 {
		at := now.Add(time.Duration(i) * time.Second)
		if f.started() {
			logged++
		}
		if ok, _ := f.failed("error 4052", at); ok {
			logged++
		}
	}
	if logged != 3 {
		t.Errorf("flapping stream logged %d lines in 30 s, want 3", logged)
	}
	// Bounded memory.
	var m logLimiter
	for i := range 100 {
		m.failed(fmt.Sprint("failure ", i), now)
	}
	if len(m.failures) > maxRemembered {
		t.Errorf("remembers %d failures", len(m.failures))
	}
}

func TestExplain(t *testing.T) {
	s := &stream{o: Options{Address: "127.0.0.1:3306", User: "mon"}}
	wrap := func(e *gomysql.MyError) error { return fmt.Errorf("trace: %w", e) }
	for _, tc := range []struct {
		err     error
		is      error
		kind    string
		message string
	}{
		{wrap(&gomysql.MyError{Code: 1045, State: "28000", Message: "Access denied for user 'mon'@'127.0.0.1' (using password: YES)"}),
			ErrNoReplicationGrant, "grant", "the monitor account needs REPLICATION SLAVE to stream the binlog"},
		{wrap(&gomysql.MyError{Code: 1227, State: "42000", Message: "Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s) for this operation"}),
			ErrNoReplicationGrant, "grant", "REPLICATION SLAVE"},
		{wrap(&gomysql.MyError{Code: 4052, State: "HY000", Message: "A slave with the same server_uuid/server_id is already connected"}),
			errServerIDTaken, "server_id", "registering with another"},
		{wrap(&gomysql.MyError{Code: 1236, State: "HY000", Message: "A replica with the same server_uuid/server_id as this replica has connected to the source"}),
			errServerIDTaken, "server_id", "registering with another"},
		{wrap(&gomysql.MyError{Code: 1236, State: "HY000", Message: "Error: connecting slave requested to start from GTID 0-1-999999, which is not in the master's binlog"}),
			nil, "error 1236", "restarting from the current one"},
		{errors.New("something else"), nil, "binlog: 127.0.0.1:3306: something else", "something else"},
	} {
		got := s.explain(tc.err, 0x51000001, "0-1-999999")
		if tc.is != nil && !errors.Is(got, tc.is) {
			t.Errorf("%v: not %v", got, tc.is)
		}
		var me *gomysql.MyError
		if errors.As(tc.err, &me) && !errors.As(got, &me) {
			t.Errorf("%v: the server's error is lost", got)
		}
		if !strings.Contains(got.Error(), tc.message) {
			t.Errorf("%q does not say %q", got, tc.message)
		}
		if k := failureKind(got); k != tc.kind {
			t.Errorf("%v: kind %q, want %q", got, k, tc.kind)
		}
	}
	for _, tc := range []struct {
		err  error
		kind string
	}{
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "refused"},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, "timeout"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "connection lost"},
	} {
		if k := failureKind(tc.err); k != tc.kind {
			t.Errorf("%v: kind %q, want %q", tc.err, k, tc.kind)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// states records onState calls.
type states struct {
	mu    sync.Mutex
	calls []stateCall
}

type stateCall struct {
	at        time.Time
	streaming bool
	err       error
}

func (s *states) on(streaming bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, stateCall{time.Now(), streaming, err})
}

func (s *states) get() []stateCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stateCall(nil), s.calls...)
}

// runFor runs Run in a goroutine and returns a stop function that cancels it and reports how
// long Run took to return.
func runFor(t *testing.T, o Options, onPosition func(string), onState func(bool, error)) (stop func() time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, o, onPosition, onState)
	}()
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			began := time.Now()
			cancel()
			select {
			case <-done:
				took = time.Since(began)
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return 10 s after its context ended")
			}
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return stop
}

// settled waits until the number of goroutines is back to at most n, and fails the test if it
// is not within 2 s.
func settled(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := runtime.NumGoroutine()
		if got <= n {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", got, n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunRefusedBacksOff(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	var st states
	stop := runFor(t, Options{Address: addr, User: "u"}, nil, st.on)
	time.Sleep(1 * time.Second)
	if took := stop(); took > 200*time.Millisecond {
		t.Errorf("Run took %s to return", took)
	}
	calls := st.get()
	// Attempts at about 0, 0.1, 0.3, 0.7 s: backoff doubling from 100 ms.
	if len(calls) < 3 || len(calls) > 5 {
		t.Fatalf("%d attempts in 1 s, want 3 to 5: %v", len(calls), calls)
	}
	for i, c := range calls {
		if c.streaming || !errors.Is(c.err, syscall.ECONNREFUSED) {
			t.Errorf("call %d: %v %v", i, c.streaming, c.err)
		}
		if i >= 2 {
			gap, prev := c.at.Sub(calls[i-1].at), calls[i-1].at.Sub(calls[i-2].at)
			if gap < prev*3/2 {
				t.Errorf("waits did not grow: %s then %s", prev, gap)
			}
		}
	}
	settled(t, before)
}

func TestRunStopsWhileConnecting(t *testing.T) {
	before := runtime.NumGoroutine()
	// A node that accepts and never says a word: the handshake hangs until the read timeout
	// (3 heartbeats: 30 s here) unless the context's end closes the socket.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var st states
	stop := runFor(t, Options{Address: ln.Addr().String(), User: "u", Heartbeat: 10 * time.Second}, nil, st.on)
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not connect")
	}
	time.Sleep(100 * time.Millisecond)
	if took := stop(); took > 200*time.Millisecond {
		t.Errorf("Run took %s to return", took)
	}
	if calls := st.get(); len(calls) != 0 {
		t.Errorf("state reported while connecting, or after the end: %v", calls)
	}
	ln.Close()
	for c := range accepted {
		c.Close()
	}
	settled(t, before)
}

// TestHostileNodeDoesNotPanic: go-mysql indexes what a node sends without checking its length
// (an OK packet one byte long); a node that sends such bytes to the stream's login or position
// query fails that attempt, it does not end sluice. Before, the panic ran up the stream's
// goroutine and ended the process.
func TestHostileNodeDoesNotPanic(t *testing.T) {
	addr, sent := fakeNode(t, mysql.AuthNativePassword, nil, func(c *mysql.Conn, nonce []byte) bool {
		caps := uint32(mysql.ClientProtocol41 | mysql.ClientTransactions)
		if err := c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: mysql.StatusAutocommit}, caps)); err != nil {
			return false
		}
		c.SetSeq(0)
		if _, err := c.ReadPacket(); err != nil {
			return false
		}
		_ = c.WritePacketFlush([]byte{0}) // an OK with nothing after its header
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	failed := make(chan error, 16)
	Run(ctx, Options{Address: addr, User: "monitor", Password: guardPassword, Flavor: gtid.MariaDB}, nil, func(streaming bool, err error) {
		if err != nil {
			select {
			case failed <- err:
			default:
			}
			cancel()
		}
	})
	collect(sent)
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), "panic") {
			t.Errorf("the attempt failed with %v, want the go-mysql panic as its error", err)
		}
	default:
		t.Error("the attempt did not fail")
	}
}
