package relay

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"
)

// TestFlightStates: an armed flight is taken by exactly one of Interrupt and the relay's claim;
// Disarm reports an interruption once and leaves the flight idle for the next command.
func TestFlightStates(t *testing.T) {
	var f Flight
	if f.Interrupt() {
		t.Fatal("an idle flight (no command armed) was interrupted")
	}
	f.Arm()
	if !f.Interrupt() {
		t.Fatal("an armed flight could not be interrupted")
	}
	if f.Interrupt() {
		t.Fatal("a flight was interrupted twice")
	}
	if f.claim() {
		t.Fatal("an interrupted flight was claimed for the client")
	}
	if !f.Disarm() {
		t.Fatal("Disarm did not report the interruption")
	}
	if f.Disarm() {
		t.Fatal("Disarm reported an interruption of the next command")
	}
	f.Arm()
	if !f.claim() {
		t.Fatal("an armed flight was not claimed")
	}
	if !f.claim() {
		t.Fatal("a claimed flight was not claimed again (one answer may claim twice)")
	}
	if f.Interrupt() {
		t.Fatal("a claimed flight (its answer goes to the client) was interrupted")
	}
	if f.Disarm() {
		t.Fatal("a claimed flight was reported interrupted")
	}
	var none *Flight
	if !none.claim() {
		t.Fatal("a command without a flight was not claimed")
	}
}

// TestFlightInterruptsAWait: a node that never answers (hung): the wait for its answer ends as
// soon as the flight is interrupted and the connection closed, as a node error, nothing written
// to the client.
func TestFlightInterruptsAWait(t *testing.T) {
	p := newPipes(t, caps)
	var f Flight
	f.Arm()
	go func() {
		time.Sleep(50 * time.Millisecond)
		if f.Interrupt() {
			p.src.NetConn().Close()
		}
	}()
	start := time.Now()
	res, got, _, err := p.runWith(Statement, &Options{ClientCaps: caps, Flight: &f}, func(net.Conn) {}, nil)
	var re *Error
	if !errors.As(err, &re) || re.Client {
		t.Fatalf("err %v, want a node error", err)
	}
	if res.Wrote || len(got) != 0 {
		t.Fatalf("the client got %q (Wrote %v) from an interrupted answer", got, res.Wrote)
	}
	if !f.Disarm() {
		t.Fatal("the flight does not say it was interrupted")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the interrupted wait took %v", d)
	}
}

// TestFlightInterruptedBeforeClaim: the answer arrived, but the flight was interrupted before the
// relay claimed it: ErrInterrupted, and nothing of the answer reaches the client.
func TestFlightInterruptedBeforeClaim(t *testing.T) {
	p := newPipes(t, caps)
	var f Flight
	f.Arm()
	if !f.Interrupt() {
		t.Fatal("not interrupted")
	}
	res, got, _, err := p.run(Statement, &Options{ClientCaps: caps, Flight: &f}, resultSet(1, true, 0, textRow))
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v, want ErrInterrupted", err)
	}
	var re *Error
	if !errors.As(err, &re) || re.Client {
		t.Fatalf("err %v, want a node error", err)
	}
	if res.Wrote || len(got) != 0 {
		t.Fatalf("the client got %q (Wrote %v) from an interrupted answer", got, res.Wrote)
	}
}

// TestFlightClaimedAnswerGoesOn: once the answer's first packet arrived, an interruption no
// longer takes it: the node's answer, slow in its middle, reaches the client whole.
func TestFlightClaimedAnswerGoesOn(t *testing.T) {
	p := newPipes(t, caps)
	var f Flight
	f.Arm()
	want := resultSet(1, true, 0, textRow)
	interrupted := make(chan bool, 1)
	res, got, _, err := p.runWith(Statement, &Options{ClientCaps: caps, Flight: &f}, func(node net.Conn) {
		_, _ = node.Write(want[:5]) // the column count: read by the claim's wait
		// The column definition: the relay reads it only after it claimed the answer.
		_, _ = node.Write(want[5 : 5+4+len(column)])
		interrupted <- f.Interrupt()
		_, _ = node.Write(want[5+4+len(column):])
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if <-interrupted {
		t.Fatal("an answer that had begun to arrive was interrupted")
	}
	if !res.Wrote || !bytes.Equal(got, want) {
		t.Fatalf("client got %q, want %q", got, want)
	}
	if f.Disarm() {
		t.Fatal("a claimed answer was reported interrupted")
	}
}

// BenchmarkFlight: what an interruptible read adds to a statement: arm, claim, disarm.
func BenchmarkFlight(b *testing.B) {
	var f Flight
	b.ReportAllocs()
	for b.Loop() {
		f.Arm()
		if !f.claim() || f.Disarm() {
			b.Fatal("flight interrupted")
		}
	}
}
