package proxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// Session life states, changed with compare-and-swap so that shutdown and the session's own
// goroutine agree on who closes the connection.
const (
	stateIdle     int32 = iota // logging in, or waiting for the client's next command
	stateBusy                  // running a command
	stateDraining              // shutdown asked while busy: stop after the command
	stateClosed
)

// session is one client connection and everything it carries. Its fields belong to the
// session's goroutine, except life, view and killTarget (shutdown, the control plane and other
// sessions' KILL read them: their types say how) and what the idle watch's goroutines touch
// (documented on idleWatch).
type session struct {
	p  *Proxy
	ep *endpoint
	id uint32
	// raw is the client's TCP connection, never changed: what other goroutines close (drain,
	// kill, the idle watch). nc is the connection the session reads, TLS once upgraded, and
	// belongs to the session's goroutine.
	raw    net.Conn
	nc     net.Conn
	client *mysql.Conn
	log    *slog.Logger
	// login is who the client is and what it negotiated: its address, capabilities, TLS,
	// user and the credentials sluice logs in to the nodes with.
	login login
	// life is the session's life state and kill switch.
	life lifecycle

	// sentAt is s.client.Sent() when the current command began (responseStarted).
	sentAt uint64

	status uint16 // last server status reported to the client
	// reader reads the client's statements as the nodes will (the sql_mode it knows, the
	// nodes' dialects).
	reader reader

	rs route.Session
	// nodes is the session's node connections, its home and current node, and the session
	// state they carry.
	nodes nodeSet
	// begin is a BEGIN held back by transaction splitting until the first write.
	begin []byte
	cmd   []byte // the current statement, kept to retry a read on another node
	// resp is how the current command's answer ended: the relay's Result, or Failed when
	// sluice answered with its own error. (NodeClosing is kept until the command ends.)
	resp relay.Result
	// reads is what the session's replica reads must see under a consistency level.
	reads readTarget

	watch idleWatch

	// settings are the endpoint's settings under the mode the session began with.
	settings sessionSettings
	// view is what the session publishes of itself: its statement counts, its route, and
	// what the control plane lists (read from other goroutines).
	view sessionView

	stmts statements // binary prepared statements
}

// newSession makes the session of a client connection to endpoint ep.
func (p *Proxy) newSession(ep *endpoint, nc net.Conn) *session {
	id := p.nextID.Add(1)
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		host = nc.RemoteAddr().String()
	}
	ip, _ := netip.ParseAddr(host)
	s := &session{
		login:    login{host: host, ip: ip.Unmap(), from: addrPort(nc.RemoteAddr()), to: addrPort(nc.LocalAddr())},
		p:        p,
		ep:       ep,
		id:       id,
		nc:       nc,
		raw:      nc,
		client:   mysql.NewConn(nc, 0, 0),
		life:     newLifecycle(),
		rs:       route.NewSession(),
		settings: newSessionSettings(ep.route),
		watch:    newIdleWatch(nc, p.opts.IdleTimeout, p.opts.WriteTimeout),
		log:      p.log.With("conn", id, "endpoint", ep.cfg.Name, "client", nc.RemoteAddr().String()),
	}
	s.stmts = newStatements(p.opts.MaxPreparedStatements, p.opts.MaxLongData, s.log)
	s.reader = newReader(s.settings.mode, p.topo, &p.greeted)
	s.nodes.init(p.topo, s.log, nodeHooks{
		dial: func(n *topology.Node, readOnly bool, st *backend.State) (*backend.Conn, error) {
			ps := ep.pool.Load()
			bc, err := p.acquire(&s.login, ps, s.life.done(), n, readOnly, st, func(bc *backend.Conn) {
				s.reads.track(bc, s.settings.current().Consistency, &p.tracking, s.log)
			})
			if err == nil {
				bc.KeepStmts(p.stmtCache(&s.login, ps))
			}
			return bc, err
		},
		spare: func(n *topology.Node, st *backend.State) (*backend.Conn, error) {
			return p.dialNode(&s.login, n, false, st, nil)
		},
		discard: func(bc *backend.Conn, how ending) {
			p.pool.Forget(bc)
			how.end(bc)
		},
		opened:   func(c *nodeConn, n *topology.Node) { s.reader.opened(c, n, s.login.charset) },
		closing:  s.stmts.unbind,
		cursorOn: s.stmts.cursorOn,
	})
	s.view.init(len(s.nodes.all()))
	s.client.SetWriteTimeout(p.opts.WriteTimeout)
	// Clients pipeline (Connector/J sends its first queries back to back).
	s.client.SetPeerPipelines()
	s.client.MaxPacket = preAuthMaxPacket
	return s
}

