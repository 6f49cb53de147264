package proxy

import (
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
}

func newSQLMode() sqlMode { return sqlMode{unsure: classify.AllModes} }

// trailCollations are the collation ids (as a handshake gives them) of the character sets
// big5, cp932, gbk, sjis and MySQL's gb18030.
var trailCollations = [256]bool{1: true, 84: true, 95: true, 96: true, 28: true, 87: true, 13: true, 88: true,
	248: true, 249: true, 250: true}

// loginCharset learns the character set of a login (a handshake's collation id).
func (m *sqlMode) loginCharset(collation uint8) {
	m.trail, m.trailKnown = trailCollations[collation], true
}

// trackedCharset learns character_set_client's new value from a node's session tracking.
func (m *sqlMode) trackedCharset(name []byte) {
	m.trail, m.trailKnown = false, true
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

// opened learns from a connection to node n the session just opened: its dialect (also for
// every session, in p.greeted), and, before the session has seen any status, the mode its
// login reported.
func (s *session) opened(c *nodeConn, n *topology.Node) {
	c.dialect, c.dialectKnown = nodeDialect(c.Conn)
	if c.dialectKnown {
		if v, ok := s.p.greeted.Load(n); !ok || v.(classify.Dialect) != c.dialect {
			s.p.greeted.Store(n, c.dialect)
		}
	}
	if !s.sqlMode.seen {
		s.sqlMode.observe(c.Status, c.dialect.Flavor == classify.FlavorMariaDB)
		cs := s.charset
		if cs == 0 && c.Handshake != nil {
			cs = c.Handshake.Charset // the server's default
		}
		s.sqlMode.loginCharset(cs)
	}
}

// observeStatus follows the status of an OK or EOF relayed from the session's current node.
func (s *session) observeStatus(status uint16) {
	maria := true
	if c := s.nodes.at(s.nodes.cur()); c != nil {
		maria = c.dialect.Flavor == classify.FlavorMariaDB
	}
	s.sqlMode.observe(status, maria)
}

// classify reads stmt as the nodes it could run on would, in the session's sql_mode. It does
// not allocate.
func (s *session) classify(stmt []byte) classify.Result {
	r := classify.ClassifyFor(stmt, classify.Dialect{Mode: s.sqlMode.mode})
	if r.Depends == 0 {
		return r
	}
	return s.readings(stmt, &r)
}

// classifyPrepared reads the text of a binary prepared statement: as classify, but in every
// mode, because the statement is prepared again on another node when it first runs there,
// under the mode the session has then.
func (s *session) classifyPrepared(stmt []byte) classify.Result {
	saved := s.sqlMode
	s.sqlMode.unsure = classify.AllModes
	r := s.classify(stmt)
	s.sqlMode = saved
	return r
}

// maxDialects bounds the distinct node dialects a statement is read under; more (a topology in
// the middle of many upgrades at once) makes a versioned comment not a read.
const maxDialects = 8

// readings reads stmt, whose first reading r depends on the server or the mode, under every
// reading it could get, and returns the one they agree on, or an Unknown that is no read.
func (s *session) readings(stmt []byte, r *classify.Result) classify.Result {
	unsure := s.sqlMode.unsure
	changer := r.Flags&classify.Multi != 0 && r.Kinds&modeChangers != 0
	if changer {
		unsure = classify.AllModes // a statement of the batch may change the mode for the next
	}
	if r.Depends&classify.DependsCharset != 0 && (changer || s.sqlMode.mayTrail()) {
		// The lexer reads bytes: in a character set whose characters may end in '\' or a
		// quote, it cannot tell where this text's strings or names end.
		return disputed(r)
	}
	if r.Depends&classify.DependsMode == 0 {
		unsure = 0
	}
	var ds [maxDialects]classify.Dialect
	n := 1 // FlavorAny: the reading depends on no server
	if r.Depends&classify.DependsVersion != 0 {
		var ok bool
		if n, ok = s.dialects(&ds); !ok {
			return disputed(r)
		}
	} else if unsure == 0 {
		return *r // read already under the one mode the session is in
	}
	known := s.sqlMode.mode &^ unsure
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
func (s *session) dialects(ds *[maxDialects]classify.Dialect) (n int, ok bool) {
	snap := s.p.topo.Snapshot()
	add := func(i int) bool {
		var d classify.Dialect
		known := false
		if i < len(snap.State) && snap.State[i] != nil && snap.State[i].Version != "" {
			d, known = classify.ParseServerVersion(snap.State[i].Version)
		}
		if c := s.nodes.at(i); !known && c != nil {
			d, known = c.dialect, c.dialectKnown
		}
		if !known {
			if v, ok := s.p.greeted.Load(snap.Nodes[i]); ok {
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
	if s.settings().Mode == route.ReadOnly {
		if b := s.rs.Bound; b >= 0 {
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
