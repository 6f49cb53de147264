package binlog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/pause"
)

// Options configure the stream from one node.
type Options struct {
	Address string // host:port
	// User and Password log in as any client does; streaming also needs REPLICATION SLAVE.
	User, Password string
	Flavor         gtid.Flavor
	// ServerID is the id the stream registers with as the node's replica: it must differ from
	// every other replica of the node, real or not. 0 (the usual): one derived from this
	// process and the address, in 0x5100_0000-0x51ff_ffff, far above the small ids real
	// servers use (see derivedServerID). When the node reports the id taken (ERROR 4052), the
	// stream registers again with another derived id.
	ServerID uint32
	// Instance names this sluice among several in one process (empty: the only one); it makes
	// their derived server ids differ.
	Instance string
	// Heartbeat is how often an idle node sends a heartbeat (0: 1 s); a stream that hears
	// nothing for 3 heartbeats is broken, and reconnects.
	Heartbeat time.Duration
	TLS       *tls.Config // nil: plain TCP
	// PublicKey is the nodes' RSA public key (PEM; nil: none): caching_sha2_password's full
	// authentication may send the password encrypted to it where TLS is not verified. The
	// login goes through a guard (authguard.go): the password goes nowhere else.
	PublicKey []byte
	Logger    *slog.Logger
}

const (
	defaultHeartbeat = time.Second
	// minBackoff and maxBackoff bound the wait before reconnecting after a failure; it doubles
	// with each failure, and starts again from minBackoff after a stream that worked for at
	// least maxBackoff.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// grantRetry is the wait after the node refused to stream to the account: a grant is not
	// fixed in seconds, and each attempt is a login or two on the node.
	grantRetry = 30 * time.Second
	// dialTimeout bounds one TCP connect.
	dialTimeout = 5 * time.Second
	// eventBuffer is how many events go-mysql's reader may hold ahead of this package (its
	// default, 10240, can hold that many large row events).
	eventBuffer = 128
)

// ErrNoReplicationGrant is the failure of a stream whose account lacks REPLICATION SLAVE. The
// node tells it as ERROR 1045 "Access denied" on COM_REGISTER_SLAVE, after a login that worked
// (MariaDB), or as ERROR 1227 on the binlog dump. Find it with errors.Is.
var ErrNoReplicationGrant = errors.New("the monitor account needs REPLICATION SLAVE to stream the binlog")

// Server error codes the stream acts on.
const (
	codeAccessDenied         = 1045 // COM_REGISTER_SLAVE without REPLICATION SLAVE (MariaDB 10.11)
	codeSpecificAccessDenied = 1227 // COM_BINLOG_DUMP without REPLICATION SLAVE
	codeReadingBinlog        = 1236 // the start position is not in the node's binlog (MySQL: also a duplicate server id)
	codeDuplicateServerID    = 4052 // MariaDB: another replica registered with this server_id
)

// errServerIDTaken marks the failure of a stream whose server id another replica took.
var errServerIDTaken = errors.New("another replica registered with the same server_id")