// keepBuffer is the largest buffer a session keeps between commands.
const keepBuffer = 64 << 10

// preAuthMaxPacket bounds every packet a client sends before it has logged in (the handshake
// response with its connection attributes, the answers to auth switches): an unauthenticated
// client must not make sluice buffer more than this. MySQL caps connection attributes at 64 KiB.
const preAuthMaxPacket = 64<<10 + 1<<10

// run serves the connection until the client quits, a connection breaks, or shutdown.
func (s *session) run(overLimit bool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("session panic", "panic", r, "stack", string(debug.Stack()))
		}
		s.close()
		s.view.traffic(s.client.Received(), s.client.Sent())
	}()
	if overLimit {
		s.client.SetSeq(0)
		s.ep.front.refused[refusedMaxConnections].Add(1)
		s.ep.front.refuse(s.client, mysql.NewError(mysql.ErrConCount, "08004", "Too many connections"))
		return
	}
	if err := s.handshake(); err != nil {
		s.ep.front.refused[s.login.refused].Add(1)
		s.log.Debug("handshake failed", "err", err)
		return
	}
	s.ep.front.accepted.Add(1)
	s.view.loggedIn(s.login.user.Name, time.Now())
	s.log.Debug("session started", "user", s.login.user.Name, "node", s.nodes.node().Name)
	s.loop()
}

func (s *session) close() {
	s.life.close()
	// A response may still wait in the buffer for the next read (finish): send it before the
	// connection closes (a node's ERR that ends the session, a command finished at shutdown).
	_ = s.client.Flush()
	s.nc.Close()
	// After the client's connection is closed: it never waits for the resets.
	// Blind, the session may have turned the node's schema tracking off (or run what may
	// have): the database its connections are in is then asked, not taken as known.
	s.p.releaseNodes(&s.nodes, &s.login, s.ep.pool.Load(), !s.reader.mode.blind)
}

// drain is called by Shutdown: an idle session closes now, a busy one after its command.
func (s *session) drain() {
	if s.life.drain() {
		s.raw.Close()
	}
}

// responseStarted reports whether any byte of an answer to the current command was written
// to the client (even part of a packet): from then on the answer cannot be replaced by another
// (a retry elsewhere, an error packet), and a failure can only close the connection.
func (s *session) responseStarted() bool { return s.client.Sent() != s.sentAt }

// kill closes the session's connections whatever it is doing: the client's, and its node
// connections, so that a session waiting on a node that never answers ends too. (Safe from
// another goroutine: closing a net.Conn is, and the node connections are read from the
// session's published kill targets.)
//
// A session killed while idle (nothing under way on its node connections) says goodbye on each
// first (COM_QUIT, written straight to its socket), so the nodes do not count them aborted.
func (s *session) kill() {
	idle := s.life.idle()
	s.life.kill()
	s.raw.Close()
	s.nodes.withTargets(func(ts []killTarget) {
		for _, t := range ts {
			if idle {
				_ = backend.WriteQuit(t.conn, t.compressed)
			}
			t.conn.Close()
		}
	})
}

// writeErr writes e to the client c, as the whole answer to its command.
func writeErr(c *mysql.Conn, e *mysql.SQLError) error {
	return c.WritePacketFlush(keepScratch(c, mysql.AppendERR(c.Scratch(), e)))
}

