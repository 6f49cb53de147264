package backend

import (
	"errors"
	"strings"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Tracking of every session variable (pool_mode transaction). A stored function or trigger
// that runs SET SESSION changes the node connection's session where no statement of the
// session's own names it; the node says so in its OK (session tracking) only for the variables
// session_track_system_variables lists, by default autocommit, the character sets and
// time_zone. So that a pooled connection never carries such a change to the next session
// unseen, sluice asks the node for '*' (every variable) on a connection that is fresh or just
// reset, and shows the client only the changes of the list it would have had on a connection
// of its own (the one the node tracked before: its global list).

// trackState is what a connection's session_track_system_variables is.
type trackState uint8

const (
	// trackDefault: the node's global list (a fresh or reset connection); TrackAllVars may
	// replace it.
	trackDefault trackState = iota
	// trackAll: '*', asked by TrackAllVars; the client is shown the changes of shown only.
	trackAll
	// trackClient: a session's own statement set the list (a replayed or relayed SET that
	// names it), or the node refused '*': the node reports what the list says, which the
	// client is shown whole, and sluice leaves the list alone until a reset.
	trackClient
)

var (
	selectTrackList = []byte("SELECT @@session.session_track_system_variables")
	setTrackAll     = []byte("SET SESSION session_track_system_variables = '*'")
)

// CanTrackAll reports whether the connection tracks the node's global list of variables, which
// TrackAllVars would widen: it is fresh or was reset since, and no session set the list itself.
func (c *Conn) CanTrackAll() bool { return c.track == trackDefault }

// TrackAllVars makes the node report every session variable a statement changes
// (session_track_system_variables = '*'), reading first, in the same round trip, the list the
// connection tracked, which is what a client is shown (HidesVar). Call it on a connection that
// CanTrackAll. A refusal of the node is its *mysql.SQLError (the connection stays usable and
// tracks what it did); any other error leaves the answers partly read: close the connection.
func (c *Conn) TrackAllVars() error {
	if err := c.writeTrackAll(); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	return c.readTrackAll()
}

// ResetTrackingAll resets the node's session (COM_RESET_CONNECTION, as Command does) and, in
// the same round trip, makes it track every variable (TrackAllVars): the reset puts the list
// back to the global one, so under pool_mode transaction both go together, and a session that
// takes a connection another one used pays one round trip for them, not two. The tracking
// outlives the MarkReset that records this reset. The reset's refusal is the node's
// *mysql.SQLError (close the connection); a refusal of the tracking is no error (the
// connection tracks what it did, and is not asked again until a reset); any other error leaves
// the answers partly read: close the connection.
func (c *Conn) ResetTrackingAll() error {
	c.ForgetStmts()
	c.forgetUserVars()
	c.trackReset()
	c.SetSeq(0)
	if err := c.WritePacket([]byte{mysql.ComResetConnection}); err != nil {
		return err
	}
	if err := c.writeTrackAll(); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	resetErr := c.readCommandAnswer()
	var se *mysql.SQLError
	if resetErr != nil && !errors.As(resetErr, &se) {
		return resetErr
	}
	trackErr := c.readTrackAll() // answered whatever the reset's answer
	if resetErr != nil {
		c.trackReset() // what the node tracks after a failed reset is not known: the connection goes
		return resetErr
	}
	if trackErr != nil && !errors.As(trackErr, &se) {
		return trackErr
	}
	c.trackKept = c.track == trackAll
	return nil
}

// writeTrackAll writes TrackAllVars's two statements without sending them.
func (c *Conn) writeTrackAll() error {
	if err := c.WriteQuery(selectTrackList); err != nil {
		return err
	}
	return c.WriteQuery(setTrackAll)
}

// readTrackAll reads the answers to writeTrackAll's statements and records what the connection
// tracks (TrackAllVars).
func (c *Conn) readTrackAll() error {
	var rows Rows
	c.SetSeq(1)
	readErr := c.readResults(&rows)
	var se *mysql.SQLError
	if readErr != nil && !errors.As(readErr, &se) {
		return readErr
	}
	c.SetSeq(1)
	if err := c.readResults(nil); err != nil {
		if errors.As(err, &se) {
			c.track, c.shown = trackClient, "" // refused: left as it is until a reset, not asked again
		}
		return err
	}
	// The SET took. When the list it replaced is unknown, nothing is hidden from the client
	// (shown ""): it may see more variables reported than on a connection of its own.
	c.track, c.shown = trackAll, ""
	if readErr == nil && len(rows.Values) == 1 && len(rows.Values[0]) == 1 {
		c.shown = "," + strings.ToLower(strings.ReplaceAll(rows.Values[0][0].S, " ", "")) + ","
	}
	return nil
}

// HidesVar reports whether a change of system variable name, reported by the node in an OK's
// session-state block, is one the client would not have been told of on a connection of its
// own: sluice asked for it (TrackAllVars) and the list the connection had does not name it.
// It does not allocate.
func (c *Conn) HidesVar(name []byte) bool {
	s := c.shown
	if c.track != trackAll || s == "" || strings.Contains(s, ",*,") {
		return false
	}
	for i := 0; i+len(name)+2 <= len(s); i++ {
		if s[i] == ',' && s[i+len(name)+1] == ',' && equalFold(s[i+1:i+1+len(name)], name) {
			return false
		}
	}
	return true
}

// equalFold reports whether lower (lower case) and b are equal, ASCII case-insensitively.
func equalFold(lower string, b []byte) bool {
	if len(lower) != len(b) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// NoteReported follows the session-state block of an OK the node sent for a session's
// statement, before the client is shown it: a change of session_track_system_variables itself
// means the session set its own list, which the node reports from then on and the client is
// shown whole (from this OK on). It does not allocate.
func (c *Conn) NoteReported(block []byte) {
	if c.track != trackAll {
		return
	}
	for len(block) > 0 {
		sc, rest, err := mysql.NextSessionChange(block)
		if err != nil {
			return
		}
		if sc.Type == mysql.SessionTrackSystemVariables && equalFold("session_track_system_variables", sc.Name) {
			c.track, c.shown = trackClient, ""
			return
		}
		block = rest
	}
}

// trackReset records that the node put the list back to its global value (a reset).
func (c *Conn) trackReset() { c.track, c.shown, c.trackKept = trackDefault, "", false }

// noteTrackStmt records that stmt, which ran on the connection as a session's own (replayed or
// relayed), may have set session_track_system_variables: the session's list from then on.
func (c *Conn) noteTrackStmt(stmt []byte) {
	if c.track != trackClient && containsFold(stmt, "session_track") {
		c.track, c.shown = trackClient, ""
	}
}

// containsFold reports whether s contains word (lower case), ASCII case-insensitively.
func containsFold(s []byte, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		j := 0
		for ; j < len(word); j++ {
			b := s[i+j]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			if b != word[j] {
				break
			}
		}
		if j == len(word) {
			return true
		}
	}
	return false
}
