package classify

import "bytes"

// Flavor is the server family whose lexer the classifier follows: MySQL and MariaDB run
// different versioned comments.
type Flavor uint8

// The flavors.
const (
	// FlavorAny is no particular server: every executable comment runs (/*!NNNNN …*/ and
	// /*M!NNNNNN …*/ alike, whatever the version). It is the zero value and what Classify
	// uses; a reading that depends on the server says so in Result.Depends.
	FlavorAny Flavor = iota
	FlavorMySQL
	FlavorMariaDB
)

// Mode is the part of a session's sql_mode that changes how text splits into tokens.
type Mode uint8

// The modes.
const (
	// NoBackslashEscapes: a backslash in a string is an ordinary character, so 'x\' ends
	// at its second quote (sql_mode NO_BACKSLASH_ESCAPES).
	NoBackslashEscapes Mode = 1 << iota
	// AnsiQuotes: "…" quotes an identifier, in which a backslash is an ordinary character
	// (sql_mode ANSI_QUOTES, also part of ANSI, ORACLE, MSSQL, DB2, POSTGRESQL…).
	AnsiQuotes
	// Brackets: [ … ] quotes an identifier, ]] standing for ] (MariaDB's sql_mode MSSQL, which
	// implies ANSI_QUOTES; checked on 10.11: SELECT 1 AS [a;b] is one statement there).
	Brackets

	// AllModes is every Mode bit.
	AllModes = NoBackslashEscapes | AnsiQuotes | Brackets
)

// Dialect is how one server reads a statement: its flavor and version (for versioned
// comments and MySQL 9's dollar-quoted strings) and the session's sql_mode (for strings).
// A small value passed by copy: classifying under a Dialect allocates nothing.
type Dialect struct {
	Flavor Flavor
	// Version is the server's version as MAJOR*10000 + MINOR*100 + PATCH, the number its
	// versioned comments are compared with (MariaDB 10.11.19: 101119; MySQL 8.0.34: 80034).
	Version uint32
	Mode    Mode
}

// Depends says which readings of a statement could differ from the one Classify gave: what
// in the text a server of another flavor or version, or a session in another sql_mode, would
// read otherwise. Zero means every server in every mode reads the statement the same way (as
// far as this package tells statements apart), which is the common case.
type Depends uint8

// The dependencies.
const (
	// DependsVersion: a versioned comment (/*!NNNNN with a version that not every server
	// runs, /*M!…) or a $tag$ that MySQL 9 reads as the start of a string.
	DependsVersion Depends = 1 << iota
	// DependsMode: a backslash inside a '…' literal (NO_BACKSLASH_ESCAPES ends it
	// elsewhere), any "…" (a string, or under ANSI_QUOTES a name without escapes), or a '['
	// outside quotes and comments (a name's start under MSSQL).
	DependsMode
	// DependsCharset: a byte from 0x81 up right before a '\' in a string, or before a '`',
	// '[' or ']' that opens or closes a name. In the client character sets whose characters
	// may end in such a byte (big5, cp932, gbk, sjis, gb18030) the server reads the two as
	// one character, so the string or name ends elsewhere; the lexer reads bytes.
	DependsCharset
	// DependsSpace: a byte 0xA0 or 0xFF outside strings, quoted names and comments (in a
	// word, number or variable). Single-byte client character sets read one of them as
	// whitespace (0xA0, the no-break space: latin1, latin2, latin5, latin7, cp1250, greek,
	// hebrew, armscii8, dec8, geostd8; 0xFF: cp852, cp866, keybcs2; checked on MariaDB
	// 10.11), where SELECT 1 INTO\xa0OUTFILE … is SELECT … INTO OUTFILE; the lexer reads
	// them as part of a word, as every other character set does (SpaceCharset).
	DependsSpace
)