// writeOK writes an OK packet with the server status to the client c (caps: what it
// negotiated), as the whole answer to its command.
func writeOK(c *mysql.Conn, status uint16, caps uint32) error {
	return c.WritePacketFlush(keepScratch(c, mysql.AppendOK(c.Scratch(), mysql.OK{Status: status}, caps)))
}

// loop reads and runs the client's commands.
func (s *session) loop() {
	// What the idle watch reads of the session's node connections while the client is idle.
	// (The session's own fields do not change while it is idle: the watchers may read them.)
	nodes := nodeWatch{
		conns: func(dst []net.Conn) []net.Conn {
			for _, c := range s.nodes.all() {
				var nc net.Conn
				if c != nil {
					nc = c.NetConn()
				}
				dst = append(dst, nc)
			}
			return dst
		},
		park: func(park bool) {
			for _, c := range s.nodes.all() {
				switch {
				case c == nil:
				case park:
					c.Park()
				default:
					c.Unpark()
				}
			}
		},
		lost: func(i int, err error) bool {
			c := s.nodes.at(i)
			s.log.Debug("node closed the idle session's connection", "node", c.name, "err", err)
			// A home that is no longer where the session belongs (the old primary after a
			// switchover, often restarted next) holds nothing the session needs when it is
			// movable: losing it is not the end of the session, which moves at its next
			// command. Another node's connection holds only replayable state: reopened when
			// needed.
			snap := s.p.topo.Snapshot()
			if i != s.nodes.home() || (s.nodes.movable(&s.rs) && (s.nodes.movesPrimary(s.settings.shared(), snap) || snap.IsDraining(c.idx))) {
				c.release(s.p.topo.Snapshot().Load[c.idx])
				return true
			}
			return false
		},
	}
	// pool_mode transaction: between commands, connections that hold nothing of the session's
	// but its replayable state go back to the pool (the home connection login opened too).
	s.p.lendBetween(&s.nodes, &s.login, s.ep.pool.Load(), &s.rs, &s.stmts)
	// The client's buffers are parked at once after the login (when nothing is buffered: Park
	// says), not after idleProbe: clients that connect in a burst and then wait (a pool's
	// connections opened at its start) would otherwise each hold the 32 KiB the login used for
	// that second, and the process keeps that peak (measured: 25 KiB per idle client at 1 000
	// clients opened at 2 000 a second, 16 KiB at 10 000). The first wait takes them back
	// when the client speaks.
	s.client.Park()
	idleSince := time.Now() // when the last command ended: the wait for the next one starts then
	for {
		err := s.watch.wait(s.client, &nodes, idleSince)
		for _, i := range s.watch.lostConns() {
			s.nodes.drop(i) // and no longer a kill target
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Debug("session ends", "reason", err)
				s.nodes.settle() // the client left (or idled out) between two commands
			}
			return
		}
		if !s.life.begin() {
			return // shutdown closed us while the command arrived
		}
		s.sentAt, s.resp = s.client.Sent(), relay.Result{}
		s.view.commandStarted(time.Now())
		quit, err := s.command()
		if err == nil && !quit && !s.resp.NodeClosing {
			s.p.lendBetween(&s.nodes, &s.login, s.ep.pool.Load(), &s.rs, &s.stmts)
		}
		idleSince = time.Now()
		s.view.commandEnded(idleSince, s.rs.InTx, s.rs.Pins|s.nodes.share.pins)
		s.view.traffic(s.client.Received(), s.client.Sent())
		if s.resp.Failed {
			s.ep.front.errors.count(s.resp.Code)
		}
		if err != nil {
			s.log.Debug("session ends", "reason", err)
			return
		}
		// A large command (a prepared statement's text, long data) grew this buffer: an idle
		// session does not keep it.
		s.client.ReleaseLarge(keepBuffer)
		if s.resp.NodeClosing {
			if s.nodes.cur() == s.nodes.home() {
				s.log.Debug("session ends: its node closed the connection")
				return
			}
			s.nodes.drop(s.nodes.cur())
		}
		if quit {
			s.nodes.settle()
			return
		}
		if !s.life.end() {
			return
		}
	}
}

