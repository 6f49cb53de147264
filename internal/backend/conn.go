package backend

import (
	"compress/zlib"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Credentials are what sluice logs in to a node with: the client's own user, and either the
// plaintext password (configured) or SHA1(password), recovered from the client's
// mysql_native_password scramble for a user configured by hash. Plaintext is never derived.
type Credentials struct {
	User        string
	Password    string
	HasPassword bool
	Stage1      [20]byte
	HasStage1   bool
}

// Options describe one backend connection.
type Options struct {
	Address     string
	Credentials Credentials
	Database    string
	Charset     uint8
	// Capabilities are the client capabilities to ask the node for: the proxy passes on what its
	// own client negotiated, so results look the same as against the node directly.
	Capabilities uint32
	// MariaDBCapabilities are MariaDB's extended capabilities to ask for, passed on from the
	// client like Capabilities; a node that does not offer one does not get it.
	MariaDBCapabilities uint32
	Attrs               []byte // raw connection attributes to send
	// ConnectTimeout bounds dial plus handshake (0: 5 s).
	ConnectTimeout time.Duration
	WriteTimeout   time.Duration
	// TLS, when set, upgrades the connection to TLS if the node offers it; with TLSRequired a
	// node that does not offer it is an error.
	TLS         *tls.Config
	TLSRequired bool
	// Compress asks the node for the compressed protocol (when it offers it).
	Compress bool
	// InitSQL runs once the connection is authenticated (e.g. SET SESSION TRANSACTION READ ONLY
	// on replicas).
	InitSQL []string
}

// Conn is an authenticated connection to a node.
type Conn struct {
	*mysql.Conn
	Addr      string
	Handshake *mysql.Handshake
	// Caps are the capabilities negotiated with the node; MariaDBCaps MariaDB's extended ones.
	Caps        uint32
	MariaDBCaps uint32
	// Status is the last server status the node reported.
	Status uint16
	// TLS reports whether the connection to the node is encrypted.
	TLS bool
}

// AlwaysCaps are requested from every node regardless of the client: the protocol sluice speaks,
// and session tracking, which sluice reads itself and strips for clients that did not ask for it.
const AlwaysCaps = mysql.ClientLongPassword | mysql.ClientProtocol41 | mysql.ClientSecureConnection |
	mysql.ClientPluginAuth | mysql.ClientPluginAuthLenencClientData | mysql.ClientTransactions |
	mysql.ClientSessionTrack

// MirroredCaps are client capabilities passed on to the node as the client asked.
const MirroredCaps = mysql.ClientFoundRows | mysql.ClientLongFlag | mysql.ClientNoSchema |
	mysql.ClientODBC | mysql.ClientLocalFiles | mysql.ClientIgnoreSpace | mysql.ClientInteractive |
	mysql.ClientIgnoreSIGPIPE | mysql.ClientMultiStatements | mysql.ClientMultiResults |
	mysql.ClientPSMultiResults | mysql.ClientDeprecateEOF | mysql.ClientCanHandleExpiredPasswords

// ConnectError is a failure to reach or talk to a node (as opposed to a refusal the node sent as
// an ERR packet, which is a *mysql.SQLError).
type ConnectError struct {
	Addr string
	Err  error
}

func (e *ConnectError) Error() string { return fmt.Sprintf("backend %s: %v", e.Addr, e.Err) }
func (e *ConnectError) Unwrap() error { return e.Err }

// Dial connects and authenticates.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", o.Address)
	if err != nil {
		return nil, &ConnectError{o.Address, err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	c := &Conn{Conn: mysql.NewConn(nc, 0, 4<<10), Addr: o.Address}
	c.SetWriteTimeout(o.WriteTimeout)
	if err := c.handshake(o); err != nil {
		nc.Close()
		var se *mysql.SQLError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, &ConnectError{o.Address, err}
	}
	// The setup statements (a replica's read-only guard) are part of connecting: a node that
	// hangs there is bounded by the same deadline.
	for _, q := range o.InitSQL {
		if err := c.Exec(q); err != nil {
			nc.Close()
			var se *mysql.SQLError
			if errors.As(err, &se) {
				return nil, se
			}
			return nil, &ConnectError{o.Address, err}
		}
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

// ReadHandshake reads only a node's initial handshake (no login): how sluice learns the version
// string and capabilities to present to clients.
func ReadHandshake(ctx context.Context, addr string, timeout time.Duration) (*mysql.Handshake, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &ConnectError{addr, err}
	}
	defer nc.Close()
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	c := mysql.NewConn(nc, 4<<10, 1<<10)
	p, err := c.ReadPacket()
	if err != nil {
		return nil, &ConnectError{addr, err}
	}
	return mysql.ParseHandshake(p)
}

func (c *Conn) handshake(o Options) error {
	p, err := c.ReadPacket()
	if err != nil {
		return err
	}
	hs, err := mysql.ParseHandshake(p)
	if err != nil {
		return err
	}
	c.Handshake = hs
	if hs.Capabilities&mysql.ClientProtocol41 == 0 {
		return errors.New("node does not speak protocol 4.1")
	}
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
	caps &= hs.Capabilities | mysql.ClientLongPassword
	// MariaDB's extended capabilities travel only when both sides clear CLIENT_MYSQL.
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
	if o.TLS != nil && hs.Capabilities&mysql.ClientSSL != 0 {
		caps |= mysql.ClientSSL
		req := mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
			Capabilities: caps, MaxPacketSize: 1 << 30, Charset: charset, SSLRequest: true,
			MariaDBCapabilities: mcaps,
		})
		if err := c.WritePacketFlush(req); err != nil {
			return err
		}
		tc := tls.Client(c.Upgradable(), o.TLS)
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake with node: %w", err)
		}
		seq := c.Seq()
		c.Conn = mysql.NewConn(tc, 0, 4<<10)
		c.SetSeq(seq)
		c.TLS = true
	} else if o.TLSRequired {
		return errors.New("node does not offer TLS, which backend_tls.mode required needs")
	}
	c.Caps, c.MariaDBCaps = caps, mcaps
	plugin := hs.AuthPlugin
	if plugin != mysql.AuthCachingSHA2 {
		plugin = mysql.AuthNativePassword
	}
	auth, err := scramble(plugin, o.Credentials, hs.Nonce)
	if err != nil {
		return err
	}
	resp := &mysql.HandshakeResponse{
		Capabilities:  caps,
		MaxPacketSize: 1 << 30,
		Charset:       charset,
		User:          o.Credentials.User,
		AuthResponse:  auth,
		Database:      o.Database,
		AuthPlugin:    plugin,
		Attrs:         o.Attrs,

		MariaDBCapabilities: mcaps,
	}
	buf := mysql.AppendHandshakeResponse(c.Scratch(), resp)
	c.KeepScratch(buf)
	if err := c.WritePacketFlush(buf); err != nil {
		return err
	}
	nonce := hs.Nonce
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return err
		}
		switch {
		case mysql.IsOK(p):
			ok, err := mysql.ParseOK(p, c.Caps)
			if err != nil {
				return err
			}
			c.Status = ok.Status
			if c.Caps&mysql.ClientCompress != 0 {
				return c.EnableCompression(mysql.CompressClient, zlib.BestSpeed)
			}
			return nil
		case mysql.IsERR(p):
			return mysql.ParseERR(p)
		case p[0] == 0xfe: // auth switch
			var err error
			plugin, nonce, err = mysql.ParseAuthSwitchRequest(p)
			if err != nil {
				return err
			}
			if len(nonce) > 20 {
				nonce = nonce[:20]
			}
			auth, err := scramble(plugin, o.Credentials, nonce)
			if err != nil {
				return err
			}
			if err := c.WritePacketFlush(auth); err != nil {
				return err
			}
		case p[0] == mysql.AuthMoreDataHeader && plugin == mysql.AuthCachingSHA2 && len(p) >= 2:
			switch p[1] {
			case mysql.CachingSHA2FastOK:
				// The OK packet follows.
			case mysql.CachingSHA2FullAuth:
				if !o.Credentials.HasPassword {
					return fmt.Errorf("node %s asks for caching_sha2_password full authentication, which needs the plaintext password of user %q: configure password instead of password_hash", o.Address, o.Credentials.User)
				}
				if c.TLS {
					// Over TLS the password goes as it is.
					if err := c.WritePacketFlush(append([]byte(o.Credentials.Password), 0)); err != nil {
						return err
					}
					continue
				}
				if err := c.WritePacketFlush([]byte{mysql.CachingSHA2RequestKey}); err != nil {
					return err
				}
				key, err := c.ReadPacket()
				if err != nil {
					return err
				}
				if mysql.IsERR(key) {
					return mysql.ParseERR(key)
				}
				if len(key) < 2 || key[0] != mysql.AuthMoreDataHeader {
					return errors.New("unexpected packet in place of the node's RSA public key")
				}
				enc, err := mysql.EncryptPassword(key[1:], o.Credentials.Password, nonce)
				if err != nil {
					return err
				}
				if err := c.WritePacketFlush(enc); err != nil {
					return err
				}
			default:
				return fmt.Errorf("unexpected caching_sha2_password state %d", p[1])
			}
		default:
			return fmt.Errorf("unexpected packet 0x%02x during authentication", p[0])
		}
	}
}

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

