package binlog

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// The login guard. go-mysql logs in to the node itself, and sends the password to whatever the
// node asks: in clear for mysql_clear_password, and for caching_sha2_password's full
// authentication encrypted to whatever key the node offers (or in clear under any TLS, verified
// or not). A node added through the API would read the monitor's password so. So go-mysql
// talks to the node through a relay (guardAuth) that reads the login as it passes and lets
// go-mysql send a password only where sluice's own client (internal/backend) would: over
// verified TLS, or encrypted to the key configured for the nodes (Options.PublicKey). To read
// the login under TLS, the relay speaks TLS with the node itself, and go-mysql speaks TLS with
// the relay (an in-process pipe, with a throwaway certificate). After the login it copies
// bytes both ways, the node's packet by packet: go-mysql reads a packet whole into memory
// (growing it by each continuation, allocating what a header announces), so one larger than
// maxStreamPacket ends the connection instead of reaching it.

// errNotSupportedAuthMode is ER_NOT_SUPPORTED_AUTH_MODE, what go-mysql is told when the relay
// ends a login (not 1045, which Run reads as a missing grant).
const errNotSupportedAuthMode = 1251

// ErrUnsafeAuth is the error for a node that asks for a password where it may not be sent.
var ErrUnsafeAuth = errors.New("the node asks for the password where sluice does not send it")

// guard is what the relay needs to know.
type guard struct {
	tls    *tls.Config // to the node; nil: plain TCP
	pubKey []byte      // the nodes' RSA public key (PEM), or nil
	// maxPacket bounds a packet from the node after the login (0: maxStreamPacket).
	maxPacket int
	// greeted, when set, learns the node's thread id from its greeting.
	greeted func(id uint32)
}

// maxStreamPacket bounds one packet (one binlog event) the node sends go-mysql. Larger events
// exist only where max_allowed_packet was raised past 64 MiB; one ends the stream, which starts
// again from the node's position then, past the event.
const maxStreamPacket = 64 << 20

// errStreamPacket ends a connection whose node sent a packet past the bound.
var errStreamPacket = errors.New("binlog: a packet from the node over the relay's bound")

// copyPackets copies src's packets to dst until either fails or a packet (its continuations
// included) passes limit bytes.
func copyPackets(dst io.Writer, src io.Reader, limit int) error {
	br := bufio.NewReaderSize(src, 64<<10)
	buf := make([]byte, 32<<10)
	var hdr [4]byte
	size := 0 // of the packet so far, continuations included
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if size += n; size > limit {
			return errStreamPacket
		}
		if _, err := dst.Write(hdr[:]); err != nil {
			return err
		}
		copied, err := io.CopyBuffer(dst, io.LimitReader(br, int64(n)), buf)
		if err != nil {
			return err
		}
		if copied < int64(n) {
			return io.ErrUnexpectedEOF
		}
		if n < 1<<24-1 {
			size = 0
		}
	}
}

// localTLS is the TLS go-mysql speaks with the relay: a throwaway self-signed certificate on
// the relay's side; go-mysql's side does not verify it (the relay is in this process, at the
// other end of a pipe: the node's certificate is verified by the relay).
var localTLS struct {
	once           sync.Once
	server, client *tls.Config
	err            error
}

func localTLSConfigs() (server, client *tls.Config, err error) {
	localTLS.once.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			localTLS.err = err
			return
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice binlog relay"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(100 * 365 * 24 * time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			localTLS.err = err
			return
		}
		localTLS.server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
		localTLS.client = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	})
	return localTLS.server, localTLS.client, localTLS.err
}

// link is what the stream knows of one connection go-mysql made through the relay: the node's
// thread for it (the greeting's connection id: a KILL QUERY ends its binlog dump, goodbye.go)
// and when the relay has ended. Safe from any goroutine.
type link struct {
	id    atomic.Uint32 // 0 until the node's greeting was read
	ended chan struct{} // closed once the relay has ended, both sides closed
}

