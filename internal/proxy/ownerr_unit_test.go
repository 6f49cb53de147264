package proxy

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// The errors sluice raises itself must read in every client stack as they read from a server.
// libmariadb (the mariadb CLI; PHP's, Python's MySQLdb and many others build on it) is the
// strictest reader: an ERR packet whose code lies in the client libraries' own ranges is taken
// for a forgery and shown as "ERROR 2027 (HY000): Received malformed packet", sluice's message
// lost. libmariadbReads reads an ERR packet (with its 4-byte header) as libmariadb's
// ma_net_safe_read does and returns what the client would show.
func libmariadbReads(pkt []byte) (code uint16, state, msg string) {
	if len(pkt) < 4 || int(pkt[0])|int(pkt[1])<<8|int(pkt[2])<<16 != len(pkt)-4 {
		return 2013, "HY000", "Lost connection" // not one whole packet
	}
	p := pkt[4:]
	if len(p) <= 3 || p[0] != 0xff {
		return 2000, "HY000", "Unknown MySQL error"
	}
	code = uint16(p[1]) | uint16(p[2])<<8
	if code == 0xffff || code > 2000 && code <= 2061 || code > 5000 && code <= 5025 {
		return 2027, "HY000", "Received malformed packet"
	}
	p = p[3:]
	state = "HY000"
	if p[0] == '#' && len(p) >= 6 {
		state, p = string(p[1:6]), p[6:]
	}
	return code, state, string(p)
}

// TestOwnErrorsReadInLibmariadb: the errors sluice writes for a statement it cannot run (a
// FORCE_NODE naming no node, or a node that is down; a node connection lost during a read) and
// for a login whose node cannot be reached: one packet of sequence id 1 (2 or more in the
// login), a server error code, the SQLSTATE marker, sluice's message. Before, the first three
// were 2003 and 2013 and the mariadb CLI printed 2027 for each.
func TestOwnErrorsReadInLibmariadb(t *testing.T) {
	query := func(q string) []byte { return packets(0, append([]byte{mysql.ComQuery}, q...)) }
	cases := []struct {
		name         string
		setup        func(*twoNodeSession)
		request      []byte
		code         uint16
		state, msg   string
		seq          byte
		replicaBroke bool
	}{
		{
			name:    "FORCE_NODE names no node",
			request: query("/*FORCE_NODE='replica9'*/ SELECT 1"),
			code:    mysql.ErrUnknown, state: "HY000", seq: 1,
			msg: "sluice: /*FORCE_NODE*/ names no node called 'replica9'",
		},
		{
			name:    "FORCE_NODE names a node that is down",
			setup:   func(r *twoNodeSession) { r.s.p.topo.NodeFailed(1, errors.New("connection refused")) },
			request: query("/*FORCE_NODE='replica1'*/ SELECT 1"),
			code:    mysql.ErrUnknown, state: "HY000", seq: 1,
			msg: "sluice: node 'replica1' named by /*FORCE_NODE*/ is down: it takes no new statements",
		},
		{
			name:         "node connection lost during a read",
			request:      query("/*FORCE_NODE='replica1'*/ SELECT 1"),
			replicaBroke: true,
			code:         mysql.ErrConnectionKilled, state: "70100", seq: 1,
			msg: "Lost connection to backend server 'replica1' during query",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var replica net.Conn = &memConn{}
			if tc.replicaBroke {
				replica = &brokenConn{}
			}
			r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, replica)
			if tc.setup != nil {
				tc.setup(r)
			}
			r.client.load(tc.request)
			if _, err := r.command(); err != nil {
				t.Fatalf("the session ended (%v): the client's connection is fine and the error is the statement's", err)
			}
			checkOwnErr(t, r.client.out, tc.seq, tc.code, tc.state, tc.msg)
		})
	}
	t.Run("login: no node can be reached", func(t *testing.T) {
		r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &memConn{})
		r.s.nodes.drop(0)
		r.s.nodes.drop(1)
		r.s.client.SetSeq(4) // after the client's authentication response
		if err := r.s.connectNode(true); err == nil {
			t.Fatal("connectNode succeeded with every node at a closed port")
		}
		code, state, msg := libmariadbReads(r.client.out)
		if code != mysql.ErrUnknown || state != "HY000" || !bytes.Contains([]byte(msg), []byte("sluice: cannot connect to a node for endpoint \"rw\"")) {
			t.Fatalf("libmariadb reads %d (%s): %s\npacket % x", code, state, msg, r.client.out)
		}
		if r.client.out[3] != 4 {
			t.Fatalf("sequence id %d, want 4 (the login's next)", r.client.out[3])
		}
	})
}

// checkOwnErr checks that out is exactly one ERR packet with sequence id seq that every client
// reads as code (state): msg.
func checkOwnErr(t *testing.T, out []byte, seq byte, code uint16, state, msg string) {
	t.Helper()
	want := packets(seq, mysql.AppendERR(nil, mysql.NewError(code, state, "%s", msg)))
	if !bytes.Equal(out, want) {
		t.Fatalf("client got % x\nwant         % x", out, want)
	}
	if c, s, m := libmariadbReads(out); c != code || s != state || m != msg {
		t.Fatalf("libmariadb reads ERROR %d (%s): %s", c, s, m)
	}
	if mysql.IsClientCode(code) {
		t.Fatalf("code %d is a client library's own", code)
	}
}
