package mysql

import (
	"bufio"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Parking. A connection that waits long for its peer (an idle client, the node connections of
// an idle session) needs no buffers while it waits: its read buffer is empty (nothing has
// arrived) and its write buffer was flushed. Park hands both to shared pools, and with them the
// packet buffer; AwaitRead waits for the peer without reading (the socket is peeked, so nothing
// is consumed), and Unpark takes buffers back before the next read or write. Thousands of idle
// sessions then hold a few hundred bytes each instead of two buffers of several KiB, and a
// busy connection never parks (the caller parks only after a long wait: nothing changes on the
// path of a command).
//
// Only a plain TCP connection without compression parks (a TLS or compressed stream keeps
// state in its own buffers, and a Conn without the raw socket cannot wait without reading).
// Between Park and Unpark only AwaitRead, Unpark, Parked, Close, NetConn, Received, Sent,
// Buffered and Flush may be called (the last three see empty buffers).

// bufPools holds the parked buffers of each size (a pool per size, sizes being the few that
// NewConn's callers use).
var bufPools sync.Map // int (size; negative for writers) -> *sync.Pool

// parks counts the Parks that gave buffers back, since the process started (Parks).
var parks atomic.Uint64

// Parks is how many times a Conn parked its buffers since the process started (a test's and
// a benchmark's view of when idle connections give their memory back).
func Parks() uint64 { return parks.Load() }

func bufPool(key int) *sync.Pool {
	if p, ok := bufPools.Load(key); ok {
		return p.(*sync.Pool)
	}
	p, _ := bufPools.LoadOrStore(key, &sync.Pool{})
	return p.(*sync.Pool)
}

// Park gives c's buffers to the shared pools when c may park: a plain TCP connection, not
// compressed, nothing buffered either way (nothing read ahead, nothing left to flush), no
// packet budget (a login in progress). It reports whether c is parked (true when it was
// already).
func (c *Conn) Park() bool {
	if c.parked {
		return true
	}
	if c.sr.rc == nil || c.cz != nil || c.budget != nil || c.br.Buffered() > 0 || c.bw.Buffered() > 0 || c.sr.flushFirst {
		return false
	}
	c.br.Reset(nil) // no reference to c from the pool
	c.bw.Reset(nil)
	bufPool(c.br.Size()).Put(c.br)
	bufPool(-c.bw.Size()).Put(c.bw)
	c.br, c.bw = nil, nil
	c.payload = nil
	c.parked = true
	parks.Add(1)
	return true
}

// Parked reports whether c is parked (Park).
func (c *Conn) Parked() bool { return c.parked }

// Unpark takes buffers for c again (of the sizes it had); nothing when c is not parked.
func (c *Conn) Unpark() {
	if !c.parked {
		return
	}
	c.parked = false
	if br, ok := bufPool(c.rsize).Get().(*bufio.Reader); ok {
		br.Reset(&c.sr)
		c.br = br
	} else {
		c.br = bufio.NewReaderSize(&c.sr, c.rsize)
	}
	if bw, ok := bufPool(-c.wsize).Get().(*bufio.Writer); ok {
		bw.Reset(&c.cw)
		c.bw = bw
	} else {
		c.bw = bufio.NewWriterSize(&c.cw, c.wsize)
	}
}

// AwaitRead waits, on a parked c, until the peer has sent something, closed the connection, or
// the read deadline passed (os.ErrDeadlineExceeded); it reads nothing. nil means a read will
// not wait (data or the end of the stream is there, or the socket failed: the read reports
// it).
func (c *Conn) AwaitRead() error {
	if !c.parked {
		return nil
	}
	return c.sr.rc.Read(c.sr.peekFn)
}

// peek is the RawConn callback of AwaitRead: whether the socket has something to read (or
// failed), looked at with MSG_PEEK so that it stays there.
func (r *sockReader) peek(fd uintptr) bool {
	for {
		_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&r.peekByte)), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch errno {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		return true // a byte, the end of the stream (0), or an error the read reports
	}
}