// Run follows the node's binlog as a replica would, until ctx ends, and reports the node's
// whole GTID position after every GTID event:
//
//   - MariaDB: the last GTID of each domain, the event's domain advanced, printed like
//     @@gtid_binlog_pos ("0-1-5,5-1-2", domains in increasing order);
//   - MySQL: the executed set with the event's GTID added, printed by go-mysql like
//     @@gtid_executed but joined by "," without the server's newlines.
//
// It starts from the node's current position, read from a plain connection as the same user
// (@@gtid_binlog_pos, @@gtid_executed), and reports that position once the stream works.
//
// onState(true, nil) is called when a stream starts working (after its position was reported),
// onState(false, err) after each failed attempt or broken stream. After a failure Run
// reconnects, again from the node's current position, after a backoff of 100 ms doubling to
// 5 s; after ErrNoReplicationGrant every 30 s. When ctx ends, Run closes the stream and
// returns, with no further call.
//
// The callbacks are called from Run's goroutine, one at a time, and should return quickly:
// while they run, the stream is not read (go-mysql buffers a few events meanwhile). Either
// may be nil.
func Run(ctx context.Context, o Options, onPosition func(pos string), onState func(streaming bool, err error)) {
	if o.Heartbeat <= 0 {
		o.Heartbeat = defaultHeartbeat
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if onPosition == nil {
		onPosition = func(string) {}
	}
	if onState == nil {
		onState = func(bool, error) {}
	}
	s := &stream{
		o:          o,
		log:        o.Logger.With("address", o.Address),
		libLog:     slog.New(debugHandler{o.Logger.Handler()}).With("address", o.Address, "component", "go-mysql"),
		onPosition: onPosition,
		onState:    onState,
	}
	s.run(ctx)
}

// stream is one Run's state; the Run goroutine's own.
type stream struct {
	o          Options
	log        *slog.Logger
	libLog     *slog.Logger // for go-mysql
	onPosition func(string)
	onState    func(bool, error)
	attempt    uint32 // how many times the node said our server id was taken
	limit      logLimiter
}

func (s *stream) run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		streamed, err := s.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if streamed >= maxBackoff {
			backoff = minBackoff
		}
		wait := backoff
		backoff = min(2*backoff, maxBackoff)
		switch {
		case errors.Is(err, ErrNoReplicationGrant):
			wait = grantRetry
		case errors.Is(err, errServerIDTaken):
			s.attempt++
			wait = minBackoff
		}
		s.failed(err, wait)
		if !pause.For(ctx, wait) {
			return
		}
	}
}

// session streams once: reads the node's position, registers, and reports events until the
// stream fails or ctx ends. streamed is how long it streamed (0: it never started).
//
// go-mysql runs its login, queries and registration in this goroutine and indexes what the node
// sends without checking lengths: a panic there (a node's malformed packet) fails the attempt,
// after the deferred cleanup, instead of ending sluice.
func (s *stream) session(ctx context.Context) (streamed time.Duration, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("binlog: %s: go-mysql panicked on what the node sent: %v", s.o.Address, r)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	nc := &conns{ctx: ctx, guard: guard{tls: s.o.TLS, pubKey: s.o.PublicKey}}
	// go-mysql's calls take no context of ours: closing their sockets is what interrupts them.
	stop := context.AfterFunc(ctx, nc.closeAll)
	var syncer *replication.BinlogSyncer
	var dump *link
	defer func() {
		if dump != nil {
			// Before anything is closed under it: ended by the node (goodbye.go), the dump
			// is not counted as an aborted client.
			s.endDump(dump)
		}
		// No dial after this: go-mysql's Close would open a connection to KILL the dump
		// (and close it without COM_QUIT, an aborted client of its own).
		nc.refuse()
		if syncer != nil {
			// Closes go-mysql's end of each connection: the relay sends the node the
			// COM_QUIT go-mysql does not (authguard.go). Waits for go-mysql's reader.
			syncer.Close()
		}
		stop()
		nc.settle(relayGoodbye) // the relays' goodbyes, before their sockets are closed under them
		nc.closeAll()
		cancel()
	}()

	start, err := s.position(ctx, nc)
	if err != nil {
		return 0, fmt.Errorf("binlog: reading the position of %s: %w", s.o.Address, err)
	}
	tr, err := newTracker(s.o.Flavor == gtid.MariaDB, start)
	if err != nil {
		return 0, fmt.Errorf("binlog: %s: %w", s.o.Address, err)
	}
	id := serverID(s.o.ServerID, s.o.Instance, s.o.Address, s.attempt)
	syncer = replication.NewBinlogSyncer(s.config(id, nc))
	st, err := syncer.StartSyncGTID(tr.start())
	if err != nil {
		return 0, s.explain(err, id, start)
	}
	// Streaming: GetEvent takes ctx, and the dump is ended the way the node logs cleanly
	// (endDump) rather than by closing its socket.
	if stop() {
		dump = nc.last()
	}
	var began time.Time
	for {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return since(began), ctx.Err()
			}
			return since(began), s.explain(err, id, start)
		}
		if began.IsZero() {
			// The node accepted the dump: its first event (a fake ROTATE) is here.
			began = time.Now()
			s.onPosition(tr.String())
			s.onState(true, nil)
			if s.limit.started() {
				s.log.Info("binlog stream started", "from", tr.String(), "server_id", id)
			}
		}
		moved, err := tr.advance(ev)
		if err != nil {
			return since(began), fmt.Errorf("binlog: %s: %s event: %w", s.o.Address, ev.Header.EventType, err)
		}
		if moved {
			s.onPosition(tr.String())
		}
	}
}

