package proxy

import (
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

func TestSQLModeObserve(t *testing.T) {
	cases := []struct {
		status       uint16
		maria        bool
		mode, unsure classify.Mode
	}{
		{0x0002, true, 0, 0},
		{0x0202, true, classify.NoBackslashEscapes, 0},
		{0x8002, true, classify.AnsiQuotes, classify.Brackets}, // ANSI_QUOTES, or MSSQL
		{0x8202, true, classify.NoBackslashEscapes | classify.AnsiQuotes, classify.Brackets},
		{0x0002, false, 0, classify.AnsiQuotes}, // MySQL does not say
		{0x0202, false, classify.NoBackslashEscapes, classify.AnsiQuotes},
	}
	for _, tc := range cases {
		m := newSQLMode()
		m.observe(tc.status, tc.maria)
		if m.mode != tc.mode || m.unsure != tc.unsure || !m.seen {
			t.Errorf("status 0x%04x maria %v: mode %b unsure %b, want %b %b", tc.status, tc.maria, m.mode, m.unsure, tc.mode, tc.unsure)
		}
	}
	m := newSQLMode()
	m.observe(0x0202, true)
	m.lost()
	if m.unsure != classify.AllModes {
		t.Errorf("after an ERR: unsure %b", m.unsure)
	}
}

var (
	maria1011 = classify.Dialect{Flavor: classify.FlavorMariaDB, Version: 101119}
	maria1104 = classify.Dialect{Flavor: classify.FlavorMariaDB, Version: 110402}
)

// TestSessionReadings: the session reads a statement under every reading its nodes and its
// possible modes give; where they differ it is Unknown.
func TestSessionReadings(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &memConn{})
	s := r.s
	nodes := func(primary, replica classify.Dialect) {
		s.nodes.at(0).dialect, s.nodes.at(0).dialectKnown = primary, primary != classify.Dialect{}
		s.nodes.at(1).dialect, s.nodes.at(1).dialectKnown = replica, replica != classify.Dialect{}
	}
	const (
		nbeTrap  = `SELECT 'x\' ; INSERT INTO t VALUES (1); SELECT '1'`
		vcTrap   = `/*!110000 SELECT 1 -- */ INSERT INTO t VALUES (1)`
		setTrap  = `SET sql_mode='NO_BACKSLASH_ESCAPES'; SELECT 'x\' ; INSERT INTO t VALUES (1); SELECT '1'`
		readKind = 1 << classify.Select
	)
	cases := []struct {
		name             string
		primary, replica classify.Dialect
		status           uint16 // observed; 0: none (every mode possible)
		stmt             string
		kinds            classify.KindSet
	}{
		{"default mode known", maria1011, maria1011, 0x0002, nbeTrap, readKind},
		{"NO_BACKSLASH_ESCAPES known", maria1011, maria1011, 0x0202, nbeTrap, 1<<classify.Select | 1<<classify.Insert},
		{"mode unknown", maria1011, maria1011, 0, nbeTrap, 1 << classify.Unknown},
		{"a batch that sets the mode", maria1011, maria1011, 0x0002, setTrap, 1 << classify.Unknown},
		{"escapes without a trap", maria1011, maria1011, 0, `SELECT 'it\'s'`, readKind},
		{"one version", maria1011, maria1011, 0x0002, vcTrap, 1 << classify.Insert},
		{"one newer version", maria1104, maria1104, 0x0002, vcTrap, readKind},
		{"versions differ", maria1011, maria1104, 0x0002, vcTrap, 1 << classify.Unknown},
		{"a version unknown", maria1011, classify.Dialect{}, 0x0002, vcTrap, 1 << classify.Unknown},
		{"a version unknown, no versioned comment", maria1011, classify.Dialect{}, 0x0002, `SELECT 1`, readKind},
		{"ANSI_QUOTES known, MSSQL brackets unsure", maria1011, maria1011, 0x8002,
			`SELECT 1 AS [a'] ; INSERT INTO t VALUES (3); SELECT 1 AS ['b]`, 1 << classify.Unknown},
	}
	for _, tc := range cases {
		nodes(tc.primary, tc.replica)
		s.reader.mode = newSQLMode()
		if tc.status != 0 {
			s.reader.mode.observe(tc.status, true)
		}
		if got := s.classify([]byte(tc.stmt)); got.Kinds != tc.kinds {
			t.Errorf("%s: %q read as kinds %b, want %b", tc.name, tc.stmt, got.Kinds, tc.kinds)
		}
	}

	// A binary prepared statement is read in every mode: it is prepared again on a replica
	// when it first runs there, under the mode of that moment.
	nodes(maria1011, maria1011)
	s.reader.mode = newSQLMode()
	s.reader.mode.observe(0x0002, true)
	prepared := []byte(`SELECT 'a\' , (SELECT 1 FOR UPDATE) -- '`)
	if got := s.classify(prepared); got.Kind != classify.Select || got.Flags != 0 {
		t.Errorf("as a query in the default mode: %v %v", got.Kind, got.Flags)
	}
	if got := s.reader.classifyPrepared(prepared, s.nodes.all(), s.rs.Bound); got.Kind != classify.Unknown {
		t.Errorf("as a prepared statement: %v, want Unknown", got.Kind)
	}
	if s.reader.mode.unsure != 0 {
		t.Errorf("classifyPrepared changed the session's mode knowledge: %b", s.reader.mode.unsure)
	}

	// An ERR of a statement that may change the mode makes it unknown; of a SELECT, not.
	nodes(maria1011, maria1011)
	set := s.settings.current()
	for _, tc := range []struct {
		stmt   string
		unsure bool
	}{{"SELECT nope", false}, {"SET sql_mode = 'NO_BACKSLASH_ESCAPES', @x = nope()", true}, {"CALL p()", true}, {"SELECT 1; SELECT nope", true}} {
		s.reader.mode = newSQLMode()
		s.reader.mode.observe(0x0002, true)
		s.resp.Failed = true
		c := s.classify([]byte(tc.stmt))
		if err := s.after(&c, []byte(tc.stmt), route.Decision{Node: 0}, set); err != nil {
			t.Fatal(err)
		}
		if got := s.reader.mode.unsure != 0; got != tc.unsure {
			t.Errorf("ERR after %q: mode unsure %v, want %v", tc.stmt, got, tc.unsure)
		}
	}
	s.resp.Failed = false

	// The common case reads once and allocates nothing; so does a disputed statement.
	s.reader.mode = newSQLMode()
	s.reader.mode.observe(0x0002, true)
	nodes(maria1011, maria1104)
	for _, stmt := range []string{"SELECT c FROM sbtest1 WHERE id=?", vcTrap, nbeTrap} {
		b := []byte(stmt)
		if n := testing.AllocsPerRun(100, func() { s.classify(b) }); n != 0 {
			t.Errorf("%q: %v allocs", stmt, n)
		}
	}
}

