package livetest

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// userVarCases are user variables of every type a server keeps, with hostile names and values:
// name and the expression that sets it.
var userVarCases = []struct{ name, expr string }{
	{"i", "5"}, {"ineg", "-5"}, {"izero", "0"}, {"imin", "-9223372036854775808"},
	{"imax", "9223372036854775807"},
	{"u", "CAST(5 AS UNSIGNED)"}, {"umax", "18446744073709551615"},
	{"d", "1.50"}, {"dint", "CAST(5 AS DECIMAL(10,0))"}, {"dneg", "-0.001"},
	{"dwide", "12345678901234567890123456789.123456789012345678901234567890123456"},
	{"dscale", "CAST(1 AS DECIMAL(65,38))"},
	{"dhuge", "99999999999999999999999999999999999999999999999999999999999999999.0 * 10"}, // 67 digits
	{"f", "1.5e0"}, {"fsum", "0.1e0 + 0.2e0"}, {"fbig", "1e308"}, {"ftiny", "5e-324"},
	{"fneg", "-2.5e-10"}, {"fthird", "1/3e0"}, {"fint", "CAST(7 AS DOUBLE)"},
	{"s", "'x'"}, {"sbin", "'x' COLLATE utf8mb4_bin"}, {"slatin1", "_latin1 X'636166E9'"},
	{"sutf16", "CONVERT('héllo' USING utf16)"}, {"sjis", "_sjis X'955C'"},
	{"bin", "_binary X'00FF27225C0A'"},
	{"hostile", "CONCAT('it''s \\\\ \"q\" `b` ', CHAR(0), ' \\n', '\\'; DROP TABLE x; --')"},
	{"hostileutf8", "CONCAT(_utf8mb4 'é''s \\\\ \"q\" `b` ', CHAR(0 USING utf8mb4), ' \\n', '\\'; --')"},
	{"empty", "''"}, {"emptybin", "_binary ''"}, {"date", "NOW()"}, {"json", "JSON_OBJECT('a', 'b')"},
	{"big", "REPEAT('é', 32768)"}, // 65536 bytes: MaxUserVarBytes exactly
	{"n", "NULL"}, {"ni", "CAST(NULL AS SIGNED)"}, {"nu", "CAST(NULL AS UNSIGNED)"},
	{"nf", "CAST(NULL AS DOUBLE)"}, {"nd", "CAST(NULL AS DECIMAL(10,2))"},
	{"nlatin1", "CAST(NULL AS CHAR CHARACTER SET latin1)"},
	{"nbin", "CAST(NULL AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin"},
	{"a b", "1"}, {"it's", "2"}, {"back`tick", "3"}, {"Été", "4"}, {"1a", "5"}, {"a.b", "6"},
	{"\\", "7"}, {`"`, "8"},
}

// quoteName returns @`name`.
func quoteName(name string) string { return "@`" + strings.ReplaceAll(name, "`", "``") + "`" }

// quoteString returns 'name' for a string literal.
func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// describe tells what a session sees of variable name: its bytes, character set, collation,
// coercibility, numeric value, text, NULL-ness, how information_schema types it, and the
// column CREATE TABLE … AS SELECT makes of it. Only ASCII comes back, so the text is the same
// whatever the connection's character_set_results.
func describe(t *testing.T, c *backend.Conn, name string) string {
	t.Helper()
	v := quoteName(name)
	rows, err := c.Query("SELECT HEX(CAST(" + v + " AS BINARY)), CHARSET(" + v + "), COLLATION(" + v + "), COERCIBILITY(" + v +
		"), HEX(CAST(" + v + " + 0 AS CHAR)), HEX(CAST(" + v + " AS CHAR)), " + v + " IS NULL, " +
		"(SELECT CONCAT(VARIABLE_TYPE, ' ', CHARACTER_SET_NAME) FROM information_schema.USER_VARIABLES WHERE VARIABLE_NAME = " + quoteString(name) + ")")
	if err != nil {
		t.Fatalf("describe %s: %v", v, err)
	}
	var b strings.Builder
	for _, cell := range rows.Values[0] {
		if cell.Null {
			b.WriteString("NULL|")
		} else {
			b.WriteString(cell.S + "|")
		}
	}
	if err := c.Exec("CREATE OR REPLACE TEMPORARY TABLE uv AS SELECT " + v + " AS v"); err != nil {
		// A value the column type cannot hold (a DECIMAL of 29 + 36 digits in the DECIMAL(65,38)
		// the server makes of every DECIMAL variable): the refusal must be the same too.
		b.WriteString(err.Error())
		return b.String()
	}
	rows, err = c.Query("SHOW CREATE TABLE uv")
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString(rows.Values[0][1].S)
	exec(t, c, "DROP TEMPORARY TABLE uv")
	return b.String()
}

