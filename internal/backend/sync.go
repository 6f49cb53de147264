package backend

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Session-state sync. A session spreads its statements over several node connections; what it
// changed in its session (the schema, COM_SET_OPTION, replayable SET statements) must hold on
// every one of them before it runs a statement there. The session describes that state as a
// State; each Conn knows which State it carries (its Fingerprint), and Sync sends only the
// difference. Statements that cannot be undone are never rolled back: a session that resets its
// state starts a new Epoch, and a connection of an older epoch is replaced or reset by the
// caller (ErrDiverged).
//
// None of this is safe for concurrent use: a State belongs to its session, a Conn to the one
// goroutine using it.

// ReadOnlyGuard is the statement that keeps a replica connection read-only: a statement
// misrouted there fails instead of forking the data (on MariaDB an account with ALL PRIVILEGES
// can write on a read_only replica). It is the first statement sluice runs on such a connection
// (Options.ReadOnly) and the last one after replaying the session's statements, which may include
// the client's own SET SESSION TRANSACTION READ WRITE, right for the primary.
const ReadOnlyGuard = "SET SESSION TRANSACTION READ ONLY"

// State is what a session wants every one of its node connections to carry.
//
// Ownership: a State belongs to its session. Stmts only grows within one Epoch, and the byte
// slices appended to it belong to the session and are never modified afterwards: a Conn reads
// them during Sync and keeps none of them. To forget its state (COM_RESET_CONNECTION,
// COM_CHANGE_USER) the session empties Stmts and increments Epoch.
type State struct {
	// DB is the schema selected; empty leaves each connection's schema as it is.
	DB string
	// Options is the COM_SET_OPTION value in force (0, MYSQL_OPTION_MULTI_STATEMENTS_ON, is what a
	// new connection is taken to carry).
	Options uint16
	// Epoch counts the session's resets of its state.
	Epoch uint64
	// Stmts are the replayable session statements (SET ...) the session ran since its state was
	// last reset, in order.
	Stmts [][]byte

	// sums[i] is the content sum of Stmts[:i+1] (Sum), for sumsEpoch: extended as asked.
	sums      []uint64
	sumsEpoch uint64
}

// Sum is the content sum of the first n statements of t (n <= len(t.Stmts)), the same for any
// session whose first n statements are the same bytes, whatever its epoch: how a connection
// that carries another session's state (transaction pooling) is matched to this one. Sums are
// kept as they are computed: asking again costs nothing, and no call allocates once the
// statements were summed.
func (t *State) Sum(n int) uint64 {
	if t.sumsEpoch != t.Epoch || len(t.sums) > len(t.Stmts) {
		t.sums, t.sumsEpoch = t.sums[:0], t.Epoch
	}
	for len(t.sums) < n {
		h := uint64(sumSeed)
		if k := len(t.sums); k > 0 {
			h = t.sums[k-1]
		}
		t.sums = append(t.sums, sumStmt(h, t.Stmts[len(t.sums)]))
	}
	if n == 0 {
		return sumSeed
	}
	return t.sums[n-1]
}

// sumSeed is the sum of no statements; sumStmt adds one statement to sum h (FNV-1a over its
// length and bytes, so that statement boundaries count).
const sumSeed = 14695981039346656037

func sumStmt(h uint64, stmt []byte) uint64 {
	const prime = 1099511628211
	for n := len(stmt); ; n >>= 8 {
		h = (h ^ uint64(byte(n))) * prime
		if n < 256 {
			break
		}
	}
	h = (h ^ 0xff) * prime
	for _, b := range stmt {
		h = (h ^ uint64(b)) * prime
	}
	return h
}

// Carried is what a connection given back to a pool without a reset carries of its last
// session's state: the first Applied statements of that session's state, summed (State.Sum).
//
// The sum only narrows the search: FNV-1a is no defence against a client that chooses its
// statements' bytes (comments included) to make its sum another session's, and a connection
// taken on the sum alone would put that client's settings under the other session. So the
// statements themselves are kept (stmts: the slice headers, copied; the bytes are the
// session's, never modified once appended to its State) and compared (Continues).
type Carried struct {
	Applied int
	Sum     uint64
	stmts   [][]byte
}

// Carries records what c carries of t (its fingerprint's statements of t): called as c goes
// back to a pool without a reset. c's epoch means nothing to the next session; Continue
// matches the carried statements against that session's.
func (c *Conn) Carries(t *State) Carried {
	n := c.fp.Applied
	if c.fp.Epoch != t.Epoch || n > len(t.Stmts) {
		n = 0
	}
	// The headers are copied (into the connection's own list, reused): the session may
	// empty its list and append to it again, overwriting them.
	c.carried = Carried{Applied: n, Sum: t.Sum(n), stmts: append(c.carried.stmts[:0], t.Stmts[:n]...)}
	if c.fp.Epoch != t.Epoch {
		c.carried.Sum = ^uint64(0) // statements of an epoch t forgot: matches nothing
	}
	return c.carried
}

