package mysql

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestLooseReadDeadline: a loose read deadline binds no read (one that reaches it clears it and
// waits on), over a raw TCP socket and over another net.Conn; a set or tightened one does.
func TestLooseReadDeadline(t *testing.T) {
	for name, pair := range map[string]func(testing.TB) (net.Conn, net.Conn){"tcp": tcpPair, "pipe": pipePair} {
		t.Run(name, func(t *testing.T) {
			a, b := pair(t)
			c := NewConn(a, 0, 0)
			send := func(after time.Duration) {
				go func() {
					time.Sleep(after)
					_, _ = b.Write([]byte{1, 0, 0, 0, 'x'})
				}()
			}

			// Loose, and past before the read starts: cleared, the read waits for the packet.
			at := time.Now().Add(20 * time.Millisecond)
			if err := c.SetReadDeadline(at); err != nil {
				t.Fatal(err)
			}
			if !c.ReadDeadline().Equal(at) {
				t.Fatal("ReadDeadline does not say the deadline set")
			}
			c.LoosenReadDeadline()
			time.Sleep(40 * time.Millisecond)
			send(30 * time.Millisecond)
			if p, err := c.ReadPacket(); err != nil || string(p) != "x" {
				t.Fatalf("a read past a loose deadline: %q, %v", p, err)
			}
			if !c.ReadDeadline().IsZero() {
				t.Fatal("the loose deadline a read ran into is still recorded")
			}

			// Loose, reached while the read waits: the same.
			c.SetSeq(0)
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			c.LoosenReadDeadline()
			send(60 * time.Millisecond)
			if p, err := c.ReadPacket(); err != nil || string(p) != "x" {
				t.Fatalf("a read waiting past a loose deadline: %q, %v", p, err)
			}

			// Set: it binds.
			c.SetSeq(0)
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := c.ReadPacket(); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("a read past a set deadline: %v, want a timeout", err)
			}

			// Loosened, then tightened again: it binds.
			c2 := NewConn(b, 0, 0)
			_ = c2.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			c2.LoosenReadDeadline()
			c2.TightenReadDeadline()
			if _, err := c2.ReadPacket(); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("a read past a tightened deadline: %v, want a timeout", err)
			}
		})
	}
}

// BenchmarkReadDeadline is what bounding the wait for a client's next command costs per
// command on a TCP socket: set and cleared each time (what sessions did), or left armed and
// taken up again (LoosenReadDeadline, TightenReadDeadline).
func BenchmarkReadDeadline(b *testing.B) {
	a, _ := tcpPair(b)
	c := NewConn(a, 0, 0)
	b.Run("set-clear", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_ = c.SetReadDeadline(time.Time{})
		}
	})
	b.Run("left-armed", func(b *testing.B) {
		b.ReportAllocs()
		_ = c.SetReadDeadline(time.Now().Add(time.Hour))
		for b.Loop() {
			start := time.Now()
			if at := c.ReadDeadline(); at.After(start) && !at.After(start.Add(2*time.Hour)) {
				c.TightenReadDeadline()
			} else {
				_ = c.SetReadDeadline(start.Add(time.Second))
			}
			c.LoosenReadDeadline()
		}
	})
}