// spaceCharsets are the client character sets that read 0xA0 or 0xFF as whitespace
// (DependsSpace).
var spaceCharsets = [...]string{"LATIN1", "LATIN2", "LATIN5", "LATIN7", "CP1250", "GREEK", "HEBREW",
	"ARMSCII8", "DEC8", "GEOSTD8", "CP852", "CP866", "KEYBCS2"}

// SpaceCharset reports whether the client character set called name (as character_set_client
// gives it, any case) reads 0xA0 or 0xFF as whitespace: text marked DependsSpace reads
// otherwise there.
func SpaceCharset(name []byte) bool {
	for _, cs := range spaceCharsets {
		if eqFold(name, cs) {
			return true
		}
	}
	return false
}

// spaceCollations has the collation ids (as a handshake gives them, below 256) of the
// spaceCharsets, MariaDB's and MySQL's alike.
var spaceCollations = func() (t [256]bool) {
	for _, id := range [...]uint8{
		5, 8, 15, 31, 47, 48, 49, 94, // latin1
		2, 9, 21, 27, 77, // latin2
		30, 78, // latin5
		20, 41, 42, 79, // latin7
		26, 34, 44, 66, 99, // cp1250
		25, 70, // greek
		16, 71, // hebrew
		32, 64, // armscii8
		3, 69, // dec8
		92, 93, // geostd8
		40, 81, // cp852
		36, 68, // cp866
		37, 73, // keybcs2
	} {
		t[id] = true
	}
	return t
}()

// SpaceCollation reports whether the character set of collation id (a handshake's) reads 0xA0
// or 0xFF as whitespace (SpaceCharset).
func SpaceCollation(id uint8) bool { return spaceCollations[id] }

// ParseServerVersion reads the version string a server announces (in its handshake, or as
// @@version) into its flavor and version number. MariaDB before 11 prefixes its handshake's
// version with "5.5.5-" for old clients: the prefix is skipped. ok is false when no
// major.minor.patch number starts the string.
func ParseServerVersion(v string) (d Dialect, ok bool) {
	const prefix = "5.5.5-"
	if len(v) > len(prefix) && v[:len(prefix)] == prefix {
		v = v[len(prefix):]
	}
	d.Flavor = FlavorMySQL
	for i := 0; i+7 <= len(v); i++ {
		if v[i:i+7] == "MariaDB" {
			d.Flavor = FlavorMariaDB
			break
		}
	}
	var part [3]uint32
	i := 0
	for k := range part {
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' && i-start < 4 {
			part[k] = part[k]*10 + uint32(v[i]-'0')
			i++
		}
		if i == start || part[k] > 99 && k > 0 {
			return Dialect{}, false
		}
		if k < 2 {
			if i >= len(v) || v[i] != '.' {
				return Dialect{}, false
			}
			i++
		}
	}
	d.Version = part[0]*10000 + part[1]*100 + part[2]
	return d, true
}

// ClassifyFor is Classify under dialect d: versioned comments, dollar quotes and strings are
// read as a server of d's flavor and version does in a session in d's mode.
func ClassifyFor(stmt []byte, d Dialect) Result {
	var c classifier
	c.lx.d = d
	c.classify(stmt, 0)
	return c.res
}

// version reads the version of a versioned comment whose digits start at s[i] (n of them,
// n >= 5, counted up to 7; v is the number the first five spell) and returns how many digits belong to the version and whether the
// comment's content runs on the lexer's server. maria: the comment is /*M!.
//
// MariaDB reads 5 digits, or 6 when a sixth follows; it runs the content when that version is
// not above its own, except that /*! (not /*M!) versions 50700–99999 are MySQL's and never run.
// MySQL reads exactly 5 digits; from 8.0.34 on, 6 when the sixth is followed by whitespace; it
// runs the content when the version is not above its own. FlavorAny runs every comment.
func (l *lexer) version(s []byte, i, n int, v uint32, maria bool) (length int, run bool) {
	length = 5
	switch l.d.Flavor {
	case FlavorMariaDB:
		if n >= 6 {
			v = v*10 + uint32(s[i+5]-'0')
			length = 6
		}
		return length, v <= l.d.Version && (v < 50700 || v > 99999 || maria)
	case FlavorMySQL:
		if l.d.Version >= 80034 && n == 6 && i+6 < len(s) && charClass[s[i+6]] == cSpace {
			v = v*10 + uint32(s[i+5]-'0')
			length = 6
		}
		return length, v <= l.d.Version
	}
	if n >= 6 {
		length = 6
	}
	return length, true
}

