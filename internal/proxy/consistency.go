package proxy

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/relay"
)

// Consistency levels. Under session, global and latest, a read sent to a replica must see a
// position: the session's last commit (session: its GTID came back in the OK packet of the write
// or COMMIT, readTarget.last), everything the primary had committed when the read arrived
// (global: the primary's position, read from it then), or everything sluice knew to be
// committed when the read arrived (latest: every GTID an OK from the primary carried to any
// session, and the primary's position as its stream reported it: knownCommits, known.go; no
// statement to the primary). Before the read, the replica is asked to reach that
// position within the endpoint's consistency_timeout (MASTER_GTID_WAIT on MariaDB,
// WAIT_FOR_EXECUTED_GTID_SET on MySQL, over the session's connection there); when it does not,
// the read goes to the primary instead. A replica the known positions (topology.Positions: the
// monitor's checks, the binlog streams) say has it already is preferred, so that the wait
// returns at once. A read never returns a stale row and never fails because of the level.
//
// The wait is asked even of a replica whose known position contains the target: a node writes a
// transaction to its binlog (which is where streams and @@gtid_current_pos see it) a moment
// before the transaction is visible to readers; MASTER_GTID_WAIT returns once it is. What a
// wait found visible is kept per node (topology.Positions.Confirm, any session's wait): a read
// whose position that contains skips the wait (readTarget.seenOn), so that with a steady
// stream of reads a replica is asked once per new position, not once per read; reads that
// arrive while such a wait is under way on their replica follow it (readTarget.joinWait)
// rather than sending one each. What was confirmed is forgotten when the node's connections
// broke (the monitor's: it may have restarted on other data), when a check reads less than it
// there, when its slot changes hands, and when the primary's position went backwards.
//
// The session's readTarget (readtarget.go) holds what this needs from one statement to the next
// and decides with route; this file has the I/O it does over connections it is given.

// errNotReached: the replica did not reach the read's position within consistency_timeout.
var errNotReached = errors.New("the replica did not reach the position the consistency level needs")

// primaryPosition appends the primary's current position (what it has committed), in flavor's
// words, to b, read over bc, the session's connection to it, within timeout.
func primaryPosition(bc *backend.Conn, flavor gtid.Flavor, timeout time.Duration, b []byte) ([]byte, error) {
	q := "SELECT @@global.gtid_binlog_pos"
	if flavor == gtid.MySQL {
		q = "SELECT @@global.gtid_executed"
	}
	_ = bc.NetConn().SetReadDeadline(time.Now().Add(timeout))
	rows, err := bc.Query(q)
	_ = bc.NetConn().SetReadDeadline(time.Time{})
	if err != nil {
		return b, err
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != 1 || rows.Values[0][0].Null {
		return b, errors.New("no position")
	}
	return append(b, rows.Values[0][0].S...), nil
}

// gtidFlavor is the GTID format of the proxy's nodes, from the primary's version.
func (p *Proxy) gtidFlavor() gtid.Flavor {
	if v := p.server.Load().version; v != "" {
		return gtid.FlavorOf(v)
	}
	return gtid.MariaDB
}

// gtidText reports whether b is a GTID position as servers print them (digits, hex, '-', ':',
// ',', white space) and nothing else: it is spliced into the wait's SQL text.
func gtidText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F',
			c == '-', c == ':', c == ',', c == ' ', c == '\n', c == '\r', c == '\t':
		default:
			return false
		}
	}
	return true
}

// awaitPosition asks replica connection c to reach a read's position within timeout, with
// stmt, the wait's text (readTarget.waitStmt), and reports whether it did (its own round trip;
// pipelinable says when the wait goes with the read instead). grace is how much longer than
// the wait the node may take to answer.
func awaitPosition(c *backend.Conn, stmt []byte, timeout, grace time.Duration) (bool, error) {
	// The node answers within the wait's own timeout; a node that stops answering altogether
	// must not hold the session.
	_ = c.NetConn().SetReadDeadline(time.Now().Add(timeout + grace))
	defer c.NetConn().SetReadDeadline(time.Time{})
	if err := c.WriteQuery(stmt); err != nil {
		return false, err
	}
	if err := c.Flush(); err != nil {
		return false, err
	}
	reached, err := c.ReadScalarIs("0")
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return false, nil // refused (a malformed position): the primary answers instead
	}
	return reached, err
}

// pipelinable reports whether read r (cmd: the command, when held), which must wait for its
// position on its replica, can be sent in the same round trip as the wait: the wait first, then
// r; when the wait times out, r's answer is read and dropped, and r runs on the primary. That
// needs r held whole (to send it again) and an answer sluice can read to its end unrelayed: not
// a cursor's, not a bulk one.
func pipelinable(r *request, cmd []byte) bool {
	if !r.held || r.bulk {
		return false
	}
	if r.st != nil {
		return len(cmd) > 5 && cmd[5]&0x0f == 0 && len(r.st.longData) == 0
	}
	return true
}

// awaitAnswer reads the answer to the wait sent ahead of the read (pipelinable) on bc, within
// wait. When the replica did not reach the position, the read's answer is read and dropped, the
// timeout counted, and the read goes to the primary (errNotReached).
func awaitAnswer(bc *backend.Conn, wait time.Duration, timeouts *atomic.Int64) error {
	_ = bc.NetConn().SetReadDeadline(time.Now().Add(wait))
	defer bc.NetConn().SetReadDeadline(time.Time{})
	reached, err := bc.ReadScalarIs("0")
	var se *mysql.SQLError
	if err != nil && !errors.As(err, &se) {
		return &relay.Error{Err: err}
	}
	if reached {
		return nil
	}
	if err := bc.DiscardResults(); err != nil && !errors.As(err, &se) {
		return &relay.Error{Err: err}
	}
	timeouts.Add(1)
	return errNotReached
}

