package mysql

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

const (
	capsClassic = ClientProtocol41 | ClientSecureConnection | ClientTransactions
	capsTrack   = capsClassic | ClientSessionTrack
)

// mariaDBOKPacket is the OK packet a MariaDB server sends for "USE sbtest" with
// session_track_schema=ON and session_track_system_variables including last_gtid, written out
// byte by byte from the protocol description (OK_Packet, session state information).
func mariaDBOKPacket() []byte {
	return []byte{
		0x00,       // header
		0x00,       // affected rows
		0x00,       // last insert id
		0x02, 0x40, // status: AUTOCOMMIT | SESSION_STATE_CHANGED
		0x00, 0x00, // warnings
		0x00, // info: empty lenenc string
		0x1b, // session state: 27 bytes
		// SESSION_TRACK_SYSTEM_VARIABLES, 16 bytes: lenenc name, lenenc value
		0x00, 0x10,
		0x09, 'l', 'a', 's', 't', '_', 'g', 't', 'i', 'd',
		0x05, '0', '-', '1', '-', '8',
		// SESSION_TRACK_SCHEMA, 7 bytes: lenenc schema name
		0x01, 0x07,
		0x06, 's', 'b', 't', 'e', 's', 't',
	}
}

const mysqlGTID = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"

// mysql8GTIDOKPacket is a MySQL 8 OK packet with session_track_gtids=OWN_GTID after a commit,
// plus a transaction-state entry.
func mysql8GTIDOKPacket() []byte {
	p := []byte{0x00, 0x00, 0x00, 0x02, 0x40, 0x00, 0x00,
		0x00,               // info: empty
		2 + 42 + 2 + 9,     // session state length
		0x03, 42, 0x00, 40} // SESSION_TRACK_GTIDS, entry length, encoding spec 0, lenenc GTID text
	p = append(p, mysqlGTID...)
	// SESSION_TRACK_TRANSACTION_STATE: a lenenc string of eight characters
	p = append(p, 0x05, 0x09, 0x08)
	return append(p, "T_______"...)
}

func TestParseOK(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    []byte
		caps uint32
		want OK
	}{
		{
			name: "minimal",
			p:    []byte{0, 0, 0, 2, 0, 0, 0},
			caps: capsClassic,
			want: OK{Status: StatusAutocommit},
		},
		{
			// As MariaDB and MySQL write it (net_store_data), and mysqlnd, libmysqlclient and
			// PyMySQL read it: length-encoded with or without SESSION_TRACK.
			name: "info is a lenenc string without SESSION_TRACK too",
			p:    append([]byte{0, 1, 0, 2, 0, 0, 0, 40}, "Rows matched: 1  Changed: 1  Warnings: 0"...),
			caps: capsClassic,
			want: OK{AffectedRows: 1, Status: 2, Info: []byte("Rows matched: 1  Changed: 1  Warnings: 0")},
		},
		{
			name: "no session state is read without SESSION_TRACK",
			p:    append([]byte{0, 0, 0, 2, 0x40, 0, 0}, "\x05hello\x03\x01\x01x"...),
			caps: capsClassic,
			want: OK{Status: 0x4002, Info: []byte("hello")},
		},
		{
			name: "SESSION_TRACK with nothing after the warnings",
			p:    []byte{0, 0, 0, 2, 0, 0, 0},
			caps: capsTrack,
			want: OK{Status: 2},
		},
		{
			name: "SESSION_TRACK info is a lenenc string",
			p:    append([]byte{0, 3, 0, 0x22, 0, 1, 0, 0x0b}, "Records: 3\x00trailing"...),
			caps: capsTrack,
			want: OK{AffectedRows: 3, Status: 0x22, Warnings: 1, Info: []byte("Records: 3\x00")},
		},
		{
			name: "session state ignored without SESSION_STATE_CHANGED",
			p:    []byte{0, 0, 0, 2, 0, 0, 0, 0, 3, 1, 1, 'x'},
			caps: capsTrack,
			want: OK{Status: 2, Info: []byte{}},
		},
		{
			name: "session state read with SESSION_STATE_CHANGED",
			p:    []byte{0, 0, 0, 2, 0x40, 0, 0, 0, 3, 1, 1, 'x'},
			caps: capsTrack,
			want: OK{Status: 0x4002, Info: []byte{}, SessionState: []byte{1, 1, 'x'}},
		},
		{
			name: "SESSION_STATE_CHANGED but the packet ends after the info",
			p:    []byte{0, 0, 0, 2, 0x40, 0, 0, 2, 'h', 'i'},
			caps: capsTrack,
			want: OK{Status: 0x4002, Info: []byte("hi")},
		},
		{
			name: "SESSION_STATE_CHANGED with no info at all",
			p:    []byte{0, 0, 0, 2, 0x40, 0, 0},
			caps: capsTrack,
			want: OK{Status: 0x4002},
		},
		{
			name: "multi-byte affected rows and insert id",
			p: []byte{0, 0xfc, 0x00, 0x01, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8,
				2, 0, 0xff, 0xff},
			caps: capsClassic,
			want: OK{AffectedRows: 256, LastInsertID: 0x0807060504030201, Status: 2, Warnings: 0xffff},
		},
		{
			name: "OK in place of EOF",
			p:    []byte{0xfe, 0, 0, 0x22, 0, 0, 0},
			caps: capsClassic | ClientDeprecateEOF,
			want: OK{Header: 0xfe, Status: 0x22},
		},
		{
			name: "MariaDB session state",
			p:    mariaDBOKPacket(),
			caps: capsTrack,
			want: OK{Status: 0x4002, Info: []byte{}, SessionState: mariaDBOKPacket()[9:]},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOK(tc.p, tc.caps)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseOK = %+v\nwant      %+v", got, tc.want)
			}
			if !IsOK(tc.p) && tc.p[0] == 0 {
				t.Errorf("IsOK = false")
			}
		})
	}
}

func TestParseOKErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    []byte
		caps uint32
	}{
		{"empty", nil, capsClassic},
		{"header only", []byte{0}, capsClassic},
		{"truncated affected rows", []byte{0, 0xfc, 1}, capsClassic},
		{"invalid affected rows", []byte{0, 0xff, 0, 0, 0, 0, 0}, capsClassic},
		{"no insert id", []byte{0, 0}, capsClassic},
		{"truncated insert id", []byte{0, 0, 0xfd, 1, 2}, capsClassic},
		{"no status", []byte{0, 0, 0}, capsClassic},
		{"half the warnings", []byte{0, 0, 0, 2, 0, 0}, capsClassic},
		{"info longer than the packet", []byte{0, 0, 0, 2, 0, 0, 0, 5, 'a'}, capsTrack},
		{"invalid info length", []byte{0, 0, 0, 2, 0, 0, 0, 0xff}, capsTrack},
		{"state longer than the packet", []byte{0, 0, 0, 2, 0x40, 0, 0, 0, 9, 1}, capsTrack},
		{"truncated state length", []byte{0, 0, 0, 2, 0x40, 0, 0, 0, 0xfc, 1}, capsTrack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok, err := ParseOK(tc.p, tc.caps); err == nil {
				t.Fatalf("ParseOK(% x) = %+v, want an error", tc.p, ok)
			}
		})
	}
}

