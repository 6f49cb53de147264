package relay

import (
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// TestWarningCount: Result.Warnings is the warning count of the response's last OK or EOF, in
// every shape that ends with one (an OK, a result set's EOF or its OK under DEPRECATE_EOF, a
// fetch's rows, a field list, a cursor's EOF, the last of a batch's results), and 0 when an
// ERR ends it: what route.Session.Learn reads to know whether the statement replaced the
// session's warnings on its node.
func TestWarningCount(t *testing.T) {
	ac := mysql.StatusAutocommit
	more := mysql.StatusMoreResultsExists
	okW := func(status, warnings uint16) []byte {
		return mysql.AppendOK(nil, mysql.OK{Status: status, Warnings: warnings}, caps)
	}
	endOKW := func(status, warnings uint16) []byte {
		return mysql.AppendOK(nil, mysql.OK{Header: 0xfe, Status: status, Warnings: warnings}, caps)
	}
	eofW := func(status, warnings uint16) []byte { return mysql.AppendEOF(nil, warnings, status) }
	for _, tc := range []struct {
		name     string
		kind     Kind
		nodeCaps uint32
		script   []byte
		warnings uint16
		failed   bool
	}{
		{"OK with warnings", Statement, caps, pkt(1, okW(ac, 2)), 2, false},
		{"OK without", Statement, caps, pkt(1, okW(ac, 0)), 0, false},
		{"result set, DEPRECATE_EOF", Statement, caps, pkt(1, []byte{1}, column, textRow, endOKW(ac, 1)), 1, false},
		{"result set, classic EOF: the last EOF's, not the columns'", Statement, classicCaps,
			pkt(1, []byte{1}, column, eofW(0, 0), textRow, eofW(ac, 3)), 3, false},
		{"result set, classic EOF, none", Statement, classicCaps, pkt(1, []byte{1}, column, eofW(0, 0), textRow, eofW(ac, 0)), 0, false},
		{"batch: the last result's", Statement, caps, append(pkt(1, okW(ac|more, 5)), pkt(2, []byte{1}, column, textRow, endOKW(ac, 0))...), 0, false},
		{"batch: the last result's warnings", Statement, caps, append(pkt(1, okW(ac|more, 0)), pkt(2, okW(ac, 4))...), 4, false},
		{"batch ending in ERR", Statement, caps, append(pkt(1, okW(ac|more, 5)), pkt(2, errPacket(1146, "no table"))...), 0, true},
		{"ERR", Statement, caps, pkt(1, errPacket(1146, "no table")), 0, true},
		{"single OK", Single, caps, pkt(1, okW(ac, 1)), 1, false},
		{"field list", FieldList, classicCaps, pkt(1, column, eofW(ac, 1)), 1, false},
		{"fetch, DEPRECATE_EOF", Rows, caps, pkt(1, binaryRow, endOKW(ac|mysql.StatusLastRowSent, 6)), 6, false},
		{"fetch, classic EOF", Rows, classicCaps, pkt(1, binaryRow, eofW(ac|mysql.StatusLastRowSent, 7)), 7, false},
		{"cursor opened", Cursor, classicCaps, pkt(1, []byte{1}, column, eofW(ac|mysql.StatusCursorExists, 2)), 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipes(t, tc.nodeCaps)
			res, got, _, err := p.run(tc.kind, &Options{ClientCaps: caps}, tc.script)
			if err != nil {
				t.Fatalf("relay: %v", err)
			}
			if string(got) != string(tc.script) {
				t.Errorf("the client got\n% x\nthe node sent\n% x", got, tc.script)
			}
			if res.Warnings != tc.warnings || res.Failed != tc.failed {
				t.Errorf("warnings %d failed %v, want %d %v", res.Warnings, res.Failed, tc.warnings, tc.failed)
			}
		})
	}
}