// TestUserVarsRoundTrip sets variables of every type on one connection, reads them back with
// ReadUserVars, restores them with AppendRestore on another connection, and compares what each
// connection sees of each variable (describe). The reading connection's character_set_results
// is latin1, so that a utf8mb4 or utf16 value would come converted (lossily) were it not read as
// binary.
func TestUserVarsRoundTrip(t *testing.T) {
	a, b := dial(t), dial(t)
	names := make([]string, 0, len(userVarCases)+1)
	for _, tc := range userVarCases {
		exec(t, a, "SET "+quoteName(tc.name)+" = "+tc.expr)
		names = append(names, tc.name)
	}
	names = append(names, "never_set")
	exec(t, a, "SET character_set_results = latin1")
	var vars []backend.UserVar
	for i := 0; i < len(names); i += backend.MaxUserVarsPerRead {
		got, _, err := a.ReadUserVars(names[i:min(i+backend.MaxUserVarsPerRead, len(names))], false)
		if err != nil {
			t.Fatal(err)
		}
		vars = append(vars, got...)
	}
	// The restore is read the same in any sql_mode: hexadecimal values, backquoted names.
	exec(t, b, "SET sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'")
	restore := backend.AppendRestore(nil, vars, 0, false)
	if err := b.Exec(string(restore)); err != nil {
		t.Fatalf("restore: %v\n%.2000s", err, restore)
	}
	exec(t, b, "SET sql_mode = DEFAULT")
	for i, name := range names {
		want, got := describe(t, a, name), describe(t, b, name)
		if name == "never_set" {
			// Restored as NULL: alike but for information_schema, which lists it now.
			want = strings.Replace(want, "|NULL|CREATE", "|VARCHAR binary|CREATE", 1)
		}
		if got != want {
			t.Errorf("@%s (%+v):\nrestored %.300s\noriginal %.300s", name, vars[i].Type, got, want)
		}
	}
	if testing.Verbose() {
		t.Logf("restore: %.1500s", restore)
	}
}

