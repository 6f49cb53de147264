package mysql

import (
	"bytes"
	"testing"
)

// TestAppendOKHidingVars: the system-variable entries hide names are taken out of an OK's
// session-state block, the rest of the packet kept byte for byte; a block left empty is
// written as an OK without state changes; nothing hidden leaves dst as it was.
func TestAppendOKHidingVars(t *testing.T) {
	sysvar := func(name, value string) []byte {
		data := AppendLenEncString(AppendLenEncString(nil, []byte(name)), []byte(value))
		return AppendLenEncString([]byte{SessionTrackSystemVariables}, data)
	}
	schema := AppendLenEncString([]byte{SessionTrackSchema}, AppendLenEncString(nil, []byte("db1")))
	okWith := func(info string, entries ...[]byte) []byte {
		block := bytes.Join(entries, nil)
		return AppendOK(nil, OK{AffectedRows: 3, LastInsertID: 7, Status: StatusAutocommit | StatusSessionStateChange,
			Warnings: 1, Info: []byte(info), SessionState: block}, ClientSessionTrack)
	}
	hideMode := func(name []byte) bool { return string(name) == "sql_mode" || string(name) == "max_statement_time" }
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte // nil: nothing hidden
	}{
		{"mixed", okWith("", sysvar("sql_mode", "ANSI"), schema, sysvar("time_zone", "+01:00")),
			okWith("", schema, sysvar("time_zone", "+01:00"))},
		{"all hidden", okWith("", sysvar("sql_mode", "ANSI"), sysvar("max_statement_time", "9.000000")),
			AppendOK(nil, OK{AffectedRows: 3, LastInsertID: 7, Status: StatusAutocommit, Warnings: 1}, ClientSessionTrack)},
		{"all hidden, info kept", okWith("Rows matched: 1", sysvar("sql_mode", "ANSI")),
			AppendOK(nil, OK{AffectedRows: 3, LastInsertID: 7, Status: StatusAutocommit, Warnings: 1, Info: []byte("Rows matched: 1")}, ClientSessionTrack)},
		{"none hidden", okWith("", sysvar("time_zone", "+01:00"), schema), nil},
		{"no block", AppendOK(nil, OK{Status: StatusAutocommit}, ClientSessionTrack), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("prefix")
			got, hid, err := AppendOKHidingVars(dst, tc.in, hideMode)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if hid || string(got) != "prefix" {
					t.Fatalf("hid %v, dst %q: want nothing done", hid, got)
				}
				return
			}
			if !hid || !bytes.Equal(got[len("prefix"):], tc.want) {
				t.Fatalf("got % x (hid %v)\nwant % x", got[len("prefix"):], hid, tc.want)
			}
		})
	}
	if _, _, err := AppendOKHidingVars(nil, okWith("", sysvar("sql_mode", "x"))[:12], hideMode); err == nil {
		t.Error("a truncated block: no error")
	}
}
