package classify

import "testing"

var (
	maria1011 = Dialect{Flavor: FlavorMariaDB, Version: 101119}
	maria1104 = Dialect{Flavor: FlavorMariaDB, Version: 110402}
	mysql57   = Dialect{Flavor: FlavorMySQL, Version: 50744}
	mysql8033 = Dialect{Flavor: FlavorMySQL, Version: 80033}
	mysql8034 = Dialect{Flavor: FlavorMySQL, Version: 80034}
	mysql84   = Dialect{Flavor: FlavorMySQL, Version: 80400}
	mysql90   = Dialect{Flavor: FlavorMySQL, Version: 90000}
)

// dialectCases are the servers' documented rules for versioned comments and dollar quotes,
// one statement read by several servers. kinds lists the kinds of the statements the server
// runs, in a KindSet.
var dialectCases = []struct {
	in    string
	d     Dialect
	kind  Kind
	kinds KindSet
	dep   Depends
}{
	// /*! without five digits runs everywhere; its digits are content.
	{"/*! SELECT 1 */", maria1011, Select, 1 << Select, 0},
	{"/*! SELECT 1 */", mysql57, Select, 1 << Select, 0},
	{"/*!1234 SELECT 1 */", maria1011, Unknown, 1 << Unknown, 0},
	// A five-digit version below 50700 runs on every server sluice knows: no dependence.
	{"/*!40101 SET NAMES utf8 */", maria1011, Set, 1 << Set, 0},
	{"/*!50604 SELECT 1 */", mysql57, Select, 1 << Select, 0},

	// The case: a version above the server's is a comment, -- and all.
	{"/*!99999 SELECT 1 -- */ INSERT INTO t VALUES (1)", maria1011, Insert, 1 << Insert, DependsVersion},
	{"/*!99999 SELECT 1 -- */ INSERT INTO t VALUES (1)", mysql84, Insert, 1 << Insert, DependsVersion},
	{"/*!99999 SELECT 1 -- */ ANALYZE TABLE t", maria1011, Admin, 1 << Admin, DependsVersion},
	{"/*!99999 SELECT 1 -- */ INSERT INTO t VALUES (1)", Dialect{}, Select, 1 << Select, DependsVersion},
	// Quotes inside a comment that does not run are comment text.
	{"/*!99999 ' */ INSERT INTO t VALUES (1) /* ' */", maria1011, Insert, 1 << Insert, DependsVersion},
	{"SELECT 1 /*!99999 ; DELETE FROM t */", maria1011, Select, 1 << Select, DependsVersion},
	{"SELECT 1 /*!99999 ; DELETE FROM t */", Dialect{}, Select, 1<<Select | 1<<Delete, DependsVersion},

	// MariaDB skips MySQL's 50700–99999 in /*!, but not in /*M!.
	{"/*!50700 SELECT 1 */ INSERT INTO t VALUES (1)", maria1011, Insert, 1 << Insert, DependsVersion},
	{"/*!50700 SELECT 1 */", mysql57, Select, 1 << Select, DependsVersion},
	{"/*!50699 SELECT 1 */", maria1011, Select, 1 << Select, 0},
	{"/*!80000 SELECT 1 */ DO 1", maria1011, Do, 1 << Do, DependsVersion},
	{"/*!80000 SELECT 1 */", mysql8033, Select, 1 << Select, DependsVersion},
	{"/*!80000 SELECT 1 */ DO 1", mysql57, Do, 1 << Do, DependsVersion},
	{"/*M!50700 SELECT 1 */", maria1011, Select, 1 << Select, DependsVersion},
	{"/*!100000 SELECT 1 */", maria1011, Select, 1 << Select, DependsVersion},
	{"/*!101119 SELECT 1 */", maria1011, Select, 1 << Select, DependsVersion},
	{"/*!101120 SELECT 1 */ DO 1", maria1011, Do, 1 << Do, DependsVersion},
	{"/*!110000 SELECT 1 */", maria1104, Select, 1 << Select, DependsVersion},

	// /*M! runs on MariaDB at or above its version; MySQL reads an ordinary comment.
	{"/*M!100100 SELECT 1 */", maria1011, Select, 1 << Select, DependsVersion},
	{"/*M!100100 SELECT 1 */ DO 1", mysql84, Do, 1 << Do, DependsVersion},
	{"/*M!110000 SELECT 1 */ DO 1", maria1011, Do, 1 << Do, DependsVersion},
	{"/*M! SELECT 1 */", maria1011, Select, 1 << Select, DependsVersion},
	{"/*M! SELECT 1 */ DO 1", mysql84, Do, 1 << Do, DependsVersion},
	{"/*M!99999 SELECT 1 */", maria1011, Select, 1 << Select, DependsVersion},

	// MariaDB reads five or six digits; a seventh is content.
	{"/*!1011191 */ SELECT 1", maria1011, Unknown, 1 << Unknown, DependsVersion},
	{"/*!101119DO 1*/", maria1011, Do, 1 << Do, DependsVersion},
	{"/*!40101DO 1*/", maria1011, Do, 1 << Do, 0},
	// …so /*!500001 is version 500001 there, above the server: a comment.
	{"/*!500001 SELECT 1 */ DO 1", maria1011, Do, 1 << Do, DependsVersion},

	// MySQL before 8.0.34 reads exactly five digits: /*!800001 is version 80000 and "1".
	{"/*!800001 SELECT 1 */", mysql8033, Unknown, 1 << Unknown, DependsVersion},
	{"/*!80000 SELECT 1 */", mysql8033, Select, 1 << Select, DependsVersion},
	// From 8.0.34, six digits when whitespace follows the sixth.
	{"/*!800340 SELECT 1 */ DO 1", mysql8034, Do, 1 << Do, DependsVersion},
	{"/*!800340 SELECT 1 */", Dialect{Flavor: FlavorMySQL, Version: 800340}, Select, 1 << Select, DependsVersion},
	{"/*!800300 SELECT 1 */", mysql84, Unknown, 0, DependsVersion}, // 800300 > 80400: nothing runs
	{"/*!80030 SELECT 1 */", mysql84, Select, 1 << Select, DependsVersion},
	{"/*!800301SELECT 1 */", mysql84, Unknown, 1 << Unknown, DependsVersion},
	{"/*!80034SELECT 1 */", mysql8034, Select, 1 << Select, DependsVersion},

	// A comment that does not run holds one ordinary comment; an ordinary one holds none.
	{"/*!99999 a /* b */ DELETE FROM t */ SELECT 1", maria1011, Select, 1 << Select, DependsVersion},
	{"/*!99999 a /* b */ DELETE FROM t */ SELECT 1", mysql84, Select, 1 << Select, DependsVersion},
	{"/* a /* b */ SELECT 1", maria1011, Select, 1 << Select, 0},
	// Inside a running comment, an ordinary comment and one that does not run are skipped
	// and the running comment goes on.
	{"/*!SELECT 1 /* x */ FROM DUAL*/", maria1011, Select, 1 << Select, 0},
	{"/*!SELECT 1 /*!99999 ; DELETE FROM t */ */", maria1011, Select, 1 << Select, DependsVersion},

	// A statement of a batch starts afresh: a running comment open at its ';' is closed.
	{"/*!SELECT 1; SELECT 2 */", maria1011, Select, 1 << Select, 0},

	// MySQL 9 reads $tag$ … $tag$ as a string; others read words.
	{"SELECT $$ ' $$; INSERT INTO t VALUES (1); SELECT '", mysql90, Select, 1<<Select | 1<<Insert, DependsVersion},
	{"SELECT $$ ' $$; INSERT INTO t VALUES (1); SELECT '", mysql84, Select, 1 << Select, DependsVersion},
	{"SELECT $a$ ; DELETE FROM t; $a$", mysql90, Select, 1 << Select, DependsVersion},
	{"SELECT $a$ ; DELETE FROM t; $a$", maria1011, Select, 1<<Select | 1<<Delete | 1<<Unknown, DependsVersion},
	{"SELECT $a, b$c FROM t", mysql90, Select, 1 << Select, 0},
}

