package backend

import (
	"compress/zlib"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/sluicedb/sluice/internal/mysql"
)

// The login to a node, in the order it happens on the wire:
//
//  1. greeting: the node's HandshakeV10 (readGreeting);
//  2. capability negotiation: what to ask the node for, given its handshake and the Options
//     (negotiate, a pure function);
//  3. the TLS upgrade, when both sides want it (startTLS);
//  4. the auth exchange: the handshake response with the first scramble, then whatever the node
//     asks for (an auth switch, caching_sha2_password's fast path or full authentication), up
//     to its OK or ERR (authenticate).
//
// Every step runs under the connect deadline Dial set on the socket.

// handshake logs c in to the node as o describes.
func (c *Conn) handshake(o Options) error {
	// Until the login ends, a node's packets are small: bounded so that a node (one added
	// through the API, whatever answers at its address) cannot make sluice buffer the 1 GiB a
	// logged-in connection may read. c.Conn is replaced by a TLS upgrade: the bound follows it.
	c.MaxPacket = MaxLoginPacket
	defer func() { c.MaxPacket = 0 }()
	hs, err := c.readGreeting()
	if err != nil {
		return err
	}
	n := negotiate(hs, o)
	if n.caps&mysql.ClientSSL != 0 {
		if err := c.startTLS(o.TLS, n, len(o.ProxyHeader) > 0); err != nil {
			return err
		}
	} else if o.TLSRequired {
		return errors.New("node does not offer TLS, which backend_tls.mode required needs")
	}
	c.Caps, c.MariaDBCaps = n.caps, n.mcaps
	return c.authenticate(o, hs, n)
}

// readGreeting reads and checks the node's initial handshake.
func (c *Conn) readGreeting() (*mysql.Handshake, error) {
	p, err := c.readPacket()
	if err != nil {
		return nil, err
	}
	hs, err := mysql.ParseHandshake(p)
	if err != nil {
		return nil, err
	}
	c.Handshake = hs
	if hs.Capabilities&mysql.ClientProtocol41 == 0 {
		return nil, errors.New("node does not speak protocol 4.1")
	}
	return hs, nil
}

// MaxLoginPacket bounds a packet a node sends before its login ends: its greeting, an auth
// switch, a public key, the login's OK with its session state.
const MaxLoginPacket = 1 << 20

// negotiation is what sluice asks a node for.
type negotiation struct {
	caps    uint32 // client capabilities, ClientSSL included when TLS is to be started
	mcaps   uint32 // MariaDB extended capabilities (0 unless CLIENT_MYSQL is cleared in caps)
	charset uint8
}

// negotiate decides the capabilities to ask node hs for. sluice asks for AlwaysCaps, what the
// client asked of MirroredCaps, and what the Options need (a schema at connect, attributes,
// compression, TLS), and keeps of that only what the node offers (CLIENT_LONG_PASSWORD aside,
// below).
//
// CLIENT_LONG_PASSWORD (bit 0) is also MariaDB's CLIENT_MYSQL. A MariaDB node that clears it
// offers extended capabilities in its handshake; they are asked for (the ones the client wanted
// and the node offers) only when the node cleared the bit, and sluice then clears it too, which
// is how a client says it sends them. Asking for none, sluice keeps the bit set, as a MySQL
// client does, so the node treats the connection as a plain MySQL one.
func negotiate(hs *mysql.Handshake, o Options) negotiation {
	caps := AlwaysCaps | (o.Capabilities & MirroredCaps)
	if o.Database != "" {
		caps |= mysql.ClientConnectWithDB
	}
	if len(o.Attrs) > 0 {
		caps |= mysql.ClientConnectAttrs
	}
	if o.Compress {
		caps |= mysql.ClientCompress
	}
	if o.TLS != nil {
		caps |= mysql.ClientSSL
	}
	caps &= hs.Capabilities | mysql.ClientLongPassword
	var mcaps uint32
	if hs.Capabilities&mysql.ClientLongPassword == 0 {
		if mcaps = o.MariaDBCapabilities & hs.MariaDBCapabilities; mcaps != 0 {
			caps &^= mysql.ClientLongPassword
		}
	}
	charset := o.Charset
	if charset == 0 {
		charset = hs.Charset
	}
	return negotiation{caps: caps, mcaps: mcaps, charset: charset}
}