func TestAppendOK(t *testing.T) {
	state := []byte{1, 7, 6, 's', 'b', 't', 'e', 's', 't'}
	for _, tc := range []struct {
		name string
		ok   OK
		caps uint32
		want []byte
	}{
		{
			name: "plain",
			ok:   OK{AffectedRows: 1, LastInsertID: 7, Status: 2, Warnings: 3},
			caps: capsClassic,
			want: []byte{0, 1, 7, 2, 0, 3, 0},
		},
		{
			name: "info lenenc without SESSION_TRACK",
			ok:   OK{Status: 2, Info: []byte("hello")},
			caps: capsClassic,
			want: []byte{0, 0, 0, 2, 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'},
		},
		{
			name: "state and its flag dropped without SESSION_TRACK",
			ok:   OK{Status: 0x4002, Info: []byte("hi"), SessionState: state},
			caps: capsClassic,
			want: []byte{0, 0, 0, 2, 0, 0, 0, 2, 'h', 'i'},
		},
		{
			name: "SESSION_TRACK, no info, no state: nothing after the warnings",
			ok:   OK{Status: 2},
			caps: capsTrack,
			want: []byte{0, 0, 0, 2, 0, 0, 0},
		},
		{
			name: "SESSION_TRACK info is lenenc",
			ok:   OK{Status: 2, Info: []byte("hello")},
			caps: capsTrack,
			want: []byte{0, 0, 0, 2, 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'},
		},
		{
			name: "SESSION_TRACK with state: empty info then the block",
			ok:   OK{Status: 0x4002, SessionState: state},
			caps: capsTrack,
			want: append([]byte{0, 0, 0, 2, 0x40, 0, 0, 0, 9}, state...),
		},
		{
			name: "flag cleared when there is no state to send",
			ok:   OK{Status: 0x4002},
			caps: capsTrack,
			want: []byte{0, 0, 0, 2, 0, 0, 0},
		},
		{
			name: "state without the flag is not sent",
			ok:   OK{Status: 2, SessionState: state},
			caps: capsTrack,
			want: []byte{0, 0, 0, 2, 0, 0, 0},
		},
		{
			name: "0xfe header kept",
			ok:   OK{Header: 0xfe, Status: 2},
			caps: capsClassic | ClientDeprecateEOF,
			want: []byte{0xfe, 0, 0, 2, 0, 0, 0},
		},
		{
			name: "other headers become 0x00",
			ok:   OK{Header: 0x07, Status: 2},
			caps: capsClassic,
			want: []byte{0, 0, 0, 2, 0, 0, 0},
		},
		{
			name: "large counters",
			ok:   OK{AffectedRows: 251, LastInsertID: math.MaxUint64, Status: 2},
			caps: capsClassic,
			want: []byte{0, 0xfc, 251, 0, 0xfe, 255, 255, 255, 255, 255, 255, 255, 255, 2, 0, 0, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("prefix")
			got := AppendOK(prefix, tc.ok, tc.caps)
			if !bytes.Equal(got[:len(prefix)], prefix) {
				t.Fatal("AppendOK overwrote the prefix")
			}
			got = got[len(prefix):]
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("AppendOK = % x\nwant       % x", got, tc.want)
			}
			back, err := ParseOK(got, tc.caps)
			if err != nil {
				t.Fatalf("ParseOK(AppendOK) failed: %v", err)
			}
			want := tc.ok
			if want.Header != 0xfe {
				want.Header = 0
			}
			if tc.caps&ClientSessionTrack == 0 || len(want.SessionState) == 0 || want.Status&StatusSessionStateChange == 0 {
				want.Status &^= StatusSessionStateChange
				want.SessionState = nil
			}
			if !okEqual(back, want) {
				t.Fatalf("round trip = %+v\nwant         %+v", back, want)
			}
		})
	}
}

// okEqual compares OKs, treating nil and empty slices alike.
func okEqual(a, b OK) bool {
	return a.Header == b.Header && a.AffectedRows == b.AffectedRows && a.LastInsertID == b.LastInsertID &&
		a.Status == b.Status && a.Warnings == b.Warnings &&
		bytes.Equal(a.Info, b.Info) && bytes.Equal(a.SessionState, b.SessionState)
}

func TestMariaDBSessionState(t *testing.T) {
	p := mariaDBOKPacket()
	ok, err := ParseOK(p, capsTrack)
	if err != nil {
		t.Fatal(err)
	}
	if ok.Status != StatusAutocommit|StatusSessionStateChange || len(ok.SessionState) != 27 {
		t.Fatalf("status %#x, state %d bytes", ok.Status, len(ok.SessionState))
	}
	sc, rest, err := NextSessionChange(ok.SessionState)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Type != SessionTrackSystemVariables || string(sc.Name) != "last_gtid" || string(sc.Value) != "0-1-8" {
		t.Fatalf("first entry = {Type:%d Name:%q Value:%q}, want {0 last_gtid 0-1-8}", sc.Type, sc.Name, sc.Value)
	}
	sc, rest, err = NextSessionChange(rest)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Type != SessionTrackSchema || sc.Name != nil || string(sc.Value) != "sbtest" {
		t.Fatalf("second entry = {Type:%d Name:%q Value:%q}, want {1 <nil> sbtest}", sc.Type, sc.Name, sc.Value)
	}
	if len(rest) != 0 {
		t.Fatalf("% x left after the last entry", rest)
	}
	// Re-encoded for a client with SESSION_TRACK, the packet is unchanged.
	if again := AppendOK(nil, ok, capsTrack); !bytes.Equal(again, p) {
		t.Fatalf("AppendOK(ParseOK(p)) = % x\nwant                 % x", again, p)
	}
	// For a client without it, the block and the flag are gone.
	if plain := AppendOK(nil, ok, capsClassic); !bytes.Equal(plain, []byte{0, 0, 0, 2, 0, 0, 0}) {
		t.Fatalf("AppendOK without SESSION_TRACK = % x", plain)
	}
}

func TestMySQL8GTIDSessionState(t *testing.T) {
	ok, err := ParseOK(mysql8GTIDOKPacket(), capsTrack)
	if err != nil {
		t.Fatal(err)
	}
	sc, rest, err := NextSessionChange(ok.SessionState)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Type != SessionTrackGTIDs || string(sc.Value) != mysqlGTID {
		t.Fatalf("GTID entry = {Type:%d Value:%q}, want {3 %s}", sc.Type, sc.Value, mysqlGTID)
	}
	sc, rest, err = NextSessionChange(rest)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Type != SessionTrackTransactionState || string(sc.Value) != "\x08T_______" {
		t.Fatalf("transaction state entry = {Type:%d Value:%q}, want the raw data", sc.Type, sc.Value)
	}
	if len(rest) != 0 {
		t.Fatalf("% x left", rest)
	}
}

func TestNextSessionChangeOtherTypes(t *testing.T) {
	// SESSION_TRACK_STATE_CHANGE and unknown types: Value is the entry's raw data.
	block := []byte{0x02, 0x02, 0x01, '1', 0x2a, 0x00}
	sc, rest, err := NextSessionChange(block)
	if err != nil || sc.Type != SessionTrackStateChange || string(sc.Value) != "\x011" {
		t.Fatalf("state change = %+v, %v", sc, err)
	}
	sc, rest, err = NextSessionChange(rest)
	if err != nil || sc.Type != 0x2a || len(sc.Value) != 0 || len(rest) != 0 {
		t.Fatalf("unknown empty entry = %+v, rest % x, %v", sc, rest, err)
	}
}

func TestNextSessionChangeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block []byte
	}{
		{"empty", nil},
		{"type only", []byte{0x01}},
		{"entry longer than the block", []byte{0x01, 0x05, 0x01}},
		{"invalid entry length", []byte{0x05, 0xff}},
		{"variable name longer than the entry", []byte{0x00, 0x02, 0x05, 'a'}},
		{"variable without value", []byte{0x00, 0x02, 0x01, 'a'}},
		{"variable value longer than the entry", []byte{0x00, 0x04, 0x01, 'a', 0x03, 'b'}},
		{"schema longer than the entry", []byte{0x01, 0x02, 0x07, 's'}},
		{"empty schema entry", []byte{0x01, 0x00}},
		{"GTIDs without encoding byte", []byte{0x03, 0x00}},
		{"GTIDs without text", []byte{0x03, 0x01, 0x00}},
		{"GTID text longer than the entry", []byte{0x03, 0x03, 0x00, 0x09, 'x'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if sc, _, err := NextSessionChange(tc.block); err == nil {
				t.Fatalf("NextSessionChange(% x) = %+v, want an error", tc.block, sc)
			}
		})
	}
}

