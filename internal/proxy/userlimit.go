package proxy

import (
	"errors"
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Per-user connection limits (users[].max_user_connections): a session holds a place under its
// user's limit from its login to its end, whichever way it ends.

// errUserLimitReached is the server's ER_USER_LIMIT_REACHED.
const errUserLimitReached = 1226

// errUserLimit: the user was at its max_user_connections (the client got error 1226).
var errUserLimit = errors.New("user at its max_user_connections")

// userLimit is one configured user's max_user_connections (max) and the places held under it
// (held: the sessions logged in as the user now, over every endpoint). Shared by every session:
// take and give are safe from any goroutine. Invariant: 0 <= held <= max; each give follows
// one take (a login's place is given back once, login.release).
type userLimit struct {
	max  int64
	held atomic.Int64
}

// take reserves one place; false (nothing taken) when all max are held. A compare-and-swap
// rather than add-then-undo: a login that is refused never holds a place, even for a moment,
// so that a login racing it is not refused for a place no one keeps.
func (u *userLimit) take() bool {
	for {
		n := u.held.Load()
		if n >= u.max {
			return false
		}
		if u.held.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// give returns a place taken.
func (u *userLimit) give() { u.held.Add(-1) }

// userLimitReached is what a server answers a login past the user's max_user_connections
// (max), after the password: sql_connect.cc's check_for_max_user_connections, worded as
// errmsg-utf8.txt has it ("%-.64s": the name cut at 64 characters).
func userLimitReached(user string, max int64) *mysql.SQLError {
	return mysql.NewError(errUserLimitReached, "42000", "User '%.64s' has exceeded the 'max_user_connections' resource (current value: %d)", user, max)
}

// holdUser takes a place for user name under its limit (limits: Proxy.userLimits), giving
// back the place held for the session's previous user, if any; a session that logs in again
// as the same user (COM_CHANGE_USER) keeps its place. When the user is at its limit it returns
// the client's error and the session keeps what it held.
func (l *login) holdUser(limits map[string]*userLimit, name string) *mysql.SQLError {
	lim := limits[name]
	if lim == l.held {
		return nil // the same user, or neither has a limit
	}
	if lim != nil && !lim.take() {
		return userLimitReached(name, lim.max)
	}
	l.release()
	l.held = lim
	return nil
}

// release gives back the session's place under its user's limit: at the session's end, on
// every path, once it left the proxy's list of sessions (Proxy.Serve's session goroutine). A
// second call does nothing.
func (l *login) release() {
	if l.held != nil {
		l.held.give()
		l.held = nil
	}
}