func TestDialectVersionedComments(t *testing.T) {
	for _, tc := range dialectCases {
		r := ClassifyFor([]byte(tc.in), tc.d)
		if r.Kind != tc.kind || r.Kinds != tc.kinds || r.Depends != tc.dep {
			t.Errorf("%q under %+v: kind %v kinds %b depends %b, want %v %b %b",
				tc.in, tc.d, r.Kind, r.Kinds, r.Depends, tc.kind, tc.kinds, tc.dep)
		}
	}
}

// The sql_mode cases: the batches split in three under the mode, in one without.
func TestDialectModes(t *testing.T) {
	cases := []struct {
		in    string
		mode  Mode
		kinds KindSet
		dep   Depends
	}{
		{`SELECT 'x\' ; FLUSH LOGS; SELECT '1'`, 0, 1 << Select, DependsMode},
		{`SELECT 'x\' ; FLUSH LOGS; SELECT '1'`, NoBackslashEscapes, 1<<Select | 1<<Flush, DependsMode},
		{`SELECT "x\" ; FLUSH LOGS; SELECT "1"`, 0, 1 << Select, DependsMode},
		{`SELECT "x\" ; FLUSH LOGS; SELECT "1"`, AnsiQuotes, 1<<Select | 1<<Flush, DependsMode},
		{`SELECT "x\" ; FLUSH LOGS; SELECT "1"`, NoBackslashEscapes, 1<<Select | 1<<Flush, DependsMode},
		{`SELECT 'x\' ; FLUSH LOGS; SELECT '1'`, AnsiQuotes, 1 << Select, DependsMode},
		{`SELECT @"x\" ; FLUSH LOGS; SELECT "1"`, AnsiQuotes, 1<<Select | 1<<Flush, DependsMode},
		{`SELECT 'a''b', "c""d"`, AllModes, 1 << Select, DependsMode},
		{`SELECT 'a', "b", c`, 0, 1 << Select, DependsMode},
		{`SELECT 'a', 'b''c', c`, AllModes, 1 << Select, 0},
		// MSSQL's [identifiers], ]] inside.
		{`SELECT 1 AS [a;INSERT INTO t SELECT 1;b]`, 0, 1<<Select | 1<<Insert | 1<<Unknown, DependsMode},
		{`SELECT 1 AS [a;INSERT INTO t SELECT 1;b]`, AnsiQuotes | Brackets, 1 << Select, DependsMode},
		{`SELECT 1 AS [a'] ; INSERT INTO t SELECT 1; SELECT ['b]`, 0, 1 << Select, DependsMode},
		{`SELECT 1 AS [a'] ; INSERT INTO t SELECT 1; SELECT ['b]`, AnsiQuotes | Brackets, 1<<Select | 1<<Insert, DependsMode},
		{`SELECT 1 AS [a]];INSERT INTO t SELECT 1;b]`, AnsiQuotes | Brackets, 1 << Select, DependsMode},
		{`SELECT '[', '\[' /* [ */ -- [`, 0, 1 << Select, DependsMode}, // the backslash, not the [
		{`SELECT '[' /* [ */ -- [`, 0, 1 << Select, 0},
		// The text of PREPARE/EXECUTE IMMEDIATE in "…" is an identifier under ANSI_QUOTES.
		{`EXECUTE IMMEDIATE "SELECT 1"`, 0, 1 << Select, DependsMode},
		{`EXECUTE IMMEDIATE "SELECT 1"`, AnsiQuotes, 1 << Unknown, DependsMode},
	}
	for _, tc := range cases {
		r := ClassifyFor([]byte(tc.in), Dialect{Mode: tc.mode})
		if r.Kinds != tc.kinds || r.Depends != tc.dep {
			t.Errorf("%q mode %b: kinds %b depends %b, want %b %b", tc.in, tc.mode, r.Kinds, r.Depends, tc.kinds, tc.dep)
		}
	}
	// USE "db" names the database under ANSI_QUOTES.
	stmt := []byte(`USE "shop"`)
	if r := ClassifyFor(stmt, Dialect{Mode: AnsiQuotes}); string(stmt[r.Name[0]:r.Name[1]]) != "shop" {
		t.Errorf("USE \"shop\" under ANSI_QUOTES: name %q", stmt[r.Name[0]:r.Name[1]])
	}
}