func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}

// config is the syncer's configuration for one session.
func (s *stream) config(id uint32, nc *conns) replication.BinlogSyncerConfig {
	flavor := gomysql.MySQLFlavor
	if s.o.Flavor == gtid.MariaDB {
		flavor = gomysql.MariaDBFlavor
	}
	return replication.BinlogSyncerConfig{
		ServerID: id,
		Flavor:   flavor,
		// The whole address as Host and no Port: go-mysql dials Host as is, and registers
		// port 0, so SHOW SLAVE HOSTS tells this stream from a real replica (which registers
		// its own port).
		Host:            s.o.Address,
		User:            s.o.User,
		Password:        s.o.Password,
		TLSConfig:       s.localTLS(),
		HeartbeatPeriod: s.o.Heartbeat,
		ReadTimeout:     3 * s.o.Heartbeat,
		// Reconnecting is ours: from the node's current position, with backoff, reported.
		DisableRetrySync: true,
		// Raw mode: go-mysql decodes only FORMAT_DESCRIPTION and ROTATE events, not rows or
		// table maps; the tracker decodes the GTID events itself, one per transaction.
		RawModeEnabled:  true,
		DiscardGTIDSet:  true,
		EventCacheCount: eventBuffer,
		Logger:          s.libLog,
		Dialer:          nc.dial,
	}
}

// localTLS is the TLS configuration go-mysql speaks with the login guard's relay (which speaks
// s.o.TLS with the node), or nil without TLS.
func (s *stream) localTLS() *tls.Config {
	if s.o.TLS == nil {
		return nil
	}
	if _, client, err := localTLSConfigs(); err == nil {
		return client
	}
	return &tls.Config{MinVersion: tls.VersionTLS12} // not used: dial fails first
}

// position reads the node's current binlog position over a plain connection.
func (s *stream) position(ctx context.Context, nc *conns) (string, error) {
	rt := 3 * s.o.Heartbeat
	c, err := client.ConnectWithDialer(ctx, "", s.o.Address, s.o.User, s.o.Password, "", nc.dial, func(c *client.Conn) error {
		c.SetTLSConfig(s.localTLS())
		c.ReadTimeout, c.WriteTimeout = rt, rt
		return nil
	})
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Quit() }() // COM_QUIT: the node does not count it as an aborted client
	r, err := c.Execute(gtid.PositionQuery(s.o.Flavor))
	if err != nil {
		return "", err
	}
	return r.GetString(0, 0)
}

// explain turns the syncer's error into one that says what happened and what Run does next.
func (s *stream) explain(err error, id uint32, start string) error {
	var me *gomysql.MyError
	if !errors.As(err, &me) {
		return fmt.Errorf("binlog: %s: %w", s.o.Address, err)
	}
	switch {
	case me.Code == codeAccessDenied || me.Code == codeSpecificAccessDenied:
		// The same account just logged in and read the position: 1045 here is the grant.
		return fmt.Errorf("binlog: %s: %w (user %s: %w)", s.o.Address, ErrNoReplicationGrant, s.o.User, err)
	case me.Code == codeDuplicateServerID || strings.Contains(me.Message, "same server_uuid/server_id"):
		return fmt.Errorf("binlog: %s: %w %d, registering with another (%w)", s.o.Address, errServerIDTaken, id, err)
	case me.Code == codeReadingBinlog:
		return fmt.Errorf("binlog: %s: the binlog does not hold the start position %q; restarting from the current one (%w)", s.o.Address, start, err)
	}
	return fmt.Errorf("binlog: %s: %w", s.o.Address, err)
}

