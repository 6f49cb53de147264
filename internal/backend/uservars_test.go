package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

func TestAppendReadUserVars(t *testing.T) {
	got := string(AppendReadUserVars([]byte("x"), []string{"a`b"}, true))
	want := "xSELECT IF(FALSE,@`a``b`,NULL),CAST(CONCAT_WS(' ',COLLATION(@`a``b`),LENGTH(@`a``b`)) AS BINARY)," +
		"IF(LENGTH(@`a``b`)<=65536,CAST(@`a``b` AS BINARY),NULL),LAST_INSERT_ID()"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := string(AppendReadUserVars(nil, nil, true)); got != "SELECT LAST_INSERT_ID()" {
		t.Fatalf("LAST_INSERT_ID alone: %s", got)
	}
}

func TestAppendRestore(t *testing.T) {
	vars := []UserVar{
		{Name: "i", Type: UserVarInt, Value: "-5"},
		{Name: "u", Type: UserVarUnsigned, Value: "18446744073709551615"},
		{Name: "d", Type: UserVarDecimal, Value: "1.50"},
		{Name: "dint", Type: UserVarDecimal, Value: "-5"},
		{Name: "f", Type: UserVarDouble, Value: "0.30000000000000004"},
		{Name: "fe", Type: UserVarDouble, Value: "1e308"},
		{Name: "s", Type: UserVarString, Value: "x'\\\x00", Collation: "utf8mb4_bin"},
		{Name: "b", Type: UserVarString, Value: "", Collation: "binary"},
		{Name: "n", Type: UserVarString, Null: true, Collation: "binary"},
		{Name: "ns", Type: UserVarString, Null: true, Collation: "latin1_swedish_ci"},
		{Name: "ni", Type: UserVarInt, Null: true},
		{Name: "nu", Type: UserVarUnsigned, Null: true},
		{Name: "nd", Type: UserVarDecimal, Null: true},
		{Name: "nf", Type: UserVarDouble, Null: true},
		// Values no node sends: NULL, never text.
		{Name: "bad1", Type: UserVarInt, Value: "1; DROP TABLE t"},
		{Name: "bad2", Type: UserVarDouble, Value: "Inf"},
		{Name: "bad3", Type: UserVarString, Value: "x", Collation: "utf8mb4_bin' x"},
		{Name: "bad4", Type: UserVarType(9), Value: "1"},
		{Name: "a`b", Type: UserVarInt, Value: "1"},
	}
	got := string(AppendRestore(nil, vars, 42, true))
	want := "DO @`i`:=-5,@`u`:=CAST(18446744073709551615 AS UNSIGNED),@`d`:=1.50,@`dint`:=-5.," +
		"@`f`:=0.30000000000000004e0,@`fe`:=1e308,@`s`:=_utf8mb4 X'78275c00' COLLATE utf8mb4_bin," +
		"@`b`:=_binary X'',@`n`:=CAST(NULL AS BINARY),@`ns`:=CAST(NULL AS CHAR CHARACTER SET latin1) COLLATE latin1_swedish_ci," +
		"@`ni`:=CAST(NULL AS SIGNED),@`nu`:=CAST(NULL AS UNSIGNED),@`nd`:=CAST(NULL AS DECIMAL(65,0))," +
		"@`nf`:=CAST(NULL AS DOUBLE),@`bad1`:=NULL,@`bad2`:=NULL,@`bad3`:=NULL,@`bad4`:=NULL,@`a``b`:=1,LAST_INSERT_ID(42)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := AppendRestore([]byte("x"), nil, 0, false); string(got) != "x" {
		t.Fatalf("nothing to restore: %q", got)
	}
	if got := string(AppendRestore(nil, nil, 0, true)); got != "DO LAST_INSERT_ID(0)" {
		t.Fatalf("LAST_INSERT_ID alone: %q", got)
	}
}

func TestValidNumber(t *testing.T) {
	for _, tc := range []struct {
		typ UserVarType
		s   string
		ok  bool
	}{
		{UserVarInt, "-9223372036854775808", true}, {UserVarInt, "9223372036854775808", false},
		{UserVarInt, "", false}, {UserVarInt, "1 ", false}, {UserVarInt, "0x1", false},
		{UserVarUnsigned, "18446744073709551615", true}, {UserVarUnsigned, "-1", false},
		{UserVarDecimal, "1.50", true}, {UserVarDecimal, "-0.001", true}, {UserVarDecimal, "5", true},
		{UserVarDecimal, "1.", false}, {UserVarDecimal, ".5", false}, {UserVarDecimal, "1.2.3", false},
		{UserVarDecimal, "--1", false}, {UserVarDecimal, "-", false}, {UserVarDecimal, strings.Repeat("9", 81), true},
		{UserVarDecimal, strings.Repeat("9", 82), false}, {UserVarDecimal, "1e5", false},
		{UserVarDouble, "1.2345678901234567e19", true}, {UserVarDouble, "5e-324", true}, {UserVarDouble, "-0", true},
		{UserVarDouble, "Inf", false}, {UserVarDouble, "NaN", false}, {UserVarDouble, "1e", false},
		{UserVarDouble, "0x1p3", false}, {UserVarString, "1", false},
	} {
		if got := validNumber(tc.typ, tc.s); got != tc.ok {
			t.Errorf("validNumber(%v, %q) = %v", tc.typ, tc.s, got)
		}
	}
}