// startTLS upgrades the connection: the SSL request (the first 32 bytes of a handshake
// response, with ClientSSL), then the TLS handshake over the same socket. Bytes the node sent
// after its greeting, already in c's read buffer, are read by TLS first; the sequence ids go on
// from where the SSL request left them. proxied: a PROXY protocol header went first, which the
// node may refuse with an ERR where TLS expects its first record (firstBytes).
func (c *Conn) startTLS(cfg *tls.Config, n negotiation, proxied bool) error {
	req := mysql.AppendHandshakeResponse(c.Scratch(), &mysql.HandshakeResponse{
		Capabilities: n.caps, MaxPacketSize: 1 << 30, Charset: n.charset, SSLRequest: true,
		MariaDBCapabilities: n.mcaps,
	})
	c.KeepScratch(req)
	if err := c.WritePacketFlush(req); err != nil {
		return err
	}
	var under net.Conn = c.Upgradable()
	var first *firstBytes
	if proxied {
		first = &firstBytes{Conn: under}
		under = first
	}
	tc := tls.Client(under, cfg)
	if err := tc.Handshake(); err != nil {
		if se := first.refusal(err); se != nil {
			return se
		}
		return fmt.Errorf("TLS handshake with node: %w", err)
	}
	seq := c.Seq()
	c.Conn = mysql.NewConn(tc, 0, 4<<10)
	c.MaxPacket = MaxLoginPacket
	c.SetSeq(seq)
	c.TLS = true
	c.TLSVerified = VerifiesPeer(cfg)
	return nil
}

// firstBytes keeps the first bytes read from a connection that sent a PROXY protocol header,
// while the TLS handshake reads them: a node refusing the client the header named answers at
// once, before the TLS upgrade (see refusedHeader), and crypto/tls reads that ERR as a record
// it does not know. Used by the connection's goroutine; it keeps nothing past maxRefusal bytes.
type firstBytes struct {
	net.Conn
	buf []byte
}

func (f *firstBytes) Read(p []byte) (int, error) {
	n, err := f.Conn.Read(p)
	if room := maxRefusal - len(f.buf); room > 0 && n > 0 {
		f.buf = append(f.buf, p[:min(n, room)]...)
	}
	return n, err
}

// refusal is the node's ERR the TLS handshake failed on (err: not a TLS record), when the
// first bytes read are one whole ERR packet; else nil. f may be nil (no header was sent).
func (f *firstBytes) refusal(err error) *mysql.SQLError {
	var rh tls.RecordHeaderError
	if f == nil || !errors.As(err, &rh) || len(f.buf) < 5 || f.buf[4] != 0xff {
		return nil
	}
	n := int(f.buf[0]) | int(f.buf[1])<<8 | int(f.buf[2])<<16
	if n < 3 || 4+n > len(f.buf) {
		return nil
	}
	return mysql.ParseERR(f.buf[4 : 4+n])
}

// maxRefusal bounds what firstBytes keeps: an ERR with a message of up to 512 bytes, as the
// server's own are.
const maxRefusal = 1024

// VerifiesPeer reports whether TLS under cfg proves who the peer is: the certificate chain
// checked (InsecureSkipVerify off), or a check of the configuration's own in its place. Under
// TLS that does not, a node could be anyone between sluice and the node, and is not sent a
// password.
func VerifiesPeer(cfg *tls.Config) bool {
	return cfg != nil && (!cfg.InsecureSkipVerify || cfg.VerifyPeerCertificate != nil || cfg.VerifyConnection != nil)
}

