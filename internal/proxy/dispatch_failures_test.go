package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// executeWith is a COM_STMT_EXECUTE payload of statement id with one parameter: its type sent
// along when typ != 0 (new-params-bound 1), else relying on types bound before.
func executeWith(id uint32, typ byte, value []byte) []byte {
	p := []byte{mysql.ComStmtExecute, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24),
		0, 1, 0, 0, 0, // no cursor, iteration count 1
		0, // NULL bitmap
	}
	if typ != 0 {
		p = append(p, 1, typ, 0)
	} else {
		p = append(p, 0)
	}
	return append(p, value...)
}

// A streamed EXECUTE (larger than the read buffer) goes to a replica whose connection is broken:
// the write fails in the middle of copying the client's command. The client may get an error
// and the session may go on, but then the rest of the failed command must not be read as the
// client's next command. (dispatch.go fail -> skip does nothing once send set r.unread = false;
// before the refactor the statement send ended the session.)
func TestStreamedExecuteToBrokenReplicaEndsSession(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &brokenConn{})
	r.addStmt("SELECT v FROM t WHERE id = ?", 1, 1, true)
	value := mysql.AppendLenEncString(nil, bytes.Repeat([]byte("x"), 40000))
	in := packets(0, executeWith(1, 0xfd, value))
	in = append(in, packets(0, []byte{mysql.ComPing})...)
	r.client.load(in)
	if _, err := r.command(); err != nil {
		return // the session ended: nothing can be misread
	}
	n, seq, err := r.s.client.PeekHeader()
	if err != nil {
		t.Fatalf("the session went on, but the client's next command cannot be read: %v", err)
	}
	p, _ := r.s.client.PeekPayload(n, 1)
	if n != 1 || seq != 0 || len(p) != 1 || p[0] != mysql.ComPing {
		t.Fatalf("the session went on after answering %d to the failed EXECUTE, and the next 'command' it will read is the rest of that EXECUTE (length %d, seq %d)",
			errCode(r.client.out), n, seq)
	}
}

// A client that disconnects in the middle of a huge statement (> 1 MiB, streamed) routed to a
// replica (the session is in START TRANSACTION READ ONLY there) is the client's failure, not the
// replica's: the replica must not be taken out of routing for every session. (forward returns
// the client's read error unwrapped; fail takes it for the node's.)
func TestClientAbortInHugeStatementKeepsReplicaUp(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &memConn{})
	r.s.rs.InTx, r.s.rs.TxNode = true, 1 // START TRANSACTION READ ONLY went to replica1
	n := 2 << 20
	in := []byte{byte(n), byte(n >> 8), byte(n >> 16), 0, mysql.ComQuery}
	in = append(in, "SELECT /*"...)
	in = append(in, bytes.Repeat([]byte("x"), 100000)...) // then the client goes away
	r.client.load(in)
	_, _ = r.command()
	if !r.s.p.topo.Snapshot().Up[1] {
		t.Fatal("replica1 was marked down because a client stopped sending its statement")
	}
}

