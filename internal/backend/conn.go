package backend

import (
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
	// Database is the schema selected at connect (when the node offers CLIENT_CONNECT_WITH_DB):
	// the session's State.DB, so that a new connection starts in line with its session.
	Database string
	Charset  uint8
	// Capabilities are the client capabilities to ask the node for: the proxy passes on what its
	// own client negotiated, so results look the same as against the node directly.
	Capabilities uint32
	// MariaDBCapabilities are MariaDB's extended capabilities to ask for, passed on from the
	// client like Capabilities; a node that does not offer one does not get it.
	MariaDBCapabilities uint32
	Attrs               []byte // raw connection attributes to send
	// ConnectTimeout bounds dial plus handshake plus the setup statements (0: 5 s).
	ConnectTimeout time.Duration
	WriteTimeout   time.Duration
	// TLS, when set, upgrades the connection to TLS if the node offers it; with TLSRequired a
	// node that does not offer it is an error.
	TLS         *tls.Config
	TLSRequired bool
	// ServerPublicKey is the nodes' RSA public key (PEM), as configured: caching_sha2_password's
	// full authentication encrypts the password to it when the connection is not under
	// verified TLS. sluice never asks a node for its key: a node could answer with any key
	// and read the password (MySQL's clients do the same without get-server-public-key).
	ServerPublicKey []byte
	// Compress asks the node for the compressed protocol (when it offers it).
	Compress bool
	// InitSQL runs once the connection is authenticated, in order, before the read-only guard.
	InitSQL []string
	// ReadOnly opens the connection in read-only transaction mode: Dial runs ReadOnlyGuard
	// last, and the connection keeps it through Sync (see Conn.Guard). Every replica connection
	// is opened so.
	ReadOnly bool
	// ProxyHeader, when set, is written first on the new connection, before the node's greeting
	// is read: a PROXY protocol header naming the client the connection is for (proxyproto).
	ProxyHeader []byte
	// Epoch is the session-state epoch the connection starts at (State.Epoch of the session it
	// is dialed for): a new connection carries no replayed statements of that epoch.
	Epoch uint64
}

// Conn is an authenticated connection to a node.
//
// Besides the protocol state, a Conn knows which session state it carries (Fingerprint): the
// schema, the COM_SET_OPTION value and how many of the session's statements it has applied,
// and whether it is read-only. Sync, Adopt, MarkReset and Guard keep that knowledge true.
//
// A Conn is used by one goroutine at a time.
type Conn struct {
	*mysql.Conn
	Addr      string
	Handshake *mysql.Handshake
	// Caps are the capabilities negotiated with the node; MariaDBCaps MariaDB's extended ones.
	Caps        uint32
	MariaDBCaps uint32
	// Status is the last server status the node reported.
	Status uint16
	// TLS reports whether the connection to the node is encrypted; TLSVerified whether the
	// node's certificate was verified too (only then does the password itself go to the node).
	TLS         bool
	TLSVerified bool

	// TracksGTIDs: the node reports each commit's GTID in its OK packets on this connection
	// (set by whoever asked it to; MarkReset clears it, as the reset does on the node).
	TracksGTIDs bool

	// track is what the node's session_track_system_variables is on this connection, shown the
	// list a client is shown changes of under trackAll (",a,b,", lower case; "": all) (track.go).
	track trackState
	shown string
	// trackKept: ResetTrackingAll tracked every variable after its reset, which the MarkReset
	// recording that reset keeps.
	trackKept bool

	fp      Fingerprint // the session state the connection carries
	carried Carried     // what it carries of its last session's state, given back to a pool unreset (Carries)
	// userVars are the keys of the user variables sessions set on it since its last reset
	// (NoteUserVar).
	userVars map[string]struct{}
	readOnly bool // opened with Options.ReadOnly: the guard belongs here
	// unguarded: the connection may have left read-only mode since the guard last ran (a
	// replayed or relayed statement, a reset, a guard that failed). Meaningful when readOnly.
	unguarded bool
	// clean: c holds nothing of any session but its schema, the guard and GTID tracking and
	// what its current session sent it since: it was dialed, reset (ResetSession, MarkReset)
	// or woken from rest (Wake) since it was last handed on unreset (Continue).
	clean bool
	// rested: c waits in a pool with nothing of a session on it but its schema, the guard in
	// force on a read-only connection and GTID tracking as TracksGTIDs says: reset there
	// (ResetSession) or given back untouched by the session that took it clean (Rest). Wake
	// takes it into a session without another reset.
	rested bool
	// stmts are the idle prepared statements the connection keeps for its next session
	// (stmtcache.go).
	stmts stmtCache
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

// Dial connects, authenticates and runs the setup statements (InitSQL, then the read-only guard
// when o.ReadOnly), all under o.ConnectTimeout. A refusal of the node comes back as its
// *mysql.SQLError, anything else as a *ConnectError.
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
	if len(o.ProxyHeader) > 0 {
		// The node reads it before the client's first packet; it sends its greeting either way.
		if _, err := nc.Write(o.ProxyHeader); err != nil {
			_ = nc.Close()
			return nil, &ConnectError{o.Address, fmt.Errorf("writing the PROXY protocol header: %w", err)}
		}
	}
	c := &Conn{Conn: mysql.NewConn(nc, 0, 4<<10), Addr: o.Address}
	c.SetWriteTimeout(o.WriteTimeout)
	if err := c.handshake(o); err != nil {
		return nil, c.dialFailed(err, false)
	}
	c.fp = Fingerprint{Epoch: o.Epoch}
	c.carried = Carried{Sum: sumSeed} // a new connection carries no statement
	if c.Caps&mysql.ClientConnectWithDB != 0 {
		c.fp.DB = o.Database
	}
	// The setup statements are part of connecting: a node that hangs there is bounded by the
	// same deadline.
	for _, q := range o.InitSQL {
		if err := c.Exec(q); err != nil {
			return nil, c.dialFailed(err, true)
		}
	}
	if o.ReadOnly {
		c.readOnly = true
		if err := c.Guard(); err != nil {
			return nil, c.dialFailed(err, true)
		}
	}
	_ = nc.SetDeadline(time.Time{})
	c.clean = true
	// What sluice reads whole from a node (an OK, an ERR, a prepare response, a value it
	// asked for) is never a continuation; rows are relayed as they come, not read whole. A
	// node that announces more gets an error, not 1 GiB of sluice's memory.
	c.MaxPacket = MaxAnswerPacket
	return c, nil
}

