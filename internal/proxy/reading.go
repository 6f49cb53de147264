package proxy

import (
	"sync"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
	"github.com/sluicedb/sluice/internal/topology"
)

// How the session reads a statement as the nodes will: each node's flavor and version decide
// which versioned comments run, the session's sql_mode how strings and quoted names end. The
// statement is read once under what the session knows (the common case: nothing in it depends
// on either); when something does (classify.Result.Depends), it is read again under every
// reading the nodes it could run on and the session's possible modes give, and if the readings
// differ in any way it is not a read: Unknown, so the primary on a read-write endpoint and a
// refusal on a read-only one.

// statusAnsiQuotes is MariaDB's SERVER_STATUS_ANSI_QUOTES: set in OK and EOF packets while the
// session's sql_mode has ANSI_QUOTES (MySQL has no such flag).
const statusAnsiQuotes uint16 = 0x8000

// sqlMode is what the session knows of the sql_mode bits that change how text splits, and of
// its client character set, which does too (classify.DependsCharset).
type sqlMode struct {
	mode   classify.Mode // the bits known set
	unsure classify.Mode // the bits not known
	seen   bool          // a status was observed: from a node's login, or a relayed OK/EOF

	// trail: the client character set may have characters whose last byte is '\', '`', '['
	// or ']' (known: the login's character set or a tracked character_set_client said which;
	// blind: the client changed what the server tracks, so changes may go unseen).
	trail, trailKnown, blind bool
	// space: the client character set reads 0xA0 or 0xFF as whitespace (latin1's no-break
	// space: classify.DependsSpace); known with trail.
	space bool
}

func newSQLMode() sqlMode { return sqlMode{unsure: classify.AllModes} }

// trailCollations are the collation ids (as a handshake gives them) of the character sets
// big5, cp932, gbk, sjis and MySQL's gb18030.
var trailCollations = [256]bool{1: true, 84: true, 95: true, 96: true, 28: true, 87: true, 13: true, 88: true,
	248: true, 249: true, 250: true}

// loginCharset learns the character set of a login (a handshake's collation id).
func (m *sqlMode) loginCharset(collation uint8) {
	m.trail, m.trailKnown = trailCollations[collation], true
	m.space = classify.SpaceCollation(collation)
}

// trackedCharset learns character_set_client's new value from a node's session tracking.
func (m *sqlMode) trackedCharset(name []byte) {
	m.trail, m.trailKnown = false, true
	m.space = classify.SpaceCharset(name)
	for _, cs := range [...]string{"big5", "cp932", "gbk", "sjis", "gb18030"} {
		if len(name) >= len(cs) && eqFoldASCII(name[:len(cs)], cs) {
			m.trail = true
		}
	}
}

// eqFoldASCII reports whether b equals the lower-case ASCII string lower, ignoring case.
func eqFoldASCII(b []byte, lower string) bool {
	for i := range len(lower) {
		if b[i]|0x20 != lower[i] {
			return false
		}
	}
	return len(b) == len(lower)
}

// mayTrail reports whether the client character set may be one with such characters.
func (m *sqlMode) mayTrail() bool { return m.trail || !m.trailKnown || m.blind }

// maySpace reports whether the client character set may be one that reads 0xA0 or 0xFF as
// whitespace.
func (m *sqlMode) maySpace() bool { return m.space || !m.trailKnown || m.blind }

// observe follows the server status of an OK or EOF from a node (maria: a MariaDB node). Every
// server reports NO_BACKSLASH_ESCAPES; MariaDB also ANSI_QUOTES, and MSSQL (the only mode with
// [identifiers]) implies ANSI_QUOTES, so without it there are no brackets. MySQL has no
// [identifiers] at all.
func (m *sqlMode) observe(status uint16, maria bool) {
	m.seen = true
	m.set(classify.NoBackslashEscapes, status&mysql.StatusNoBackslashEscapes != 0)
	switch {
	case !maria:
		m.unsure |= classify.AnsiQuotes
		m.set(classify.Brackets, false)
	case status&statusAnsiQuotes != 0:
		m.set(classify.AnsiQuotes, true)
		m.unsure |= classify.Brackets // ANSI_QUOTES alone, or MSSQL: not told apart
	default:
		m.set(classify.AnsiQuotes, false)
		m.set(classify.Brackets, false)
	}
}

func (m *sqlMode) set(bit classify.Mode, on bool) {
	m.unsure &^= bit
	if on {
		m.mode |= bit
	} else {
		m.mode &^= bit
	}
}

// lost forgets the mode: a statement that may have changed it ended with an ERR, which carries
// no status. (A character set changed by a batch's earlier statement was tracked in their OK;
// one changed by what runs unseen statements made the session blind already.)
func (m *sqlMode) lost() { m.unsure = classify.AllModes }

