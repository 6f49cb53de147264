package proxy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
)

// evaluated carries a SET whose values are expressions (route.ReplayValues: SET sql_mode =
// CONCAT(@@sql_mode, ',X'), Connector/J's start-up SET), which just succeeded on the current
// connection: it reads there, in one round trip, the values the variables took
// (backend.Conn.ReadSessionVars), and adds to the session state the SET of those literals
// (backend.AppendSetSession), which every other connection of the session's replays before
// its next use; the current one holds them already. stmt is read as the node read it (d).
// autocommit is left out: the status flags follow it.
//
// It reports false, adding nothing, when it cannot (a name it cannot read, too many
// variables, a node that refused the read, a value past backend.MaxSessionVarBytes or one that
// does not read as its type): the caller then pins the session, as before. err is a transport
// or protocol error: the connection, which holds the session's new values and nowhere else,
// is broken, and the session must end.
func (ns *nodeSet) evaluated(stmt []byte, d classify.Dialect) (ok bool, err error) {
	c := ns.at(ns.cur())
	if c == nil {
		return false, nil
	}
	var names []string
	if !classify.SetVars(stmt, d, func(name []byte, _ bool) {
		if !strings.EqualFold(string(name), "autocommit") {
			names = append(names, string(name))
		}
	}) || len(names) == 0 || len(names) > backend.MaxSessionVarsPerRead {
		return false, nil
	}
	nc := c.NetConn()
	_ = nc.SetDeadline(time.Now().Add(resetTimeout))
	vals, err := c.ReadSessionVars(names)
	_ = nc.SetDeadline(time.Time{})
	if err != nil {
		var se *mysql.SQLError
		var ue *backend.UnreadValueError
		if errors.As(err, &se) || errors.Is(err, backend.ErrUserVarTooLarge) || errors.As(err, &ue) {
			return false, nil
		}
		return false, fmt.Errorf("node %s: reading back the values of %s: %w", c.name, names, err)
	}
	set, ok := backend.AppendSetSession(nil, vals)
	if !ok {
		return false, nil
	}
	ns.st.Stmts = append(ns.st.Stmts, set)
	c.Adopt(&ns.st) // it holds the values: they were read there
	return true, nil
}