// Parameter types follow the last EXECUTE that bound them: a connection that was sent older
// types must get the new ones when the client relies on them (new-params-bound 0).
func TestParameterTypesFollowRebind(t *testing.T) {
	primary, replica := &memConn{}, &memConn{}
	r := newTwoNodeSession(t, []int{0, 100}, primary, replica)
	st := r.addStmt("SELECT v FROM t WHERE id = ?", 1, 1, true)
	ep := r.s.ep.route
	weights := func(w ...int) {
		if err := ep.Update(route.Settings{Mode: route.ReadWrite, Weights: w, Policy: &route.LeastActive{}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(exec []byte) {
		t.Helper()
		r.client.load(packets(0, exec))
		if _, err := r.command(); err != nil {
			t.Fatal(err)
		}
	}
	// 1: BIGINT, on the replica.
	replica.load(okPacket)
	run(executeWith(1, 0x08, []byte{42, 0, 0, 0, 0, 0, 0, 0}))
	if len(replica.out) == 0 {
		t.Fatal("setup: the first EXECUTE did not reach the replica")
	}
	// 2: rebound as VARCHAR, on the primary.
	weights(100, 0)
	primary.load(okPacket)
	replica.load(nil)
	run(executeWith(1, 0xfd, mysql.AppendLenEncString(nil, []byte("abc"))))
	if len(primary.out) == 0 {
		t.Fatal("setup: the second EXECUTE did not reach the primary")
	}
	// 3: the client relies on the VARCHAR binding; the replica was last told BIGINT.
	weights(0, 100)
	replica.load(okPacket)
	primary.load(nil)
	run(executeWith(1, 0, mysql.AppendLenEncString(nil, []byte("abc"))))
	typesAt := 4 + 1 + 4 + 1 + 4 + (int(st.params)+7)/8
	got := replica.out
	if len(got) < typesAt+3 || got[typesAt] != 1 || got[typesAt+1] != 0xfd {
		t.Fatalf("the replica got %x: its value decoded with the BIGINT type of the first EXECUTE, not the VARCHAR type the client bound last", got)
	}
}

// An endpoint's settings are replaced live (route.Endpoint.Update) with no check against the
// topology, whose nodes come and go: read weights for more nodes than there are (a node's
// weight set before the node is in) must not panic every session's reads.
func TestSettingsWithMoreWeightsThanNodes(t *testing.T) {
	primary, replica := &memConn{}, &memConn{}
	r := newTwoNodeSession(t, []int{0, 100}, primary, replica)
	if err := r.s.ep.route.Update(route.Settings{Mode: route.ReadWrite, Weights: []int{0, 100, 100}, Policy: &route.LeastActive{}}); err != nil {
		t.Fatalf("settings with 3 weights for 2 nodes: %v", err)
	}
	replica.load(resultSet(1))
	primary.load(resultSet(1))
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, "SELECT v FROM t"...)))
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("a read panicked after a settings update with 3 weights for 2 nodes: %v", p)
		}
	}()
	if _, err := r.command(); err != nil {
		t.Fatal(err)
	}
	if len(replica.out) == 0 {
		t.Error("the read did not go to the replica")
	}
}

// COM_SET_OPTION with a value the server does not know (only 0 and 1 exist) gets the server's
// own error, and the session goes on as it does on a server. sluice records the value before
// the node accepted it, replays it at every later sync, and every statement of the session
// fails from then on.
func TestBadSetOptionNotRecorded(t *testing.T) {
	m := newMemSession(t)
	unknownCom := packets(1, mysql.AppendERR(nil, mysql.NewError(mysql.ErrUnknownCom, "08S01", "Unknown command")))
	m.client.load(packets(0, []byte{mysql.ComSetOption, 2, 0}))
	m.node.load(unknownCom)
	m.s.sentAt = m.s.client.Sent()
	if _, err := m.s.command(); err != nil {
		t.Fatalf("COM_SET_OPTION 2: %v", err)
	}
	if code := errCode(m.client.out); code != mysql.ErrUnknownCom {
		t.Errorf("COM_SET_OPTION 2: client got error %d, want the server's %d", code, mysql.ErrUnknownCom)
	}
	// The node would refuse the option again; a correct session does not send it.
	ex := textQuery(resultSet(1))
	m.client.load(ex.request)
	m.node.load(append(unknownCom[:len(unknownCom):len(unknownCom)], ex.response...))
	m.s.sentAt = m.s.client.Sent()
	_, err := m.s.command()
	if !bytes.HasPrefix(m.node.out, ex.request) {
		t.Fatalf("a plain SELECT after the refused COM_SET_OPTION: the node got %x first (the refused option is sent again), client got error %d, err %v",
			m.node.out[:min(len(m.node.out), 16)], errCode(m.client.out), err)
	}
}

// A statement too large to hold is classified by its head only, and its after-effects are
// lost: CREATE TEMPORARY TABLE ... (over 1 MiB) leaves a temporary table on the primary without
// pinning the session there, and the next read of it goes to a replica that has no such table.
func TestHugeCreateTemporaryTablePins(t *testing.T) {
	primary, replica := &memConn{}, &memConn{}
	r := newTwoNodeSession(t, []int{0, 100}, primary, replica)
	q := "CREATE TEMPORARY TABLE tmp (id INT) /*" + strings.Repeat("x", 1<<20+100) + "*/"
	primary.load(okPacket)
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, q...)))
	if _, err := r.command(); err != nil {
		t.Fatal(err)
	}
	if len(primary.out) < len(q) {
		t.Fatalf("setup: the CREATE did not reach the primary whole (%d bytes)", len(primary.out))
	}
	sel := packets(0, append([]byte{mysql.ComQuery}, "SELECT * FROM tmp"...))
	primary.load(resultSet(1))
	replica.load(resultSet(1))
	r.client.load(sel)
	if _, err := r.command(); err != nil {
		t.Fatal(err)
	}
	if len(replica.out) != 0 {
		t.Fatal("a read of the session's temporary table went to a replica")
	}
}

