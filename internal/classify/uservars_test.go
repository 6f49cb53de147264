package classify

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// varCase is one statement for UserVars: the variables it names, each as its key with "="
// after an assigned one, in order, space-separated, and its effects.
type varCase struct {
	in   string
	vars string
	eff  VarEffects
	d    Dialect
}

var varCases = []varCase{
	// Assignments.
	{in: "SET @a = 1", vars: "a="},
	{in: "SET @a = 1, @b := 2", vars: "a= b="},
	{in: "SET @a = @a + 1", vars: "a= a"},
	{in: "set @A=1,@b=@a=2", vars: "a= b= a"}, // @a = 2 is a comparison
	{in: "SET @a = f(1, @b = 2), @c = 3", vars: "a= b c="},
	{in: "SET @a = (SELECT @b := 1)", vars: "a= b="},
	{in: "SET SESSION sql_mode = '', @a = 1", vars: "a="},
	{in: "SET @@session.x = 1, @a = @@global.y", vars: "a="},
	{in: "SELECT @a := 1", vars: "a="},
	{in: "SELECT @a:=1, @b", vars: "a= b"},
	{in: "SELECT @a = 1", vars: "a"},
	{in: "SELECT c INTO @a FROM t", vars: "a="},
	{in: "SELECT c, d INTO @a, @b FROM t WHERE e = @c", vars: "a= b= c"},
	{in: "SELECT c, d FROM t WHERE e = @c INTO @a, @b", vars: "c a= b="},
	{in: "SELECT c FROM t LIMIT 1 INTO @a FOR UPDATE", vars: "a="},
	{in: "SELECT @a:=1 INTO @b", vars: "a= b="},
	{in: "SELECT 1 INTO OUTFILE '/tmp/x'", vars: ""},
	{in: "INSERT INTO t VALUES (@a)", vars: "a"},
	{in: "UPDATE t SET c = @a, d = (@b := d + 1) WHERE e = @c", vars: "a b= c"},
	{in: "LOAD DATA INFILE 'f' INTO TABLE t (c1, @x) SET c2 = @x + @y", vars: "x= x= y="},
	{in: "LOAD XML INFILE 'f' INTO TABLE t (@x)", vars: "x="},
	{in: "SET STATEMENT max_statement_time=1 FOR LOAD DATA INFILE 'f' INTO TABLE t (@x)", vars: "x="},
	{in: "GET DIAGNOSTICS @n = NUMBER", vars: "n="},
	{in: "GET DIAGNOSTICS CONDITION 1 @e = MESSAGE_TEXT, @s = RETURNED_SQLSTATE", vars: "e= s="},
	{in: "GET CURRENT DIAGNOSTICS @n = ROW_COUNT", vars: "n="},
	{in: "SELECT get, @a FROM t", vars: "a"},
	{in: "SET @a = 1; SELECT @a; SELECT 2 INTO @b", vars: "a= a b="},
	{in: "SET @a = 1; SELECT @b = 1", vars: "a= b"},

	// Reads and dynamic SQL.
	{in: "EXECUTE s USING @a, @b", vars: "a b", eff: VarsExecute},
	{in: "execute s", eff: VarsExecute},
	{in: "PREPARE s FROM @sql", vars: "sql"},
	{in: "PREPARE s FROM 'SELECT @a := 1'", vars: ""},
	{in: "EXECUTE IMMEDIATE 'SET @a = 1'", vars: "a="},
	{in: "EXECUTE IMMEDIATE 'SELECT ? INTO @a' USING @b", vars: "a= b"},
	{in: `EXECUTE IMMEDIATE 'SET @a = ''x'', @\'b\' = 2'`, vars: "a= b="},
	{in: "EXECUTE IMMEDIATE @sql", vars: "sql", eff: VarsUnnamed},
	{in: "EXECUTE IMMEDIATE CONCAT('SET @a', '=1')", eff: VarsUnnamed},
	{in: "EXECUTE IMMEDIATE 'SET @a=1' 'x'", eff: VarsUnnamed},
	{in: "SET STATEMENT max_statement_time=1 FOR EXECUTE s", eff: VarsExecute},
	{in: "SELECT execute FROM t"},
	{in: "CALL p(@a, @b)", vars: "a= b=", eff: VarsUnnamed},
	{in: "CALL p", eff: VarsUnnamed},
	{in: "SELECT 1; CALL p()", eff: VarsUnnamed},
	{in: "BEGIN NOT ATOMIC SET @a = 1; END", vars: "a=", eff: VarsUnnamed},
	{in: "BEGIN; SELECT @a", vars: "a"},
	{in: "SELECT db.call(@a)", vars: "a"},

	// Names.
	{in: "SELECT @`a b`:=1, @'x':=2, @\"y\":=3", vars: "a b= x= y="},
	{in: "SELECT @`a``b`, @'it''s', @'it\\'s'", vars: "a`b it's it's"},
	{in: "SELECT @\"a\\\"b\"", vars: "a\"b"},
	{in: "SELECT @\"a\"\"b\"", vars: "a\"b", d: Dialect{Mode: AnsiQuotes}},
	{in: "SELECT @'a\\'", vars: "a\\", d: Dialect{Mode: NoBackslashEscapes}},
	{in: "SELECT @ABC, @a.b, @a$x, @1a, @_", vars: "abc a.b a$x 1a _"},
	{in: "SELECT @Éa, @éA", vars: "éa éa"},
	{in: "SELECT @", vars: ""},
	{in: "SELECT @@a, @@session.b, @@global.c", vars: ""},

	// Not variables.
	{in: "SELECT '@a := 1', \"@b\", `@c`", vars: ""},
	{in: "SELECT 1 -- @a := 1\n, 2 # @b := 2\n /* @c := 3 */", vars: ""},
	{in: "SELECT 1 /*! , @a := 1 */", vars: "a="},
	{in: "SELECT 1 /*M!100000 , @a := 1 */", vars: "a="},
	{in: "SELECT 1 /*!99999 , @a := 1 */", vars: "", d: Dialect{Flavor: FlavorMariaDB, Version: 101119}},
	{in: "SELECT 1 /*M!999999 , @a := 1 */", vars: "", d: Dialect{Flavor: FlavorMariaDB, Version: 101119}},
	{in: "CREATE USER 'u'@'h', `v`@`h`, w@h", vars: ""},
	{in: "CREATE DEFINER=root@localhost PROCEDURE p() SET @a = 1", vars: "a="},
	{in: "GRANT ALL ON *.* TO 'u'@'%'", vars: ""},

	// LAST_INSERT_ID, FOUND_ROWS, ROW_COUNT.
	{in: "SELECT LAST_INSERT_ID()", eff: VarsLastInsertID},
	{in: "UPDATE t SET id = LAST_INSERT_ID(id + 1)", eff: VarsLastInsertID},
	{in: "SELECT last_insert_id /**/ ()", eff: VarsLastInsertID},
	{in: "SELECT last_insert_id FROM t"},
	{in: "SELECT t.last_insert_id(1)"},
	{in: "SELECT @@identity, @@last_insert_id", eff: VarsLastInsertID},
	{in: "SELECT @@session.insert_id", eff: VarsLastInsertID},
	{in: "SELECT @@session . insert_id", eff: VarsLastInsertID},
	{in: "SELECT 'LAST_INSERT_ID()'"},
	{in: "SELECT FOUND_ROWS()", eff: VarsFoundRows},
	{in: "SELECT ROW_COUNT(), FOUND_ROWS(), LAST_INSERT_ID()", eff: VarsRowCount | VarsFoundRows | VarsLastInsertID},
	{in: "EXECUTE IMMEDIATE 'SELECT ROW_COUNT()'", eff: VarsRowCount},
}

