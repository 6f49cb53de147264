package proxy

import (
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
	// PinProgram, PinUserVar, PinInsertID, PinHandler, PinSequence).
	held route.Pin
	// linger: the last statement left ROW_COUNT() or FOUND_ROWS() worth reading (a write, a
	// SELECT SQL_CALC_FOUND_ROWS): its connection is held until the next statement, which
	// keeps it only when it reads them. nextTx: a SET TRANSACTION (the next transaction's
	// characteristics) is pending on the connection: the node keeps it until a transaction
	// takes it, and a statement that opens none (DO 1, SELECT 1) leaves it there, where it
	// would make another session's next transaction read-only or change its isolation level.
	// The connection is held until BEGIN, COMMIT or ROLLBACK (an autocommit statement that
	// took it is not told apart: held a little longer).
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
	// varsReported: the answer to the statement under way reported a session variable
	// changed (session tracking), or a change it could not describe (a classic EOF); learn
	// reads it: a statement that is no SET of session variables changed one sluice did not
	// see set (a stored function's or trigger's SET), which nothing replays.
	varsReported bool
	// active: the session gives its connections back between statements (lendBetween saw
	// pool_mode transaction): what a statement reads of user variables and LAST_INSERT_ID()
	// is restored on a connection that may not hold it (before).
	active bool

	// User variables, by key (classify.AppendUserVarKey): vars are the session's values as
	// last read back; on the keys whose session value the current connection holds
	// (restored or assigned there since it was taken); dirty the names assigned on it since
	// they were last read back (read back before it is given back).
	vars  map[string]backend.UserVar
	on    map[string]bool
	dirty map[string]string // key -> name
	// allOn is the connection that holds every one of the session's variables and no other
	// session's (a CALL or EXECUTE ran there: before restored them all first).
	allOn *backend.Conn
	// restore and buf are before's scratch.
	restore []backend.UserVar
	buf     []byte
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
	if sh.varsReported && !(c.Kind == classify.Set && c.Flags&setsSessionVars != 0) {
		// Not a SET of its own (SELECT f(), an INSERT that fires a trigger, SET @a = f()):
		// the connection carries a session variable the session's state does not name.
		sh.held |= route.PinProgram
	}
	sh.varsReported = false
	if c.Flags&classify.Sequence != 0 {
		sh.held |= route.PinSequence // LASTVAL / PREVIOUS VALUE FOR read what this connection drew
	}
	switch {
	case c.Kind == classify.Set && c.Flags&classify.SetTransaction != 0 && c.Flags&classify.SetSession == 0 && !res.Failed:
		sh.nextTx = true
	case c.Kind == classify.Begin, c.Kind == classify.Commit, c.Kind == classify.Rollback:
		sh.nextTx = false
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

// setsSessionVars are the flags of a SET that changes session variables itself (replayed, or
// held by the route's PinSet): the change its answer reports is its own.
const setsSessionVars = classify.SetSession | classify.SetNames | classify.SetRole | classify.SetAutocommit | classify.SetTransaction

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
	pins := rs.Pins&^route.PinUserVar | sh.held // user variables are read back and restored
	if sh.linger {
		pins |= route.PinRowCount
	}
	if sh.nextTx {
		pins |= route.PinNextTx
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

// readBack reads from bc, before it is given back, what the session's statements there may
// have changed and the session must find on its next connection: the user variables they
// assigned and LAST_INSERT_ID() (backend.Conn.ReadUserVars: one round trip). It reports false
// when that failed: bc stays with the session, held by PinUserVar or PinInsertID (a value too
// large to carry, a node that would not say).
func (sh *sharing) readBack(bc *backend.Conn) bool {
	liid := sh.insertIDDirty && sh.insertIDOn == bc
	if len(sh.dirty) == 0 && !liid {
		return true
	}
	names := make([]string, 0, len(sh.dirty))
	for _, n := range sh.dirty {
		names = append(names, n)
	}
	if len(names) > backend.MaxUserVarsPerRead {
		sh.held |= route.PinUserVar
		return false
	}
	nc := bc.NetConn()
	_ = nc.SetDeadline(time.Now().Add(resetTimeout))
	vals, id, err := bc.ReadUserVars(names, liid)
	_ = nc.SetDeadline(time.Time{})
	if err != nil {
		if len(names) > 0 {
			sh.held |= route.PinUserVar
		}
		if liid {
			sh.held |= route.PinInsertID
		}
		return false
	}
	if liid {
		sh.insertID, sh.insertIDDirty = id, false
	}
	if len(vals) > 0 && sh.vars == nil {
		sh.vars = map[string]backend.UserVar{}
	}
	for k := range sh.dirty {
		for _, v := range vals {
			if v.Name == sh.dirty[k] {
				sh.vars[k] = v
			}
		}
	}
	clear(sh.dirty)
	return true
}

// left forgets what bc, given back, held of the session's.
func (sh *sharing) left(bc *backend.Conn) {
	if sh.insertIDOn == bc {
		sh.insertIDOn = nil
	}
	if sh.allOn == bc {
		sh.allOn = nil
	}
	clear(sh.on)
}

// before readies bc for statement c (text stmt, read under d) of a session that gives its
// connections back between statements: the user variables c reads that bc may not hold with
// the session's values (the session's value, or NULL for one it never set: another session's
// may be there) and, when c reads it, LAST_INSERT_ID(), restored in one statement
// (backend.AppendRestore); the variables c assigns noted dirty (read back before bc is given
// back). Nothing is done for a statement that names neither.
//
// autocommit is the session's autocommit when bc carries it (the primary's connection, or the
// bound replica's of a read-only endpoint): a connection given back with autocommit off (no
// transaction open) is taken by sessions that have it on, and the other way round; it is set
// to the session's first (SET autocommit, only where it differs).
func (sh *sharing) before(c *classify.Result, stmt []byte, d classify.Dialect, bc *backend.Conn, carries, autocommit bool) error {
	if !sh.active {
		return nil
	}
	if carries && (bc.Status&mysql.StatusAutocommit != 0) != autocommit {
		q := "SET autocommit=0"
		if autocommit {
			q = "SET autocommit=1"
		}
		if err := bc.Exec(q); err != nil {
			return err
		}
	}
	unnamed := c.Kind == classify.Call || c.Kind == classify.Execute || c.Kind == classify.Unknown
	if c.Flags&(classify.UserVar|classify.LastInsertID) == 0 && !unnamed {
		return nil
	}
	liid := c.Flags&classify.LastInsertID != 0
	sh.restore = sh.restore[:0]
	if sh.on == nil {
		sh.on, sh.dirty = map[string]bool{}, map[string]string{}
	}
	if c.Flags&classify.UserVar != 0 && sh.allOn != bc {
		eff := classify.UserVars(stmt, d, func(tok []byte, assigns bool) {
			sh.buf = classify.AppendUserVarKey(sh.buf[:0], tok, d)
			if sh.on[string(sh.buf)] && !assigns {
				return
			}
			key, name := string(sh.buf), string(classify.AppendUserVarName(nil, tok, d))
			if !sh.on[key] && !assigns {
				sh.need(key, name, bc)
			}
			sh.on[key] = true
			if assigns {
				sh.dirty[key] = name
				bc.NoteUserVar(key)
			}
		})
		liid = liid || eff&classify.VarsLastInsertID != 0
		unnamed = unnamed || eff&(classify.VarsUnnamed|classify.VarsExecute) != 0
	}
	if unnamed && sh.allOn != bc {
		// A CALL, an EXECUTE, text sluice cannot read: it may read or set any variable. Every
		// one of the session's is put in place first, and every other session's on bc made
		// NULL; from now on bc holds the session's variables (it is held to the session's end:
		// route.PinProgram, PinSQLPrepare), whatever the statement sets.
		for key := range sh.vars {
			if !sh.on[key] {
				sh.need(key, key, bc)
				sh.on[key] = true
			}
		}
		bc.UserVarKeys(func(key string) {
			if !sh.on[key] {
				sh.need(key, key, bc)
				sh.on[key] = true
			}
		})
		sh.allOn = bc
		liid = true
	}
	liid = liid && sh.insertIDOn != bc
	if len(sh.restore) == 0 && !liid {
		return nil
	}
	sh.buf = backend.AppendRestore(sh.buf[:0], sh.restore, sh.insertID, liid)
	if err := bc.Exec(string(sh.buf)); err != nil {
		return err
	}
	if liid {
		sh.insertIDOn, sh.insertIDDirty = bc, false
	}
	return nil
}

// need queues the restore of user variable key (written name) on bc, before a statement
// reads it there: the session's value, or NULL when the session never set it but another
// session did on bc; nothing when neither did (it reads as never set, as it would on a new
// connection: a NULL restored there would change its type under a statement prepared before).
func (sh *sharing) need(key, name string, bc *backend.Conn) {
	v, ok := sh.vars[key]
	if !ok {
		if !bc.MayHoldUserVar(key) {
			return
		}
		v = backend.UserVar{Type: backend.UserVarString, Null: true, Collation: "binary"}
	}
	v.Name = name
	sh.restore = append(sh.restore, v)
	bc.NoteUserVar(key)
}

// lendBetween gives the session's node connections back to the pool between two commands
// under pool_mode transaction, when nothing holds them (holds): each is given back unreset,
// with what it carries of the session state summed (backend.Conn.Carries), its prepared
// statements kept there idle for the next session that runs the same text (statements.park,
// backend.Conn.KeepStmt) and, where the session's LAST_INSERT_ID() may have changed, that read back first.
func (p *Proxy) lendBetween(ns *nodeSet, l *login, ps *PoolSettings, rs *route.Session, stmts *statements) {
	if ps == nil || ps.Mode != PoolTransaction || !p.pooled(l, ps) {
		ns.share.pins, ns.share.active = 0, false
		return
	}
	ns.share.active = true
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
	if !ns.share.readBack(c.Conn) {
		return false
	}
	ns.share.left(c.Conn)
	c.Carries(&ns.st)
	v := p.poolVariant(l, n, c.ReadOnly())
	v.Shared = true
	stmts.park(c.Conn) // its statements stay prepared there for the next session (backend.StmtCache)
	p.pool.Return(c.Conn, v, ps.limitsOf(l.creds.User))
	return true
}