// comment skips the comment that starts at s[i] ("/*") and returns the index after what is
// skipped: the whole of an ordinary comment or of a versioned one that does not run; only the
// marker (and version) of one that runs, whose content is then lexed as statement text.
//
// As in the servers: a comment that does not run may hold one ordinary comment inside
// (/*!99999 a /* b */ c */ is one comment); an ordinary comment holds none; /*! without five
// digits after it runs everywhere, its digits being content; /*M! is MariaDB's, an ordinary
// comment to MySQL.
func (l *lexer) comment(i int) int {
	s := l.s
	j := i + 2
	maria := false
	switch {
	case j < len(s) && s[j] == '!':
		j++
	case j+1 < len(s) && s[j] == 'M' && s[j+1] == '!':
		maria = true
		j += 2
		l.dep |= DependsVersion
		if l.d.Flavor == FlavorMySQL {
			return skipComment(s, i+2)
		}
	default:
		return skipComment(s, j)
	}
	n := 0
	for j+n < len(s) && n < 7 && s[j+n] >= '0' && s[j+n] <= '9' {
		n++
	}
	if n < 5 {
		l.exec = true
		return j
	}
	v := uint32(0)
	for k := range 5 {
		v = v*10 + uint32(s[j+k]-'0')
	}
	if n > 5 || maria || v >= 50700 {
		// Only a five-digit /*! version below 50700 runs on every server sluice
		// knows (MariaDB 10+, MySQL 5.7+): MariaDB reads six digits, MySQL 8.0.34+
		// may, and versions from 50700 up are not run by all.
		l.dep |= DependsVersion
	}
	length, run := l.version(s, j, n, v, maria)
	if run {
		l.exec = true
		return j + length
	}
	return skipNested(s, j)
}

// skipNested skips a versioned comment that does not run, whose content starts at i: up to
// the "*/" that closes it, past one level of ordinary comment inside. Unterminated: len(s).
func skipNested(s []byte, i int) int {
	for i < len(s) {
		c := s[i]
		i++
		switch {
		case c == '/' && i < len(s) && s[i] == '*':
			i = skipComment(s, i+1)
		case c == '*' && i < len(s) && s[i] == '/':
			return i + 1
		}
	}
	return len(s)
}

// dollar lexes a token that starts with '$' at s[i]. MySQL 9 reads $tag$ … $tag$ (tag: word
// bytes other than '$', possibly none) as a string; other servers, and text without a second
// '$' right after the tag, read a word. Either way a $tag$ makes the reading depend on the
// server.
func (l *lexer) dollar(i int) (tokType, int) {
	s := l.s
	j := i + 1
	for j < len(s) && s[j] != '$' && isWordByte(s[j]) {
		j++
	}
	if j >= len(s) || s[j] != '$' {
		return tWord, wordEnd(s, i+1)
	}
	l.dep |= DependsVersion
	if l.d.Flavor != FlavorMySQL || l.d.Version < 90000 {
		return tWord, wordEnd(s, i+1)
	}
	tag := s[i : j+1]
	body := j + 1
	for k := body; k+len(tag) <= len(s); k++ {
		if s[k] == '$' && bytes.Equal(s[k:k+len(tag)], tag) {
			return tString, k + len(tag)
		}
	}
	return tString, len(s)
}
