package servertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestDifferential generates batches full of what makes readings differ (versioned comments
// of every digit count and version, quotes, backslashes, --, # and /* */ comments, sql_mode
// NO_BACKSLASH_ESCAPES, ANSI_QUOTES and MariaDB's MSSQL with its [identifiers], client
// character sets whose characters may end in '\' or '`'), runs each on a live node as one COM_QUERY, and compares
// what the server ran, by its Com_* counters, with the classifier's reading under the node's
// dialect and the session's mode:
//
//   - a batch the server ran whole must have the classifier's statement count and kinds;
//   - a batch the server stopped at an error ran a prefix: no more statements, and no kind,
//     than the classifier read;
//   - above all, a batch the classifier reads as reads only (SELECT, SHOW) must never make the
//     server run anything else.
//
// SLUICE_DIFF_N sets the number of batches (default 5000, about 8 s here), SLUICE_DIFF_SEED
// the seed (default: the time; a failure prints it), SLUICE_DIFF_ADDR a server to use instead
// of the package's cluster (with SLUICE_DIFF_USER, SLUICE_DIFF_PASSWORD).
func TestDifferential(t *testing.T) {
	n := envInt(t, "SLUICE_DIFF_N", 5000)
	seed := uint64(envInt(t, "SLUICE_DIFF_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("SLUICE_DIFF_SEED=%d SLUICE_DIFF_N=%d", seed, n)
	srv := connect(t)
	dialect, ok := classify.ParseServerVersion(srv.bc.Handshake.ServerVersion)
	if !ok {
		t.Fatalf("server version %q", srv.bc.Handshake.ServerVersion)
	}
	srv.exec(t, "CREATE DATABASE IF NOT EXISTS difftest")
	srv.exec(t, "CREATE TABLE IF NOT EXISTS difftest.t (a VARCHAR(64))")
	srv.exec(t, "USE difftest")

	g := gen{r: rand.New(rand.NewPCG(seed, 1))}
	// Each session setting: sql_mode, what it means to the lexer, and the client character set
	// (gbk, sjis, big5: a byte from 0x81 up and the next are one character).
	type setting struct {
		sql     string
		mode    classify.Mode
		charset string
	}
	modes := []setting{
		{"''", 0, "utf8mb4"},
		{"'NO_BACKSLASH_ESCAPES'", classify.NoBackslashEscapes, "utf8mb4"},
		{"'ANSI_QUOTES'", classify.AnsiQuotes, "utf8mb4"},
		{"'NO_BACKSLASH_ESCAPES,ANSI_QUOTES'", classify.NoBackslashEscapes | classify.AnsiQuotes, "utf8mb4"},
		{"''", 0, "gbk"},
		{"''", 0, "sjis"},
		{"'NO_BACKSLASH_ESCAPES'", classify.NoBackslashEscapes, "big5"},
		{"''", 0, "latin1"},
	}
	if dialect.Flavor == classify.FlavorMariaDB {
		modes = append(modes, setting{"'MSSQL'", classify.AnsiQuotes | classify.Brackets, "utf8mb4"},
			setting{"'MSSQL'", classify.AnsiQuotes | classify.Brackets, "gbk"})
	}
	cur := -1
	var ran, whole, multi, mismatches int
	for i := range n {
		if m := g.r.IntN(len(modes)); m != cur {
			srv.exec(t, "SET NAMES "+modes[m].charset)
			srv.exec(t, "SET SESSION sql_mode="+modes[m].sql)
			// The status flags say the mode, as the proxy reads them (0x8000: MariaDB only).
			st := srv.bc.Status
			nbe := st&mysql.StatusNoBackslashEscapes != 0
			if nbe != (modes[m].mode&classify.NoBackslashEscapes != 0) ||
				dialect.Flavor == classify.FlavorMariaDB && (st&0x8000 != 0) != (modes[m].mode&classify.AnsiQuotes != 0) {
				t.Fatalf("sql_mode %s: status 0x%04x", modes[m].sql, st)
			}
			cur = m
		}
		batch := g.batch()
		d := dialect
		d.Mode = modes[cur].mode
		r := classify.ClassifyFor([]byte(batch), d)
		kinds, count, runErr := srv.run(t, batch)
		ran++
		if runErr == nil {
			whole++
			if count > 1 {
				multi++
			}
		}
		var bad string
		multiByte := modes[cur].charset != "utf8mb4" && modes[cur].charset != "latin1"
		switch {
		case multiByte && r.Depends&classify.DependsCharset != 0:
			// Read otherwise by the server, as DependsCharset says: the proxy does not send
			// such text to a replica where the character set may be this one.
		case isRead(r.Kinds) && kinds&^readKinds != 0:
			bad = "DANGER: the classifier reads only reads, the server ran more"
		case runErr == nil && (count != int(r.Statements) || kinds != r.Kinds):
			bad = "the server ran it whole, otherwise than read"
		case runErr != nil && (count > int(r.Statements) || kinds&^r.Kinds != 0):
			bad = "the server ran a prefix the classifier does not have"
		}
		if bad != "" {
			mismatches++
			t.Errorf("batch %d, sql_mode %s, names %s: %s\n  text: %q\n  classifier: %d statements, kinds %s\n  server: %d statements, kinds %s, error %v",
				i, modes[cur].sql, modes[cur].charset, bad, batch, r.Statements, kindNames(r.Kinds), count, kindNames(kinds), runErr)
			if mismatches > 20 {
				t.Fatal("too many mismatches")
			}
		}
	}
	t.Logf("%d batches, %d ran whole (%d of several statements), %d mismatches", ran, whole, multi, mismatches)
	if whole < ran/20 || multi < whole/10 {
		t.Errorf("only %d of %d batches ran whole, %d of several statements: the test tests little", whole, ran, multi)
	}
}

// readKinds are the kinds a router may send to a replica in this test's statement pool.
const readKinds = classify.KindSet(1<<classify.Select | 1<<classify.Show)

func isRead(k classify.KindSet) bool { return k != 0 && k&^readKinds == 0 }

func kindNames(k classify.KindSet) string {
	var names []string
	for i := classify.Kind(0); i < 64; i++ {
		if k.Has(i) {
			names = append(names, i.String())
		}
	}
	return "{" + strings.Join(names, ",") + "}"
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

type server struct{ bc *backend.Conn }

// connect logs in to the server the test reads: SLUICE_DIFF_ADDR, or the cluster's primary,
// directly (not through sluice).
func connect(t *testing.T) *server {
	addr, user, pw := os.Getenv("SLUICE_DIFF_ADDR"), os.Getenv("SLUICE_DIFF_USER"), os.Getenv("SLUICE_DIFF_PASSWORD")
	if addr == "" {
		c := testutil.Cluster(t)
		addr, user, pw = c.Primary().Address, sandbox.AppUser, sandbox.AppPassword
	}
	bc, err := backend.Dial(context.Background(), backend.Options{
		Address:     addr,
		Credentials: backend.Credentials{User: user, Password: pw, HasPassword: pw != ""},
		// Batches: without these the server runs only a batch's first statement.
		Capabilities: mysql.ClientMultiStatements | mysql.ClientMultiResults,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	return &server{bc: bc}
}

func (s *server) exec(t *testing.T, q string) {
	t.Helper()
	if err := s.bc.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// counters reads the session's Com_* counters.
func (s *server) counters(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := s.bc.Query(`SHOW SESSION STATUS LIKE 'Com\_%'`)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]int64, len(rows.Values))
	for _, row := range rows.Values {
		v, err := strconv.ParseInt(row[1].S, 10, 64)
		if err != nil {
			t.Fatalf("%s = %q", row[0].S, row[1].S)
		}
		m[strings.ToLower(row[0].S)] = v
	}
	return m
}

// run runs batch as one COM_QUERY and returns the kinds and the number of the statements the
// server ran (from its Com_* counters), and the error that stopped it.
func (s *server) run(t *testing.T, batch string) (kinds classify.KindSet, count int, runErr error) {
	t.Helper()
	before := s.counters(t)
	runErr = s.bc.Exec(batch)
	var se *mysql.SQLError
	if runErr != nil && !errors.As(runErr, &se) {
		t.Fatalf("%q: %v", batch, runErr)
	}
	after := s.counters(t)
	after["com_show_status"]-- // the SHOW that read them
	for name, v := range after {
		d := v - before[name]
		if d <= 0 || name == "com_empty_query" {
			continue // a text of comments only: no statement
		}
		kinds |= classify.KindSet(1) << kindOfCounter(name)
		count += int(d)
	}
	return kinds, count, runErr
}

// kindOfCounter maps a Com_* counter to the classifier's kind; a counter of no statement in
// the generator's pool maps to Unknown (and so never to a read).
func kindOfCounter(name string) classify.Kind {
	switch {
	case name == "com_select":
		return classify.Select
	case name == "com_insert" || name == "com_insert_select":
		return classify.Insert
	case name == "com_do":
		return classify.Do
	case name == "com_set_option":
		return classify.Set
	case name == "com_delete":
		return classify.Delete
	case name == "com_flush":
		return classify.Flush
	case strings.HasPrefix(name, "com_show_"):
		return classify.Show
	}
	return classify.Unknown
}

// gen makes batches: statements of a small pool of harmless kinds, decorated with what makes
// readings differ, some of it nested in comments and strings.
type gen struct{ r *rand.Rand }

var heads = []string{"SELECT 1", "DO 1", "SET @x = 1", "INSERT INTO t SELECT 1", "SHOW TABLES", "SELECT 'a'"}

func (g *gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *gen) batch() string {
	if g.r.IntN(3) == 0 {
		return g.trap()
	}
	var b strings.Builder
	n := 1 + g.r.IntN(3)
	for i := range n {
		if i > 0 {
			b.WriteString(g.pick(";", "; ", ";\n", " ; "))
		}
		b.WriteString(g.stmt(0))
	}
	if g.r.IntN(4) == 0 {
		b.WriteString(g.pick(";", "; ", " -- end", " /* end */", ";\n#x\n"))
	}
	return b.String()
}

// trap is a read that hides another statement from one reading: behind a versioned comment
// that some server does not run, or a string that ends elsewhere under another sql_mode.
func (g *gen) trap() string {
	hidden := g.pick("INSERT INTO t SELECT 1", "DO 1", "SET @x = 1")
	q := g.pick("'", "\"")
	switch g.r.IntN(6) {
	case 5:
		hi := g.pick("\xbf", "\x81", "\xe4\xb8")
		return g.pick("SELECT '"+hi+"\\' ; "+hidden+"; SELECT '1'",
			"SELECT 1 AS `"+hi+"` ; "+hidden+"; SELECT 1 AS `a`",
			"SELECT 1 AS "+hi+"` ; "+hidden+"; SELECT 1 AS "+hi+"`")
	case 4:
		return "SELECT 1 AS [" + g.pick("a", q, "a]]") + "] ; " + hidden + "; SELECT [" + g.pick("b", q) + "]"
	case 0:
		return g.pick("/*!", "/*M!") + g.version() + " SELECT 1 " + g.pick("-- ", "#") + "*/ " + hidden
	case 1:
		return "SELECT 1 " + g.pick("/*!", "/*M!") + g.version() + " ; " + hidden + " */"
	case 2:
		return "SELECT " + q + `x\` + q + " ; " + hidden + "; SELECT " + q + "1" + q
	}
	return "SELECT " + q + `x\` + q + q + " ; " + hidden + "; SELECT " + q + q + "1" + q + q + g.pick("", q)
}

func (g *gen) version() string {
	return g.pick("", "1234", "40101", "50699", "50700", "80000", "99999", "100000",
		"101119", "101120", "110000", "999999", "1011191", "500001", "101100", "80034")
}

func (g *gen) stmt(depth int) string {
	var b strings.Builder
	if g.r.IntN(5) == 0 {
		b.WriteString(g.decoration(depth))
		b.WriteByte(' ')
	}
	b.WriteString(heads[g.r.IntN(len(heads))])
	for range g.r.IntN(3) {
		b.WriteString(g.pick(" ", "", "\n"))
		b.WriteString(g.decoration(depth))
	}
	return b.String()
}

// decoration is one thing that reads differently in some dialect or mode.
func (g *gen) decoration(depth int) string {
	switch g.r.IntN(7) {
	case 0, 1:
		return g.versioned(depth)
	case 2:
		return "+ " + g.str(depth)
	case 3:
		return g.pick("-- ", "--", "--\t", "#") + g.text(depth) + "\n"
	case 4:
		return "/* " + g.text(depth) + " */"
	case 5:
		return g.pick(",", "+", "-", " - -1", "--1", "/ 1", "* 1")
	}
	return g.pick("'", "\"", "`", "\\", "*/", "/*", "[", "]", "AS [a]", "AS `\xbf`", "AS \xbf`", "AS `\xe4\xb8\xad`")
}

func (g *gen) versioned(depth int) string {
	marker := g.pick("/*!", "/*!", "/*M!")
	version := g.version()
	sep := g.pick(" ", " ", "", "\n")
	inner := ""
	if depth < 2 {
		switch g.r.IntN(5) {
		case 0:
			inner = g.pick("SELECT 2", "DO 2", "+ 1")
		case 1:
			inner = g.pick(";", "; ") + g.stmt(depth+1)
		case 2:
			inner = g.decoration(depth + 1)
		case 3:
			inner = g.text(depth + 1)
		}
	}
	return marker + version + sep + inner + g.pick(" */", "*/", " */ ", "")
}

func (g *gen) str(depth int) string {
	q := g.pick("'", "\"")
	var b strings.Builder
	b.WriteString(q)
	for range g.r.IntN(4) {
		switch g.r.IntN(6) {
		case 0:
			b.WriteString(`\`)
		case 1:
			b.WriteString(`\` + q)
		case 2:
			b.WriteString(q + q)
		case 3:
			b.WriteString(g.pick("a", "*/", "/*", "--", "#", "`", "[", "]", "\xbf", "\x81", "\xe4\xb8\xad"))
		default:
			if depth < 2 {
				b.WriteString(g.pick(";", "; ") + g.stmt(depth+1) + g.pick("; SELECT "+q, ""))
			}
		}
	}
	b.WriteString(q)
	return b.String()
}

func (g *gen) text(depth int) string {
	switch g.r.IntN(6) {
	case 0:
		if depth < 2 {
			return g.pick(";", "; ") + g.stmt(depth+1)
		}
	case 1:
		return g.pick("'", "\"", "`")
	case 2:
		return g.pick("*/", "/*", "*")
	case 3:
		return `\`
	}
	return fmt.Sprint(g.pick("x", "c", "1"))
}
