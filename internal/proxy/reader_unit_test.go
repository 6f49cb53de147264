package proxy

import (
	"sync"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// testReader is a reader for a two-node topology, whose node connections were greeted with
// the given dialects (zero: not known).
func testReader(t *testing.T, mode route.Mode, primary, replica classify.Dialect) (*reader, []*nodeConn) {
	t.Helper()
	rd := newReader(mode, testTopology(t, 2), &sync.Map{})
	conns := make([]*nodeConn, 2)
	for i, d := range []classify.Dialect{primary, replica} {
		conns[i] = &nodeConn{Conn: &backend.Conn{}, idx: i, dialect: d, dialectKnown: d != classify.Dialect{}}
	}
	return &rd, conns
}

// TestReaderClassify: the reader reads under the mode it knows and the dialects of the nodes
// a statement could run on, without a session.
func TestReaderClassify(t *testing.T) {
	const vcTrap = `/*!110000 SELECT 1 -- */ INSERT INTO t VALUES (1)`
	const nbeTrap = `SELECT 'x\' ; INSERT INTO t VALUES (1); SELECT '1'`
	rd, conns := testReader(t, route.ReadWrite, maria1011, maria1104)
	if got := rd.classify([]byte(nbeTrap), conns, -1); got.Kind != classify.Unknown {
		t.Errorf("mode unknown: %v", got.Kind)
	}
	rd.observeStatus(mysql.StatusAutocommit, conns, 0) // MariaDB: default mode known
	if got := rd.classify([]byte(nbeTrap), conns, -1); got.Kinds != 1<<classify.Select {
		t.Errorf("default mode known: %b", got.Kinds)
	}
	if got := rd.classify([]byte(vcTrap), conns, -1); got.Kind != classify.Unknown {
		t.Errorf("versions differ: %v", got.Kind)
	}
	conns[1].dialect = maria1011
	if got := rd.classify([]byte(vcTrap), conns, -1); got.Kind != classify.Insert {
		t.Errorf("one version: %v", got.Kind)
	}
	// A node none of the session's connections greeted: what another session learnt of it.
	conns[1] = nil
	if got := rd.classify([]byte(vcTrap), conns, -1); got.Kind != classify.Unknown {
		t.Errorf("a node's version unknown: %v", got.Kind)
	}
	rd.greeted.Store(rd.topo.Snapshot().Nodes[1], maria1011)
	if got := rd.classify([]byte(vcTrap), conns, -1); got.Kind != classify.Insert {
		t.Errorf("version from another session's greeting: %v", got.Kind)
	}
	// classifyPrepared reads in every mode and leaves the reader's knowledge as it was.
	if got := rd.classifyPrepared([]byte(nbeTrap), conns, -1); got.Kind != classify.Unknown {
		t.Errorf("prepared: %v", got.Kind)
	}
	if rd.mode.unsure != 0 {
		t.Errorf("classifyPrepared changed the mode knowledge: %b", rd.mode.unsure)
	}
	b := []byte(vcTrap)
	if n := testing.AllocsPerRun(100, func() { rd.classify(b, conns, -1) }); n != 0 {
		t.Errorf("classify allocates %v times", n)
	}
}

// TestReaderReadOnly: on a read-only endpoint only the bound replica's dialect counts; with
// no bound replica a versioned comment is no read.
func TestReaderReadOnly(t *testing.T) {
	rd, conns := testReader(t, route.ReadOnly, maria1011, maria1104)
	rd.observeStatus(mysql.StatusAutocommit, conns, 1)
	stmt := []byte(`/*!110000 SELECT 1 -- */ INSERT INTO t VALUES (1)`)
	if got := rd.classify(stmt, conns, 1); got.Kind != classify.Select {
		t.Errorf("bound to the 11.4 replica: %v", got.Kind)
	}
	if got := rd.classify(stmt, conns, 0); got.Kind != classify.Insert {
		t.Errorf("bound to the 10.11 node: %v", got.Kind)
	}
	if got := rd.classify(stmt, conns, -1); got.Kind != classify.Unknown {
		t.Errorf("not bound: %v", got.Kind)
	}
}

// TestReaderOpenedReset: a node connection's greeting teaches the reader its dialect (for
// every session too) and, before any status, the mode and character set of the login; reset
// forgets the mode but keeps the login's character set.
func TestReaderOpenedReset(t *testing.T) {
	rd, _ := testReader(t, route.ReadWrite, classify.Dialect{}, classify.Dialect{})
	n := rd.topo.Snapshot().Nodes[0]
	c := &nodeConn{Conn: &backend.Conn{Status: mysql.StatusAutocommit | mysql.StatusNoBackslashEscapes,
		Handshake: &mysql.Handshake{ServerVersion: "11.4.2-MariaDB", Charset: 45}}}
	rd.opened(c, n, 28) // gbk_chinese_ci
	if !c.dialectKnown || c.dialect.Flavor != classify.FlavorMariaDB {
		t.Fatalf("dialect %+v known %v", c.dialect, c.dialectKnown)
	}
	if v, ok := rd.greeted.Load(n); !ok || v.(classify.Dialect) != c.dialect {
		t.Fatalf("greeted %v %v", v, ok)
	}
	if rd.mode.mode != classify.NoBackslashEscapes || rd.mode.unsure != 0 || !rd.mode.mayTrail() {
		t.Fatalf("after the login: mode %b unsure %b trail %v", rd.mode.mode, rd.mode.unsure, rd.mode.mayTrail())
	}
	// A second connection's status does not override what the session saw.
	rd.opened(&nodeConn{Conn: &backend.Conn{Status: mysql.StatusAutocommit, Handshake: &mysql.Handshake{ServerVersion: "11.4.2-MariaDB"}}}, n, 0)
	if rd.mode.mode != classify.NoBackslashEscapes {
		t.Fatal("a later connection's login status overrode the session's mode")
	}
	rd.reset(28)
	if rd.mode.seen || rd.mode.unsure != classify.AllModes || !rd.mode.trail || !rd.mode.trailKnown {
		t.Fatalf("after reset: %+v", rd.mode)
	}
	rd.reset(0)
	if rd.mode.trailKnown {
		t.Fatal("reset without a login character set knows it")
	}
}
