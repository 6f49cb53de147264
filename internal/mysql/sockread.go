package mysql

import (
	"io"
	"net"
	"os"
	"syscall"
)

// sockReader is what a Conn's read buffer reads from. On a plain TCP socket it can send the
// write buffer from inside the wait for the next read (FlushBeforeRead).
//
// Why: a request/response relay flushes a request and then reads its answer. Go's net.Conn
// tries every read before it waits for the poller, and right after a request the answer is
// never there yet: that attempt is a system call that returns EAGAIN, once towards the node
// and once towards the client per statement. Waiting first is only safe when no readiness
// notice can have been consumed before the wait starts, which is exactly the case when the
// request is sent after the wait was armed: the answer cannot arrive before its request.
type sockReader struct {
	c  *Conn
	nc net.Conn
	rc syscall.RawConn // nil when nc is not a plain TCP connection

	flushFirst bool // flush c's write buffer inside the next read's wait

	// State of one raw read, kept here so that the callback is one bound method value
	// (no allocation per read).
	buf     []byte
	n       int
	err     error
	flushed bool
	readFn  func(fd uintptr) bool
}

func (r *sockReader) init(c *Conn, nc net.Conn) {
	r.c, r.nc = c, nc
	if tc, ok := nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			r.rc = rc
			r.readFn = r.raw
		}
	}
}

func (r *sockReader) Read(p []byte) (int, error) {
	if !r.flushFirst {
		return r.nc.Read(p)
	}
	r.flushFirst = false
	if r.c.bw.Buffered() == 0 || len(p) == 0 {
		return r.nc.Read(p)
	}
	r.buf, r.n, r.err, r.flushed = p, 0, nil, false
	err := r.rc.Read(r.readFn)
	r.buf = nil
	if !r.flushed {
		// The wait never started (deadline already passed, connection closed): the buffered
		// bytes still go out, as after a plain Flush.
		r.flushed = true
		if ferr := r.c.bw.Flush(); ferr != nil && err == nil {
			err = ferr
		}
	}
	if err != nil {
		return 0, err
	}
	return r.n, r.err
}

// raw is the RawConn callback: the first call sends the write buffer and asks to wait; the
// next ones read.
func (r *sockReader) raw(fd uintptr) bool {
	if !r.flushed {
		r.flushed = true
		if err := r.c.bw.Flush(); err != nil {
			r.err = err
			return true
		}
		return false
	}
	for {
		n, err := syscall.Read(int(fd), r.buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			r.err = &net.OpError{Op: "read", Net: "tcp", Source: r.nc.LocalAddr(), Addr: r.nc.RemoteAddr(), Err: os.NewSyscallError("read", err)}
		case n == 0:
			r.err = io.EOF
		default:
			r.n = n
		}
		return true
	}
}

// FlushBeforeRead arranges for what is buffered to be sent at the start of the next read from
// the socket, inside its wait (see sockReader), and is otherwise the same as Flush: the
// caller must read from c next. Where that does not apply (TLS, compression, a non-TCP
// connection), it flushes at once.
func (c *Conn) FlushBeforeRead() error {
	if c.sr.rc == nil || c.cz != nil || c.br.Buffered() > 0 {
		return c.Flush()
	}
	if c.bw.Buffered() > 0 {
		c.sr.flushFirst = true
	}
	return nil
}