// MaxAnswerPacket bounds a packet sluice reads whole from a logged-in node connection.
const MaxAnswerPacket = mysql.MaxPacketPayload

// dialFailed closes c and words err for Dial's caller: the node's own refusal as it is, anything
// else as a ConnectError. A connection loggedIn that a setup statement failed on with the
// node's error (it is between two commands) says goodbye (Quit).
func (c *Conn) dialFailed(err error, loggedIn bool) error {
	var se *mysql.SQLError
	if loggedIn && errors.As(err, &se) {
		c.Quit()
	} else {
		c.Close()
	}
	if errors.As(err, &se) {
		return se
	}
	return &ConnectError{c.Addr, err}
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
	c.MaxPacket = MaxLoginPacket
	p, err := c.ReadPacket()
	if err != nil {
		return nil, &ConnectError{addr, err}
	}
	return mysql.ParseHandshake(p)
}

// ReadOnly reports whether the connection was opened read-only (Options.ReadOnly).
func (c *Conn) ReadOnly() bool { return c.readOnly }

// errEmptyPacket: a node sent a packet without a payload where one must say what it is.
var errEmptyPacket = errors.New("backend: empty packet from the node")

// readPacket reads the node's next packet, refusing an empty one: every packet a node answers
// with starts with a byte that says what it is (an empty one, or a hostile node's, must not be
// indexed).
func (c *Conn) readPacket() ([]byte, error) {
	p, err := c.ReadPacket()
	if err == nil && len(p) == 0 {
		return nil, errEmptyPacket
	}
	return p, err
}

// Exec runs a statement and discards any result (every result of a multi-statement); the node's
// error comes back as *mysql.SQLError. It does not allocate once the scratch buffer has grown to
// the statement's size.
func (c *Conn) Exec(query string) error {
	buf := append(c.Scratch(), mysql.ComQuery)
	buf = append(buf, query...)
	if err := c.send(buf); err != nil {
		return err
	}
	return c.readResults(nil)
}

// execBytes is Exec for a statement held as bytes.
func (c *Conn) execBytes(stmt []byte) error {
	buf := append(c.Scratch(), mysql.ComQuery)
	buf = append(buf, stmt...)
	if err := c.send(buf); err != nil {
		return err
	}
	return c.readResults(nil)
}

