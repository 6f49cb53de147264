package proxy_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// attackState is what a write on a replica could leave behind there: its GTID state beyond the
// primary's, its binlog files, the rows of the attack tables, the sequence, a global variable.
func attackState(t testing.TB, ctx context.Context) map[string]string {
	t.Helper()
	c := testutil.Cluster(t)
	if err := c.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	read := func(name string) map[string]string {
		db, err := c.AdminDB(name)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		m := map[string]string{}
		var state string
		if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_state").Scan(&state); err != nil {
			t.Fatal(err)
		}
		m["gtid"] = state
		rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		m["binlogs"] = fmt.Sprint(n)
		for _, tbl := range []string{"t", "tm", "ta", "tmem"} {
			var cnt string
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM atk."+tbl).Scan(&cnt); err != nil {
				t.Fatal(err)
			}
			m["rows "+tbl] = cnt
		}
		var seq, mc string
		if err := db.QueryRowContext(ctx, "SELECT next_not_cached_value FROM atk.s").Scan(&seq); err != nil {
			t.Fatal(err)
		}
		m["seq"] = seq
		if err := db.QueryRowContext(ctx, "SELECT @@global.max_connections").Scan(&mc); err != nil {
			t.Fatal(err)
		}
		m["max_connections"] = mc
		return m
	}
	out := map[string]string{}
	p := read("primary")
	for _, r := range c.Replicas() {
		m := read(r.Name)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			if k == "gtid" {
				// Entries the primary's state lacks.
				var extra []string
				for _, g := range strings.Split(m[k], ",") {
					if g != "" && !strings.Contains(","+p[k]+",", ","+g+",") {
						extra = append(extra, g)
					}
				}
				fmt.Fprintf(&b, "gtid beyond the primary %v; ", extra)
				continue
			}
			if k == "binlogs" || k == "max_connections" {
				fmt.Fprintf(&b, "%s=%s; ", k, m[k])
				continue
			}
			if m[k] != p[k] {
				fmt.Fprintf(&b, "%s=%s (primary %s); ", k, m[k], p[k])
			}
		}
		out[r.Name] = b.String()
	}
	return out
}

