package proxy

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// scalarResult is a node's answer to a one-value SELECT (DEPRECATE_EOF), sequence ids from 1.
func scalarResult(v string) []byte {
	return packets(1, []byte{1}, benchColumn, append([]byte{byte(len(v))}, v...), []byte{0xfe, 0, 0, 2, 0, 0, 0})
}

// TestTrackGTIDsSkipsWhatTheGlobalListHas: a primary connection's tracking SET goes out with a
// look at the node's global list, in one write (one round trip); once the node's global list
// was seen to have last_gtid, a connection to that node (fresh or reset: both carry the global
// list) is sent nothing until trackRecheck has passed; a node whose global list lacks it gets
// the SET every time, and another node's answer says nothing of this one.
func TestTrackGTIDsSkipsWhatTheGlobalListHas(t *testing.T) {
	var g globalTracking
	node := &memConn{}
	bc := &backend.Conn{Conn: mysql.NewConn(node, 0, 4<<10), Caps: frontCaps, Handshake: &mysql.Handshake{ServerVersion: "10.11.19-MariaDB"}, Addr: "127.0.0.1:1"}
	other := &backend.Conn{Conn: mysql.NewConn(node, 0, 4<<10), Caps: frontCaps, Handshake: &mysql.Handshake{ServerVersion: "10.11.19-MariaDB"}, Addr: "127.0.0.1:2"}

	asks := func(c *backend.Conn, global string) {
		t.Helper()
		node.load(append(scalarResult(global), okPacket...))
		if err := trackGTIDs(c, &g); err != nil {
			t.Fatal(err)
		}
		if node.writes != 1 {
			t.Fatalf("%d writes, want the look and the SET in one", node.writes)
		}
		if !bytes.Contains(node.out, globalListsLastGTID) || !bytes.Contains(node.out, addLastGTID) {
			t.Fatalf("sent %q, want the look at the global list and the SET", node.out)
		}
		if node.off != len(node.in) {
			t.Fatalf("read %d of the %d bytes of the answers", node.off, len(node.in))
		}
	}
	silent := func(c *backend.Conn) {
		t.Helper()
		node.load(nil)
		if err := trackGTIDs(c, &g); err != nil {
			t.Fatal(err)
		}
		if node.writes != 0 {
			t.Fatalf("sent %q, want nothing (the global list has last_gtid)", node.out)
		}
	}

	asks(bc, "0") // the global list lacks it: the SET did the work
	asks(bc, "0") // and is sent again
	asks(bc, "1")
	silent(bc)
	asks(other, "0") // another node
	silent(bc)

	// Past trackRecheck the global list is looked at again.
	g.mu.Lock()
	g.seen[bc.Addr] = time.Now().Add(-trackRecheck)
	g.mu.Unlock()
	asks(bc, "1")
	silent(bc)

	// A refusal of the SET is the node's error; a refused look only means no skip.
	node.load(append(scalarResult("1"), packets(1, mysql.AppendERR(nil, mysql.NewError(1227, "42000", "denied")))...))
	g = globalTracking{}
	if err := trackGTIDs(bc, &g); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("a refused SET: %v", err)
	}
	node.load(append(packets(1, mysql.AppendERR(nil, mysql.NewError(1227, "42000", "denied"))), okPacket...))
	if err := trackGTIDs(bc, &g); err != nil {
		t.Fatalf("a refused look: %v", err)
	}
	if g.lists(bc.Addr, time.Now()) {
		t.Fatal("a refused look counted as the global list having last_gtid")
	}
}