// guardAuth returns the connection go-mysql logs in over: one end of a pipe whose other end a
// relay joins to node, the TCP connection dialed to the node; and the link that reports on it.
// The relay ends (and closes both) when either side closes.
func guardAuth(node net.Conn, g guard) (net.Conn, *link) {
	app, relay := net.Pipe()
	l := &link{ended: make(chan struct{})}
	g.greeted = func(id uint32) { l.id.Store(id) }
	go func() {
		defer close(l.ended) // last: after both sides are closed
		defer node.Close()
		defer relay.Close()
		_ = node.SetDeadline(time.Now().Add(dialTimeout))
		n, a, err := g.login(node, relay)
		if err != nil {
			return
		}
		_ = node.SetDeadline(time.Time{})
		done := make(chan struct{})
		go func() {
			_, _ = io.Copy(n, a)
			// go-mysql closed its end, between two commands (it writes each whole): the node
			// gets the goodbye go-mysql's Close does not send, so it counts no aborted client
			// (a binlog dump reads no commands: there it changes nothing, goodbye.go).
			_ = backend.WriteQuit(n, false)
			n.Close()
			close(done)
		}()
		limit := g.maxPacket
		if limit <= 0 {
			limit = maxStreamPacket
		}
		_ = copyPackets(a, n, limit)
		a.Close()
		n.Close()
		<-done
	}()
	return app, l
}

// packet is one physical packet as it crossed: its sequence id and payload.
type packet struct {
	seq     uint8
	payload []byte
}

func readPacket(r io.Reader) (packet, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return packet{}, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if n > 1<<20 {
		return packet{}, errors.New("binlog: login packet over 1 MiB")
	}
	p := packet{seq: h[3], payload: make([]byte, n)}
	_, err := io.ReadFull(r, p.payload)
	return p, err
}

func writePacket(w io.Writer, p packet) error {
	b := make([]byte, 4, 4+len(p.payload))
	binary.LittleEndian.PutUint32(b, uint32(len(p.payload)))
	b[3] = p.seq
	_, err := w.Write(append(b, p.payload...))
	return err
}

// login relays the login between app (go-mysql) and node, packet by packet, up to the node's
// OK or ERR, and returns the two connections the rest is copied between (TLS ones, if the
// login upgraded). A request for the password where it may not go ends the login: go-mysql
// gets an ERR saying so (error 1251, "client does not support authentication protocol"), and
// the node gets nothing more.
func (g guard) login(node, app net.Conn) (net.Conn, net.Conn, error) {
	greeting, err := readPacket(node)
	if err != nil {
		return nil, nil, err
	}
	if mysql.IsERR(greeting.payload) {
		// Refused before the greeting (too many connections, a host not allowed): go-mysql
		// reports the node's own error.
		_ = writePacket(app, greeting)
		return nil, nil, errors.New("binlog: the node refused the connection")
	}
	hs, err := mysql.ParseHandshake(greeting.payload)
	if err != nil {
		return nil, nil, err
	}
	if g.greeted != nil {
		g.greeted(hs.ConnectionID)
	}
	if err := writePacket(app, greeting); err != nil {
		return nil, nil, err
	}
	resp, err := readPacket(app)
	if err != nil {
		return nil, nil, err
	}
	verified := false
	if r, err := mysql.ParseHandshakeResponse(resp.payload); err == nil && r.SSLRequest {
		if g.tls == nil {
			return nil, nil, errors.New("binlog: go-mysql asked for TLS without a TLS configuration")
		}
		if err := writePacket(node, resp); err != nil {
			return nil, nil, err
		}
		tn := tls.Client(node, g.tls)
		if err := tn.Handshake(); err != nil {
			return nil, nil, err
		}
		server, _, err := localTLSConfigs()
		if err != nil {
			return nil, nil, err
		}
		ta := tls.Server(app, server)
		if err := ta.Handshake(); err != nil {
			return nil, nil, err
		}
		node, app, verified = tn, ta, backend.VerifiesPeer(g.tls)
		if resp, err = readPacket(app); err != nil {
			return nil, nil, err
		}
	}
	refuse := func(seq uint8, what string) (net.Conn, net.Conn, error) {
		where := "where others may read it"
		if g.tls != nil {
			where = "over TLS that does not verify the node"
		}
		e := mysql.NewError(errNotSupportedAuthMode, "08004", "sluice refused the node's login: %s would send the password %s; set backend_tls.verify (with TLS to the nodes) or backend_tls.server_public_key", what, where)
		_ = writePacket(app, packet{seq: seq, payload: mysql.AppendERR(nil, e)})
		return nil, nil, fmt.Errorf("%w: %s", ErrUnsafeAuth, what)
	}
	if hs.AuthPlugin == mysql.AuthSHA256Password && !verified {
		// go-mysql puts the password itself in its answer to a sha256_password greeting when
		// it speaks TLS (with the relay): it must not go on.
		return refuse(resp.seq+1, "sha256_password")
	}
	if err := writePacket(node, resp); err != nil {
		return nil, nil, err
	}
	plugin, nonce := hs.AuthPlugin, hs.Nonce
	for {
		p, err := readPacket(node)
		if err != nil {
			return nil, nil, err
		}
		if len(p.payload) == 0 {
			return nil, nil, errors.New("binlog: empty packet in the login")
		}
		switch {
		case mysql.IsOK(p.payload), mysql.IsERR(p.payload):
			if err := writePacket(app, p); err != nil {
				return nil, nil, err
			}
			return node, app, nil
		case p.payload[0] == 0xfe:
			sw, n, err := mysql.ParseAuthSwitchRequest(p.payload)
			if err != nil {
				return nil, nil, err
			}
			switch sw {
			case mysql.AuthNativePassword, mysql.AuthCachingSHA2, "client_ed25519":
			default:
				// mysql_clear_password, sha256_password, dialog, ...: the password itself.
				if !verified {
					return refuse(p.seq, "a switch to "+sw)
				}
			}
			plugin, nonce = sw, n
			if len(nonce) > 20 {
				nonce = nonce[:20]
			}
		case p.payload[0] == mysql.AuthMoreDataHeader && len(p.payload) >= 2 && p.payload[1] == mysql.CachingSHA2FullAuth && plugin == mysql.AuthCachingSHA2:
			// go-mysql reads the byte after the header alone, whatever follows it: so does
			// the guard (a padded request is one too).
			if !verified {
				if len(g.pubKey) == 0 {
					return refuse(p.seq, "caching_sha2_password full authentication")
				}
				return g.fullAuthToKey(node, app, p, nonce)
			}
		case plugin == mysql.AuthSHA256Password && !verified:
			return refuse(p.seq, "sha256_password")
		case !verified && !fastOK(p.payload, plugin):
			// Nothing else belongs in an unverified login: go-mysql answers what it does not
			// expect in ways the guard does not follow (a key request, a password, a panic
			// on a short OK), so it does not see it.
			return refuse(p.seq, fmt.Sprintf("an unexpected packet (0x%02x, %d bytes) in the login", p.payload[0], len(p.payload)))
		}
		if err := writePacket(app, p); err != nil {
			return nil, nil, err
		}
		if fastOK(p.payload, plugin) {
			continue // the OK follows
		}
		c, err := readPacket(app)
		if err != nil {
			return nil, nil, err
		}
		if err := writePacket(node, c); err != nil {
			return nil, nil, err
		}
	}
}