func attackSetup(t testing.TB, ctx context.Context) {
	t.Helper()
	c := testutil.Cluster(t)
	pdb, err := c.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS atk",
		"CREATE TABLE IF NOT EXISTS atk.t (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS atk.tm (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=MyISAM",
		"CREATE TABLE IF NOT EXISTS atk.ta (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=Aria",
		"CREATE TABLE IF NOT EXISTS atk.tmem (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=MEMORY",
		"CREATE SEQUENCE IF NOT EXISTS atk.s",
		"CREATE OR REPLACE FUNCTION atk.fi() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN INSERT INTO atk.t VALUES (NULL); RETURN 1; END",
		"CREATE OR REPLACE FUNCTION atk.fm() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN INSERT INTO atk.tm VALUES (NULL); RETURN 1; END",
		"CREATE OR REPLACE FUNCTION atk.fa() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN INSERT INTO atk.ta VALUES (NULL); RETURN 1; END",
		"CREATE OR REPLACE FUNCTION atk.fmem() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN INSERT INTO atk.tmem VALUES (NULL); RETURN 1; END",
		"CREATE OR REPLACE FUNCTION atk.fseq() RETURNS INT DETERMINISTIC MODIFIES SQL DATA RETURN NEXTVAL(atk.s)",
		"CREATE OR REPLACE FUNCTION atk.fsetval() RETURNS INT DETERMINISTIC MODIFIES SQL DATA RETURN SETVAL(atk.s, 100000)",
		"CREATE OR REPLACE VIEW atk.v AS SELECT atk.fseq() AS x",
	} {
		if _, err := pdb.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// attack is one attempt: statements run in order on one connection of an endpoint.
type attack struct {
	ep    string // "rw" or "ro"
	stmts []string
}

// TestAttackNoReplicaWrites runs attacks that try to change a writable replica through sluice
// (stored functions that write InnoDB, MyISAM, Aria and MEMORY tables and sequences, called
// from every kind of read; SET GLOBAL and tx_read_only spelled as the server reads them; files)
// and checks after each that no replica changed: its GTIDs, binlog files, the attack tables'
// rows, the sequence, max_connections. Before the fix of @@scope read as the server reads it,
// SET @@global/**/.max_connections = 1 ran on the read-only endpoint's replica and was replayed
// on replicas from the read-write endpoint, SET SESSION a = 1, GLOBAL b = 2 was replayed on
// replicas, and SET @@session /**/ .tx_read_only = 0; SELECT f() wrote a row and an errant GTID
// on the read-only endpoint's replica.
//
// Not covered, and not stopped: a stored function that runs SET GLOBAL, called from a SELECT,
// changes the replica that runs the read (a read-only transaction does not stop SET GLOBAL,
// and sluice cannot tell a stored function's body from its call).
func TestAttackNoReplicaWrites(t *testing.T) {
	ctx := context.Background()
	s := startSluice(t, nil)
	attackSetup(t, ctx)
	attacks := []attack{}
	for _, ep := range []string{"rw", "ro"} {
		for _, q := range []string{
			"SELECT atk.fi()", "SELECT atk.fm()", "SELECT atk.fa()", "SELECT atk.fmem()",
			"SELECT atk.fseq()", "SELECT atk.fsetval()",
			"SELECT * FROM atk.v",
			"SET @a = NEXTVAL(atk.s)", "SET @a = atk.fseq()", "SET @a = (SELECT NEXTVAL(atk.s))",
			"SET @a = SETVAL(atk.s, 7777)",
			"SHOW TABLES FROM atk WHERE NEXTVAL(atk.s) > 0",
			"SHOW DATABASES WHERE atk.fseq() > 0",
			"EXPLAIN SELECT NEXTVAL(atk.s)",
			"EXPLAIN SELECT * FROM (SELECT NEXTVAL(atk.s)) d",
			"SELECT NEXTVAL /* x */ (atk.s)",
			"SELECT 1 FROM DUAL WHERE 0 = SETVAL(atk.s, 5000)",
			"SET STATEMENT sql_log_bin=0 FOR SELECT atk.fi()",
			"SET @a := atk.fseq()",
			"SELECT atk.fseq() INTO @x",
			"VALUES (atk.fseq())",
			"WITH x AS (SELECT atk.fseq()) SELECT * FROM x",
			"(SELECT atk.fseq())",
			"ANALYZE SELECT atk.fseq()",
			"SET @a=1, GLOBAL max_connections = 1111",
			"SET SESSION sql_mode=DEFAULT, GLOBAL max_connections = 1112",
			"SET @@GLOBAL.max_connections = 1113",
			"SET /*!GLOBAL */ max_connections = 1114",
			"SET /*M!100000 GLOBAL */ max_connections = 1115",
			"SET @@global/**/.max_connections = 1116",
			"SET PASSWORD = PASSWORD('app')",
			"SELECT 1 INTO /*x*/ OUTFILE '/tmp/sluice_atk_1'",
			"SELECT 1 /*!INTO OUTFILE '/tmp/sluice_atk_2'*/",
			"WITH c AS (SELECT 1) SELECT * FROM c INTO OUTFILE '/tmp/sluice_atk_3'",
			"(SELECT 1) INTO OUTFILE '/tmp/sluice_atk_4'",
			"SELECT 1 UNION SELECT 2 INTO OUTFILE '/tmp/sluice_atk_5'",
			"SELECT 1 INTO @a, @b FROM DUAL INTO OUTFILE '/tmp/sluice_atk_6'",
			"SET @x = (SELECT 1 INTO OUTFILE '/tmp/sluice_atk_7')",
			"PREPARE st FROM 'SELECT atk.fseq()'",
			"BEGIN",
			"START TRANSACTION READ ONLY",
			"SELECT atk.fm()",
			"COMMIT",
			"SET autocommit=0",
			"SELECT atk.fm()",
		} {
			attacks = append(attacks, attack{ep: ep, stmts: []string{q}})
		}
	}
	attacks = append(attacks,
		attack{ep: "ro", stmts: []string{"PREPARE st FROM 'SELECT atk.fseq()'", "EXECUTE st"}},
		attack{ep: "rw", stmts: []string{"START TRANSACTION READ ONLY", "SELECT atk.fseq()", "SELECT atk.fm()", "COMMIT"}},
		attack{ep: "rw", stmts: []string{"SET autocommit=0", "SELECT atk.fseq()", "COMMIT"}},
		attack{ep: "ro", stmts: []string{"BEGIN", "SELECT atk.fm()", "SELECT atk.fseq()", "COMMIT"}},
		attack{ep: "rw", stmts: []string{"SET SESSION sql_mode=DEFAULT, GLOBAL max_connections = 1201", "SELECT 1", "SELECT 2"}},
		attack{ep: "rw", stmts: []string{"SET @@global/**/.max_connections = 1202", "SELECT 1", "SELECT 2"}},
		attack{ep: "rw", stmts: []string{"SET @@global .max_connections = 1203", "SELECT 1", "SELECT 2"}},
		// The text of PREPARE and EXECUTE IMMEDIATE is the literal's value and the whole
		// expression (before, each ran on a replica as a read).
		attack{ep: "ro", stmts: []string{`EXECUTE IMMEDIATE 'SELECT "x\" INTO OUTFILE ''/tmp/sluice_atk_8'' -- "'`}},
		attack{ep: "ro", stmts: []string{`EXECUTE IMMEDIATE 'SET @a = "x\", tx_read_only = 0 -- "'`, "SELECT atk.fi()", "SELECT atk.fm()"}},
		attack{ep: "ro", stmts: []string{`EXECUTE IMMEDIATE 'SET @a = "x\", GLOBAL max_connections = 1401 -- "'`}},
		attack{ep: "ro", stmts: []string{`PREPARE s FROM 'SELECT 1' ' INTO OUTFILE ''/tmp/sluice_atk_9'''`, "EXECUTE s"}},
		attack{ep: "ro", stmts: []string{`PREPARE s FROM 'SET @a = 1' ', GLOBAL max_connections = 1402'`, "EXECUTE s"}},
		attack{ep: "rw", stmts: []string{"START TRANSACTION READ ONLY", `PREPARE s FROM 'SET @a = 1' ', GLOBAL max_connections = 1403'`, "EXECUTE s", "COMMIT"}},
		attack{ep: "rw", stmts: []string{`EXECUTE IMMEDIATE 'SELECT 1' ' INTO OUTFILE ''/tmp/sluice_atk_10'''`}},
		attack{ep: "rw", stmts: []string{`EXECUTE IMMEDIATE 'SELECT ''x -- '' INTO OUTFILE ''/tmp/sluice_atk_11'''`}},
		// SET STATEMENT … FOR a statement whose kind the classifier cannot tell was a Set.
		attack{ep: "ro", stmts: []string{"SET @q = 'FLUSH LOGS'", "SET STATEMENT max_statement_time = 100 FOR EXECUTE IMMEDIATE @q"}},
		attack{ep: "ro", stmts: []string{"SET STATEMENT max_statement_time = 100 FOR EXECUTE IMMEDIATE CONCAT('SET GLOBAL max_connections = ', 1501)"}},
		attack{ep: "rw", stmts: []string{"START TRANSACTION READ ONLY", "SET STATEMENT max_statement_time = 100 FOR EXECUTE IMMEDIATE CONCAT('SET GLOBAL max_connections = ', 1502)", "COMMIT"}},
		// Under ANSI_QUOTES "tx_read_only" names the variable.
		attack{ep: "ro", stmts: []string{"SET sql_mode = 'ANSI_QUOTES'", `SET "tx_read_only" = 0; SELECT atk.fi()`, "SELECT atk.fm()"}},
		attack{ep: "ro", stmts: []string{"SET sql_mode = 'MSSQL'", `SET [tx_read_only] = 0; SELECT atk.fi()`}},
		attack{ep: "ro", stmts: []string{"SET sql_mode = 'ANSI_QUOTES'", `SET STATEMENT "tx_read_only" = 0 FOR SELECT atk.fi()`}},
		attack{ep: "ro", stmts: []string{"SET sql_mode = 'MSSQL'", `SET STATEMENT [tx_read_only] = 0 FOR SELECT atk.fm()`}},
		attack{ep: "rw", stmts: []string{"SET sql_mode = 'ANSI_QUOTES'", `SET STATEMENT "tx_read_only" = 0 FOR SELECT atk.fi()`}},
		attack{ep: "ro", stmts: []string{"SET @@session./**/tx_read_only = 0", "SELECT atk.fi()", "SELECT atk.fm()"}},
		attack{ep: "ro", stmts: []string{"SET @@session /**/ .tx_read_only = 0; SELECT atk.fi()"}},
		attack{ep: "ro", stmts: []string{"SET @@session.`tx_read_only` = 0", "SELECT atk.fm()"}},
		attack{ep: "rw", stmts: []string{"SET @@session.`tx_read_only` = 0", "SELECT atk.fi()", "SELECT atk.fm()"}},
		attack{ep: "rw", stmts: []string{"SET @@session /**/ .tx_read_only = 0", "SELECT atk.fi()", "SELECT atk.fm()"}},
	)
	before := attackState(t, ctx)
	// The binary protocol: a SET prepared and executed, then a read that calls a writing
	// function.
	for _, ep := range []string{"rw", "ro"} {
		addr := s.rw
		if ep == "ro" {
			addr = s.ro
		}
		for _, q := range []string{"SET @@session /**/ .tx_read_only = 0", "SET @@session.`tx_read_only` = 0", "SET @@global/**/.max_connections = 1301"} {
			cn := conn(t, open(t, dsn(addr, "app", "app", "test", "")))
			st, err := cn.PrepareContext(ctx, q)
			if err == nil {
				_, err = st.ExecContext(ctx)
				st.Close()
			}
			_, err2 := cn.ExecContext(ctx, "SELECT atk.fi()")
			_, err3 := cn.ExecContext(ctx, "SELECT atk.fm()")
			t.Logf("%s binary %s: %v; then writing reads: %v, %v", ep, q, err, err2, err3)
			cn.Close()
			after := attackState(t, ctx)
			for name, b := range before {
				if after[name] != b {
					t.Errorf("%s: binary %q changed replica %s:\n before %s\n after  %s", ep, q, name, b, after[name])
				}
			}
			before = after
		}
	}
	// A reset session (COM_CHANGE_USER, COM_RESET_CONNECTION) is read-write on the server
	// again: the replica connection must be guarded before it runs anything.
	for _, ep := range []string{"rw", "ro"} {
		addr := s.rw
		if ep == "ro" {
			addr = s.ro
		}
		for _, reset := range []string{"change user", "reset connection"} {
			via := rawConnect(t, addr, "app", "app")
			query(t, via, "SELECT 1")
			if reset == "change user" {
				if r := changeUserRaw(t, via, "app", "app"); !smysql.IsOK(r) {
					t.Fatalf("change user: %v", smysql.ParseERR(r))
				}
			} else if ps := command(t, via, []byte{smysql.ComResetConnection}, "single"); !smysql.IsOK(ps[0]) {
				t.Fatalf("reset: % x", ps[0])
			}
			for _, q := range []string{"SELECT atk.fi()", "SELECT atk.fm()"} {
				ps := command(t, via, append([]byte{smysql.ComQuery}, q...), "result")
				if !smysql.IsERR(ps[0]) {
					t.Errorf("%s after %s: no error", q, reset)
				}
			}
			via.Close()
			after := attackState(t, ctx)
			for name, b := range before {
				if after[name] != b {
					t.Errorf("%s: a write after %s changed replica %s:\n before %s\n after  %s", ep, reset, name, b, after[name])
				}
			}
			before = after
		}
	}
	for _, a := range attacks {
		addr := s.rw
		if a.ep == "ro" {
			addr = s.ro
		}
		db := open(t, dsn(addr, "app", "app", "test", "multiStatements=true"))
		cn := conn(t, db)
		var log []string
		for _, q := range a.stmts {
			_, err := cn.ExecContext(ctx, q)
			node, role, _ := lastRoute(t, cn)
			log = append(log, fmt.Sprintf("%s -> %s/%s err=%v", q, node, role, err))
			if strings.Contains(q, "OUTFILE") && role == "replica" && err == nil {
				t.Errorf("%s %q: %s ran on replica %s", a.ep, a.stmts, q, node)
			}
		}
		cn.Close()
		db.Close()
		before = attackAftermath(t, ctx, a.ep, a.stmts, 1, 11, before, log)
	}
}

// attackAftermath checks what one attack (its statements stmts through endpoint ep) left: no
// file /tmp/sluice_atk_<first..last> written through the read-only endpoint (which never reaches
// the primary: a file there is a replica's), and no replica changed from before (attackState).
// It removes the files and returns the replicas' state for the next attack.
func attackAftermath(t *testing.T, ctx context.Context, ep string, stmts []string, first, last int, before map[string]string, log []string) map[string]string {
	t.Helper()
	for i := first; i <= last; i++ {
		name := fmt.Sprintf("/tmp/sluice_atk_%d", i)
		if _, err := os.Stat(name); err == nil && ep == "ro" {
			t.Errorf("ro %q: a replica wrote %s", stmts, name)
		}
		os.Remove(name)
	}
	after := attackState(t, ctx)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s %q changed replica %s:\n before %s\n after  %s\n%s", ep, stmts, name, b, after[name], strings.Join(log, "\n"))
		}
	}
	t.Logf("%s: %s", ep, strings.Join(log, " | "))
	return after
}
