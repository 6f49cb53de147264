package proxy

import (
	"compress/zlib"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// A client's login: the greeting, the optional TLS upgrade, authentication (auth.go), and the
// session's first node connection; and COM_CHANGE_USER, a login on an open connection.

// login is who a session's client is and what it negotiated: its address, the capabilities
// and TLS of its connection, the auth exchange's nonce, and the user it logged in as with the
// credentials, character set and attributes sluice logs in to the nodes with. The session
// fills it while the client logs in (handshake, changeUser) through its methods, which check
// the client's credentials (auth.go); after that it is read only. It belongs to the session's
// goroutine.
type login struct {
	host string
	ip   netip.Addr // the client's address (invalid when it is not an IP connection)
	// from and to are the client connection's addresses (the client's, the endpoint's): what
	// a PROXY protocol header names (nodes.go). Invalid when it is not a TCP connection.
	from, to netip.AddrPort
	caps     uint32 // negotiated with the client
	mcaps    uint32 // MariaDB extended capabilities negotiated with the client
	tls      bool   // the client's connection is TLS
	// tlsHeld is what the client's TLS handshake read, charged to the logins' budget until
	// the login ends (Proxy.loggedIn).
	tlsHeld int
	// usedPassword: the client's last auth answer was not empty (its 1045 says "using
	// password: YES").
	usedPassword bool
	nonce        []byte
	user         *User
	creds        backend.Credentials
	charset      uint8
	attrs        []byte
	attrsSum     uint64 // sumAttrs(attrs): part of a pooled connection's variant
	// refused says why the login failed (refusedHandshake unless another reason is known):
	// the reason the endpoint counts the connection under.
	refused refusal
	// held is the user's max_user_connections the session holds a place under (nil: none);
	// holdUser takes it, release gives it back (userlimit.go).
	held *userLimit
}

// greeting is the handshake the client is greeted with (by server info, on connection id),
// with a new nonce; tlsOffered: it may ask for TLS.
func (l *login) greeting(info *serverInfo, id uint32, tlsOffered bool) *mysql.Handshake {
	l.nonce = newNonce()
	hs := &mysql.Handshake{
		ServerVersion: info.version,
		ConnectionID:  id,
		Nonce:         l.nonce,
		Capabilities:  info.caps,
		Charset:       info.charset,
		Status:        mysql.StatusAutocommit,
		AuthPlugin:    mysql.AuthNativePassword,

		MariaDBCapabilities: info.mcaps,
	}
	if tlsOffered {
		hs.Capabilities |= mysql.ClientSSL
	}
	return hs
}

// negotiate takes from the client's handshake response resp the capabilities both sides have
// (hs: the greeting), and what the client asks its node session to be.
func (l *login) negotiate(hs *mysql.Handshake, resp *mysql.HandshakeResponse) {
	l.caps = resp.Capabilities & hs.Capabilities
	if hs.Capabilities&mysql.ClientLongPassword == 0 && resp.Capabilities&mysql.ClientLongPassword == 0 {
		l.mcaps = resp.MariaDBCapabilities & hs.MariaDBCapabilities
	}
	l.charset, l.attrs, l.attrsSum = resp.Charset, resp.Attrs, sumAttrs(resp.Attrs)
}

func newNonce() []byte {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	for i := range b {
		// Printable ASCII without NUL or '$', as servers send it: some clients treat the nonce
		// as a C string.
		b[i] = b[i]%94 + 33
		if b[i] == '$' {
			b[i] = '%'
		}
	}
	return b
}

// handshake greets the client, authenticates it, and connects the session to its node.
func (s *session) handshake() (err error) {
	defer func() {
		if err == nil || s.client.Budget() == nil {
			return // logged in, or failed after the password was proven
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The login took longer than the login timeout (a client that sends nothing, or
			// a byte at a time): told, as a server tells of its connect_timeout, and closed.
			s.login.refused = refusedLoginTimeout
			s.ep.front.refuse(s.client, mysql.NewError(mysql.ErrNetReadInterrupted, "08S01", "Got timeout reading communication packets (login not completed within %s)", s.p.opts.LoginTimeout))
		case errors.Is(err, mysql.ErrBudget):
			s.login.refused = refusedTooManyLogins
			s.ep.front.refuse(s.client, mysql.NewError(mysql.ErrConCount, "08004", "Too many connections (connections in their login hold too much memory)"))
		}
	}()
	if !s.ep.allowed(s.login.ip) {
		// In place of the greeting, as a server refuses a host no account lets in.
		s.client.SetSeq(0)
		s.login.refused = refusedNotAllowed
		s.ep.front.refuse(s.client, hostRefused(s.login.host))
		return fmt.Errorf("client %s is not in endpoint %s's allow list", s.login.host, s.ep.cfg.Name)
	}
	if s.p.authBlock.isBlocked(s.login.ip) {
		// As the allow list's refusal: the address guessed too many passwords.
		s.client.SetSeq(0)
		s.login.refused = refusedBlocked
		s.ep.front.refuse(s.client, hostBlocked(s.login.blockedHost()))
		return fmt.Errorf("client %s is blocked for too many authentication failures", s.login.host)
	}
	tlsOffered := s.ep.cfg.TLS != TLSOff && s.p.opts.TLS != nil
	hs := s.login.greeting(s.p.server.Load(), s.id, tlsOffered)
	// One deadline for the whole login, however the client spreads its bytes.
	_ = s.nc.SetReadDeadline(time.Now().Add(s.p.opts.LoginTimeout))
	s.client.SetSeq(0)
	if err := s.client.WritePacketFlush(mysql.AppendHandshake(nil, hs)); err != nil {
		return err
	}
	p, err := s.client.ReadPacket()
	if err != nil {
		return err
	}
	resp, err := mysql.ParseHandshakeResponse(p)
	if err != nil {
		s.ep.front.refuse(s.client, mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake"))
		return err
	}
	if resp.SSLRequest {
		if !tlsOffered {
			s.ep.front.refuse(s.client, mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake: TLS is not enabled on this endpoint"))
			return errors.New("client asked for TLS")
		}
		tc, c, tlsResp, err := s.login.upgradeTLS(s.client, s.p.opts.TLS, s.p.opts.WriteTimeout)
		if tc != nil {
			s.nc, s.client = tc, c
		}
		if err != nil {
			return err
		}
		resp = tlsResp
	}
	if s.ep.cfg.TLS == TLSRequired && !s.login.tls {
		s.login.refused = refusedTLSRequired
		s.ep.front.refuse(s.client, mysql.NewError(mysql.ErrSecureTransportRequired, "HY000", "Connections using insecure transport are prohibited on endpoint %s (tls: required)", s.ep.cfg.Name))
		return errors.New("client without TLS on a TLS-only endpoint")
	}
	s.login.negotiate(hs, resp)
	if err := s.login.authenticate(authEnv{p: s.p, c: s.client, log: s.log, front: &s.ep.front}, resp.User, resp.AuthPlugin, resp.AuthResponse, false); err != nil {
		switch {
		case errors.Is(err, errAuth):
			s.login.refused = refusedAuth
		case errors.Is(err, errUserLimit):
			s.login.refused = refusedMaxUserConnections
		}
		return err
	}
	s.p.loggedIn(s)
	_ = s.nc.SetReadDeadline(time.Time{})
	s.client.MaxPacket = 0 // logged in: the node's max_allowed_packet applies
	s.nodes.state().DB = resp.Database
	if err := s.connectNode(true); err != nil {
		// The client got the node's error, or sluice's when no node could be reached.
		s.login.refused = refusedNoNode
		code := uint16(mysql.ErrUnknown)
		if se := (*mysql.SQLError)(nil); errors.As(err, &se) {
			code = se.Code
		}
		s.ep.front.errors.count(code)
		return err
	}
	if err := writeOK(s.client, s.nodes.conn().Status, s.login.caps); err != nil {
		return err
	}
	if s.login.caps&mysql.ClientCompress != 0 {
		// Everything after the handshake's OK travels in compressed frames.
		return s.client.EnableCompression(mysql.CompressServer, zlib.BestSpeed)
	}
	return nil
}

// upgradeTLS runs the TLS handshake with the client after its SSL request (c: its connection
// so far) under cfg, and reads the handshake response the client then sends over TLS. It
// returns the TLS connection, the client's Conn over it (which takes over c's logins' budget
// and sequence), and the response.
func (l *login) upgradeTLS(c *mysql.Conn, cfg *tls.Config, writeTimeout time.Duration) (net.Conn, *mysql.Conn, *mysql.HandshakeResponse, error) {
	budget := c.Budget()
	// What the client sends in its TLS handshake, which Go's TLS server buffers (a ClientHello
	// of up to 64 KiB), is charged to the logins' budget as a plain login's packets are, until
	// the login ends (loggedIn): the handshake's buffers live on with the connection.
	bc := &budgetedConn{Conn: c.Upgradable(), budget: budget}
	tc := tls.Server(bc, cfg)
	err := tc.Handshake()
	bc.budget = nil // application data: charged as packets by the Conn that reads them
	l.tlsHeld += bc.charged
	if err != nil {
		return nil, c, nil, fmt.Errorf("TLS handshake: %w", err)
	}
	seq := c.Seq()
	c.SetBudget(nil)
	tlsc := mysql.NewConn(tc, 0, 0)
	tlsc.SetBudget(budget)
	tlsc.SetWriteTimeout(writeTimeout)
	tlsc.SetPeerPipelines()
	tlsc.MaxPacket = preAuthMaxPacket
	tlsc.SetSeq(seq)
	l.tls = true
	p, err := tlsc.ReadPacket()
	if err != nil {
		return tc, tlsc, nil, err
	}
	resp, err := mysql.ParseHandshakeResponse(p)
	if err != nil || resp.SSLRequest {
		_ = writeErr(tlsc, mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake"))
		return tc, tlsc, nil, fmt.Errorf("handshake response over TLS: %v", err)
	}
	return tc, tlsc, resp, nil
}

// budgetedConn charges the bytes read through it to budget (while it is set), failing the read
// with mysql.ErrBudget past its limit.
type budgetedConn struct {
	net.Conn
	budget  *mysql.Budget
	charged int
}

func (c *budgetedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.budget != nil {
		if !c.budget.Take(n) {
			return 0, mysql.ErrBudget
		}
		c.charged += n
	}
	return n, err
}

// changeUser handles COM_CHANGE_USER: authenticate the new user against the configuration, then
// replace the session's node connection with one logged in as that user (which also resets the
// session state, as the server would).
func (s *session) changeUser() error {
	// A login: its packets (this one, the auth exchange) have the bound of a first login's.
	s.client.MaxPacket = preAuthMaxPacket
	defer func() { s.client.MaxPacket = 0 }()
	s.client.SetSeq(0)
	p, err := s.client.ReadPacket()
	if err != nil {
		return err
	}
	// The auth data in the packet is not used: sluice always answers with an auth switch (with
	// the connection's nonce) and checks the client's answer to that.
	name, db, charset, attrs, err := parseChangeUser(p, s.login.caps)
	if err != nil {
		s.client.SetSeq(1)
		s.ep.front.errors.count(mysql.ErrHandshake)
		return writeErr(s.client, mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake"))
	}
	if s.p.authBlock.isBlocked(s.login.ip) {
		// The address failed too often (on this connection or others): refused before
		// any password exchange, and the connection ends.
		s.client.SetSeq(1)
		s.ep.front.refuse(s.client, hostBlocked(s.login.blockedHost()))
		return fmt.Errorf("client %s is blocked for too many authentication failures", s.login.host)
	}
	err = s.login.authenticate(authEnv{p: s.p, c: s.client, log: s.log, front: &s.ep.front}, name, "", nil, true)
	if errors.Is(err, errAuth) && s.p.authBlock.isBlocked(s.login.ip) {
		// This failure blocked the address: the connection ends rather than log in to a node
		// again for a client that may not change user any more.
		return err
	}
	if errors.Is(err, errAuth) || errors.Is(err, errUserLimit) {
		// authenticate sent the client its error. The server resets the session before it
		// authenticates and keeps the previous user and database when that fails (MariaDB),
		// with the server's default character set: so does sluice, with fresh node
		// connections as that user (which keeps its place under its max_user_connections).
		// The client has its error: a node that cannot be reached now ends the session
		// without a second one.
		s.nodes.closeAll()
		s.resetState()
		s.rs = route.NewSession()
		s.login.charset = 0
		return s.connectNode(false)
	}
	if err != nil {
		return err
	}
	s.nodes.closeAll()
	s.resetState()
	s.rs = route.NewSession()
	s.nodes.state().DB = db
	s.view.changedUser(s.login.user.Name)
	if charset != 0 {
		s.login.charset = charset
	}
	if attrs != nil {
		s.login.attrs, s.login.attrsSum = attrs, sumAttrs(attrs)
	}
	if err := s.connectNode(true); err != nil {
		return err
	}
	return writeOK(s.client, s.nodes.conn().Status, s.login.caps)
}

// parseChangeUser decodes COM_CHANGE_USER: user, auth data (skipped), database, character set,
// plugin name (skipped) and connection attributes.
func parseChangeUser(p []byte, caps uint32) (user, db string, charset uint8, attrs []byte, err error) {
	errShort := errors.New("short COM_CHANGE_USER")
	p = p[1:]
	i := indexNul(p)
	if i < 0 {
		return "", "", 0, nil, errShort
	}
	user, p = string(p[:i]), p[i+1:]
	if caps&mysql.ClientSecureConnection != 0 {
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return "", "", 0, nil, errShort
		}
		p = p[1+int(p[0]):]
	} else {
		if i = indexNul(p); i < 0 {
			return "", "", 0, nil, errShort
		}
		p = p[i+1:]
	}
	if i = indexNul(p); i < 0 {
		return user, string(p), 0, nil, nil
	}
	db, p = string(p[:i]), p[i+1:]
	if len(p) >= 2 {
		charset, p = p[0], p[2:]
	}
	if caps&mysql.ClientPluginAuth != 0 && len(p) > 0 {
		if i = indexNul(p); i < 0 {
			return user, db, charset, nil, nil
		}
		p = p[i+1:]
	}
	if caps&mysql.ClientConnectAttrs != 0 && len(p) > 0 {
		if a, _, err := mysql.ReadLenEncString(p); err == nil {
			attrs = append([]byte(nil), a...)
		}
	}
	return user, db, charset, attrs, nil
}

func indexNul(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
