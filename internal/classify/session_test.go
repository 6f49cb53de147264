package classify

import "testing"

// stateCases are batches (and a few single statements) with whether they leave session
// state behind: LeavesSessionState(Classify(in)). The false matches of the substring rule the
// proxy used before come first.
var stateCases = []struct {
	in    string
	state bool
}{
	// Words inside longer words, strings, comments, `identifiers`, and qualified names.
	{"SELECT * FROM t LIMIT 1 OFFSET 2; SELECT 2", false},
	{"SELECT * FROM assets WHERE reset = 1; SELECT 2", false},
	{"SELECT 'SET', \"USE\", 'LOCK TABLES'; SELECT 2", false},
	{"SELECT 1 /* SET @a = 1; USE db */; SELECT 2 -- BEGIN\n", false},
	{"SELECT 1 # START TRANSACTION\n; SELECT 2", false},
	{"SELECT `set`, `use`, `lock`, `temporary` FROM t; SELECT 2", false},
	{"SELECT lock_id, started_at, user_set, autocommit_mode FROM t; SELECT 2", false},
	{"SELECT t.set, t.lock, t.begin, t.xa FROM t; SELECT 2", false},
	{"SELECT temporary, start, prepare, autocommit FROM t; SELECT 2", false},
	{"SELECT * FROM t WHERE email = 'user@example.com'; SELECT 2", false},
	{"SELECT @@autocommit; SELECT @@session.sql_mode", false},
	{"SELECT * FROM t WHERE FIND_IN_SET('a', tags) AND is_xa = 0; SELECT 2", false},
	{"SELECT CAST(a AS CHAR CHARACTER SET utf8mb4) FROM t; SELECT 2", false},
	{"SELECT * FROM t USE INDEX (i) WHERE a = 1; SELECT 2", false},
	{"SELECT * FROM t FOR UPDATE SKIP LOCKED; SELECT 2", false},
	{"SELECT * FROM t LOCK IN SHARE MODE; SELECT 2", false},
	{"SELECT 1; SELECT 2", false},
	{"SELECT 1; SELECT 2;", false},
	{"(SELECT 1) UNION (SELECT 2); TABLE t; VALUES ROW(1)", false},

	// The SET of UPDATE, INSERT … SET, ON DUPLICATE KEY UPDATE, LOAD DATA … SET belongs to
	// that statement: no session state.
	{"UPDATE t SET a = 1; SELECT 1", false},
	{"UPDATE t SET a = 1 WHERE id = 2; UPDATE u SET b = 2", false},
	{"INSERT INTO t SET a = 1; SELECT LAST_INSERT_ID()", false},
	{"INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE a = 1, b = 2; SELECT 1", false},
	{"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a); DELETE FROM u WHERE id = 1", false},
	{"REPLACE INTO t SET a = 1; SELECT ROW_COUNT()", false},
	{"DELETE FROM t WHERE id = 1; INSERT INTO t VALUES (1)", false},

	// Reads of user variables, locking reads, and per-statement results leave nothing.
	{"SELECT @a; SELECT @b + 1", false},
	{"SELECT * FROM t WHERE id = @id; SELECT 2", false},
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1; SELECT FOUND_ROWS()", false},
	{"SELECT IS_FREE_LOCK('a'); SELECT IS_USED_LOCK('a')", false},
	{"SELECT 1; SET STATEMENT max_statement_time = 1 FOR SELECT 2", false},
	{"SET STATEMENT max_statement_time = 1 FOR SELECT 1; SELECT 2", false},

	// Statements that only remove state, and state that is not on the connection.
	{"SELECT 1; UNLOCK TABLES", false},
	{"SELECT 1; DO RELEASE_LOCK('a')", false},
	{"SELECT RELEASE_ALL_LOCKS(); SELECT 2", false},
	{"SELECT 1; DEALLOCATE PREPARE s", false},
	{"SELECT 1; COMMIT", false},
	{"UPDATE t SET a = 1; COMMIT", false},
	{"SELECT 1; ROLLBACK", false},
	{"SELECT 1; SHOW WARNINGS", false},
	{"SELECT 1; EXPLAIN SELECT 2", false},
	{"SELECT 1; DO SLEEP(0)", false},
	{"SELECT 1; CREATE TABLE t (a INT)", false},
	{"SELECT 1; START SLAVE", false},
	{"SELECT 1; SET PASSWORD = PASSWORD('x')", false},
	{"SELECT 1; CREATE PROCEDURE p() BEGIN SET @a = 1; CREATE TEMPORARY TABLE x (a INT); DO GET_LOCK('a', 1); END", false},
	{"SELECT 1; GRANT SELECT ON db.* TO 'u'@'h'", false},

	// Statements that leave state, after a first statement that does not.
	{"SELECT 1; SET @a = 1", true},
	{"SELECT 1; SET NAMES utf8mb4", true},
	{"SELECT 1; SET autocommit = 0", true},
	{"SELECT 1; SET SESSION sql_mode = ''", true},
	{"SELECT 1; SET TRANSACTION ISOLATION LEVEL READ COMMITTED", true},
	{"SELECT 1; SET ROLE r", true},
	{"SELECT 1; SET GLOBAL max_connections = 10", true},
	{"SELECT 1; set @a = 1", true},
	{"SELECT 1; USE db", true},
	{"SELECT 1; use `db`", true},
	{"SELECT 1; BEGIN", true},
	{"SELECT 1; START TRANSACTION", true},
	{"SELECT 1; START TRANSACTION READ ONLY", true},
	{"SELECT 1; COMMIT AND CHAIN", true},
	{"SELECT 1; XA START 'x'", true},
	{"SELECT 1; LOCK TABLES t READ", true},
	{"SELECT 1; FLUSH TABLES WITH READ LOCK", true},
	{"SELECT 1; PREPARE s FROM 'SELECT 1'", true},
	{"SELECT 1; EXECUTE s", true},
	{"SELECT 1; CALL p()", true},
	{"SELECT 1; BEGIN NOT ATOMIC SELECT 2; END", true},
	{"SELECT 1; HANDLER t OPEN", true},
	{"SELECT 1; CREATE TEMPORARY TABLE x (a INT)", true},
	{"SELECT 1; DROP TEMPORARY TABLE x", true},
	{"SELECT 1; SELECT GET_LOCK('a', 1)", true},
	{"SELECT @a := 1; SELECT 2", true},
	{"SELECT 1 INTO @a; SELECT 2", true},
	{"SELECT a FROM t INTO @a; SELECT @a", true},
	{"UPDATE t SET a = (@x := a + 1); SELECT @x", true},
	{"SELECT 1; EXECUTE IMMEDIATE 'SET @a = 1'", true},
	{"SELECT 1; EXECUTE IMMEDIATE @sql", true},
	{"SELECT 1; /*!40101 SET NAMES utf8 */", true},
	{"SELECT 1; /*!USE db*/", true},
	{"SELECT 1; garbage", true},
	{"SELECT 1;; SELECT 2", true}, // an empty statement is Unknown

	// A first statement that is not a plain read or write: state, whatever follows.
	{"SET @a = 1; SELECT @a", true},
	{"SET NAMES utf8mb4; SELECT 1", true},
	{"USE db; SELECT 1", true},
	{"BEGIN; SELECT 1", true},
	{"START TRANSACTION; SELECT 1; COMMIT", true},
	{"COMMIT; SELECT 1", true},
	{"SHOW WARNINGS; SELECT 1", true},
	{"CREATE TEMPORARY TABLE x (a INT); SELECT 1", true},
	{"CALL p(); SELECT 1", true},
	{"; SELECT 1", true},
	{"garbage; SELECT 1", true},

	// Single statements (no Multi): the same rule.
	{"SELECT 1", false},
	{"UPDATE t SET a = 1", false},
	{"SET @a = 1", true},
	{"", true},
}