// mayChangeMode reports whether a statement that failed may have changed the session's
// sql_mode before its error: a SET, what runs other statements (CALL, EXECUTE, anything not
// understood), a batch.
func mayChangeMode(c *classify.Result) bool {
	switch c.Kind {
	case classify.Set, classify.Call, classify.Execute, classify.Unknown:
		return true
	}
	return c.Flags&classify.Multi != 0
}

// modeChangers are the kinds whose statement, in a batch, may change the sql_mode under which
// the server reads the statements after it.
const modeChangers = classify.KindSet(1<<classify.Set | 1<<classify.Call | 1<<classify.Execute | 1<<classify.Unknown)

// runsAnything are the kinds whose statement may run statements sluice does not see.
const runsAnything = classify.KindSet(1<<classify.Call | 1<<classify.Execute | 1<<classify.Unknown)

// nodeDialect is how a node the session opened reads text (from its greeting), and whether
// its version was understood.
func nodeDialect(bc *backend.Conn) (classify.Dialect, bool) {
	if bc.Handshake == nil {
		return classify.Dialect{}, false
	}
	return classify.ParseServerVersion(bc.Handshake.ServerVersion)
}

// snapshots is where the topology's snapshot is read now (the Proxy's Topology).
type snapshots interface{ Snapshot() *topology.Snapshot }

// reader reads a session's statements as the nodes they could run on will: it holds what the
// session knows of its sql_mode and client character set (sqlMode), and finds the nodes'
// dialects in the topology, in the greetings of the session's own node connections, and in the
// greetings any session had (Proxy.greeted). The session passes its node connections (by node
// index) and, on a read-only endpoint, its bound replica's index. It belongs to the session's
// goroutine; its classifications do not allocate.
type reader struct {
	mode     sqlMode
	readOnly bool // the session's endpoint was read-only when it began: its statements run on its bound replica
	topo     snapshots
	greeted  *sync.Map // *topology.Node -> classify.Dialect, shared by every session
}

// newReader returns the reader of a session in endpoint mode mode, which knows nothing yet of
// its sql_mode.
func newReader(mode route.Mode, topo snapshots, greeted *sync.Map) reader {
	return reader{mode: newSQLMode(), readOnly: mode == route.ReadOnly, topo: topo, greeted: greeted}
}

// reset forgets the session's sql_mode (COM_RESET_CONNECTION, a change of user: the global
// one again, learnt from the next status) but for the login's character set charset (0: not
// known).
func (rd *reader) reset(charset uint8) {
	rd.mode = newSQLMode()
	if charset != 0 {
		rd.mode.loginCharset(charset) // MariaDB 10.11 keeps the login's character set
	}
}

// opened learns from a connection to node n the session just opened: its dialect (also for
// every session, in greeted), and, before the session has seen any status, the mode its
// login reported and the character set (the login's, charset, or else the server's default).
func (rd *reader) opened(c *nodeConn, n *topology.Node, charset uint8) {
	c.dialect, c.dialectKnown = nodeDialect(c.Conn)
	if c.dialectKnown {
		if v, ok := rd.greeted.Load(n); !ok || v.(classify.Dialect) != c.dialect {
			rd.greeted.Store(n, c.dialect)
		}
	}
	if !rd.mode.seen {
		rd.mode.observe(c.Status, c.dialect.Flavor == classify.FlavorMariaDB)
		if charset == 0 && c.Handshake != nil {
			charset = c.Handshake.Charset // the server's default
		}
		rd.mode.loginCharset(charset)
	}
}

// observeStatus follows the status of an OK or EOF relayed from the session's connection
// conns[cur].
func (rd *reader) observeStatus(status uint16, conns []*nodeConn, cur int) {
	maria := true
	if cur >= 0 && cur < len(conns) && conns[cur] != nil {
		maria = conns[cur].dialect.Flavor == classify.FlavorMariaDB
	}
	rd.mode.observe(status, maria)
}

// classify reads stmt as the nodes it could run on would, in the session's sql_mode (conns:
// the session's node connections; bound: its replica on a read-only endpoint). It does not
// allocate.
func (rd *reader) classify(stmt []byte, conns []*nodeConn, bound int) classify.Result {
	res := classify.ClassifyFor(stmt, classify.Dialect{Mode: rd.mode.mode})
	if res.Depends == 0 {
		return res
	}
	return rd.readings(stmt, &res, conns, bound)
}