func (tc varCase) got() (string, VarEffects) {
	var names []string
	eff := UserVars([]byte(tc.in), tc.d, func(tok []byte, assigns bool) {
		s := string(AppendUserVarKey(nil, tok, tc.d))
		if assigns {
			s += "="
		}
		names = append(names, s)
	})
	return strings.Join(names, " "), eff
}

func TestUserVars(t *testing.T) {
	for _, tc := range varCases {
		vars, eff := tc.got()
		if vars != tc.vars || eff != tc.eff {
			t.Errorf("UserVars(%q) = %q, %v; want %q, %v", tc.in, vars, eff, tc.vars, tc.eff)
		}
	}
}

func TestAppendUserVarName(t *testing.T) {
	for _, tc := range []struct {
		tok, name, key string
		d              Dialect
	}{
		{tok: "@Ab", name: "Ab", key: "ab"},
		{tok: "@`A``b`", name: "A`b", key: "a`b"},
		{tok: "@'x\\ny'", name: "x\ny", key: "x\ny"},
		{tok: "@'x\\ny'", name: "x\\ny", key: "x\\ny", d: Dialect{Mode: NoBackslashEscapes}},
		{tok: `@"A\"B"`, name: `A"B`, key: `a"b`},
		{tok: `@"A\""`, name: `A\"`, key: `a\"`, d: Dialect{Mode: AnsiQuotes}}, // "" is one "
		{tok: "@'unterminated", name: "unterminated", key: "unterminated"},
		{tok: "@ÉTÉ", name: "ÉTÉ", key: "été"},
		{tok: "@Ⱥ", name: "Ⱥ", key: "ⱥ"},                         // the lower case is a byte longer
		{tok: "@\xc9T\xc9", name: "\xc9T\xc9", key: "\xc9t\xc9"}, // latin1: non-ASCII kept
		{tok: "@", name: "", key: ""},
		{tok: "a", name: "", key: ""},
	} {
		if got := string(AppendUserVarName([]byte("p"), []byte(tc.tok), tc.d)); got != "p"+tc.name {
			t.Errorf("AppendUserVarName(%q) = %q, want %q", tc.tok, got[1:], tc.name)
		}
		if got := string(AppendUserVarKey([]byte("p"), []byte(tc.tok), tc.d)); got != "p"+tc.key {
			t.Errorf("AppendUserVarKey(%q) = %q, want %q", tc.tok, got[1:], tc.key)
		}
	}
}

