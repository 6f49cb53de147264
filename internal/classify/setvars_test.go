package classify

import (
	"strings"
	"testing"
	"unsafe"
)

// setVarsCases: "name" is a literal's, "name()" an expression's; ok false: not nameable.
var setVarsCases = []struct {
	in   string
	d    Dialect
	want string
	ok   bool
}{
	// Connector/J's start-up statement, and the frameworks'.
	{in: "set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')", want: "autocommit sql_mode()", ok: true},
	{in: "SET SESSION sql_mode = REPLACE(@@sql_mode,'ONLY_FULL_GROUP_BY','')", want: "sql_mode()", ok: true},
	{in: "SET time_zone = CONCAT('+0','0:00')", want: "time_zone()", ok: true},
	{in: "SET @@session.max_statement_time = 2*5", want: "max_statement_time()", ok: true},
	{in: "SET @@SESSION.sql_mode = CONCAT(REPLACE(REPLACE(@@sql_mode, 'STRICT_TRANS_TABLES', ''), 'STRICT_ALL_TABLES', ''), ',NO_AUTO_VALUE_ON_ZERO'), @@SESSION.sql_auto_is_null = 0, @@SESSION.wait_timeout = 2147483",
		want: "sql_mode() sql_auto_is_null wait_timeout", ok: true},
	// Literals.
	{in: "SET a = 1", want: "a", ok: true},
	{in: "SET a = -1, b = +2.5", want: "a b", ok: true},
	{in: "SET a = 'x,y', b = ON, c = DEFAULT, d = `utf8mb4`", want: "a b c d", ok: true},
	{in: "SET a := 1", want: "a", ok: true},
	{in: "SET a = 1;", want: "a", ok: true},
	{in: "SET a = 1 ; -- done", want: "a", ok: true},
	// Scopes and spellings.
	{in: "SET SESSION a = 1, LOCAL b = f(1)", want: "a b()", ok: true},
	{in: "SET LOCAL a = 1", want: "a", ok: true},
	{in: "SET @@a = 1, @@local.b = 2, @@session.c = 3", want: "a b c", ok: true},
	{in: "SET @@session . a = 1", want: "a", ok: true},
	{in: "SET /* x */ SESSION /* y */ `sql_mode` /* z */ = /* , b = 1 */ 'A', c = 2", want: "sql_mode c", ok: true},
	{in: "SET a = f('x,y', (1, 2), g(h(3), ')')), b = 1", want: "a() b", ok: true},
	{in: "SET a = 1 - -1", want: "a()", ok: true},
	{in: "SET a = 'x' 'y'", want: "a()", ok: true},
	{in: "SET a = _utf8mb4'x'", want: "a()", ok: true},
	{in: "SET a = @@global.a", want: "a()", ok: true},
	{in: "SET sql_mode = (SELECT m FROM t LIMIT 1)", want: "sql_mode()", ok: true},
	// "…" is a string without ANSI_QUOTES (the server refuses it), a name with it.
	{in: "SET \"sql_mode\" = 1", ok: false},
	{in: "SET \"sql_mode\" = 1", d: Dialect{Mode: AnsiQuotes}, want: "sql_mode", ok: true},
	{in: "SET a = 'it''s', b = 'x\\'y'", want: "a b", ok: true},
	{in: "SET a = 'x\\', b = 'y'", d: Dialect{Mode: NoBackslashEscapes}, want: "a b", ok: true},
	{in: "SET a = 'x\\', b = 'y'", want: "a()", ok: true}, // an unterminated string the server refuses
	// Not nameable.
	{in: "SET GLOBAL a = 1", ok: false},
	{in: "SET a = 1, GLOBAL b = 2", ok: false},
	{in: "SET PERSIST a = 1", ok: false},
	{in: "SET PERSIST_ONLY a = 1", ok: false},
	{in: "SET @@global.a = 1", ok: false},
	{in: "SET a = 1, @@global.b = f()", ok: false},
	{in: "SET @a = 1", ok: false},
	{in: "SET a = @b", ok: false},
	{in: "SET a = f(@b)", ok: false},
	{in: "SET a = 1, @b := 2", ok: false},
	{in: "SET NAMES utf8mb4", ok: false},
	{in: "SET CHARACTER SET utf8mb4", ok: false},
	{in: "SET CHARSET utf8mb4", ok: false},
	{in: "SET a = 1, NAMES utf8mb4", ok: false},
	{in: "SET PASSWORD = PASSWORD('x')", ok: false},
	{in: "SET ROLE r", ok: false},
	{in: "SET DEFAULT ROLE r FOR u", ok: false},
	{in: "SET TRANSACTION READ ONLY", ok: false},
	{in: "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", ok: false},
	{in: "SET STATEMENT max_statement_time = 1 FOR SELECT 1", ok: false},
	{in: "SET keycache.key_buffer_size = 1", ok: false},
	{in: "SET `a``b` = 1", ok: false},
	{in: "SET `a b` = 1", ok: false},
	{in: "SET `a", ok: false},
	{in: "SET a = ", ok: false},
	{in: "SET a", ok: false},
	{in: "SET a 1", ok: false},
	{in: "SET a = f(1", ok: false},
	{in: "SET a = 1)", ok: false},
	{in: "SET a = 1,", ok: false},
	{in: "SET a = 1; SET b = 2", ok: false},
	{in: "SET", ok: false},
	{in: "SELECT 1", ok: false},
	{in: "SET " + strings.Repeat("a", MaxSysVarName+1) + " = 1", ok: false},
}

