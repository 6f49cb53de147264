package mysql

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Socket IO of a Conn on a plain TCP connection.
//
// sluice relays request/response traffic, a few hundred bytes each way per statement, so the
// cost of a statement is mostly the system calls around it. On a plain TCP socket a Conn
// therefore does its own reads and writes through syscall.RawConn:
//
//   - The reads and writes are raw system calls on the non-blocking socket. They never block
//     (a full or empty socket answers EAGAIN, and the Conn then waits in Go's poller), so they
//     skip the runtime's blocking-syscall bookkeeping, which on every system call after an idle
//     spell wakes the runtime's monitor thread: about a tenth of sluice's CPU when profiled
//     under sysbench with threads: 1.
//   - FlushBeforeRead sends the write buffer from inside the wait for the next read. Go's
//     net.Conn tries each read before it waits for the poller, and right after a request the
//     answer is never there yet: that attempt returned EAGAIN once towards the node and once
//     towards the client per statement. Waiting first is only safe when no readiness notice
//     can have been consumed before the wait starts, which is the case when the request is sent
//     after the wait was armed: the answer cannot arrive before its request. A peer that may
//     send before it has read the answer (a client pipelining its commands: Connector/J sends
//     its first queries back to back) breaks that: what it sent before the read began has
//     already raised the poller's one readiness notice, which the read's setup clears
//     (prepareRead), and a wait would then sleep until the peer's next packet (a hang seen
//     with Connector/J). On such a connection (SetPeerPipelines) the read looks at the socket
//     right after the flush, before it waits.
//
// TLS and other net.Conn types go through their own Read and Write.

// sockReader is what a Conn's read buffer reads from.
type sockReader struct {
	c  *Conn
	nc net.Conn
	rc syscall.RawConn // nil when nc is not a plain TCP connection

	flushFirst bool // flush c's write buffer inside the next read's wait
	// pipelines: the peer may send before it read what is flushed (see above); a flush inside
	// the read is then followed by a read attempt before the wait.
	pipelines bool

	// State of one raw read, kept here so that the callback is one bound method value (no
	// allocation per read).
	buf     []byte
	n       int
	err     error
	pending bool // the flush asked for is still to be done
	readFn  func(fd uintptr) bool
	// peekFn and peekByte: AwaitRead's callback and where its peek lands (park.go).
	peekFn   func(fd uintptr) bool
	peekByte byte
}

func rawConn(nc net.Conn) syscall.RawConn {
	if tc, ok := nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			return rc
		}
	}
	return nil
}

func (r *sockReader) init(c *Conn, nc net.Conn) {
	r.c, r.nc = c, nc
	if r.rc = rawConn(nc); r.rc != nil {
		r.readFn = r.raw
		r.peekFn = r.peek
	}
}

func (r *sockReader) Read(p []byte) (int, error) {
	n, err := r.read(p)
	if err != nil && r.c.passedLoose(err) {
		// The deadline left armed for the next command's wait (deadline.go) binds no other
		// read: cleared, the read goes on.
		if n > 0 {
			return n, nil
		}
		n, err = r.read(p)
	}
	return n, err
}

func (r *sockReader) read(p []byte) (int, error) {
	if r.rc == nil {
		n, err := r.nc.Read(p)
		r.c.received += uint64(n)
		return n, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	r.pending = r.flushFirst && r.c.bw.Buffered() > 0
	r.flushFirst = false
	r.buf, r.n, r.err = p, 0, nil
	err := r.rc.Read(r.readFn)
	r.buf = nil
	if r.pending {
		// The wait never started (deadline already passed, connection closed): the buffered
		// bytes still go out, as after a plain Flush.
		r.pending = false
		if ferr := r.c.bw.Flush(); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil {
		return 0, err
	}
	r.c.received += uint64(r.n)
	return r.n, r.err
}

// raw is the RawConn read callback: with a flush pending, the first call sends the write
// buffer and asks to wait (or, when the peer pipelines, reads first); otherwise (and then) it
// reads.
func (r *sockReader) raw(fd uintptr) bool {
	if r.pending {
		r.pending = false
		if err := r.c.bw.Flush(); err != nil {
			r.err = err
			return true
		}
		if !r.pipelines {
			return false
		}
	}
	for {
		n, errno := sysRead(fd, r.buf)
		switch errno {
		case 0:
			if n == 0 {
				r.err = io.EOF
			}
			r.n = n
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			r.err = sockError("read", r.nc, errno)
		}
		return true
	}
}

// sockWriter is what a Conn's write buffer writes to: the socket, each write bounded by the
// write timeout, so that a write the buffer makes by itself in the middle of a large response
// is bounded the same way as a Flush, and an old deadline never cuts a healthy connection. On
// a raw socket the deadline is armed only when a write has to wait (the socket buffer is
// full), and cleared after it: most writes never wait, and then cost no timer.
type sockWriter struct {
	nc      net.Conn
	rc      syscall.RawConn
	timeout time.Duration

	buf     []byte
	n       int
	err     error
	armed   bool // this write armed the write deadline
	writeFn func(fd uintptr) bool
}

func (w *sockWriter) init(nc net.Conn) {
	w.nc = nc
	if w.rc = rawConn(nc); w.rc != nil {
		w.writeFn = w.raw
	}
}

func (w *sockWriter) Write(p []byte) (int, error) {
	if w.rc == nil {
		if w.timeout > 0 {
			if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
				return 0, err
			}
		}
		return w.nc.Write(p)
	}
	w.buf, w.n, w.err, w.armed = p, 0, nil, false
	err := w.rc.Write(w.writeFn)
	n := w.n
	w.buf = nil
	if w.armed {
		// Left in place, the deadline would fail the next write before it starts once it
		// has passed.
		w.armed = false
		_ = w.nc.SetWriteDeadline(time.Time{})
	}
	if err == nil {
		err = w.err
	}
	return n, err
}

// raw is the RawConn write callback: it writes until done or the socket is full; the first
// time it must wait it arms the deadline for the rest of this write.
func (w *sockWriter) raw(fd uintptr) bool {
	for w.n < len(w.buf) {
		n, errno := sysWrite(fd, w.buf[w.n:])
		switch errno {
		case 0:
			w.n += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			if w.timeout > 0 && !w.armed {
				w.armed = true
				if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
					w.err = err
					return true
				}
			}
			return false
		default:
			w.err = sockError("write", w.nc, errno)
			return true
		}
	}
	return true
}

func sysRead(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), errno
}

func sysWrite(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), errno
}

// sockError words a failed system call as net.Conn's Read and Write do.
func sockError(op string, nc net.Conn, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

// SetPeerPipelines declares that the peer may send before it has read what this side flushes
// (a client that pipelines its commands), so FlushBeforeRead must not wait before it has looked
// at the socket. Set it on client connections, before the first read.
func (c *Conn) SetPeerPipelines() { c.sr.pipelines = true }

// FlushBeforeRead arranges for what is buffered to be sent at the start of the next read from
// the socket, inside its wait (see above), and is otherwise the same as Flush: the caller must
// read from c next. Where that does not apply (TLS, compression, a non-TCP connection, input
// already buffered), it flushes at once.
func (c *Conn) FlushBeforeRead() error {
	if c.sr.rc == nil || c.cz != nil || c.br.Buffered() > 0 {
		return c.Flush()
	}
	if c.bw.Buffered() > 0 {
		c.sr.flushFirst = true
	}
	return nil
}
