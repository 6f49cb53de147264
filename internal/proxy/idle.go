package proxy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// idleProbe is how long a client may be idle before the session starts watching its node.
const idleProbe = time.Second

// idleWatch waits for the client's next command and bounds how long that may take: a client
// idle past timeouts.idle is let go, and one that stalls in the middle of a command is held
// to the stall limit. While the client is idle (past idleProbe) it also watches the session's
// node connections, so that a node that closes one (wait_timeout, a restart) is noticed at
// once: the session either lets that connection go (it held only state sluice can replay) or
// closes the client's connection, as the server would have closed it — drivers check for
// that before reusing a pooled connection.
//
// Its methods are called by the session's goroutine only. The watchers it starts run only
// while the session is idle (wait returns after they have ended); they write their own slot
// of lost, dead, and the client's raw connection (Close, safe from any goroutine), and call
// the session's nodeWatch.lost, which may read the session's fields (they do not change
// while it is idle).
type idleWatch struct {
	raw   net.Conn      // the client's TCP connection, closed when the session's node is lost
	idle  time.Duration // timeouts.idle; 0: no limit
	stall time.Duration // see stallLimit

	active  bool
	park    func(bool) // the nodeWatch's park of the watch under way
	watched []net.Conn // by node index; nil: not watched
	lost    []bool     // by node index: its watcher let the connection go (written by that watcher)
	dropped []int      // what lostConns returns (reused)
	dead    atomic.Bool
	wg      sync.WaitGroup
}

// nodeWatch is what the idle watch needs of the session's node connections.
type nodeWatch struct {
	// conns appends to dst the session's node connections by node index (nil where it has
	// none). Called on the session's goroutine.
	conns func(dst []net.Conn) []net.Conn
	// lost is called on node i's watcher's goroutine when the node closed its connection (or
	// sent something unasked: a disconnect notice), with the read's error. It reports whether
	// the session lives on without it (the connection was let go, and the session drops it
	// once the client speaks) or not (the client's connection is closed).
	lost func(i int, err error) bool
	// park parks the buffers of the session's node connections (mysql.Conn.Park) when the
	// watch starts, and takes them back (park false) once it has stopped. Called on the
	// session's goroutine; nil: nothing parks.
	park func(park bool)
}

// newIdleWatch returns the watch of the client connection raw, under timeouts.idle and
// timeouts.write.
func newIdleWatch(raw net.Conn, idle, writeTimeout time.Duration) idleWatch {
	return idleWatch{raw: raw, idle: idle, stall: stallLimit(writeTimeout)}
}

// stallLimit bounds how long a client may stall in the middle of a command (a packet, LOAD DATA
// LOCAL's file): timeouts.write, which bounds a stalled transfer the other way, or 30 s.
func stallLimit(writeTimeout time.Duration) time.Duration {
	if writeTimeout > 0 {
		return writeTimeout
	}
	return 30 * time.Second
}

// stallLimit is the watch's stall limit (see the function of that name).
func (w *idleWatch) stallLimit() time.Duration { return w.stall }