// fastOK reports whether p is caching_sha2_password's fast-path success, which the node's OK
// follows.
func fastOK(p []byte, plugin string) bool {
	return plugin == mysql.AuthCachingSHA2 && len(p) == 2 && p[0] == mysql.AuthMoreDataHeader && p[1] == mysql.CachingSHA2FastOK
}

// fullAuthToKey plays caching_sha2_password's full authentication with the configured key:
// go-mysql is told to go ahead and sends the password as it sends it over TLS (in clear to the
// relay: its side of the pipe is TLS) or asks for the key (plain pipe: it then gets the
// configured key, not the node's); what the node gets is the password encrypted to the
// configured key.
func (g guard) fullAuthToKey(node, app net.Conn, fullAuth packet, nonce []byte) (net.Conn, net.Conn, error) {
	if err := writePacket(app, fullAuth); err != nil {
		return nil, nil, err
	}
	c, err := readPacket(app)
	if err != nil {
		return nil, nil, err
	}
	if len(c.payload) == 1 && c.payload[0] == mysql.CachingSHA2RequestKey {
		// The node is not asked: go-mysql gets the configured key under the node's sequence
		// id, and answers with the password encrypted to it, which is what the node expects
		// in place of the key request.
		if err := writePacket(app, packet{seq: c.seq + 1, payload: mysql.AppendAuthMoreData(nil, g.pubKey...)}); err != nil {
			return nil, nil, err
		}
		enc, err := readPacket(app)
		if err != nil {
			return nil, nil, err
		}
		enc.seq = c.seq
		if err := writePacket(node, enc); err != nil {
			return nil, nil, err
		}
	} else {
		password := c.payload
		if n := len(password); n > 0 && password[n-1] == 0 {
			password = password[:n-1]
		}
		enc, err := mysql.EncryptPassword(g.pubKey, string(password), nonce)
		if err != nil {
			return nil, nil, err
		}
		if err := writePacket(node, packet{seq: c.seq, payload: enc}); err != nil {
			return nil, nil, err
		}
	}
	// The node's answer, OK or ERR, goes to go-mysql under the sequence id it expects next.
	r, err := readPacket(node)
	if err != nil {
		return nil, nil, err
	}
	if c.payload[0] == mysql.CachingSHA2RequestKey && len(c.payload) == 1 {
		r.seq += 2
	}
	if err := writePacket(app, r); err != nil {
		return nil, nil, err
	}
	return node, app, nil
}
