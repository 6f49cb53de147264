package proxy

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
	"github.com/sluicedb/sluice/internal/route"
)

// Transaction pooling (pool_mode transaction). Between two commands a session whose node
// connections hold nothing but the session state every connection is brought in line with
// (backend.State: the database, COM_SET_OPTION, the replayable SETs) gives them back to the
// pool unreset; its next statement takes one (acquire), preferably one whose state is already
// a prefix of its own. What a connection holds beyond that state holds the connection: an open
// transaction, and the reasons named by the pool-only pins (route.PinCursor and after), with
// the route's own pins (temporary tables, locks, a SET sluice cannot replay...). A session that
// ends holding its connections gives them back reset, as under pool_mode session.

// sharing is what a session under pool_mode transaction knows of the state its node
// connections hold beyond backend.State: the holds that last until the session ends, the one
// that lasts until the next statement, and the session's LAST_INSERT_ID(). It belongs to the
// node set (nodeSet.share) and to the session's goroutine.
type sharing struct {
	// held are the pins that last until the session ends (route.PinSQLPrepare, PinXA,
	// PinProgram, PinUserVar, PinInsertID).
	held route.Pin
	// linger: the last statement left ROW_COUNT() or FOUND_ROWS() worth reading (a write, a
	// SELECT SQL_CALC_FOUND_ROWS): its connection is held until the next statement, which
	// keeps it only when it reads them. nextTx: it was SET TRANSACTION, which the next
	// transaction (the next statement's, in autocommit) takes on its connection: the next
	// statement runs there.
	linger, nextTx bool
	// insertID is the session's LAST_INSERT_ID(), as last read back; insertIDOn the
	// connection known to hold it (nil: none of the session's connections does, and a
	// statement that reads it restores it first); insertIDDirty: the statement that just ran
	// on insertIDOn may have changed it (read back before the connection is given back).
	insertID      uint64
	insertIDOn    *backend.Conn
	insertIDDirty bool
	// pins is the last holds computed (holds), for the session's view.
	pins route.Pin
}

// learn follows statement c, which ran on bc with result res, under pool_mode transaction.
func (sh *sharing) learn(c *classify.Result, res *relay.Result, bc *backend.Conn) {
	switch c.Kind {
	case classify.Prepare:
		sh.held |= route.PinSQLPrepare
	case classify.XA:
		sh.held |= route.PinXA
	case classify.Call, classify.Execute, classify.Unknown:
		sh.held |= route.PinProgram
	case classify.Handler:
		sh.held |= route.PinHandler
	}
	sh.nextTx = c.Kind == classify.Set && c.Flags&classify.SetTransaction != 0 && c.Flags&classify.SetSession == 0 && !res.Failed
	if c.Flags&(classify.UserVarAssign|classify.SelectInto) != 0 || (c.Kind == classify.LoadData && c.Flags&classify.UserVar != 0) {
		// User variables live where they were set.
		sh.held |= route.PinUserVar
	}
	switch c.Kind {
	case classify.Insert, classify.Update, classify.Delete, classify.Replace, classify.LoadData:
		sh.linger = true
	default:
		sh.linger = c.Flags&classify.CalcFoundRows != 0
	}
	if bc != nil && (res.InsertID || c.Flags&classify.LastInsertID != 0 || c.Kind == classify.Call || c.Kind == classify.Execute || c.Kind == classify.Unknown) {
		sh.insertIDOn, sh.insertIDDirty = bc, true
	}
}

// keepsLinger reports whether statement c reads what the lingering connection holds
// (ROW_COUNT(), FOUND_ROWS()): then it keeps the connection.
func keepsLinger(c *classify.Result) bool {
	return c.Flags&(classify.RowCount|classify.FoundRows) != 0
}