// wait waits for the client's next command on c (the client's connection, TLS once
// upgraded), watching the nodes past idleProbe and the idle timeout, counted from start (when
// the session's last command ended, a moment ago: one clock reading less per command). On return (whatever the
// error) no watcher runs; lostConns says which node connections the session must drop.
//
// Every deadline of the client's reads is set through c (mysql.Conn.SetReadDeadline): once a
// command is in, the wait's deadline is left armed but loose (it binds no read of the
// command), and the next wait takes it up again while it lies ahead, so that a client that
// keeps sending costs no timer update per command. Such a deadline, armed by an earlier wait,
// comes before this wait's own: reached then, it is set to this wait's and the wait goes on.
func (w *idleWatch) wait(c *mysql.Conn, nodes *nodeWatch, start time.Time) error {
	w.dropped = w.dropped[:0]
	if b := c.Buffered(); b > 0 {
		// Pipelined: the next command, or part of it, is already here. What is missing must
		// come within the stall limit, as for a command that arrives in pieces.
		if b >= 4 {
			if n, _, err := c.PeekHeader(); err == nil && b >= 4+n {
				c.LoosenReadDeadline()
				return nil
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(w.stall))
		return nil
	}
	wait := idleProbe
	if w.idle > 0 && w.idle < wait {
		wait = w.idle
	}
	if at := c.ReadDeadline(); at.After(start) && !at.After(start.Add(wait)) {
		c.TightenReadDeadline() // an earlier wait's, still ahead: it binds this wait
	} else {
		_ = c.SetReadDeadline(start.Add(wait))
	}
	// Past idleProbe the client's buffers are parked (mysql.Conn.Park): an idle client holds
	// none, and the wait looks at the socket without reading until the client speaks. Every
	// return takes them back.
	defer c.Unpark()
	for {
		var n int
		err := c.AwaitRead()
		if err == nil {
			c.Unpark()
			n, _, err = c.PeekHeader()
		}
		if err == nil {
			if c.Buffered() >= 4+n {
				c.LoosenReadDeadline() // binds none of the command's reads (see above)
			} else {
				// The rest of the command is still on its way: a client that stalls in the
				// middle of it must not hold the session's node connection forever.
				_ = c.SetReadDeadline(time.Now().Add(w.stall))
			}
			return w.stop()
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			_ = w.stop()
			return err
		}
		idle := time.Since(start)
		if !w.active && idle < wait {
			// An earlier wait's deadline, reached before this wait's (see above).
			_ = c.SetReadDeadline(start.Add(wait))
			continue
		}
		if w.idle > 0 && idle >= w.idle {
			_ = w.stop()
			return fmt.Errorf("idle for %s (timeouts.idle)", idle.Round(time.Second))
		}
		if !w.active {
			w.start(nodes)
			c.Park()
		}
		if w.idle > 0 {
			_ = c.SetReadDeadline(start.Add(w.idle))
		} else {
			_ = c.SetReadDeadline(time.Time{})
		}
	}
}

// lostConns returns the node indexes whose connections the last wait let go: the session
// drops them (they are no longer kill targets). Valid until the next wait.
func (w *idleWatch) lostConns() []int { return w.dropped }

func (w *idleWatch) start(nodes *nodeWatch) {
	w.active = true
	w.dead.Store(false)
	w.park = nodes.park
	if w.park != nil {
		w.park(true) // before the watchers start: they read the sockets, not the buffers
	}
	w.watched = nodes.conns(w.watched[:0])
	w.lost = append(w.lost[:0], make([]bool, len(w.watched))...)
	for i, nc := range w.watched {
		if nc == nil {
			continue
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			var b [1]byte
			_, err := nc.Read(b[:])
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return // stop ended the watch
			}
			if nodes.lost(i, err) {
				w.lost[i] = true
				return
			}
			w.dead.Store(true)
			w.raw.Close()
		}()
	}
}

// stop ends the watch (a deadline in the past ends every watcher's read) and reports a node
// loss the session does not survive.
func (w *idleWatch) stop() error {
	if !w.active {
		return nil
	}
	w.active = false
	for _, nc := range w.watched {
		if nc != nil {
			_ = nc.SetReadDeadline(time.Unix(1, 0))
		}
	}
	w.wg.Wait()
	if w.park != nil {
		w.park(false) // the watchers have ended
	}
	for i, nc := range w.watched {
		if nc == nil {
			continue
		}
		if w.lost[i] {
			w.dropped = append(w.dropped, i)
			continue
		}
		_ = nc.SetReadDeadline(time.Time{})
	}
	clear(w.watched) // no reference to connections the session may close meanwhile
	if w.dead.Load() {
		return errors.New("node closed the connection while the client was idle")
	}
	return nil
}