// A byte from 0x81 up before a backslash in a string, or before a quote of a name, is one
// character with it in big5, cp932, gbk, sjis (checked on MariaDB 10.11: under SET NAMES gbk,
// SELECT '\xbf\' ; INSERT … ; SELECT '1' runs the INSERT).
func TestDependsCharset(t *testing.T) {
	cases := []struct {
		in  string
		dep bool
	}{
		{"SELECT '\xbf\\' ; INSERT INTO t SELECT 1; SELECT '1'", true},
		{"SELECT 1 AS `\xbf` ; INSERT INTO t SELECT 1; SELECT 1 AS `a`", true},
		{"SELECT 1 AS \xbf` ; INSERT INTO t SELECT 1; SELECT 1 AS \xbf`", true},
		{"SELECT 1 AS [\xbf] ; INSERT INTO t SELECT 1; SELECT 1 AS [a]", true},
		{"SELECT 'caf\xc3\xa9', `caf\xc3\xa9x`, 'a\\'b'", false},
		{"SELECT '\xbf\\' /* comment: \xbf\\ \xbf` */", true},
		{"SELECT 1 /* \xbf\\ \xbf` */", false},
	}
	for _, tc := range cases {
		r := ClassifyFor([]byte(tc.in), Dialect{})
		if got := r.Depends&DependsCharset != 0; got != tc.dep {
			t.Errorf("%q: DependsCharset %v, want %v", tc.in, got, tc.dep)
		}
	}
}