// holds is why the session's connections stay with it after the command that just ended, as
// pins (route pins, pool-only pins), and whether a transaction holds them (no pin: that is what
// transaction pooling means).
func (ns *nodeSet) holds(rs *route.Session, cursorOn func(*backend.Conn) bool) (route.Pin, bool) {
	sh := &ns.share
	pins := rs.Pins | sh.held
	if sh.linger {
		pins |= route.PinRowCount
	}
	if sh.nextTx {
		pins |= route.PinNextTx
	}
	if !rs.Autocommit {
		pins |= route.PinAutocommitOff
	}
	if rs.DiagKept {
		pins |= route.PinWarnings
	}
	tx := rs.InTx
	for _, c := range ns.conns {
		if c == nil {
			continue
		}
		if c.Status&mysql.StatusInTrans != 0 {
			tx = true
		}
		if cursorOn != nil && cursorOn(c.Conn) {
			pins |= route.PinCursor
		}
	}
	sh.pins = pins
	return pins, tx
}

// insertIDQuery reads a connection's LAST_INSERT_ID().
const insertIDQuery = "SELECT LAST_INSERT_ID()"

// readBackInsertID reads the session's LAST_INSERT_ID() from bc, the connection its last
// statement that may have changed it ran on, before bc is given back. It reports false when
// that failed (the connection is then not given back).
func (sh *sharing) readBackInsertID(bc *backend.Conn) bool {
	if !sh.insertIDDirty || sh.insertIDOn != bc {
		return true
	}
	nc := bc.NetConn()
	_ = nc.SetDeadline(time.Now().Add(resetTimeout))
	rows, err := bc.Query(insertIDQuery)
	_ = nc.SetDeadline(time.Time{})
	if err != nil || len(rows.Values) != 1 || len(rows.Values[0]) != 1 || rows.Values[0][0].Null {
		sh.held |= route.PinInsertID
		return false
	}
	v, err := strconv.ParseUint(rows.Values[0][0].S, 10, 64)
	if err != nil {
		sh.held |= route.PinInsertID
		return false
	}
	sh.insertID, sh.insertIDDirty = v, false
	return true
}

// restoreInsertID makes bc, about to run statement c that reads LAST_INSERT_ID(), hold the
// session's value, unless it is the connection known to hold it.
func (sh *sharing) restoreInsertID(c *classify.Result, bc *backend.Conn) error {
	if c.Flags&classify.LastInsertID == 0 || sh.insertIDOn == bc {
		return nil
	}
	if err := bc.Exec(fmt.Sprintf("DO LAST_INSERT_ID(%d)", sh.insertID)); err != nil {
		return err
	}
	sh.insertIDOn, sh.insertIDDirty = bc, false
	return nil
}

// lendBetween gives the session's node connections back to the pool between two commands
// under pool_mode transaction, when nothing holds them (holds): each is given back unreset,
// with what it carries of the session state summed (backend.Conn.Carries), its prepared
// statements closed (COM_STMT_CLOSE, sent with its next command: the next session prepares
// its own) and, where the session's LAST_INSERT_ID() may have changed, that read back first.
func (p *Proxy) lendBetween(ns *nodeSet, l *login, ps *PoolSettings, rs *route.Session, stmts *statements) {
	if ps == nil || ps.Mode != PoolTransaction || !p.pooled(l, ps) {
		ns.share.pins = 0
		return
	}
	pins, tx := ns.holds(rs, stmts.cursorOn)
	if pins != 0 || tx || ns.tainted {
		return
	}
	ns.lendAll(func(c *nodeConn) bool { return p.giveBack(ns, c, l, ps, stmts) })
}

// giveBack is lendBetween's for one connection: false when it stays with the session.
func (p *Proxy) giveBack(ns *nodeSet, c *nodeConn, l *login, ps *PoolSettings, stmts *statements) bool {
	snap := p.topo.Snapshot()
	if c.idx >= len(snap.Nodes) {
		return false
	}
	n := snap.Nodes[c.idx]
	if !poolable(snap, c.idx, n) || n.Name != c.name || n.Address != c.Addr || c.Fingerprint().Epoch != ns.st.Epoch {
		return false // it is closed when the session ends, or moves
	}
	if !ns.share.readBackInsertID(c.Conn) {
		return false
	}
	if ns.share.insertIDOn == c.Conn {
		ns.share.insertIDOn = nil
	}
	c.Carries(&ns.st)
	v := p.poolVariant(l, n, c.ReadOnly())
	v.Shared = true
	stmts.closeOn(c.Conn)
	p.pool.Return(c.Conn, v, ps.limitsOf(l.creds.User))
	return true
}