// typedColumnDef is a ColumnDefinition41 of the given type and flags, with MariaDB's extended
// metadata block when extended.
func typedColumnDef(name string, typ byte, flags uint16, extended bool) []byte {
	b := mysql.AppendLenEncString(nil, []byte("def"))
	for _, s := range []string{"", "", "", name, ""} {
		b = mysql.AppendLenEncString(b, []byte(s))
	}
	if extended {
		b = mysql.AppendLenEncString(b, []byte("\x00\x04json"))
	}
	return append(b, 0x0c, 63, 0, 0, 0, 0, 0, typ, byte(flags), byte(flags>>8), 0, 0, 0)
}

func TestColumnType(t *testing.T) {
	for _, ext := range []bool{false, true} {
		typ, flags, err := columnType(typedColumnDef("x", typeLongLong, flagUnsigned, ext), ext)
		if err != nil || typ != typeLongLong || flags != flagUnsigned {
			t.Errorf("extended %v: %d %#x %v", ext, typ, flags, err)
		}
	}
	for _, p := range [][]byte{nil, {0xfc}, typedColumnDef("x", 8, 0, false)[:20], append(typedColumnDef("x", 8, 0, false)[:21], 0x0b)} {
		if _, _, err := columnType(p, false); err == nil {
			t.Errorf("columnType(%q): no error", p)
		}
	}
}

// userVarNode answers a ReadUserVars of two variables (and LAST_INSERT_ID) with the cells of
// its script: "ok" sends @a = 5 (BIGINT), @b = 'x' (utf8mb4_bin), LAST_INSERT_ID 7; the other
// scripts each break one thing a node could send. Anything else is answered as resultNode does.
func userVarNode(c *mysql.Conn, caps uint32, p []byte) {
	q := string(p[1:])
	if strings.Contains(q, "information_schema.USER_VARIABLES") {
		_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1109, "42S02", "Unknown table 'USER_VARIABLES' in information_schema")))
		return
	}
	if !strings.HasPrefix(q, "SELECT IF(FALSE,@`a`") {
		resultNode(c, caps, p)
		return
	}
	script := "ok"
	if i := strings.Index(q, "@`script:"); i >= 0 {
		script = q[i+len("@`script:"):]
		script = script[:strings.IndexByte(script, '`')]
	}
	types := []byte{typeLongLong, typeVarString}
	cells := []*string{nil, str("binary 1"), str("5"), nil, str("utf8mb4_bin 1"), str("x"), str("7")}
	rows := 1
	switch script {
	case "type":
		types[0] = 7 // TIMESTAMP: never a variable's
	case "collation":
		cells[4] = str("utf8mb4_bin' 1")
	case "number":
		cells[2] = str("5; DROP TABLE t")
	case "length":
		cells[4] = str("utf8mb4_bin 2")
	case "huge":
		cells[4] = str("utf8mb4_bin 99999999")
		cells[5] = nil
	case "rows":
		rows = 2
	case "lid":
		cells[6] = nil
	}
	_ = c.WritePacket(mysql.AppendLenEncInt(nil, 7))
	for i := 0; i < 7; i++ {
		typ := byte(typeVarString)
		if i%3 == 0 && i < 6 {
			typ = types[i/3]
		}
		_ = c.WritePacket(typedColumnDef("c", typ, 0, false))
	}
	deprecateEOF := caps&mysql.ClientDeprecateEOF != 0
	if !deprecateEOF {
		_ = c.WritePacket(mysql.AppendEOF(nil, 0, mysql.StatusAutocommit))
	}
	for range rows {
		_ = c.WritePacket(textRowPacket(cells...))
	}
	if deprecateEOF {
		_ = c.WritePacket(mysql.AppendOK(nil, mysql.OK{Header: 0xfe, Status: mysql.StatusAutocommit}, AlwaysCaps))
	} else {
		_ = c.WritePacket(mysql.AppendEOF(nil, 0, mysql.StatusAutocommit))
	}
	_ = c.Flush()
}

// TestReadUserVarsScripted: ReadUserVars decodes a node's answer, refuses what no server sends
// (a type no variable has, a collation or number that is not one, a length that does not match,
// two rows, a NULL LAST_INSERT_ID) and a value past the bound, and the connection stays usable
// after each.
func TestReadUserVarsScripted(t *testing.T) {
	for _, caps := range []uint32{0, mysql.ClientDeprecateEOF} {
		addr, _ := commandNode(t, mariaDBHandshake(), userVarNode)
		bc := testDial(t, addr, Options{Capabilities: caps})
		vars, lid, err := bc.ReadUserVars([]string{"a", "b"}, true)
		if err != nil {
			t.Fatal(err)
		}
		want := []UserVar{{Name: "a", Type: UserVarInt, Value: "5"}, {Name: "b", Value: "x", Collation: "utf8mb4_bin"}}
		if len(vars) != 2 || vars[0] != want[0] || vars[1] != want[1] || lid != 7 {
			t.Fatalf("got %+v %d", vars, lid)
		}
		for _, script := range []string{"type", "collation", "number", "length", "huge", "rows", "lid"} {
			_, _, err := bc.ReadUserVars([]string{"a", "script:" + script}, true)
			if err == nil {
				t.Errorf("%s: no error", script)
			}
			if script == "huge" && !errors.Is(err, ErrUserVarTooLarge) {
				t.Errorf("huge: %v", err)
			}
			if _, err := bc.Query("SELECT status"); err != nil {
				t.Fatalf("after %s: %v", script, err)
			}
		}
	}
	addr, _ := commandNode(t, mariaDBHandshake(), userVarNode)
	if _, err := testDial(t, addr, Options{}).UserVarNames(); err != ErrNoUserVarList {
		t.Fatalf("UserVarNames where the table is unknown: %v", err)
	}
	if _, _, err := (&Conn{}).ReadUserVars(make([]string, MaxUserVarsPerRead+1), false); err == nil {
		t.Fatal("too many names: no error")
	}
}