// command runs one client command. A non-nil error ends the session.
func (s *session) command() (quit bool, err error) {
	n, seq, err := s.client.PeekHeader()
	if err != nil {
		return false, err
	}
	if seq != 0 {
		return false, fmt.Errorf("command packet with sequence id %d", seq)
	}
	if n == 0 {
		_ = s.client.Discard(4)
		return false, s.refuse(nil, mysql.NewError(mysql.ErrUnknownCom, "08S01", "Unknown command"))
	}
	p, err := s.client.PeekPayload(n, 1)
	if err != nil {
		return false, err
	}
	if p[0] != mysql.ComQuit {
		// After a switchover: to the new primary before the command, when nothing holds the
		// session where it is (statements also wait for one, and handle what holds it).
		if err := s.nodes.follow(&s.rs, s.settings.current(), s.p.topo.Snapshot()); err != nil {
			return false, fmt.Errorf("following the new primary: %w", err)
		}
	}
	switch cmd := p[0]; cmd {
	case mysql.ComQuit:
		return true, nil
	case mysql.ComQuery:
		return false, s.query(n)
	case mysql.ComProcessKill:
		return false, s.processKill(n)
	case mysql.ComPing, mysql.ComStatistics, mysql.ComInitDB:
		return false, s.homeCommand(n, relay.Single)
	case mysql.ComRefresh:
		return false, s.refresh(n)
	case mysql.ComSetOption:
		// Recorded once the node took it (an option it refuses must not be replayed), so that
		// its other connections get it before their next statement.
		option, ok := uint16(0), false
		if q, err := s.client.PeekPayload(n, 3); err == nil && len(q) == 3 {
			option, ok = uint16(q[1])|uint16(q[2])<<8, true
		}
		if err := s.homeCommand(n, relay.Single); err != nil || !ok || s.resp.Failed {
			return false, err
		}
		s.nodes.state().Options = option
		if c := s.nodes.at(s.nodes.home()); c != nil {
			c.Adopt(s.nodes.state())
		}
		return false, nil
	case mysql.ComResetConnection:
		// The node drops the session's state and prepared statements; so does sluice: the
		// other node connections are closed and reopened clean when next needed. A replica
		// home (read-only endpoint) gets its read-only guard back at once.
		s.resetState()
		if err := s.homeCommand(n, relay.Single); err != nil {
			return false, err
		}
		if c := s.nodes.at(s.nodes.home()); c != nil && !s.resp.Failed {
			if err := c.Guard(); err != nil {
				return false, fmt.Errorf("node %s: restoring the read-only guard after a reset: %w", c.name, err)
			}
			if !c.ReadOnly() {
				s.reads.track(c.Conn, s.settings.current().Consistency, &s.p.tracking, s.log) // the reset took the session's tracked variables back to the server's
			}
		}
		return false, nil
	case mysql.ComStmtPrepare:
		return false, s.prepare()
	case mysql.ComStmtExecute, mysql.ComStmtBulkExecute, mysql.ComStmtFetch, mysql.ComStmtReset, mysql.ComStmtClose,
		mysql.ComStmtSendLongData:
		return false, s.stmtCommand(cmd, n)
	case mysql.ComFieldList:
		return false, s.homeCommand(n, relay.FieldList)
	case mysql.ComChangeUser:
		return false, s.changeUser()
	default:
		return false, s.refuse(&request{n: n, unread: true}, unsupported(cmd))
	}
}

// unsupported words the error for a command sluice does not carry out; the session stays usable.
func unsupported(cmd byte) *mysql.SQLError {
	switch cmd {
	case mysql.ComBinlogDump, mysql.ComBinlogDumpGTID, mysql.ComRegisterSlave, mysql.ComTableDump:
		return mysql.NewError(mysql.ErrUnknownCom, "08S01", "sluice does not relay the replication protocol (command 0x%02x): connect a replica to the primary directly", cmd)
	case mysql.ComShutdown:
		return mysql.NewError(mysql.ErrUnknownCom, "08S01", "sluice does not relay COM_SHUTDOWN: shut the node down on the node itself")
	default:
		return mysql.NewError(mysql.ErrUnknownCom, "08S01", "Unknown command")
	}
}