// TestUserVarsCaseAndQuotes: a variable set under one spelling reads back under another (names
// are case-insensitive), and a name needing quotes works in the read and the restore.
func TestUserVarsCaseAndQuotes(t *testing.T) {
	a, b := dial(t), dial(t)
	exec(t, a, "SET @ÉTÉ = 'summer', @`x``y` = 2")
	vars, _, err := a.ReadUserVars([]string{"été", "x`y"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if vars[0].Value != "summer" || vars[0].Collation != "utf8mb4_general_ci" || vars[1].Value != "2" || vars[1].Type != backend.UserVarInt {
		t.Fatalf("read %+v", vars)
	}
	exec(t, b, string(backend.AppendRestore(nil, vars, 0, false)))
	if got := scalar(t, b, "SELECT CONCAT(@ÉtÉ, @`x``y`)"); got != "summer2" {
		t.Fatalf("restored: %q", got)
	}
}

// TestUserVarTooLarge: a value past MaxUserVarBytes is not read: ReadUserVars says which, and
// the connection stays usable.
func TestUserVarTooLarge(t *testing.T) {
	a := dial(t)
	exec(t, a, "SET @small = 1, @huge = REPEAT('x', "+strconv.Itoa(backend.MaxUserVarBytes+1)+")")
	_, _, err := a.ReadUserVars([]string{"small", "huge"}, true)
	var tl *backend.UserVarTooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, backend.ErrUserVarTooLarge) || tl.Name != "huge" || tl.Len != backend.MaxUserVarBytes+1 {
		t.Fatalf("ReadUserVars: %v", err)
	}
	if got := scalar(t, a, "SELECT @small"); got != "1" {
		t.Fatalf("after: %q", got)
	}
}

// okOf runs q on c and returns its OK packet.
func okOf(t *testing.T, c *backend.Conn, q string) mysql.OK {
	t.Helper()
	if err := c.WriteQuery([]byte(q)); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if mysql.IsERR(p) {
		t.Fatalf("%s: %v", q, mysql.ParseERR(p))
	}
	ok, err := mysql.ParseOK(p, c.Caps)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return ok
}

// TestLastInsertID: ReadUserVars reads the server's LAST_INSERT_ID(), which differs from the OK
// packet's insert id for an explicit id and for a statement that generates none, and
// AppendRestore gives another connection that value, with user variables in the same statement;
// the connection's next insert then generates its own.
func TestLastInsertID(t *testing.T) {
	a, b := dial(t), dial(t)
	exec(t, a, "CREATE OR REPLACE TABLE lid (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, v INT)")
	check := func(step string, okID, want uint64) {
		t.Helper()
		vars, got, err := a.ReadUserVars([]string{"x"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: LAST_INSERT_ID read as %d, want %d (the OK said %d)", step, got, want, okID)
		}
		if s := scalar(t, a, "SELECT LAST_INSERT_ID()"); s != strconv.FormatUint(want, 10) {
			t.Fatalf("%s: the read changed LAST_INSERT_ID to %s", step, s)
		}
		exec(t, b, string(backend.AppendRestore(nil, vars, got, true)))
		if s := scalar(t, b, "SELECT CONCAT(LAST_INSERT_ID(), ' ', @@last_insert_id, ' ', @@identity, ' ', @x)"); s != strconv.FormatUint(want, 10)+" "+strconv.FormatUint(want, 10)+" "+strconv.FormatUint(want, 10)+" "+step {
			t.Fatalf("%s: restored as %q, want %d", step, s, want)
		}
	}
	exec(t, a, "SET @x = 'auto'")
	ok := okOf(t, a, "INSERT INTO lid (v) VALUES (1)")
	first := ok.LastInsertID
	check("auto", ok.LastInsertID, first)

	exec(t, a, "SET @x = 'explicit'")
	ok = okOf(t, a, "INSERT INTO lid (id, v) VALUES (1000, 2)")
	if ok.LastInsertID != 1000 {
		t.Fatalf("explicit id: the OK says %d", ok.LastInsertID)
	}
	check("explicit", ok.LastInsertID, first)

	exec(t, a, "SET @x = 'none'")
	ok = okOf(t, a, "UPDATE lid SET v = v + 1")
	check("none", ok.LastInsertID, first)

	exec(t, a, "SET @x = 'multirow'")
	ok = okOf(t, a, "INSERT INTO lid (v) VALUES (3), (4), (5)")
	check("multirow", ok.LastInsertID, 1001) // the first row's id

	exec(t, a, "SET @x = 'expr'")
	ok = okOf(t, a, "UPDATE lid SET v = LAST_INSERT_ID(v + 40) WHERE id = 1000")
	check("expr", ok.LastInsertID, 43)

	// The restored connection generates its own ids afterwards.
	exec(t, b, "INSERT INTO lid (v) VALUES (6)")
	if s := scalar(t, b, "SELECT LAST_INSERT_ID()"); s != "1004" {
		t.Fatalf("b's next insert: LAST_INSERT_ID() = %s, want 1004", s)
	}
	// LAST_INSERT_ID alone.
	exec(t, a, string(backend.AppendRestore(nil, nil, 77, true)))
	if s := scalar(t, a, "SELECT LAST_INSERT_ID()"); s != "77" {
		t.Fatalf("restore alone: %s", s)
	}
	exec(t, a, "DROP TABLE lid")
}

// TestReadAndRestoreLeaveSession: reading back and restoring leave the connection's warnings as
// they were (neither names a table), and the restore reports no session state even where every
// system variable is tracked.
func TestReadAndRestoreLeaveSession(t *testing.T) {
	a := dial(t)
	exec(t, a, "SET session_track_system_variables = '*', @v = 'x'")
	exec(t, a, "SELECT CAST('2024-13-01' AS DATE)") // one warning
	vars, lid, err := a.ReadUserVars([]string{"v"}, true)
	if err != nil {
		t.Fatal(err)
	}
	ok := okOf(t, a, string(backend.AppendRestore(nil, vars, lid+1, true)))
	if len(ok.SessionState) != 0 {
		t.Errorf("restore reports session state %q", ok.SessionState)
	}
	rows, err := a.Query("SHOW WARNINGS")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Values) != 1 || rows.Values[0][1].S != "1292" {
		t.Fatalf("warnings after the read and the restore: %v", rows.Values)
	}
}

// TestUserVarsExtendedMetadata: with MariaDB's extended metadata (a type-info block in every
// column definition, which a client may have negotiated), ReadUserVars still reads the types.
func TestUserVarsExtendedMetadata(t *testing.T) {
	a := dialCaps(t, mysql.MariaDBClientExtendedMetadata)
	if a.MariaDBCaps&mysql.MariaDBClientExtendedMetadata == 0 {
		t.Skip("the server does not offer extended metadata")
	}
	exec(t, a, "SET @u = CAST(5 AS UNSIGNED), @d = 1.50, @j = JSON_OBJECT('a', 1)")
	vars, _, err := a.ReadUserVars([]string{"u", "d", "j"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if vars[0].Type != backend.UserVarUnsigned || vars[1].Type != backend.UserVarDecimal || vars[1].Value != "1.50" ||
		vars[2].Type != backend.UserVarString || vars[2].Value != `{"a": 1}` {
		t.Fatalf("read %+v", vars)
	}
}

// TestUserVarNamesAfterCall: a procedure sets variables its CALL does not name; UserVarNames
// lists them (with those set before, NULL ones included), and ReadUserVars and AppendRestore
// carry them all to another connection.
func TestUserVarNamesAfterCall(t *testing.T) {
	a, b := dial(t), dial(t)
	exec(t, a, "CREATE OR REPLACE PROCEDURE uvp() BEGIN SET @in_p = 'p', @`In P2` = 2.5; END")
	exec(t, a, "SET @before = 1, @nul = NULL")
	exec(t, a, "CALL uvp()")
	names, err := a.UserVarNames()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range names {
		got[n] = true
	}
	for _, n := range []string{"in_p", "In P2", "before", "nul"} {
		if !got[n] {
			t.Fatalf("UserVarNames = %q: no %q", names, n)
		}
	}
	vars, _, err := a.ReadUserVars(names, false)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, b, string(backend.AppendRestore(nil, vars, 0, false)))
	if s := scalar(t, b, "SELECT CONCAT_WS(',', @in_p, @`in p2`, @before, @nul IS NULL)"); s != "p,2.5,1,1" {
		t.Fatalf("restored: %q", s)
	}
	exec(t, a, "DROP PROCEDURE uvp")
}