// authPlugin is the plugin sluice answers a node's greeting with: the node's own when sluice
// speaks it with a password (caching_sha2_password), mysql_native_password otherwise (the node
// then switches to what the account needs, or accepts it).
func authPlugin(nodePlugin string) string {
	if nodePlugin == mysql.AuthCachingSHA2 {
		return mysql.AuthCachingSHA2
	}
	return mysql.AuthNativePassword
}

// authenticate sends the handshake response with the first scramble and plays the exchange the
// node leads until its OK (logged in) or ERR (returned as *mysql.SQLError). In between the node
// may ask for another plugin (an auth switch, with a new nonce) or, under caching_sha2_password,
// say that the fast path succeeded or that it needs full authentication.
func (c *Conn) authenticate(o Options, hs *mysql.Handshake, n negotiation) error {
	plugin := authPlugin(hs.AuthPlugin)
	auth, err := scramble(plugin, o.Credentials, hs.Nonce)
	if err != nil {
		return err
	}
	buf := mysql.AppendHandshakeResponse(c.Scratch(), &mysql.HandshakeResponse{
		Capabilities:  n.caps,
		MaxPacketSize: 1 << 30,
		Charset:       n.charset,
		User:          o.Credentials.User,
		AuthResponse:  auth,
		Database:      o.Database,
		AuthPlugin:    plugin,
		Attrs:         o.Attrs,

		MariaDBCapabilities: n.mcaps,
	})
	c.KeepScratch(buf)
	if err := c.WritePacketFlush(buf); err != nil {
		return err
	}
	if len(o.ProxyHeader) > 0 {
		if err := c.refusedHeader(); err != nil {
			return err
		}
	}
	nonce := hs.Nonce
	for {
		p, err := c.readPacket()
		if err != nil {
			return err
		}
		switch {
		case mysql.IsOK(p):
			return c.loggedIn(p)
		case mysql.IsERR(p):
			return mysql.ParseERR(p)
		case p[0] == 0xfe:
			if plugin, nonce, err = c.switchAuth(p, o); err != nil {
				return err
			}
		case p[0] == mysql.AuthMoreDataHeader && plugin == mysql.AuthCachingSHA2 && len(p) >= 2:
			if err := c.cachingSHA2(p[1], o, nonce); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected packet 0x%02x during authentication", p[0])
		}
	}
}

// refusedHeader reads the node's refusal of the client a PROXY protocol header named, when
// that is what comes first: the node reads the header after its greeting and, when it does not
// take it (the client's host is not allowed: MariaDB's 1130; a header from an address it does
// not trust), answers it with an ERR of the greeting's next sequence id, 1 — the one the
// handshake response carried too, so that ERR reads as out of sequence. nil when the next
// packet is anything else, left for the exchange to read.
func (c *Conn) refusedHeader() error {
	n, seq, err := c.PeekHeader()
	if err != nil || seq != 1 || c.Seq() == 1 {
		return nil // the read that follows reports a broken connection
	}
	if p, err := c.PeekPayload(n, 1); err != nil || len(p) == 0 || p[0] != 0xff {
		return nil
	}
	c.SetSeq(1)
	p, err := c.readPacket()
	if err != nil {
		return err
	}
	return mysql.ParseERR(p)
}

// loggedIn takes the node's final OK: the status it reports, and the compressed protocol from
// here on when it was negotiated.
func (c *Conn) loggedIn(p []byte) error {
	ok, err := mysql.ParseOK(p, c.Caps)
	if err != nil {
		return err
	}
	c.Status = ok.Status
	if c.Caps&mysql.ClientCompress != 0 {
		return c.EnableCompression(mysql.CompressClient, zlib.BestSpeed)
	}
	return nil
}

