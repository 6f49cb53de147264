package servertest

import (
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
)

// TestUserVarsAssignments checks classify.UserVars against the live server: before each
// statement of the corpus every user variable of the session is set to a sentinel; after it,
// information_schema.USER_VARIABLES tells which variables the statement created or changed.
// Each of them must be one UserVars reports as assigned, unless it reports VarsUnnamed or
// VarsExecute (the statement may set variables it does not name). A variable reported as
// assigned that did not change is allowed (the rules err on that side) and logged.
func TestUserVarsAssignments(t *testing.T) {
	srv := connect(t)
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS uvtest",
		"USE uvtest",
		"CREATE OR REPLACE TABLE t (c INT, d INT)",
		"INSERT INTO t VALUES (1, 10), (2, 20)",
		"CREATE OR REPLACE PROCEDURE p(OUT o INT) BEGIN SET @in_p = 1; SET o = 5; END",
		"CREATE OR REPLACE FUNCTION f() RETURNS INT NO SQL BEGIN SET @in_f = 1; RETURN 1; END",
	} {
		srv.exec(t, q)
	}
	corpus := []string{
		"SET @a = 1", "SET @a = 1, @b := 2", "SET @a = @a + 1", "SET @a = 1, @b = @a = 2",
		"SET @a = (SELECT @b := 1)", "SET SESSION sql_mode = DEFAULT, @a = 3",
		"SELECT @a := 1", "SELECT @a = 1", "SELECT @a", "SELECT 1 INTO @a",
		"SELECT c INTO @a FROM t LIMIT 1", "SELECT c, d INTO @a, @b FROM t WHERE c = 2",
		"SELECT c, d FROM t WHERE c = 1 INTO @a, @b", "SELECT c FROM t LIMIT 1 INTO @a FOR UPDATE",
		"SELECT @a:=1 INTO @b", "SELECT c FROM t WHERE (@a := c) > 0", "DO @a := 3",
		"UPDATE t SET d = (@b := d + 1) WHERE c = 1", "INSERT INTO t SELECT @a := 7, 8",
		"DELETE FROM t WHERE c = 7 AND (@a := 9) > 0",
		"WITH x AS (SELECT @a := 1 AS v) SELECT v FROM x",
		"SET STATEMENT max_statement_time=10 FOR SELECT 1 INTO @a",
		"GET DIAGNOSTICS @n = NUMBER",
		"SELECT @`a b` := 1, @'x' := 2, @\"y\" := 3", "SELECT @ABC := 1", "SELECT @`a``b` := 4",
		"SELECT @'it\\'s' := 5", "SELECT @a.b := 6, @a$c := 7",
		"SELECT 1 /*! , @v := 1 */", "SELECT 1 /*M!100000 , @v := 2 */", "SELECT 1 /*!99999 , @w := 1 */",
		"SELECT '@a := 1', \"@b := 2\"", "SELECT 1 -- , @a := 1\n", "SELECT 1 /* , @a := 1 */",
		"EXECUTE IMMEDIATE 'SET @a = 11'", "EXECUTE IMMEDIATE 'SELECT ? INTO @a' USING 12",
		"EXECUTE IMMEDIATE 'SET @a = ''x'', @\\'q\\' = 2'",
		"PREPARE s FROM 'SELECT ? INTO @a'", "EXECUTE s USING 13",
		"SET @sql = 'SET @dyn = 1'; EXECUTE IMMEDIATE @sql",
		"CALL p(@o)", "BEGIN NOT ATOMIC SET @a = 14; SET @blk = 1; END",
		"SELECT 1; SELECT 2 INTO @a", "SET @a = 1; SELECT @b := 2; DO 3",
	}
	for _, q := range corpus {
		before := srv.userVars(t)
		if len(before) > 0 {
			var set strings.Builder
			set.WriteString("SET ")
			i := 0
			for name := range before {
				if i > 0 {
					set.WriteString(", ")
				}
				set.WriteString("@`" + strings.ReplaceAll(name, "`", "``") + "` = '~'")
				i++
			}
			srv.exec(t, set.String())
		}
		assigned := map[string]bool{}
		eff := classify.UserVars([]byte(q), classify.Dialect{Flavor: classify.FlavorMariaDB, Version: 101119},
			func(tok []byte, assigns bool) {
				if assigns {
					assigned[string(classify.AppendUserVarKey(nil, tok, classify.Dialect{}))] = true
				}
			})
		if err := srv.bc.Exec(q); err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		for name, v := range srv.userVars(t) {
			if v == "~" {
				continue
			}
			key := strings.ToLower(name)
			switch {
			case assigned[key]:
				delete(assigned, key)
			case eff&(classify.VarsUnnamed|classify.VarsExecute) != 0:
				t.Logf("%q sets @%s, which it does not name (%v)", q, name, eff)
			default:
				t.Errorf("%q sets @%s = %s; UserVars reports it not assigned (%v)", q, name, v, eff)
			}
		}
		for key := range assigned {
			t.Logf("%q: @%s reported assigned, unchanged", q, key)
		}
	}
	// The known limit: a stored function (or trigger) that sets a variable is not named.
	srv.exec(t, "SET @in_f = NULL")
	eff := classify.UserVars([]byte("SELECT f()"), classify.Dialect{}, nil)
	if v := srv.userVars(t)["in_f"]; eff != 0 || v != "NULL" {
		t.Fatalf("SELECT f(): %v, @in_f = %q before", eff, v)
	}
	srv.exec(t, "SELECT f()")
	t.Logf("SELECT f() sets @in_f = %s unnamed (effects %v): stored functions are not followed", srv.userVars(t)["in_f"], eff)
}

// userVars reads the session's user variables: name as created → value as text ("NULL" for
// NULL).
func (s *server) userVars(t *testing.T) map[string]string {
	t.Helper()
	rows, err := s.bc.Query("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.USER_VARIABLES")
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string, len(rows.Values))
	for _, r := range rows.Values {
		v := r[1].S
		if r[1].Null {
			v = "NULL"
		}
		m[r[0].S] = v
	}
	return m
}
