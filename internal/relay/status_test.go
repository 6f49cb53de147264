package relay

import (
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// TestStatusAt finds the status flags in the packets that end a response.
func TestStatusAt(t *testing.T) {
	ok := mysql.AppendOK(nil, mysql.OK{AffectedRows: 300, LastInsertID: 1 << 20, Status: 0x1234}, mysql.ClientProtocol41)
	if i := statusAt(ok, false); i < 0 || uint16(ok[i])|uint16(ok[i+1])<<8 != 0x1234 {
		t.Fatalf("OK %x: status at %d", ok, i)
	}
	eof := mysql.AppendEOF(nil, 7, 0x4321)
	if i := statusAt(eof, true); i != 3 || uint16(eof[i])|uint16(eof[i+1])<<8 != 0x4321 {
		t.Fatalf("EOF %x: status at %d", eof, i)
	}
	for _, short := range [][]byte{{0}, {0, 0}, {0, 0, 0, 1}, {0, 0xfc, 1}, {0xfe, 0, 0}} {
		if i := statusAt(short, len(short) > 0 && short[0] == 0xfe); i >= 0 {
			t.Errorf("%x: status at %d of a packet too short to hold it", short, i)
		}
	}
}
