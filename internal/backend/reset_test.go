package backend

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// TestResetSession: COM_RESET_CONNECTION alone, or with SELECT DATABASE() in the same write,
// both answers read (the connection in step for its next command); the schema, or none (NULL);
// a refused reset is the node's error even when the schema's answer follows.
func TestResetSession(t *testing.T) {
	for _, caps := range []uint32{0, mysql.ClientDeprecateEOF} {
		t.Run(fmt.Sprintf("caps %#x", caps), func(t *testing.T) {
			// Written here, read by the node's goroutine.
			var db atomic.Pointer[string]
			var refuse atomic.Bool
			addr, got := commandNode(t, mariaDBHandshake(), func(c *mysql.Conn, caps uint32, p []byte) {
				switch {
				case p[0] == mysql.ComResetConnection && refuse.Load():
					_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1047, "08S01", "Unknown command")))
				case p[0] == mysql.ComResetConnection || p[0] == mysql.ComPing:
					writeOK(c)
				case string(p[1:]) == "SELECT DATABASE()":
					writeResultSet(c, caps, []string{"DATABASE()"}, [][]*string{{db.Load()}}, mysql.StatusAutocommit)
				default:
					resultNode(c, caps, p)
				}
			})
			bc := testDial(t, addr, Options{Capabilities: caps})
			reset := []byte{mysql.ComResetConnection}

			if d, err := bc.ResetSession(false); err != nil || d != "" {
				t.Fatalf("reset alone: %q, %v", d, err)
			}
			expectPackets(t, bc, got, reset)

			db.Store(str("shop"))
			if d, err := bc.ResetSession(true); err != nil || d != "shop" {
				t.Fatalf("reset and ask: %q, %v; want shop", d, err)
			}
			expectPackets(t, bc, got, reset, query("SELECT DATABASE()"))

			db.Store(nil)
			if d, err := bc.ResetSession(true); err != nil || d != "" {
				t.Fatalf("reset and ask, no schema: %q, %v", d, err)
			}
			expectPackets(t, bc, got, reset, query("SELECT DATABASE()"))

			refuse.Store(true)
			var se *mysql.SQLError
			if _, err := bc.ResetSession(true); !errors.As(err, &se) || se.Code != 1047 {
				t.Fatalf("a refused reset: %v", err)
			}
			expectPackets(t, bc, got, reset, query("SELECT DATABASE()"))
			if r, err := bc.Query("SELECT wait 7"); err != nil || len(r.Values) != 1 || r.Values[0][0].S != "7" {
				t.Fatalf("after the resets: %+v, %v", r, err)
			}
		})
	}
}