func TestSetVars(t *testing.T) {
	for _, tc := range setVarsCases {
		var got []string
		ok := SetVars([]byte(tc.in), tc.d, func(name []byte, literal bool) {
			s := string(name)
			if !literal {
				s += "()"
			}
			got = append(got, s)
		})
		if ok != tc.ok {
			t.Errorf("SetVars(%q) = %v, want %v (names %q)", tc.in, ok, tc.ok, got)
			continue
		}
		if ok && strings.Join(got, " ") != tc.want {
			t.Errorf("SetVars(%q) named %q, want %q", tc.in, strings.Join(got, " "), tc.want)
		}
	}
}

func TestSetVarsAllocs(t *testing.T) {
	n := 0
	visit := func(name []byte, literal bool) { n += len(name) }
	for _, s := range []string{
		"set autocommit=1, sql_mode = concat(@@sql_mode,',STRICT_TRANS_TABLES')",
		"SET @@session.max_statement_time = 2*5, `time_zone` = '+00:00'",
	} {
		stmt := []byte(s)
		if a := testing.AllocsPerRun(100, func() { SetVars(stmt, Dialect{}, visit) }); a != 0 {
			t.Errorf("SetVars(%q): %v allocs/op", s, a)
		}
	}
	if n == 0 {
		t.Fatal("no variable visited")
	}
}

// FuzzSetVars: no panic, names that are sub-slices of the input made of name bytes only, and
// the same answer twice.
func FuzzSetVars(f *testing.F) {
	for _, tc := range setVarsCases {
		f.Add([]byte(tc.in), uint8(tc.d.Mode))
	}
	f.Fuzz(func(t *testing.T, stmt []byte, mode uint8) {
		d := Dialect{Mode: Mode(mode) & AllModes}
		var first []string
		ok := SetVars(stmt, d, func(name []byte, literal bool) {
			if !sysVarName(name) {
				t.Fatalf("name %q", name)
			}
			if len(stmt) > 0 {
				lo := uintptr(unsafe.Pointer(unsafe.SliceData(stmt)))
				p := uintptr(unsafe.Pointer(unsafe.SliceData(name)))
				if p < lo || p+uintptr(len(name)) > lo+uintptr(len(stmt)) {
					t.Fatalf("name %q is not inside the statement", name)
				}
			}
			first = append(first, string(name))
		})
		i := 0
		ok2 := SetVars(stmt, d, func(name []byte, literal bool) {
			if i >= len(first) || first[i] != string(name) {
				t.Fatalf("second reading differs at %d: %q", i, name)
			}
			i++
		})
		if ok != ok2 || i != len(first) {
			t.Fatalf("second reading differs: %v/%v, %d/%d names", ok, ok2, i, len(first))
		}
	})
}