// Continues reports whether c, given back to a pool without a reset, carries a prefix of t's
// statements (and nothing else of them): then Continue makes it t's, and Sync sends only the
// rest.
func (c *Conn) Continues(t *State) bool {
	n := c.carried.Applied
	if n > len(t.Stmts) || c.carried.Sum != t.Sum(n) || len(c.carried.stmts) != n {
		return false
	}
	for i, stmt := range c.carried.stmts {
		if !bytes.Equal(stmt, t.Stmts[i]) {
			return false // the sums collide: another session's statements
		}
	}
	return true
}

// Continue makes c, of which Continues(t) holds, carry t's first statements in t's epoch; the
// schema, the COM_SET_OPTION value and the read-only guard stay what c has (Sync brings the
// rest in line).
func (c *Conn) Continue(t *State) {
	c.clean = false // it holds what its last session left beyond t's statements
	c.fp.Epoch, c.fp.Applied = t.Epoch, c.carried.Applied
}

// Fingerprint is a summary of session state, comparable with ==: a State's, or what a Conn
// carries. Applied counts the statements of Epoch applied.
type Fingerprint struct {
	DB      string
	Options uint16
	Epoch   uint64
	Applied int
}

// Fingerprint summarizes t.
func (t *State) Fingerprint() Fingerprint {
	return Fingerprint{DB: t.DB, Options: t.Options, Epoch: t.Epoch, Applied: len(t.Stmts)}
}

// Fingerprint is the session state c carries. When it equals the State's, Sync sends nothing
// unless the read-only guard is due (after MarkReset or a failed Guard); the converse does not
// hold: with an empty State.DB the schemas need not match. Sync itself costs nothing when
// nothing is to be sent, so callers call it before every use rather than compare.
func (c *Conn) Fingerprint() Fingerprint { return c.fp }

// ErrDiverged is returned by Sync for a connection that carries state of another epoch of the
// session's state (statements the session has since forgotten, which cannot be undone here):
// the caller replaces the connection, or resets it and calls MarkReset. Nothing was sent.
var ErrDiverged = errors.New("backend: connection carries session state the session has reset")

// SyncError is a node's refusal of a part of the session state Sync sent it. Its Err is the
// node's error, found with errors.As(err, &*mysql.SQLError) like any other refusal; a SyncError
// tells it from a transport error, which Sync returns as it is.
type SyncError struct {
	// Command is mysql.ComInitDB, mysql.ComSetOption or mysql.ComQuery (a replayed statement or
	// the guard).
	Command byte
	// Stmt is the schema of COM_INIT_DB, the statement of COM_QUERY, empty for COM_SET_OPTION.
	Stmt string
	Err  *mysql.SQLError
}

func (e *SyncError) Error() string {
	switch e.Command {
	case mysql.ComInitDB:
		return fmt.Sprintf("node refused COM_INIT_DB %q: %v", e.Stmt, e.Err)
	case mysql.ComSetOption:
		return fmt.Sprintf("node refused COM_SET_OPTION: %v", e.Err)
	}
	stmt := e.Stmt
	if len(stmt) > 80 {
		stmt = stmt[:80] + "..."
	}
	return fmt.Sprintf("node refused session statement %q: %v", stmt, e.Err)
}

func (e *SyncError) Unwrap() error { return e.Err }

// refused wraps a node's refusal of cmd in a SyncError; other errors pass as they are.
func refused(err error, cmd byte, stmt string) error {
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		return err
	}
	return &SyncError{Command: cmd, Stmt: stmt, Err: se}
}

