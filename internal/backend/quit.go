package backend

import (
	"io"
	"net"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Saying goodbye. A node counts every connection that ends without COM_QUIT in Aborted_clients
// and, at log_warnings >= 2 (MariaDB's default), logs "Aborted connection N ... (Got an error
// reading communication packets)" for it; operators alert on both. So every connection sluice
// closes on purpose sends COM_QUIT first. The node answers nothing: it ends the thread and
// closes its end. Nothing is waited for, except where an answer may still be on its way: a
// socket closed with unread data in it is reset by the kernel, and a node that fails to write
// the rest of an answer counts the connection as aborted too (QuitPending reads it first). A
// connection that broke is just closed: there is nobody to say goodbye to.

// QuitWriteTimeout bounds the write of COM_QUIT: five bytes that go at once unless the node
// stopped reading (its socket buffer full), when the goodbye is not worth more.
const QuitWriteTimeout = 250 * time.Millisecond

// quitPlain is COM_QUIT as one packet (sequence id 0); quitCompressed the same packet in one
// uncompressed frame of the compressed protocol (frame sequence id 0, uncompressed length 0:
// stored as is), which a command starts with.
var (
	quitPlain      = [...]byte{1, 0, 0, 0, mysql.ComQuit}
	quitCompressed = [...]byte{5, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, mysql.ComQuit}
)

// WriteQuit writes COM_QUIT straight to nc, the socket (TLS or not) of a connection whose
// stream is compressed or not, bounded by QuitWriteTimeout. It goes around the connection's
// buffers, so a goroutine that does not own the connection may call it (the drain ends idle
// sessions' connections so); net.Conn writes are whole with respect to each other (the
// owner's writes, if any, go before or after it). The caller closes nc.
func WriteQuit(nc net.Conn, compressed bool) error {
	_ = nc.SetWriteDeadline(time.Now().Add(QuitWriteTimeout))
	b := quitPlain[:]
	if compressed {
		b = quitCompressed[:]
	}
	_, err := nc.Write(b)
	return err
}

// Quit ends a connection between two commands (nothing of an answer left to read): COM_QUIT,
// then Close. For a connection an answer may still be coming on, QuitPending; for one that
// broke, Close. Called by c's owner.
func (c *Conn) Quit() {
	_ = WriteQuit(c.NetConn(), c.Compressed())
	c.Close()
}

// QuitPending ends a connection on which an answer may still be on its way (a command whose
// answer was not read to its end: the client left in the middle of it): COM_QUIT, then what
// the node still sends is read and dropped until it closes its end (it reads the COM_QUIT
// once its answer is out) or bound passes, then Close. A node that takes longer (a long
// statement still running, a result larger than bound lets through) sees the connection
// closed under it: aborted, as it would be without the wait. Called by c's owner.
func (c *Conn) QuitPending(bound time.Duration) {
	nc := c.NetConn()
	if WriteQuit(nc, c.Compressed()) == nil {
		_ = nc.SetReadDeadline(time.Now().Add(bound))
		// Straight from the socket: what c buffered of the answer is dropped with c; what
		// the kernel holds, and what still comes, is read here. Bounded by the deadline.
		_, _ = io.Copy(io.Discard, nc)
	}
	c.Close()
}