// A replica that holds the session's open transaction (START TRANSACTION READ ONLY) breaks.
// The client gets 1927 and the session goes on, still "in a transaction" on that replica:
// every later statement, ROLLBACK included, is sent there and fails with 1927 until the
// replica is back. A server closes the connection; the session must either end, or forget the
// transaction.
func TestLostReplicaTransactionEndsSession(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &brokenConn{})
	r.s.rs.InTx, r.s.rs.TxNode = true, 1
	r.s.status |= mysql.StatusInTrans
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, "SELECT v FROM t"...)))
	if _, err := r.command(); err != nil {
		return // the session ended, as with a server
	}
	if errCode(r.client.out) != mysql.ErrConnectionKilled {
		t.Fatalf("setup: want 1927 for the statement on the broken replica, got %x", r.client.out)
	}
	r.client.load(packets(0, append([]byte{mysql.ComQuery}, "ROLLBACK"...)))
	if _, err := r.command(); err != nil {
		return
	}
	if errCode(r.client.out) == mysql.ErrConnectionKilled {
		t.Fatal("after losing the replica that held its transaction the session goes on, and even ROLLBACK is sent to the dead replica (1927 again)")
	}
}

// KILL <n> names a sluice connection id; a KILL that reaches a node names one of the node's
// threads, another client's. The text path refuses it, but a statement too large to hold, or
// a prepared KILL, is forwarded to the primary as it is.
func TestKillRefusalNotBypassed(t *testing.T) {
	t.Run("huge", func(t *testing.T) {
		m := newMemSession(t)
		q := "KILL 5 /*" + strings.Repeat("x", 1<<20+100) + "*/"
		m.node.load(okPacket)
		m.client.load(packets(0, append([]byte{mysql.ComQuery}, q...)))
		_, _ = m.s.command()
		if len(m.node.out) != 0 {
			t.Fatal("KILL 5 (padded past 1 MiB) was sent to the node, where 5 is another client's thread")
		}
	})
	t.Run("prepared", func(t *testing.T) {
		primary := &memConn{}
		r := newTwoNodeSession(t, []int{100, 0}, primary, &memConn{})
		r.addStmt("KILL 5", 0, 0, false)
		primary.load(okPacket)
		r.client.load(packets(0, []byte{mysql.ComStmtExecute, 1, 0, 0, 0, 0, 1, 0, 0, 0}))
		_, _ = r.command()
		if len(primary.out) != 0 {
			t.Fatal("a prepared KILL 5 was executed on the node, where 5 is another client's thread")
		}
	})
}

// COM_STMT_RESET goes to the session's current connection, that of its last statement. When
// that connection was dropped since (a node failure answered with 1927, the idle watch closing a
// connection the node closed) and the current one still points at it, the reset is written to
// the closed connection, no session connection matches it when its failure is mapped, and the
// session ends. A server answers OK.
func TestStmtResetAfterDroppedConnection(t *testing.T) {
	primary := &memConn{}
	primary.load(okPacket) // the reset goes to the home node's binding now
	r := newTwoNodeSession(t, []int{0, 100}, primary, &brokenConn{})
	r.addStmt("SELECT v FROM t WHERE id = ?", 1, 1, true)
	// The last statement ran on the replica; its connection is dropped afterwards.
	if _, err := r.s.nodes.use(1); err != nil {
		t.Fatal(err)
	}
	r.s.nodes.drop(1)
	r.client.load(packets(0, []byte{mysql.ComStmtReset, 1, 0, 0, 0}))
	if _, err := r.command(); err != nil {
		t.Fatalf("COM_STMT_RESET ended the session: %v", err)
	}
	if len(r.client.out) < 5 || r.client.out[4] != 0 {
		t.Fatalf("COM_STMT_RESET: client got %x, want OK", r.client.out)
	}
}