// TestSessionReadingsCharset: in big5, cp932, gbk and sjis a byte from 0x81 up and a '\' after
// it are one character; the session follows its client character set (login, tracked
// character_set_client), and where it may be one of those such text is not a read.
func TestSessionReadingsCharset(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &memConn{})
	s := r.s
	trap := []byte("SELECT '\xbf\\' ; INSERT INTO t VALUES (1); SELECT '1'")
	read := func() bool { return s.classify(trap).Kinds == 1<<classify.Select }
	fresh := func(collation uint8) {
		s.reader.mode = newSQLMode()
		s.reader.mode.observe(0x0002, true)
		s.reader.mode.loginCharset(collation)
	}
	fresh(45) // utf8mb4_general_ci
	if !read() {
		t.Error("utf8mb4: not read as one SELECT")
	}
	fresh(28) // gbk_chinese_ci
	if read() {
		t.Error("gbk at login: read as one SELECT")
	}
	fresh(45)
	s.reader.mode.trackedCharset([]byte("gbk"))
	if read() {
		t.Error("gbk tracked: read as one SELECT")
	}
	s.reader.mode.trackedCharset([]byte("utf8mb4"))
	if !read() {
		t.Error("utf8mb4 tracked again: not read as one SELECT")
	}
	if got := s.classify(append([]byte("SET NAMES gbk; "), trap...)); got.Kind != classify.Unknown {
		t.Errorf("a batch that may change the character set: %v", got.Kind)
	}
	// After text that may run anything, or a change of what is tracked, changes may go unseen.
	for _, stmt := range []string{"CALL p()", "SET SESSION session_track_system_variables = ''", "EXECUTE IMMEDIATE @q"} {
		fresh(45)
		c := s.classify([]byte(stmt))
		if err := s.after(&c, []byte(stmt), route.Decision{Node: 0}, s.settings.current()); err != nil {
			t.Fatal(err)
		}
		if read() {
			t.Errorf("after %s: read as one SELECT", stmt)
		}
	}
	fresh(45)
	if b := []byte("SELECT '\xe4\xb8\xad\\n' FROM `\xe4\xb8\xad`"); s.classify(b).Kind != classify.Select {
		t.Error("utf8mb4 text with a backslash after a character read otherwise")
	}
}

