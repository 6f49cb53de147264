package proxy

import (
	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// The session's side of relaying a response (package relay): what it hands the relay is built
// in respond (dispatch.go); what the relay sees of the session's state comes back here, OK by
// OK, and in the relay.Result respond applies.

// OK follows what an OK or EOF a node relays to the client says of the session's state
// (relay.Observer): status flags, the session-state block (schema, character_set_client, the
// GTID of a commit), and the commit itself (the read target's noteOK).
func (s *session) OK(src *backend.Conn, ok mysql.OK, classicEOF bool) {
	if classicEOF && ok.Status&mysql.StatusSessionStateChange != 0 {
		// The state changed (INSERT … RETURNING committed a GTID, say), but a classic EOF has
		// no room to say how: the session's last commit is no longer known, nor whether a
		// session variable changed.
		s.reads.stateHidden()
		s.nodes.share.varsReported = true
	}
	s.reader.observeStatus(ok.Status, s.nodes.all(), s.nodes.cur())
	committed := false
	for block := ok.SessionState; len(block) > 0; {
		sc, rest, err := mysql.NextSessionChange(block)
		if err != nil {
			break
		}
		switch {
		case sc.Type == mysql.SessionTrackSchema && string(sc.Value) != s.nodes.state().DB:
			s.nodes.state().DB = string(sc.Value)
		case sc.Type == mysql.SessionTrackSystemVariables && string(sc.Name) == "character_set_client":
			s.reader.mode.trackedCharset(sc.Value)
		case sc.Type == mysql.SessionTrackGTIDs && len(sc.Value) > 0,
			sc.Type == mysql.SessionTrackSystemVariables && string(sc.Name) == "last_gtid" && len(sc.Value) > 0:
			// The GTID of the session's last commit (MariaDB's last_gtid, MySQL's OWN_GTID):
			// what a read of this session must find on a replica (consistency: session), and,
			// from the primary, what every latest-level read must (knownCommits; before the
			// client sees the OK, whatever this endpoint's level).
			s.reads.noteGTID(sc.Value)
			if !src.ReadOnly() {
				s.p.known.noteCommit(sc.Value)
				committed = true
			}
		}
		if sc.Type == mysql.SessionTrackSystemVariables && string(sc.Name) != "last_gtid" {
			s.nodes.share.varsReported = true // a SET's, or one a stored function or trigger ran
		}
		block = rest
	}
	s.reads.noteOK(ok.Status, ok.AffectedRows, !src.ReadOnly()) // the primary's commits (a replica's commit nothing)
	if committed && s.p.known.shared.Load() {
		// Other sluice nodes share this one's commits: at the latest level, the OK waits until
		// they have this one (SetPeerGate).
		if gate := s.p.peerGate.Load(); gate != nil {
			if set := s.ep.route.Settings(); set.Consistency == route.Latest {
				(*gate)(s.p.KnownVersion(), set.ConsistencyTimeout)
			}
		}
	}
}

// keepScratch hands b, built in c's scratch buffer (mysql.Conn.Scratch), back to c for reuse
// when it is small, and returns it. A large one (a long statement, long data) is not kept: a
// node connection would hold it for as long as it lives.
func keepScratch(c *mysql.Conn, b []byte) []byte {
	if cap(b) <= keepBuffer {
		c.KeepScratch(b)
	}
	return b
}