// send writes buf, built in c's scratch buffer, as a new command and flushes it. The scratch
// buffer keeps buf's capacity.
func (c *Conn) send(buf []byte) error {
	c.KeepScratch(buf)
	c.SetSeq(0)
	return c.WritePacketFlush(buf)
}

// errLocalInfile: a statement asked sluice for a local file, which sluice never sends.
var errLocalInfile = errors.New("backend: the node asked for a LOCAL INFILE, which sluice does not send")

// readResults reads the whole answer to a COM_QUERY: its results (OK packets and text result
// sets), chained by SERVER_MORE_RESULTS_EXISTS, up to the last one or the first ERR (which ends
// the answer and is returned as *mysql.SQLError). c.Status follows every result. When keep is
// not nil, the first result is decoded into it (see Query), the others are skipped.
//
// Errors that leave the connection usable: *mysql.SQLError, ErrResultTooLarge, a malformed row
// (the result is read to its end) and errLocalInfile. Any other error leaves the answer partly
// read: close the connection.
func (c *Conn) readResults(keep *Rows) error {
	if limit := c.MaxPacket; limit == 0 || limit > MaxQueryBytes {
		// An answer to sluice's own statement (a setup statement, a replayed SET, the
		// guard, BEGIN, COMMIT, KILL) is small: bounded as Query's, so that a node cannot
		// make sluice buffer the 1 GiB a packet may be (nor keep more than 64 KiB of it).
		c.MaxPacket = MaxQueryBytes
		defer func() {
			c.MaxPacket = limit
			c.ReleaseLarge(64 << 10)
		}()
	}
	var failed error
	for {
		p, err := c.readPacket()
		if err != nil {
			return err
		}
		var status uint16
		switch {
		case mysql.IsOK(p):
			ok, err := mysql.ParseOK(p, c.Caps)
			if err != nil {
				return err
			}
			status = ok.Status
		case mysql.IsERR(p):
			return mysql.ParseERR(p)
		case p[0] == localInfileHeader:
			// An empty packet says there is no file; the node then answers this result with
			// its OK or ERR.
			if err := c.WritePacketFlush(nil); err != nil {
				return err
			}
			failed = errLocalInfile
			continue
		default:
			if status, err = c.readResultSet(p, keep); err != nil {
				if !drained(err) {
					return err
				}
				if failed == nil {
					failed = err
				}
			}
		}
		keep = nil
		c.Status = status
		if status&mysql.StatusMoreResultsExists == 0 {
			return failed
		}
	}
}

// localInfileHeader starts a LOCAL INFILE request in place of a result.
const localInfileHeader = 0xfb

// Command sends a command whose answer is one OK, EOF or ERR packet (COM_INIT_DB,
// COM_SET_OPTION, COM_PING...); the node's error comes back as *mysql.SQLError.
//
// A COM_RESET_CONNECTION (or COM_CHANGE_USER) drops the node's prepared statements: the idle
// ones c keeps are forgotten as it is sent, whatever the answer (a connection whose reset
// failed is closed).
func (c *Conn) Command(payload []byte) error {
	if len(payload) > 0 && (payload[0] == mysql.ComResetConnection || payload[0] == mysql.ComChangeUser) {
		c.ForgetStmts()
		c.forgetUserVars()
		c.trackReset()
	}
	c.SetSeq(0)
	if err := c.WritePacketFlush(payload); err != nil {
		return err
	}
	return c.readCommandAnswer()
}

// readCommandAnswer reads the answer to a command sent already whose answer is one OK, EOF or
// ERR packet (Command's).
func (c *Conn) readCommandAnswer() error {
	c.SetSeq(1)
	if limit := c.MaxPacket; limit == 0 || limit > MaxQueryBytes {
		c.MaxPacket = MaxQueryBytes // as readResults
		defer func() {
			c.MaxPacket = limit
			c.ReleaseLarge(64 << 10)
		}()
	}
	p, err := c.readPacket()
	if err != nil {
		return err
	}
	switch {
	case mysql.IsERR(p):
		return mysql.ParseERR(p)
	case mysql.IsOK(p):
		if ok, err := mysql.ParseOK(p, c.Caps); err == nil {
			c.Status = ok.Status
		}
	case mysql.IsEOF(p, len(p)):
		// COM_SET_OPTION answers with an EOF (an OK with the 0xfe header under DEPRECATE_EOF).
		if status, err := mysql.TerminatorStatus(p, c.Caps); err == nil && len(p) >= 5 {
			c.Status = status
		}
	}
	return nil
}