// classifyPrepared reads the text of a binary prepared statement: as classify, but in every
// mode, because the statement is prepared again on another node when it first runs there,
// under the mode the session has then.
func (rd *reader) classifyPrepared(stmt []byte, conns []*nodeConn, bound int) classify.Result {
	saved := rd.mode
	rd.mode.unsure = classify.AllModes
	res := rd.classify(stmt, conns, bound)
	rd.mode = saved
	return res
}

// classify is the session's reading of stmt (reader.classify over its node connections).
func (s *session) classify(stmt []byte) classify.Result {
	return s.reader.classify(stmt, s.nodes.all(), s.rs.Bound)
}

// maxDialects bounds the distinct node dialects a statement is read under; more (a topology in
// the middle of many upgrades at once) makes a versioned comment not a read.
const maxDialects = 8

// readings reads stmt, whose first reading r depends on the server or the mode, under every
// reading it could get, and returns the one they agree on, or an Unknown that is no read.
func (rd *reader) readings(stmt []byte, r *classify.Result, conns []*nodeConn, bound int) classify.Result {
	unsure := rd.mode.unsure
	changer := r.Flags&classify.Multi != 0 && r.Kinds&modeChangers != 0
	if changer {
		unsure = classify.AllModes // a statement of the batch may change the mode for the next
	}
	if r.Depends&classify.DependsCharset != 0 && (changer || rd.mode.mayTrail()) {
		// The lexer reads bytes: in a character set whose characters may end in '\' or a
		// quote, it cannot tell where this text's strings or names end.
		return disputed(r)
	}
	if r.Depends&classify.DependsSpace != 0 && (changer || rd.mode.maySpace()) {
		// A word holding 0xA0 or 0xFF is two words where the character set reads it as
		// whitespace (latin1: SELECT 1 INTO\xa0OUTFILE …); the lexer reads one.
		return disputed(r)
	}
	if r.Depends&classify.DependsMode == 0 {
		unsure = 0
	}
	var ds [maxDialects]classify.Dialect
	n := 1 // FlavorAny: the reading depends on no server
	if r.Depends&classify.DependsVersion != 0 {
		var ok bool
		if n, ok = rd.dialects(&ds, conns, bound); !ok {
			return disputed(r)
		}
	} else if unsure == 0 {
		return *r // read already under the one mode the session is in
	}
	known := rd.mode.mode &^ unsure
	var ref classify.Result
	first := true
	for _, d := range ds[:n] {
		// Every combination of the unsure bits (sub ranges over the subsets of unsure).
		for sub := unsure; ; sub = (sub - 1) & unsure {
			if m := known | sub; m&classify.Brackets == 0 || m&classify.AnsiQuotes != 0 { // MSSQL implies ANSI_QUOTES
				d.Mode = m
				got := classify.ClassifyFor(stmt, d)
				got.Depends = 0
				if first {
					ref, first = got, false
				} else if got != ref {
					return disputed(r)
				}
			}
			if sub == 0 {
				break
			}
		}
	}
	return ref
}

// disputed is what a statement that readings disagree on is: Unknown (a batch still, when the
// first reading was one), with its hint.
func disputed(r *classify.Result) classify.Result {
	return classify.Result{Kind: classify.Unknown, Kinds: 1 << classify.Unknown, Flags: r.Flags & classify.Multi,
		Hint: r.Hint, NodeName: r.NodeName, Statements: r.Statements}
}

// dialects fills ds with the distinct dialects of the nodes a statement of this session could
// run on (a read-only endpoint's: the bound replica; otherwise every node), as the monitor last
// saw their versions or, before it has, as a session's connection to them was greeted. ok is
// false when one is not known, or there are more than maxDialects.
func (rd *reader) dialects(ds *[maxDialects]classify.Dialect, conns []*nodeConn, bound int) (n int, ok bool) {
	snap := rd.topo.Snapshot()
	add := func(i int) bool {
		var d classify.Dialect
		known := false
		if i < len(snap.State) && snap.State[i] != nil && snap.State[i].Version != "" {
			d, known = classify.ParseServerVersion(snap.State[i].Version)
		}
		if !known && i < len(conns) && conns[i] != nil {
			d, known = conns[i].dialect, conns[i].dialectKnown
		}
		if !known {
			if v, ok := rd.greeted.Load(snap.Nodes[i]); ok {
				d, known = v.(classify.Dialect), true
			}
		}
		if !known {
			return false
		}
		for _, e := range ds[:n] {
			if e == d {
				return true
			}
		}
		if n == len(ds) {
			return false
		}
		ds[n] = d
		n++
		return true
	}
	if rd.readOnly {
		if b := bound; b >= 0 {
			return n, add(b)
		}
		return 0, false
	}
	for i := range snap.Nodes {
		if snap.IsRemoved(i) {
			continue
		}
		if !add(i) {
			return 0, false
		}
	}
	return n, n > 0
}