// A byte 0xA0 or 0xFF outside quotes and comments is whitespace in some single-byte character
// sets (checked on MariaDB 10.11: under SET NAMES latin1, SELECT 1 INTO\xa0@x sets @x; under
// cp852, the same with \xff): a word holding one may be two words there.
func TestDependsSpace(t *testing.T) {
	cases := []struct {
		in  string
		dep bool
	}{
		{"SELECT 1 INTO\xa0OUTFILE '/tmp/x'", true},
		{"SELECT * FROM t FOR\xa0UPDATE", true},
		{"SELECT GET_LOCK\xa0('a', 0)", true},
		{"SELECT 1\xa0INTO @x", true},
		{"SELECT @a\xa0INTO @x", true},
		{"SELECT 1 INTO\xffOUTFILE '/tmp/x'", true},
		{"SELECT 1 /*!INTO\xa0OUTFILE '/tmp/x' */", true},
		{"PREPARE s FROM 'SELECT 1 INTO\xa0OUTFILE ''/x'''", true},
		{"SELECT 1 --\xa0x\n", true},
		{"SELECT 'caf\xe9\xa0', `a\xa0b`, \"\xff\"", false},
		{"SELECT 1 /* \xa0 */ # \xff\n", false},
		{"SELECT voil\xc3\xa0", true}, // utf8's à: a word either way, but the byte is there
		{"SELECT 1", false},
	}
	for _, tc := range cases {
		r := ClassifyFor([]byte(tc.in), Dialect{})
		if got := r.Depends&DependsSpace != 0; got != tc.dep {
			t.Errorf("%q: DependsSpace %v, want %v", tc.in, got, tc.dep)
		}
	}
	if !SpaceCharset([]byte("LATIN1")) || !SpaceCharset([]byte("cp852")) || SpaceCharset([]byte("utf8mb4")) || SpaceCharset([]byte("latin")) {
		t.Error("SpaceCharset")
	}
	if !SpaceCollation(8) || !SpaceCollation(47) || SpaceCollation(45) || SpaceCollation(33) || SpaceCollation(63) {
		t.Error("SpaceCollation")
	}
}

