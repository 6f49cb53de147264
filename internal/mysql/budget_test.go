package mysql

import (
	"errors"
	"io"
	"testing"
)

// TestAnnouncedLengthNotAllocated: a header that announces 65 KiB followed by 10 bytes grows
// the buffer by what arrived (a few KiB at most), not by what the header claims.
func TestAnnouncedLengthNotAllocated(t *testing.T) {
	in := append([]byte{0x00, 0x04, 0x01, 0}, make([]byte, 10)...) // 65 KiB + 0 announced
	c := NewConn(&memConn{rd: in}, 0, 0)
	c.MaxPacket = 1 << 20
	if _, err := c.ReadPacket(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want unexpected EOF", err)
	}
	if n := cap(c.payload); n > payloadChunk {
		t.Errorf("a 65 KiB announcement with 10 bytes behind it grew the buffer to %d bytes", n)
	}
}

// TestBudget: Conns charged to one budget cannot hold more than it together; what a Conn held
// goes back when it leaves the budget, and a packet that would overspend fails with ErrBudget.
func TestBudget(t *testing.T) {
	b := NewBudget(10 << 10)
	packet := rawPacket(0, make([]byte, 6<<10))
	first := NewConn(&memConn{rd: packet}, 0, 0)
	first.SetBudget(b)
	if _, err := first.ReadPacket(); err != nil {
		t.Fatalf("first 6 KiB packet: %v", err)
	}
	if got := b.Used(); got != 6<<10 {
		t.Errorf("used %d after 6 KiB, want %d", got, 6<<10)
	}
	second := NewConn(&memConn{rd: packet}, 0, 0)
	second.SetBudget(b)
	if _, err := second.ReadPacket(); !errors.Is(err, ErrBudget) {
		t.Fatalf("second 6 KiB packet over a 10 KiB budget: %v, want ErrBudget", err)
	}
	if got := b.Used(); got != 6<<10 {
		t.Errorf("used %d after the refused packet, want %d", got, 6<<10)
	}
	if old := first.SetBudget(nil); old != b {
		t.Errorf("SetBudget(nil) returned %p, want the budget", old)
	}
	if got := b.Used(); got != 0 {
		t.Errorf("used %d after the first Conn left, want 0", got)
	}
	third := NewConn(&memConn{rd: packet}, 0, 0)
	third.SetBudget(b)
	if _, err := third.ReadPacket(); err != nil {
		t.Fatalf("a 6 KiB packet once the budget was given back: %v", err)
	}
	third.ReleaseLarge(1 << 10)
	if got := b.Used(); got != 0 {
		t.Errorf("used %d after ReleaseLarge, want 0", got)
	}
}