// discardCommand drops the client's command packet of n bytes (and its continuations) unread
// from c.
func discardCommand(c *mysql.Conn, n int) error {
	for {
		if err := c.Discard(4 + n); err != nil {
			return err
		}
		if n < mysql.MaxPacketPayload {
			return nil
		}
		var err error
		if n, _, err = c.PeekHeader(); err != nil {
			return err
		}
	}
}

// lifecycle is a session's life state and its kill switch. Its state changes by
// compare-and-swap, so that shutdown (drain, kill), KILL from other sessions and the session's
// own goroutine agree on who closes the connection. Safe for any goroutine.
type lifecycle struct {
	state atomic.Int32
	// killedCh is closed by kill, once (killOnce): a session waiting (for a new primary, a
	// replica's position) stops.
	killedCh chan struct{}
	killOnce sync.Once
}

func newLifecycle() lifecycle { return lifecycle{killedCh: make(chan struct{})} }

// begin marks the session busy with a command; false: it was closed meanwhile (shutdown).
func (l *lifecycle) begin() bool { return l.state.CompareAndSwap(stateIdle, stateBusy) }

// end marks the session idle after its command; false: shutdown asked it to stop meanwhile.
func (l *lifecycle) end() bool { return l.state.CompareAndSwap(stateBusy, stateIdle) }

// idle reports whether the session waits for the client's next command (or still logs in).
func (l *lifecycle) idle() bool { return l.state.Load() == stateIdle }

// drain is shutdown's request: an idle session is closed now (drain reports true: its caller
// closes the connection), a busy one stops after its command.
func (l *lifecycle) drain() (closeNow bool) {
	if l.state.CompareAndSwap(stateIdle, stateClosed) {
		return true
	}
	l.state.CompareAndSwap(stateBusy, stateDraining)
	return false
}

// close marks the session closed: it has ended.
func (l *lifecycle) close() { l.state.Store(stateClosed) }

// kill marks the session closed whatever it is doing, and wakes whatever waits on done.
func (l *lifecycle) kill() {
	l.state.Store(stateClosed)
	l.killOnce.Do(func() { close(l.killedCh) })
}

// killed reports whether the session was killed (shutdown past its grace period, KILL
// CONNECTION): a node connection that fails then was closed by sluice, not by the node.
func (l *lifecycle) killed() bool { return l.state.Load() == stateClosed }

// done is closed once the session is killed.
func (l *lifecycle) done() <-chan struct{} { return l.killedCh }

// sessionSettings holds the endpoint's settings under the mode the session began with: a
// change of the endpoint's mode applies to the connections it accepts from then on (a
// read-only session is bound to its replica, a read-write one holds its primary connection),
// every other setting to every session at its next statement. current belongs to the
// session's goroutine; mode never changes, and apply may be called from any goroutine.
type sessionSettings struct {
	ep   *route.Endpoint
	mode route.Mode
	// from, copy: the endpoint's settings under mode, kept while the endpoint's are the same.
	from *route.Settings
	copy route.Settings
}

func newSessionSettings(ep *route.Endpoint) sessionSettings {
	return sessionSettings{ep: ep, mode: ep.Settings().Mode}
}

// current returns the endpoint's settings in force, under the session's mode. It does not
// allocate.
func (ss *sessionSettings) current() *route.Settings {
	set := ss.ep.Settings()
	if set.Mode == ss.mode {
		return set
	}
	if ss.from != set {
		ss.copy, ss.from = *set, set
		ss.copy.Mode = ss.mode
	}
	return &ss.copy
}

// shared is current for another goroutine (the idle watch): the endpoint's settings under
// the session's mode, without touching the holder (a copy when the modes differ).
func (ss *sessionSettings) shared() *route.Settings {
	set := ss.ep.Settings()
	if set.Mode == ss.mode {
		return set
	}
	cp := *set
	cp.Mode = ss.mode
	return &cp
}