// Two readings that split a text differently differ in Splits even where kinds agree.
func TestSplitsDiffer(t *testing.T) {
	stmt := []byte(`SELECT 'a\'; SELECT 1; SELECT 'b'`)
	a := ClassifyFor(stmt, Dialect{})
	b := ClassifyFor(stmt, Dialect{Mode: NoBackslashEscapes})
	if a.Kinds != b.Kinds || a.Splits == b.Splits {
		t.Fatalf("kinds %b %b, splits %x %x", a.Kinds, b.Kinds, a.Splits, b.Splits)
	}
}

func TestParseServerVersion(t *testing.T) {
	cases := []struct {
		in string
		d  Dialect
		ok bool
	}{
		{"5.5.5-10.11.19-MariaDB-0+deb12u1-log", maria1011, true},
		{"10.11.19-MariaDB-0+deb12u1-log", maria1011, true},
		{"11.4.2-MariaDB", maria1104, true},
		{"8.0.34", mysql8034, true},
		{"8.4.0-commercial", mysql84, true},
		{"5.7.44-log", mysql57, true},
		{"9.0.0", mysql90, true},
		{"5.5.5-x", Dialect{}, false},
		{"", Dialect{}, false},
		{"x.y.z", Dialect{}, false},
		{"10.11", Dialect{}, false},
		{"10.123.1", Dialect{}, false},
	}
	for _, tc := range cases {
		d, ok := ParseServerVersion(tc.in)
		if d != tc.d || ok != tc.ok {
			t.Errorf("ParseServerVersion(%q) = %+v %v, want %+v %v", tc.in, d, ok, tc.d, tc.ok)
		}
	}
}

func BenchmarkClassifyFor(b *testing.B) {
	stmt := []byte("/*!40101 SET NAMES utf8mb4 */")
	b.ReportAllocs()
	for b.Loop() {
		ClassifyFor(stmt, maria1011)
	}
}

// TestQuotedVariableNames: under ANSI_QUOTES "tx_read_only" and under MSSQL [tx_read_only] name
// the variable, as `tx_read_only` does (before, SET "tx_read_only" = 0 read as a session SET of
// no particular variable, not one that makes the connection read-write).
func TestQuotedVariableNames(t *testing.T) {
	for _, tc := range []struct {
		in    string
		mode  Mode
		flags Flags
	}{
		{`SET "tx_read_only" = 0`, AnsiQuotes, SetSession | SetReadWrite},
		{`SET SESSION "tx_read_only" = 0`, AnsiQuotes, SetSession | SetReadWrite},
		{`SET @@session."tx_read_only" = 0`, AnsiQuotes, SetSession | SetReadWrite},
		{`SET [tx_read_only] = 0`, AnsiQuotes | Brackets, SetSession | SetReadWrite},
		{`SET "autocommit" = 0`, AnsiQuotes, SetSession | SetAutocommit},
		{`SET STATEMENT "tx_read_only" = 0 FOR SELECT 1`, AnsiQuotes, SetStatement | SetReadWrite},
		{`SET "tx_read_only" = 0`, 0, 0}, // a string: not an assignment the server takes
	} {
		if r := ClassifyFor([]byte(tc.in), Dialect{Mode: tc.mode}); r.Flags != tc.flags {
			t.Errorf("%q mode %b: flags %v, want %v", tc.in, tc.mode, r.Flags, tc.flags)
		}
	}
}