func TestLeavesSessionState(t *testing.T) {
	for _, tc := range stateCases {
		r := Classify([]byte(tc.in))
		if got := LeavesSessionState(&r); got != tc.state {
			t.Errorf("LeavesSessionState(%q) = %v, want %v (%v %v)", tc.in, got, tc.state, r.Kind, r.Flags)
		}
	}
}

var firstWordCases = []struct {
	in, word string
	want     bool
}{
	{"CREATE TEMPORARY TABLE t (a INT)", "CREATE", true},
	{"create temporary table t (a int)", "CREATE", true},
	{"  \n\tCreate TEMPORARY TABLE t", "CREATE", true},
	{"DROP TEMPORARY TABLE t", "CREATE", false},
	{"DROP TEMPORARY TABLE t", "DROP", true},
	{"/* app=x */ CREATE TEMPORARY TABLE t (a INT)", "CREATE", true},
	{"/*FORCE_MASTER*/CREATE TEMPORARY TABLE t (a INT)", "CREATE", true},
	{"# a comment\nCREATE TEMPORARY TABLE t (a INT)", "CREATE", true},
	{"-- a comment\nCREATE TEMPORARY TABLE t (a INT)", "CREATE", true},
	{"--\tx\r\nCREATE TABLE t", "CREATE", true},
	{"/* a */ -- b\n # c\n /* d */CREATE TABLE t", "CREATE", true},
	// Executable comments are text: their content is the statement.
	{"/*!40101 CREATE TEMPORARY TABLE t (a INT) */", "CREATE", true},
	{"/*!CREATE TEMPORARY TABLE t (a INT)*/", "CREATE", true},
	{"/*M!100100 DROP TEMPORARY TABLE t */", "DROP", true},
	{"/*!40101 DROP TEMPORARY TABLE t */", "CREATE", false},
	// Not the first word, not a word, not the whole word.
	{"CREATED TABLE t", "CREATE", false},
	{"CREATE_TABLE t", "CREATE", false},
	{"CREAT", "CREATE", false},
	{"`CREATE` TABLE t", "CREATE", false},
	{"'CREATE' TABLE t", "CREATE", false},
	{"\"CREATE\"", "CREATE", false},
	{"/* CREATE */ DROP TABLE t", "CREATE", false},
	{"-- CREATE\nDROP TABLE t", "CREATE", false},
	{"--CREATE TABLE t", "CREATE", false}, // "--" without a space is not a comment
	{"SET STATEMENT x = 1 FOR CREATE TEMPORARY TABLE t (a INT)", "CREATE", false},
	{"1CREATE", "CREATE", false},
	{"(CREATE)", "CREATE", false},
	{"CREATE(", "CREATE", true},
	{"CREATE;", "CREATE", true},
	{"", "CREATE", false},
	{"   ", "CREATE", false},
	{"/* unterminated CREATE", "CREATE", false},
	{"\x00\xffCREATE", "CREATE", false},
}