// switchAuth answers an auth-switch request: the scramble of the plugin the node asks for over
// the new nonce. It returns the plugin and nonce now in force.
func (c *Conn) switchAuth(p []byte, o Options) (plugin string, nonce []byte, err error) {
	cr := o.Credentials
	plugin, nonce, err = mysql.ParseAuthSwitchRequest(p)
	if err != nil {
		return "", nil, err
	}
	switch plugin {
	case mysql.AuthClearPassword, "dialog", mysql.AuthSHA256Password:
		// Plugins that send the password itself (dialog: PAM's questions; sha256_password:
		// as caching_sha2_password's full authentication): only over verified TLS, and only
		// mysql_clear_password then, the one whose exchange sluice speaks.
		if plugin != mysql.AuthClearPassword || !c.TLSVerified {
			return "", nil, fmt.Errorf("node %s asks for %s, which sends the password itself: refused on a connection without verified TLS (backend_tls.verify; %s is supported over it only for mysql_clear_password)", o.Address, plugin, plugin)
		}
		if !cr.HasPassword {
			return "", nil, fmt.Errorf("node %s asks for mysql_clear_password, which needs the plaintext password of user %q: configure password instead of password_hash", o.Address, cr.User)
		}
		return plugin, nonce, c.WritePacketFlush(append([]byte(cr.Password), 0))
	}
	if len(nonce) > 20 {
		nonce = nonce[:20]
	}
	auth, err := scramble(plugin, cr, nonce)
	if err != nil {
		return "", nil, err
	}
	return plugin, nonce, c.WritePacketFlush(auth)
}

// cachingSHA2 answers caching_sha2_password's AuthMoreData state byte. Fast OK: the node found
// the account in its cache and the OK follows. Full authentication: the node needs the password
// itself, which sluice has only when it was configured in plaintext (a user configured by
// mysql_native_password hash cannot log in this way). It goes as it is over verified TLS, or
// encrypted with the node's public key as configured (Options.ServerPublicKey); otherwise not at
// all. sluice never asks the node for its key: whatever answers could send its own and decrypt
// the password (a node added through the API, a man in the middle), as MySQL's clients refuse
// without get-server-public-key. Unverified TLS is no better: anyone in between can present a
// certificate.
func (c *Conn) cachingSHA2(state byte, o Options, nonce []byte) error {
	switch state {
	case mysql.CachingSHA2FastOK:
		return nil
	case mysql.CachingSHA2FullAuth:
	default:
		return fmt.Errorf("unexpected caching_sha2_password state %d", state)
	}
	if !o.Credentials.HasPassword {
		return fmt.Errorf("node %s asks for caching_sha2_password full authentication, which needs the plaintext password of user %q: configure password instead of password_hash", o.Address, o.Credentials.User)
	}
	if c.TLSVerified {
		return c.WritePacketFlush(append([]byte(o.Credentials.Password), 0))
	}
	if len(o.ServerPublicKey) == 0 {
		return fmt.Errorf("node %s asks for caching_sha2_password full authentication of user %q, which sends the password: sluice sends it only over verified TLS (backend_tls.verify) or encrypted to the node's configured public key (backend_tls.server_public_key), and never to a key the node offers", o.Address, o.Credentials.User)
	}
	enc, err := mysql.EncryptPassword(o.ServerPublicKey, o.Credentials.Password, nonce)
	if err != nil {
		return fmt.Errorf("backend_tls.server_public_key: %w", err)
	}
	return c.WritePacketFlush(enc)
}

// scramble is the first auth response of plugin for cr over nonce. A user without a password
// answers with nothing, as clients do.
func scramble(plugin string, cr Credentials, nonce []byte) ([]byte, error) {
	switch plugin {
	case mysql.AuthNativePassword:
		switch {
		case cr.HasPassword:
			return mysql.NativeScramble(cr.Password, nonce), nil
		case cr.HasStage1:
			return mysql.NativeScrambleFromStage1(cr.Stage1, nonce), nil
		default:
			return nil, nil
		}
	case mysql.AuthCachingSHA2:
		if !cr.HasPassword {
			if cr.HasStage1 {
				return nil, fmt.Errorf("user %q is configured by mysql_native_password hash, which cannot log in with caching_sha2_password", cr.User)
			}
			return nil, nil
		}
		return mysql.CachingSHA2Scramble(cr.Password, nonce), nil
	default:
		return nil, fmt.Errorf("node asks for authentication plugin %q, which sluice does not support", plugin)
	}
}
