package mysql

import "net"

// CopyN relays the next n bytes of the read stream to dst as they are: part of a packet whose
// header the caller wrote itself (when it rewrites a field at the start of a packet and streams
// the rest). It does not touch sequence ids.
func (c *Conn) CopyN(dst *Conn, n int) error {
	size := c.br.Size()
	for n > 0 {
		chunk := min(n, size)
		if b := c.br.Buffered(); b > 0 && b < chunk {
			chunk = b
		}
		b, err := c.br.Peek(chunk)
		if err != nil {
			return unexpectedEOF(err)
		}
		if _, err := dst.bw.Write(b); err != nil {
			return &WriteError{err}
		}
		if _, err := c.br.Discard(chunk); err != nil {
			return unexpectedEOF(err)
		}
		n -= chunk
	}
	return nil
}

// bufferedConn is the Conn's socket as a net.Conn whose reads start with what the Conn has
// already buffered: what a TLS handshake that takes over the socket must read first.
type bufferedConn struct {
	net.Conn
	c *Conn
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.c.br.Read(p) }

// Upgradable returns the connection for a protocol switch (TLS) that takes over the socket:
// reads see the bytes the Conn has buffered but not consumed. Write buffers must be flushed.
func (c *Conn) Upgradable() net.Conn { return bufferedConn{Conn: c.nc, c: c} }