// Exec runs a statement and discards any result; the node's error comes back as *mysql.SQLError.
func (c *Conn) Exec(query string) error {
	c.SetSeq(0)
	buf := append(c.Scratch(), mysql.ComQuery)
	buf = append(buf, query...)
	c.KeepScratch(buf)
	if err := c.WritePacketFlush(buf); err != nil {
		return err
	}
	var sqlErr error
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return err
		}
		more := false
		switch {
		case mysql.IsOK(p):
			ok, err := mysql.ParseOK(p, c.Caps)
			if err != nil {
				return err
			}
			c.Status = ok.Status
			more = ok.Status&mysql.StatusMoreResultsExists != 0
		case mysql.IsERR(p):
			return mysql.ParseERR(p)
		default:
			// A result set: skip column definitions and rows up to the terminator(s).
			status, err := c.skipResultSet()
			if err != nil {
				return err
			}
			c.Status = status
			more = status&mysql.StatusMoreResultsExists != 0
		}
		if !more {
			return sqlErr
		}
	}
}

// skipResultSet reads a text result set after its column-count packet and returns the final
// status.
func (c *Conn) skipResultSet() (uint16, error) {
	eofs := 0
	if c.Caps&mysql.ClientDeprecateEOF != 0 {
		eofs = 1 // only the final OK
	}
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return 0, err
		}
		if mysql.IsERR(p) {
			return 0, mysql.ParseERR(p)
		}
		if mysql.IsEOF(p, len(p)) {
			eofs++
			if eofs == 2 {
				return mysql.TerminatorStatus(p, c.Caps)
			}
		}
	}
}

// Command sends a command whose answer is one OK, EOF or ERR packet (COM_INIT_DB,
// COM_SET_OPTION, COM_PING...); the node's error comes back as *mysql.SQLError.
func (c *Conn) Command(payload []byte) error {
	c.SetSeq(0)
	if err := c.WritePacketFlush(payload); err != nil {
		return err
	}
	p, err := c.ReadPacket()
	if err != nil {
		return err
	}
	if mysql.IsERR(p) {
		return mysql.ParseERR(p)
	}
	if mysql.IsOK(p) {
		if ok, err := mysql.ParseOK(p, c.Caps); err == nil {
			c.Status = ok.Status
		}
	}
	return nil
}