func TestVarEffectsString(t *testing.T) {
	for e, want := range map[VarEffects]string{
		0:                                "0",
		VarsUnnamed:                      "VarsUnnamed",
		VarsExecute | VarsRowCount:       "VarsExecute|VarsRowCount",
		VarsLastInsertID | 1<<7:          "VarsLastInsertID|VarEffects(128)",
		VarsFoundRows | VarsLastInsertID: "VarsLastInsertID|VarsFoundRows",
	} {
		if got := e.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint8(e), got, want)
		}
	}
}

// TestUserVarsAllocs: naming the variables of a statement allocates nothing, including a
// literal of EXECUTE IMMEDIATE that must be unescaped (pooled) and AppendUserVarKey into a
// buffer that has room.
func TestUserVarsAllocs(t *testing.T) {
	key := make([]byte, 0, 64)
	n := 0
	visit := func(tok []byte, assigns bool) {
		key = AppendUserVarKey(key[:0], tok, Dialect{})
		n++
	}
	for _, s := range []string{
		"SELECT c, d FROM t WHERE e = @c INTO @a, @b",
		"SET @a = @a + 1, @`b c` := 'x', @ÉTÉ = 1",
		`EXECUTE IMMEDIATE 'SET @a = ''x'''`,
	} {
		stmt := []byte(s)
		if a := testing.AllocsPerRun(100, func() { UserVars(stmt, Dialect{}, visit) }); a != 0 {
			t.Errorf("UserVars(%q): %v allocs/op", s, a)
		}
	}
	if n == 0 {
		t.Fatal("no variable visited")
	}
}

func BenchmarkUserVars(b *testing.B) {
	for _, bc := range []struct{ name, stmt string }{
		{"point_select", "SELECT c FROM sbtest1 WHERE id=?"},
		{"set_two", "SET @a = 1, @b := @a + 1"},
		{"select_into", "SELECT c, d FROM t WHERE e = @c INTO @a, @b"},
		{"long_select_1KiB", longSelect},
	} {
		stmt := []byte(bc.stmt)
		key := make([]byte, 0, 64)
		visit := func(tok []byte, assigns bool) { key = AppendUserVarKey(key[:0], tok, Dialect{}) }
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stmt)))
			for b.Loop() {
				UserVars(stmt, Dialect{}, visit)
			}
		})
	}
}

// FuzzUserVars: for any text and dialect, no panic; every token visited starts with '@' and is
// a piece of the text or of an EXECUTE IMMEDIATE literal's value; the answer is the same twice;
// a key is the lower case of its name, no longer than UTF-8 folding can make it.
func FuzzUserVars(f *testing.F) {
	for _, tc := range varCases {
		f.Add([]byte(tc.in), uint8(tc.d.Mode), uint8(tc.d.Flavor))
	}
	f.Add([]byte(longSelect), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, stmt []byte, mode, flavor uint8) {
		d := Dialect{Flavor: Flavor(flavor % 3), Version: 101119, Mode: Mode(mode) & AllModes}
		var first []string
		eff := UserVars(stmt, d, func(tok []byte, assigns bool) {
			if len(tok) < 2 || tok[0] != '@' {
				t.Fatalf("token %q", tok)
			}
			name := AppendUserVarName(nil, tok, d)
			key := AppendUserVarKey(nil, tok, d)
			if utf8.Valid(name) && len(key) > 3*len(name) {
				t.Fatalf("key %q of name %q", key, name)
			}
			first = append(first, string(tok))
		})
		i := 0
		eff2 := UserVars(stmt, d, func(tok []byte, assigns bool) {
			if i >= len(first) || first[i] != string(tok) {
				t.Fatalf("second reading differs at %d: %q", i, tok)
			}
			i++
		})
		if eff != eff2 || i != len(first) {
			t.Fatalf("second reading differs: %v/%v, %d/%d tokens", eff, eff2, i, len(first))
		}
		if eff >= 1<<len(varEffectNames) {
			t.Fatalf("effects %v", eff)
		}
	})
}
