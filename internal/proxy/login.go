package proxy

import (
	"compress/zlib"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// A client's login: the greeting, the optional TLS upgrade, authentication (auth.go), and the
// session's first node connection; and COM_CHANGE_USER, a login on an open connection.

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
			_ = s.writeErr(mysql.NewError(mysql.ErrNetReadInterrupted, "08S01", "Got timeout reading communication packets (login not completed within %s)", s.p.opts.LoginTimeout))
		case errors.Is(err, mysql.ErrBudget):
			_ = s.writeErr(mysql.NewError(mysql.ErrConCount, "08004", "Too many connections (connections in their login hold too much memory)"))
		}
	}()
	if !s.ep.allowed(s.ip) {
		// In place of the greeting, as a server refuses a host no account lets in.
		s.client.SetSeq(0)
		_ = s.writeErr(hostRefused(s.host))
		return fmt.Errorf("client %s is not in endpoint %s's allow list", s.host, s.ep.cfg.Name)
	}
	if s.p.authBlock.isBlocked(s.ip) {
		// As the allow list's refusal: the address guessed too many passwords.
		s.client.SetSeq(0)
		_ = s.writeErr(hostBlocked(s.blockedHost()))
		return fmt.Errorf("client %s is blocked for too many authentication failures", s.host)
	}
	info := s.p.server.Load()
	s.nonce = newNonce()
	offered := info.caps
	tlsOffered := s.ep.cfg.TLS != TLSOff && s.p.opts.TLS != nil
	if tlsOffered {
		offered |= mysql.ClientSSL
	}
	hs := &mysql.Handshake{
		ServerVersion: info.version,
		ConnectionID:  s.id,
		Nonce:         s.nonce,
		Capabilities:  offered,
		Charset:       info.charset,
		Status:        mysql.StatusAutocommit,
		AuthPlugin:    mysql.AuthNativePassword,

		MariaDBCapabilities: info.mcaps,
	}
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
		_ = s.writeErr(mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake"))
		return err
	}
	if resp.SSLRequest {
		if !tlsOffered {
			_ = s.writeErr(mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake: TLS is not enabled on this endpoint"))
			return errors.New("client asked for TLS")
		}
		if resp, err = s.upgradeTLS(); err != nil {
			return err
		}
	}
	if s.ep.cfg.TLS == TLSRequired && !s.tls {
		_ = s.writeErr(mysql.NewError(mysql.ErrSecureTransportRequired, "HY000", "Connections using insecure transport are prohibited on endpoint %s (tls: required)", s.ep.cfg.Name))
		return errors.New("client without TLS on a TLS-only endpoint")
	}
	s.caps = resp.Capabilities & offered
	if offered&mysql.ClientLongPassword == 0 && resp.Capabilities&mysql.ClientLongPassword == 0 {
		s.mcaps = resp.MariaDBCapabilities & info.mcaps
	}
	u, creds, err := s.authenticate(resp.User, resp.AuthPlugin, resp.AuthResponse, false)
	if err != nil {
		return err
	}
	s.p.loggedIn(s)
	_ = s.nc.SetReadDeadline(time.Time{})
	s.client.MaxPacket = 0 // logged in: the node's max_allowed_packet applies
	s.user, s.creds = u, creds
	s.nodes.state().DB, s.charset, s.attrs = resp.Database, resp.Charset, resp.Attrs
	if err := s.connectNode(true); err != nil {
		return err
	}
	if err := s.writeOKPacket(s.nodes.conn().Status); err != nil {
		return err
	}
	if s.caps&mysql.ClientCompress != 0 {
		// Everything after the handshake's OK travels in compressed frames.
		return s.client.EnableCompression(mysql.CompressServer, zlib.BestSpeed)
	}
	return nil
}

// upgradeTLS runs the TLS handshake after the client's SSL request and reads the handshake
// response the client then sends over TLS.
func (s *session) upgradeTLS() (*mysql.HandshakeResponse, error) {
	budget := s.client.Budget()
	// What the client sends in its TLS handshake, which Go's TLS server buffers (a ClientHello
	// of up to 64 KiB), is charged to the logins' budget as a plain login's packets are, until
	// the login ends (loggedIn): the handshake's buffers live on with the connection.
	bc := &budgetedConn{Conn: s.client.Upgradable(), budget: budget}
	tc := tls.Server(bc, s.p.opts.TLS)
	err := tc.Handshake()
	bc.budget = nil // application data: charged as packets by the Conn that reads them
	s.tlsHeld += bc.charged
	if err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	seq := s.client.Seq()
	s.client.SetBudget(nil)
	s.nc = tc
	s.client = mysql.NewConn(tc, 0, 0)
	s.client.SetBudget(budget)
	s.client.SetWriteTimeout(s.p.opts.WriteTimeout)
	s.client.SetPeerPipelines()
	s.client.MaxPacket = preAuthMaxPacket
	s.client.SetSeq(seq)
	s.tls = true
	p, err := s.client.ReadPacket()
	if err != nil {
		return nil, err
	}
	resp, err := mysql.ParseHandshakeResponse(p)
	if err != nil || resp.SSLRequest {
		_ = s.writeErr(mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake"))
		return nil, fmt.Errorf("handshake response over TLS: %v", err)
	}
	return resp, nil
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
	name, db, charset, attrs, err := parseChangeUser(p, s.caps)
	if err != nil {
		s.client.SetSeq(1)
		return s.writeErr(mysql.NewError(mysql.ErrHandshake, "08S01", "Bad handshake"))
	}
	if s.p.authBlock.isBlocked(s.ip) {
		// The address failed too often (on this connection or others): refused before
		// any password exchange, and the connection ends.
		s.client.SetSeq(1)
		_ = s.writeErr(hostBlocked(s.blockedHost()))
		return fmt.Errorf("client %s is blocked for too many authentication failures", s.host)
	}
	u, creds, err := s.authenticate(name, "", nil, true)
	if errors.Is(err, errAuth) && s.p.authBlock.isBlocked(s.ip) {
		// This failure blocked the address: the connection ends rather than log in to a node
		// again for a client that may not change user any more.
		return err
	}
	if errors.Is(err, errAuth) {
		// authenticate sent the client its error. The server resets the session before it
		// authenticates and keeps the previous user and database when that fails (MariaDB),
		// with the server's default character set: so does sluice, with fresh node
		// connections as that user.
		// The client has its error: a node that cannot be reached now ends the session
		// without a second one.
		s.nodes.closeAll()
		s.resetState()
		s.rs = route.NewSession()
		s.charset = 0
		return s.connectNode(false)
	}
	if err != nil {
		return err
	}
	s.nodes.closeAll()
	s.resetState()
	s.rs = route.NewSession()
	s.user, s.creds, s.nodes.state().DB = u, creds, db
	s.info.Store(&sessionInfo{user: u.Name, started: s.info.Load().started})
	if charset != 0 {
		s.charset = charset
	}
	if attrs != nil {
		s.attrs = attrs
	}
	if err := s.connectNode(true); err != nil {
		return err
	}
	return s.writeOKPacket(s.nodes.conn().Status)
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