func TestFirstWordIs(t *testing.T) {
	for _, tc := range firstWordCases {
		if got := FirstWordIs([]byte(tc.in), tc.word); got != tc.want {
			t.Errorf("FirstWordIs(%q, %s) = %v, want %v", tc.in, tc.word, got, tc.want)
		}
	}
}

var releaseAllCases = []struct {
	in   string
	want bool
}{
	{"SELECT RELEASE_ALL_LOCKS()", true},
	{"DO RELEASE_ALL_LOCKS()", true},
	{"do release_all_locks ( )", true},
	{"SELECT release_all_locks/* c */()", true},
	{"SELECT 1; DO RELEASE_ALL_LOCKS()", true},
	{"SELECT RELEASE_LOCK('a'), RELEASE_ALL_LOCKS()", true},
	{"/*!DO RELEASE_ALL_LOCKS()*/", true},
	{"EXECUTE IMMEDIATE 'DO RELEASE_ALL_LOCKS()'", true},
	{"SET STATEMENT max_statement_time = 1 FOR SELECT RELEASE_ALL_LOCKS()", true},
	{"BEGIN NOT ATOMIC DO RELEASE_ALL_LOCKS(); END", true},
	{"SET @n = RELEASE_ALL_LOCKS()", true},
	// Not a call of the function.
	{"SELECT RELEASE_LOCK('a')", false},
	{"SELECT 'RELEASE_ALL_LOCKS()'", false},
	{"SELECT \"release_all_locks()\"", false},
	{"SELECT 1 /* RELEASE_ALL_LOCKS() */", false},
	{"SELECT 1 -- RELEASE_ALL_LOCKS()", false},
	{"SELECT 1 # RELEASE_ALL_LOCKS()\n", false},
	{"SELECT `RELEASE_ALL_LOCKS`()", false},
	{"SELECT release_all_locks FROM t", false},
	{"SELECT db.release_all_locks()", false},
	{"SELECT MY_RELEASE_ALL_LOCKS()", false},
	{"SELECT RELEASE_ALL_LOCKS_NOW()", false},
	{"CREATE PROCEDURE p() BEGIN DO RELEASE_ALL_LOCKS(); END", false},
	{"CREATE PROCEDURE p() BEGIN DO RELEASE_ALL_LOCKS(); END; DO RELEASE_LOCK('a')", false},
	{"PREPARE s FROM 'DO RELEASE_ALL_LOCKS()'", false},
	{"", false},
	{"RELEASE_ALL_LOCKS", false},
}

func TestReleasesAllLocks(t *testing.T) {
	for _, tc := range releaseAllCases {
		stmt := []byte(tc.in)
		if got := ReleasesAllLocks(stmt); got != tc.want {
			t.Errorf("ReleasesAllLocks(%q) = %v, want %v", tc.in, got, tc.want)
		}
		// The proxy asks only when Classify found ReleaseLock.
		if tc.want && Classify(stmt).Flags&ReleaseLock == 0 {
			t.Errorf("%q: RELEASE_ALL_LOCKS without ReleaseLock", tc.in)
		}
	}
}