// failed reports a failed attempt or broken stream: to the caller always, to the log when the
// limiter lets it.
func (s *stream) failed(err error, retryIn time.Duration) {
	s.onState(false, err)
	logIt, repeats := s.limit.failed(failureKind(err), time.Now())
	if !logIt {
		s.log.Debug("binlog stream failed", "err", err, "retry_in", retryIn)
		return
	}
	attrs := []any{"err", err, "retry_in", retryIn}
	if repeats > 0 {
		attrs = append(attrs, "repeated", repeats)
	}
	s.log.Warn("binlog stream failed", attrs...)
}

// failureKind names a failure for rate limiting: the same failure repeats with different
// details (a local port, a position).
func failureKind(err error) string {
	var me *gomysql.MyError
	var ne net.Error
	switch {
	case errors.Is(err, ErrNoReplicationGrant):
		return "grant"
	case errors.Is(err, errServerIDTaken):
		return "server_id"
	case errors.As(err, &me):
		return "error " + strconv.Itoa(int(me.Code))
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return "connection lost"
	}
	return err.Error()
}

// conns dials the node for one session and remembers what it dialed, so that the session's
// end closes every socket go-mysql still uses (its calls block in reads that take no context).
// Safe for concurrent use: go-mysql dials from its own goroutines.
type conns struct {
	ctx   context.Context // the session's
	d     net.Dialer
	guard guard // what go-mysql's logins go through
	mu    sync.Mutex
	open  []net.Conn
	links []*link // of every dial, in order
	done  bool
}

// dial is a go-mysql client.Dialer. ctx is go-mysql's (its syncer's own, or Background for the
// KILL it sends when closing); the session's end cancels the dial too, and no dial starts after
// it.
func (c *conns) dial(ctx context.Context, network, address string) (net.Conn, error) {
	if err := c.ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done {
		// Not even connected: a connection closed before its login is one more the node
		// logs ("closed normally without authentication").
		return nil, net.ErrClosed
	}
	if c.guard.tls != nil {
		if _, _, err := localTLSConfigs(); err != nil {
			return nil, fmt.Errorf("binlog: the login relay's certificate: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	nc, err := c.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		nc.Close()
		return nil, net.ErrClosed
	}
	app, l := guardAuth(nc, c.guard)
	c.open = append(c.open, nc, app)
	c.links = append(c.links, l)
	return app, nil
}

// last is the link of the latest dial (nil: none): once StartSyncGTID has returned, the
// syncer's, which the dump runs on.
func (c *conns) last() *link {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.links) == 0 {
		return nil
	}
	return c.links[len(c.links)-1]
}

// relayGoodbye bounds how long a stream's end waits for its relays to say goodbye once
// go-mysql closed its ends: a goroutine's turn, unless a node stopped reading.
const relayGoodbye = 250 * time.Millisecond

// settle waits, at most d in all, for the relays of every dial to end.
func (c *conns) settle(d time.Duration) {
	c.mu.Lock()
	links := append([]*link(nil), c.links...)
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	for _, l := range links {
		select {
		case <-l.ended:
		case <-t.C:
			return
		}
	}
}

// refuse refuses new dials, closing nothing.
func (c *conns) refuse() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
}

// closeAll closes every socket dialed, and refuses new dials.
func (c *conns) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	for _, nc := range c.open {
		nc.Close()
	}
	c.open = nil
}