// Sync brings c in line with t, sending only the difference, in this order: COM_INIT_DB when
// the schema differs (and t.DB is set), COM_SET_OPTION when the option differs, then the
// statements of t not applied here yet. On a read-only connection the guard comes last whenever
// a statement was replayed, and whenever it is due otherwise (MarkReset, a failed Guard).
//
// When nothing differs Sync sends nothing and does not allocate. A connection of another epoch
// (or one that claims more statements than t has) gets ErrDiverged, and nothing is sent.
//
// A refusal of the node is a *SyncError; c's fingerprint then counts what was applied before
// it, and on a read-only connection the guard has been run all the same (the refused statement
// may have changed the session before failing). A transport error is returned as it is: close
// the connection.
func (c *Conn) Sync(t *State) error {
	if c.fp.Epoch != t.Epoch || c.fp.Applied > len(t.Stmts) {
		return ErrDiverged
	}
	if t.DB != "" && c.fp.DB != t.DB {
		buf := append(c.Scratch(), mysql.ComInitDB)
		buf = append(buf, t.DB...)
		c.KeepScratch(buf)
		if err := c.Command(buf); err != nil {
			return refused(err, mysql.ComInitDB, t.DB)
		}
		c.fp.DB = t.DB
	}
	if c.fp.Options != t.Options {
		buf := append(c.Scratch(), mysql.ComSetOption, byte(t.Options), byte(t.Options>>8))
		c.KeepScratch(buf)
		if err := c.Command(buf); err != nil {
			return refused(err, mysql.ComSetOption, "")
		}
		c.fp.Options = t.Options
	}
	var failed error
	for c.fp.Applied < len(t.Stmts) {
		stmt := t.Stmts[c.fp.Applied]
		c.unguarded = true
		if err := c.execBytes(stmt); err != nil {
			var se *mysql.SQLError
			if !errors.As(err, &se) {
				return err
			}
			failed = &SyncError{Command: mysql.ComQuery, Stmt: string(stmt), Err: se}
			break
		}
		c.fp.Applied++
	}
	if c.readOnly && c.unguarded {
		if err := c.Guard(); err != nil {
			return refused(err, mysql.ComQuery, ReadOnlyGuard)
		}
	}
	return failed
}

// Adopt records that c now carries t as it is: the node itself ran a statement of the session
// (the caller relayed a USE, a SET or a COM_INIT_DB there, and recorded it in t). c's
// fingerprint becomes t's. When t has statements c had not applied, the guard of a read-only
// connection is due at the next Sync (the statement may have been SET SESSION TRANSACTION READ
// WRITE); a caller that needs the guard at once calls Guard.
func (c *Conn) Adopt(t *State) {
	if t.Epoch != c.fp.Epoch || len(t.Stmts) > c.fp.Applied {
		c.unguarded = true
	}
	c.fp = t.Fingerprint()
}

// Rest records that c goes back to a pool untouched by the session that took it: the caller
// vouches that no statement, prepare or replay was sent on it since that session took it. When
// c was clean then (dialed, reset, or woken from rest; not handed on unreset), it holds the
// schema and nothing else of any session (the guard in force, GTID tracking as TracksGTIDs
// says), and the next session's Wake takes it without a reset; Rest reports whether it is so.
func (c *Conn) Rest() bool {
	c.fp = Fingerprint{DB: c.fp.DB, Options: c.fp.Options}
	c.rested = c.clean && (!c.readOnly || !c.unguarded)
	return c.rested
}

// Wake takes c, at rest in a pool (ResetSession, Rest), into a session at epoch: it reports
// false, changing nothing, when c is not at rest (the caller resets it). After true, c carries
// no statement of epoch and the guard is not due.
func (c *Conn) Wake(epoch uint64) bool {
	if !c.rested {
		return false
	}
	c.rested, c.clean = false, true
	c.fp.Epoch, c.fp.Applied = epoch, 0
	return true
}

// MarkReset records that the node reset the session itself (the caller relayed a
// COM_RESET_CONNECTION): c carries no statement of epoch, the session's new epoch. The schema
// and the COM_SET_OPTION value stay as they were (MariaDB keeps the schema across
// COM_RESET_CONNECTION). The reset also ended read-only mode: on a read-only connection the
// guard is due, and the next Sync runs it even when the fingerprints match (or call Guard). The
// node dropped its prepared statements too: the idle ones c keeps are forgotten.
func (c *Conn) MarkReset(epoch uint64) {
	c.ForgetStmts()
	c.forgetUserVars()
	c.fp.Epoch, c.fp.Applied = epoch, 0
	c.unguarded, c.rested, c.clean = true, false, true
	c.TracksGTIDs = false // session_track_system_variables is the global value again
}

// Guard runs ReadOnlyGuard on a read-only connection (Options.ReadOnly); on any other
// connection it does nothing and returns nil. The caller runs it after relaying a statement that
// may have made the connection read-write (Sync does so after replaying). A refusal is the
// node's *mysql.SQLError; the guard then stays due.
func (c *Conn) Guard() error {
	if !c.readOnly {
		return nil
	}
	c.unguarded = true
	if err := c.Exec(ReadOnlyGuard); err != nil {
		return err
	}
	c.unguarded = false
	return nil
}