func TestParseERR(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    []byte
		want SQLError
	}{
		{
			name: "with SQLSTATE",
			p:    append([]byte{0xff, 0x15, 0x04, '#', '2', '8', '0', '0', '0'}, "Access denied for user 'u'@'h' (using password: YES)"...),
			want: SQLError{Code: 1045, State: "28000", Message: "Access denied for user 'u'@'h' (using password: YES)"},
		},
		{
			name: "without SQLSTATE",
			p:    append([]byte{0xff, 0x10, 0x04}, "Too many connections"...),
			want: SQLError{Code: 1040, State: "HY000", Message: "Too many connections"},
		},
		{
			name: "marker too short to hold a state",
			p:    []byte{0xff, 0x01, 0x00, '#', '4', '2'},
			want: SQLError{Code: 1, State: "HY000", Message: "#42"},
		},
		{
			name: "state, empty message",
			p:    []byte{0xff, 0x26, 0x04, '#', '4', '2', '0', '0', '0'},
			want: SQLError{Code: 1062, State: "42000"},
		},
		{
			name: "code only",
			p:    []byte{0xff, 0x01, 0x00},
			want: SQLError{Code: 1, State: "HY000"},
		},
		{"empty", nil, SQLError{Code: ErrUnknown, State: "HY000", Message: "malformed error packet"}},
		{"too short", []byte{0xff, 0x01}, SQLError{Code: ErrUnknown, State: "HY000", Message: "malformed error packet"}},
		{"not an ERR", []byte{0x00, 0x01, 0x02}, SQLError{Code: ErrUnknown, State: "HY000", Message: "malformed error packet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseERR(tc.p)
			if got == nil || *got != tc.want {
				t.Fatalf("ParseERR = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAppendERR(t *testing.T) {
	e := &SQLError{Code: 1290, State: "HY000", Message: "The MySQL server is running with the --read-only option"}
	got := AppendERR(nil, e)
	want := append([]byte{0xff, 0x0a, 0x05, '#', 'H', 'Y', '0', '0', '0'}, e.Message...)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendERR = % x\nwant        % x", got, want)
	}
	if !IsERR(got) {
		t.Fatal("IsERR(AppendERR) = false")
	}
	for _, e := range []*SQLError{
		{Code: 1045, State: "28000", Message: "Access denied"},
		{Code: 0xfffe, State: "XX000", Message: ""},
		{Code: 1064, State: "42000", Message: "syntax error near '#'\x00\xff"},
	} {
		if back := ParseERR(AppendERR(nil, e)); *back != *e {
			t.Errorf("round trip of %+v = %+v", e, back)
		}
	}
	// A state that is not five characters is replaced, so the packet stays well-formed.
	for _, state := range []string{"", "4200", "420000"} {
		back := ParseERR(AppendERR(nil, &SQLError{Code: 1, State: state, Message: "m"}))
		if back.State != "HY000" || back.Message != "m" {
			t.Errorf("state %q: round trip = %+v", state, back)
		}
	}
}

// TestAppendERRClientCode: an error sluice raises with a code of the client libraries' own
// ranges, or the progress-report marker, goes out as 1105 with its state and message. libmariadb
// (the mariadb CLI, PHP's and Python's MySQLdb builds on it) refuses such a packet whole and
// shows "ERROR 2027 (HY000): Received malformed packet" instead of the message: the first
// bytes below are what it checks.
func TestAppendERRClientCode(t *testing.T) {
	for _, code := range []uint16{2000, 2003, 2013, 2027, 2061, 2999, 5000, 5025, 5999, 0xffff} {
		e := &SQLError{Code: code, State: "08S01", Message: "sluice: node 'replica9' is down"}
		got := AppendERR(nil, e)
		want := append([]byte{0xff, 0x51, 0x04, '#', '0', '8', 'S', '0', '1'}, e.Message...)
		if !bytes.Equal(got, want) {
			t.Errorf("code %d: AppendERR = % x\nwant         % x", code, got, want)
		}
	}
	for _, code := range []uint16{1105, 1927, 1999, 3000, 4999, 6000, 0xfffe} {
		if IsClientCode(code) {
			t.Errorf("IsClientCode(%d) = true, want false: a server sends it", code)
		}
		if back := ParseERR(AppendERR(nil, &SQLError{Code: code, State: "HY000"})); back.Code != code {
			t.Errorf("server code %d written as %d", code, back.Code)
		}
	}
}

func TestSQLError(t *testing.T) {
	e := NewError(ErrAccessDenied, "28000", "Access denied")
	if e.Error() != "ERROR 1045 (28000): Access denied" {
		t.Fatalf("Error() = %q", e.Error())
	}
	// Without arguments the message is taken as it is.
	if e := NewError(ErrUnknownCom, "08S01", "Unknown command"); e.Message != "Unknown command" {
		t.Fatalf("message = %q", e.Message)
	}
	if e := NewError(ErrConCount, "08004", "too many: %d", 3); e.Message != "too many: 3" {
		t.Fatalf("message = %q", e.Message)
	}
	var target *SQLError
	if err := error(AccessDenied("bob", "127.0.0.9", true)); !errors.As(err, &target) ||
		target.Message != "Access denied for user 'bob'@'127.0.0.9' (using password: YES)" || target.State != "28000" {
		t.Fatalf("AccessDenied = %+v", target)
	}
	if e := AccessDenied("bob", "h", false); !strings.HasSuffix(e.Message, "(using password: NO)") {
		t.Fatalf("AccessDenied without password = %q", e.Message)
	}
}

func TestIsOKIsERR(t *testing.T) {
	for _, tc := range []struct {
		p           []byte
		isOK, isERR bool
	}{
		{nil, false, false},
		{[]byte{0, 0, 0, 2, 0, 0, 0}, true, false},
		{[]byte{0, 0, 0, 2, 0, 0}, false, false}, // too short for an OK
		{[]byte{0xff}, false, true},
		{[]byte{0xfe, 0, 0, 2, 0, 0, 0}, false, false},
	} {
		if IsOK(tc.p) != tc.isOK || IsERR(tc.p) != tc.isERR {
			t.Errorf("% x: IsOK %v IsERR %v, want %v %v", tc.p, IsOK(tc.p), IsERR(tc.p), tc.isOK, tc.isERR)
		}
	}
}

func TestIsEOF(t *testing.T) {
	eof := []byte{0xfe, 0, 0, 2, 0}
	for _, tc := range []struct {
		p    []byte
		n    int
		want bool
	}{
		{eof, len(eof), true},
		{[]byte{0xfe}, 1, true},
		{eof, 0xfffffe, true},
		{eof, maxPacketPayload, false}, // a row whose first column has an 8-byte length
		{[]byte{0x00, 0, 0, 2, 0}, 5, false},
		{nil, 0, false},
	} {
		if got := IsEOF(tc.p, tc.n); got != tc.want {
			t.Errorf("IsEOF(% x, %#x) = %v, want %v", tc.p, tc.n, got, tc.want)
		}
	}
}

func TestParseAppendEOF(t *testing.T) {
	p := AppendEOF([]byte("x"), 3, StatusAutocommit|StatusMoreResultsExists)
	if want := []byte{'x', 0xfe, 3, 0, 0x0a, 0}; !bytes.Equal(p, want) {
		t.Fatalf("AppendEOF = % x, want % x", p, want)
	}
	if e := ParseEOF(p[1:]); e != (EOF{Warnings: 3, Status: 0x0a}) {
		t.Fatalf("ParseEOF = %+v", e)
	}
	if e := ParseEOF([]byte{0xfe}); e != (EOF{}) {
		t.Fatalf("ParseEOF of a bare header = %+v", e)
	}
	if e := ParseEOF([]byte{0xfe, 1, 0, 2}); e != (EOF{}) {
		t.Fatalf("ParseEOF of 4 bytes = %+v", e)
	}
}

func TestTerminatorStatus(t *testing.T) {
	deprecate := capsClassic | ClientDeprecateEOF
	for _, tc := range []struct {
		name string
		p    []byte
		caps uint32
		want uint16
	}{
		{"classic EOF", []byte{0xfe, 1, 0, 0x0a, 0}, capsClassic, 0x0a},
		{"classic EOF, old 1-byte form", []byte{0xfe}, capsClassic, 0},
		{"classic EOF under DEPRECATE_EOF (5 bytes)", []byte{0xfe, 1, 0, 0x22, 0}, deprecate, 0x22},
		{"OK terminator", []byte{0xfe, 0, 0, 0x22, 0, 1, 0}, deprecate, 0x22},
		{"OK terminator with lenenc counters", []byte{0xfe, 0xfc, 0, 1, 0xfc, 1, 0, 0x0a, 0, 0, 0}, deprecate, 0x0a},
		{"OK terminator with SESSION_TRACK info", []byte{0xfe, 0, 0, 0x02, 0x40, 0, 0, 0, 3, 1, 1, 'x'}, deprecate | ClientSessionTrack, 0x4002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TerminatorStatus(tc.p, tc.caps)
			if err != nil || got != tc.want {
				t.Fatalf("TerminatorStatus = %#x, %v; want %#x", got, err, tc.want)
			}
		})
	}
	if _, err := TerminatorStatus([]byte{0xfe, 0xff, 0, 0, 0, 0, 0}, deprecate); err == nil {
		t.Fatal("malformed OK terminator: no error")
	}
}

func TestLenEncInt(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{250, []byte{0xfa}},
		{251, []byte{0xfc, 0xfb, 0x00}},
		{0xffff, []byte{0xfc, 0xff, 0xff}},
		{0x10000, []byte{0xfd, 0x00, 0x00, 0x01}},
		{0xffffff, []byte{0xfd, 0xff, 0xff, 0xff}},
		{0x1000000, []byte{0xfe, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}},
		{0x0102030405060708, []byte{0xfe, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}},
		{math.MaxUint64, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	} {
		got := AppendLenEncInt([]byte{0xaa}, tc.v)
		if !bytes.Equal(got[1:], tc.want) || got[0] != 0xaa {
			t.Errorf("AppendLenEncInt(%#x) = % x, want % x", tc.v, got[1:], tc.want)
		}
		v, n, null, err := ReadLenEncInt(append(tc.want, 0x99))
		if err != nil || v != tc.v || n != len(tc.want) || null {
			t.Errorf("ReadLenEncInt(% x) = %#x, %d, %v, %v; want %#x, %d", tc.want, v, n, null, err, tc.v, len(tc.want))
		}
	}
	// NULL.
	if v, n, null, err := ReadLenEncInt([]byte{0xfb, 1}); v != 0 || n != 1 || !null || err != nil {
		t.Errorf("ReadLenEncInt(NULL) = %d, %d, %v, %v", v, n, null, err)
	}
	// Short and invalid input.
	for _, b := range [][]byte{
		nil,
		{0xfc},
		{0xfc, 0x01},
		{0xfd, 0x01, 0x02},
		{0xfe},
		{0xfe, 1, 2, 3, 4, 5, 6, 7},
		{0xff},
		{0xff, 0, 0, 0, 0, 0, 0, 0, 0},
	} {
		if _, n, _, err := ReadLenEncInt(b); err == nil || n != 0 {
			t.Errorf("ReadLenEncInt(% x): n %d, err %v; want an error", b, n, err)
		}
	}
}

func TestLenEncString(t *testing.T) {
	for _, n := range []int{0, 1, 250, 251, 0xffff, 0x10000} {
		s := testPattern(n, 1)
		enc := AppendLenEncString(nil, s)
		got, k, err := ReadLenEncString(append(enc, 'z'))
		if err != nil || !bytes.Equal(got, s) || k != len(enc) {
			t.Errorf("%d bytes: round trip len %d, k %d, %v", n, len(got), k, err)
		}
	}
	if s, k, err := ReadLenEncString([]byte{0xfb, 'x'}); s != nil || k != 1 || err != nil {
		t.Errorf("NULL string = %q, %d, %v", s, k, err)
	}
	for _, b := range [][]byte{nil, {3, 'a', 'b'}, {0xfc, 0x00}, {0xfc, 0x00, 0x01, 'a'}, {0xff}} {
		if _, _, err := ReadLenEncString(b); err == nil {
			t.Errorf("ReadLenEncString(% x): no error", b)
		}
	}
	// A length near 2^64 must not wrap around the bounds check.
	huge := []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'a'}
	if _, _, err := ReadLenEncString(huge); err == nil {
		t.Error("ReadLenEncString with a 2^64-1 length: no error")
	}
}

func TestReadNulString(t *testing.T) {
	if s, n, err := readNulString([]byte("abc\x00def")); string(s) != "abc" || n != 4 || err != nil {
		t.Errorf("readNulString = %q, %d, %v", s, n, err)
	}
	if s, n, err := readNulString([]byte("\x00")); len(s) != 0 || n != 1 || err != nil {
		t.Errorf("readNulString(NUL) = %q, %d, %v", s, n, err)
	}
	if _, _, err := readNulString([]byte("abc")); err == nil {
		t.Error("readNulString without NUL: no error")
	}
}

// TestAppendOKWithoutSessionState: what a client without SESSION_TRACK gets of an OK packet that
// came from a node connection with it is the server's bytes up to the end of the info string,
// the info still length-encoded (mysqlnd and PyMySQL read it so), without the session-state
// block and its status flag.
func TestAppendOKWithoutSessionState(t *testing.T) {
	const info = "Records: 3  Duplicates: 0  Warnings: 0"
	state := []byte{0x00, 0x10, 0x09, 'l', 'a', 's', 't', '_', 'g', 't', 'i', 'd', 0x05, '0', '-', '1', '-', '8'}
	withInfo := append([]byte{0x00, 0x03, 0x00, 0x02, 0x40, 0x00, 0x00, byte(len(info))}, info...)
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
	}{
		{
			name: "multi-row INSERT: info kept as sent, state dropped",
			in:   append(append(append([]byte(nil), withInfo...), byte(len(state))), state...),
			want: append([]byte{0x00, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00, byte(len(info))}, info...),
		},
		{
			name: "no info: the empty string is left out as the server does",
			in:   mariaDBOKPacket(),
			want: []byte{0, 0, 0, 2, 0, 0, 0},
		},
		{
			name: "flag set but nothing after the info",
			in:   withInfo,
			want: append([]byte{0x00, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00, byte(len(info))}, info...),
		},
		{
			name: "other status bits and large counters untouched",
			in: append([]byte{0xfe, 0xfc, 0x00, 0x01, 0x05, 0x7b, 0x43, 0x03, 0x00, 0x02, 'h', 'i', 0x03},
				0x01, 0x01, 'x'),
			want: []byte{0xfe, 0xfc, 0x00, 0x01, 0x05, 0x7b, 0x03, 0x03, 0x00, 0x02, 'h', 'i'},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendOKWithoutSessionState([]byte("pre"), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append([]byte("pre"), tc.want...)) {
				t.Fatalf("got  % x\nwant % x", got[3:], tc.want)
			}
			// A client without SESSION_TRACK decodes the same counters and info.
			a, err := ParseOK(tc.in, capsTrack)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ParseOK(got[3:], capsClassic)
			if err != nil {
				t.Fatal(err)
			}
			if a.AffectedRows != b.AffectedRows || a.LastInsertID != b.LastInsertID || !bytes.Equal(a.Info, b.Info) ||
				a.Status&^StatusSessionStateChange != b.Status || a.Warnings != b.Warnings {
				t.Fatalf("decoded %+v, want %+v", b, a)
			}
		})
	}
	for _, bad := range [][]byte{nil, {0}, {0, 0}, {0, 0, 0, 2, 0}, {0, 0, 0, 2, 0x40, 0, 0, 9, 'a'}, {0, 0xfc, 1}} {
		if got, err := AppendOKWithoutSessionState(nil, bad); err == nil {
			t.Errorf("AppendOKWithoutSessionState(% x) = % x, want an error", bad, got)
		}
	}
}