// A read-only session reads a versioned comment as its bound replica does.
func TestSessionReadingsReadOnly(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &memConn{})
	s := r.s
	if err := s.ep.route.Update(route.Settings{Mode: route.ReadOnly, Weights: []int{0, 100}, Policy: &route.LeastActive{}}); err != nil {
		t.Fatal(err)
	}
	s.settings.mode, s.reader.readOnly = route.ReadOnly, true
	s.rs.Bound = 1
	s.nodes.at(0).dialect, s.nodes.at(0).dialectKnown = maria1011, true
	s.nodes.at(1).dialect, s.nodes.at(1).dialectKnown = maria1104, true
	s.reader.mode.observe(mysql.StatusAutocommit, true)
	if got := s.classify([]byte(`/*!110000 SELECT 1 -- */ INSERT INTO t VALUES (1)`)); got.Kind != classify.Select {
		t.Errorf("on an 11.4 replica: %v", got.Kind)
	}
	s.nodes.at(1).dialect = maria1011
	if got := s.classify([]byte(`/*!110000 SELECT 1 -- */ INSERT INTO t VALUES (1)`)); got.Kind != classify.Insert {
		t.Errorf("on a 10.11 replica: %v", got.Kind)
	}
}

// TestSessionReadingsSpace: latin1 and other single-byte character sets read 0xA0 (or 0xFF) as
// whitespace, so SELECT 1 INTO\xa0OUTFILE … is an INTO OUTFILE there (checked on MariaDB
// 10.11): where the session's character set may be one of those, such text is not a read.
// Before, it was one SELECT for a replica, which wrote the file.
func TestSessionReadingsSpace(t *testing.T) {
	r := newTwoNodeSession(t, []int{0, 100}, &memConn{}, &memConn{})
	s := r.s
	trap := []byte("SELECT 1 INTO\xa0OUTFILE '/tmp/x'")
	read := func() bool { return s.classify(trap).Kind == classify.Select }
	fresh := func(collation uint8) {
		s.reader.mode = newSQLMode()
		s.reader.mode.observe(0x0002, true)
		s.reader.mode.loginCharset(collation)
	}
	fresh(45) // utf8mb4_general_ci: 0xA0 is part of a character
	if !read() {
		t.Error("utf8mb4: not read as one SELECT")
	}
	for _, collation := range []uint8{8, 47, 9, 26, 40} { // latin1 (2), latin2, cp1250, cp852
		fresh(collation)
		if read() {
			t.Errorf("collation %d at login: read as a SELECT", collation)
		}
	}
	fresh(45)
	s.reader.mode.trackedCharset([]byte("latin1"))
	if read() {
		t.Error("latin1 tracked: read as a SELECT")
	}
	s.reader.mode.trackedCharset([]byte("utf8mb4"))
	if !read() {
		t.Error("utf8mb4 tracked again: not read as a SELECT")
	}
	if got := s.classify(append([]byte("SET NAMES latin1; "), trap...)); got.Kind != classify.Unknown {
		t.Errorf("a batch that may change the character set: %v", got.Kind)
	}
	fresh(8)
	if b := []byte("SELECT 'caf\xe9\xa0' FROM t WHERE a = 1"); s.classify(b).Kind != classify.Select {
		t.Error("latin1: a no-break space in a string made the read not one")
	}
}