// trackGTIDs makes primary connection bc report the GTID of each commit in its OK packets (the
// session level's target): MariaDB's last_gtid added to session_track_system_variables (unless
// the list has it, as the sandbox's servers do), MySQL's session_track_gtids=OWN_GTID. Only for
// endpoints at the session and latest levels (readTarget.track): the others need no GTID per
// commit (latest's knownCommits takes it from any OK that says one, whatever the level), and
// a client that tracks session state itself then sees the server's own list.
//
// A connection just logged in, or just reset (COM_RESET_CONNECTION puts the list back to the
// global one: mariadb-facts.md §9), tracks what the node's global list says. Where that list
// was seen, within trackRecheck, to have last_gtid, nothing is sent (a pooled short connection
// saves the round trip); otherwise the SET goes out with a look at the global list in the same
// round trip. A global list changed since it was seen costs no correctness: a commit that says
// no GTID leaves the session's last commit unknown, its reads on the primary (noteOK).
func trackGTIDs(bc *backend.Conn, g *globalTracking) error {
	if gtid.FlavorOf(bc.Handshake.ServerVersion) == gtid.MySQL {
		return bc.Exec("SET SESSION session_track_gtids = OWN_GTID")
	}
	now := time.Now()
	if g.lists(bc.Addr, now) {
		bc.TracksGTIDs = true
		return nil
	}
	if err := bc.WriteQuery(globalListsLastGTID); err != nil {
		return err
	}
	if err := bc.WriteQuery(addLastGTID); err != nil {
		return err
	}
	if err := bc.Flush(); err != nil {
		return err
	}
	lists, err := bc.ReadScalarIs("1")
	var se *mysql.SQLError
	if err != nil && !errors.As(err, &se) {
		return err // the answer is partly read
	}
	if err := bc.DiscardResults(); err != nil {
		return err
	}
	if err == nil && lists {
		g.saw(bc.Addr, now)
	}
	bc.TracksGTIDs = true
	return nil
}

var (
	globalListsLastGTID = []byte("SELECT @@global.session_track_system_variables = '*' OR " +
		"FIND_IN_SET('last_gtid', @@global.session_track_system_variables) > 0")
	addLastGTID = []byte("SET SESSION session_track_system_variables = IF(@@session.session_track_system_variables = '*' OR " +
		"FIND_IN_SET('last_gtid', @@session.session_track_system_variables), @@session.session_track_system_variables, " +
		"CONCAT_WS(',', NULLIF(@@session.session_track_system_variables, ''), 'last_gtid'))")
)

// trackRecheck is how long a node's global session_track_system_variables, once seen to list
// last_gtid, is taken to list it still.
const trackRecheck = 10 * time.Second

// globalTracking remembers, per node address, when the node's global
// session_track_system_variables was last seen to list last_gtid (trackGTIDs). The proxy owns
// one; sessions call it from their goroutines (it locks).
type globalTracking struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// lists reports whether the node at addr was seen to list last_gtid globally within
// trackRecheck of now.
func (g *globalTracking) lists(addr string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.seen[addr]
	return ok && now.Sub(at) < trackRecheck
}

// saw records that the node at addr listed last_gtid globally at now. Entries past
// trackRecheck are dropped (a node that left the configuration does not stay).
func (g *globalTracking) saw(addr string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = make(map[string]time.Time)
	}
	for a, at := range g.seen {
		if now.Sub(at) >= trackRecheck {
			delete(g.seen, a)
		}
	}
	g.seen[addr] = now
}

// mentionsFold reports whether stmt contains word, ASCII case-insensitively (word is lower case).
func mentionsFold(stmt []byte, word string) bool {
	for i := 0; i+len(word) <= len(stmt); i++ {
		j := 0
		for ; j < len(word); j++ {
			c := stmt[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != word[j] {
				break
			}
		}
		if j == len(word) {
			return true
		}
	}
	return false
}

// mayCommit reports whether a statement of c's kind can commit a transaction before it fails
// (or on its way to success): anything but a plain read and session bookkeeping.
func mayCommit(c *classify.Result) bool {
	switch c.Kind {
	case classify.Select, classify.Show, classify.Set, classify.Use, classify.Rollback:
		return c.Flags&(classify.SelectInto|classify.Sequence) != 0
	}
	return true
}

// mergeGTID returns the session's commits position after a commit that got GTID g: for MariaDB
// GTIDs (domain-server-seq), one entry per replication domain, g replacing the entry of its
// domain (a session's later commit in a domain has the higher sequence number) or added for a
// new domain, so that a read waits for every domain the session wrote in (replicas may apply
// domains out of order); for anything else (MySQL's OWN_GTID), g alone. last and scratch are
// the two buffers it alternates between (no allocation once they are grown); it returns the
// new position and the buffer now free.
func mergeGTID(last, scratch, g []byte) (pos, free []byte) {
	dash := -1
	for i, c := range g {
		if c == '-' {
			dash = i
			break
		}
		if c < '0' || c > '9' {
			break
		}
	}
	if dash <= 0 || len(last) == 0 {
		return append(last[:0], g...), scratch
	}
	domain := g[:dash+1] // "5-"
	out := scratch[:0]
	replaced := false
	for rest := last; len(rest) > 0; {
		entry := rest
		if i := bytes.IndexByte(rest, ','); i >= 0 {
			entry, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		if len(entry) >= len(domain) && string(entry[:len(domain)]) == string(domain) {
			out = append(out, g...)
			replaced = true
		} else {
			out = append(out, entry...)
		}
	}
	if !replaced {
		out = append(append(out, ','), g...)
	}
	return out, last
}
