package servertest

import (
	"testing"

	"github.com/sluicedb/sluice/internal/classify"
)

// TestDiagnosticsRule checks classify.KeepsDiagnostics and classify.ReadsDiagnostics against the
// live server: after a statement that leaves one warning, each statement of the corpus runs,
// then SHOW WARNINGS tells whether the server kept that warning (the statement named no table),
// cleared it (it named one) or replaced it (it raised a condition of its own: the rule does not
// depend on the text then, and the case is only logged). route.Session follows the session's
// diagnostics area over its nodes by this judgement, so a statement judged wrongly here makes
// SHOW WARNINGS through sluice show another statement's warnings.
func TestDiagnosticsRule(t *testing.T) {
	srv := connect(t)
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS diagtest",
		"USE diagtest",
		"CREATE TABLE IF NOT EXISTS t (a INT)",
		"CREATE OR REPLACE VIEW v AS SELECT a FROM t",
		"CREATE OR REPLACE FUNCTION f() RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM t)",
		"CREATE OR REPLACE PROCEDURE p0() BEGIN END",
		"CREATE OR REPLACE PROCEDURE p1() SELECT a FROM t",
		"CREATE SEQUENCE IF NOT EXISTS s1",
	} {
		srv.exec(t, q)
	}
	const warn = "SELECT CAST('2024-13-01' AS DATE)"
	corpus := []string{
		"SELECT 1", "SELECT 1 FROM DUAL", "(SELECT 1)", "SELECT 1 UNION SELECT 2", "VALUES (1)",
		"SELECT @@server_id", "SELECT NOW(), CONNECTION_ID()", "SELECT (SELECT 1)",
		"SELECT EXTRACT(YEAR FROM NOW())", "SELECT TRIM(LEADING 'x' FROM 'xy') FROM DUAL",
		"SELECT SUBSTRING('abc' FROM 2), (SELECT 1), EXTRACT(DAY FROM NOW())", "SELECT f()",
		"SELECT 1 INTO @z", "SELECT 'FROM t' AS `from`", "SELECT 1 -- FROM t", "SET @x = 1",
		"SET @x = (SELECT 1 FROM DUAL)", "SET NAMES utf8mb4", "SET SESSION sql_mode = DEFAULT",
		"SET STATEMENT max_statement_time=1 FOR SELECT 1", "DO 1", "USE diagtest", "BEGIN", "COMMIT",
		"START TRANSACTION READ ONLY", "ROLLBACK", "HELP 'select'", "GET DIAGNOSTICS @n = NUMBER",
		"PREPARE q FROM 'SELECT 1'", "DEALLOCATE PREPARE q", "EXPLAIN SELECT 1", "DESCRIBE SELECT 1",
		"ANALYZE SELECT 1", "EXECUTE IMMEDIATE 'SELECT 1'", "SHOW WARNINGS", "SHOW ERRORS",
		"SHOW COUNT(*) WARNINGS", "SHOW COUNT(*) ERRORS", "SELECT @@warning_count", "SELECT @@session.error_count",
		"SHOW GRANTS", "SHOW CREATE DATABASE diagtest", "SHOW CREATE PROCEDURE p0", "SHOW CREATE FUNCTION f",
		"SHOW PROCESSLIST", "SHOW PRIVILEGES", "SHOW PROFILES", "SHOW ENGINE innodb STATUS",
		"SHOW MASTER STATUS", "SHOW BINARY LOGS", "SHOW SLAVE STATUS", "SHOW AUTHORS",

		"SELECT a FROM t", "SELECT a FROM diagtest.t WHERE 0", "(SELECT a FROM t)", "SELECT * FROM (SELECT 1) x",
		"SELECT 1 FROM DUAL WHERE EXISTS (SELECT 1 FROM t)", "SELECT (SELECT a FROM t LIMIT 1)",
		"SELECT EXTRACT(YEAR FROM (SELECT NOW() FROM t LIMIT 1))", "WITH c AS (SELECT 1) SELECT * FROM c",
		"SELECT * FROM seq_1_to_3", "SELECT COUNT(*) FROM information_schema.schemata",
		"SELECT @@warning_count FROM t", "SELECT a INTO @z FROM t LIMIT 1", "SELECT a FROM v",
		"SET @y = (SELECT a FROM t LIMIT 1)", "DO (SELECT a FROM t LIMIT 1)",
		"SET STATEMENT max_statement_time=1 FOR SELECT a FROM t", "EXPLAIN SELECT a FROM t",
		"ANALYZE SELECT a FROM t", "DESCRIBE t", "DESC `v`", "PREPARE q FROM 'SELECT a FROM t'",
		"EXECUTE IMMEDIATE 'SELECT a FROM t'", "SHOW TABLES", "SHOW FULL TABLES FROM diagtest",
		"SHOW TABLE STATUS", "SHOW DATABASES LIKE 'x'", "SHOW COLUMNS FROM t", "SHOW INDEX FROM t",
		"SHOW STATUS LIKE 'x'", "SHOW GLOBAL STATUS LIKE 'x'", "SHOW SESSION VARIABLES LIKE 'x'",
		"SHOW CHARACTER SET", "SHOW COLLATION LIKE 'x'", "SHOW STORAGE ENGINES", "SHOW PLUGINS",
		"SHOW OPEN TABLES", "SHOW TRIGGERS", "SHOW EVENTS", "SHOW PROCEDURE STATUS", "SHOW FUNCTION STATUS",
		"SHOW CREATE TABLE t", "SHOW CREATE VIEW v", "SHOW CREATE SEQUENCE s1", "SHOW PROFILE",
		"SHOW USER_STATISTICS", "INSERT INTO t VALUES (1)", "UPDATE t SET a = a WHERE 0",
		"DELETE FROM t WHERE 0", "CALL p1()",
	}
	for _, q := range corpus {
		_ = srv.bc.Exec(warn)
		failed := srv.bc.Exec(q) != nil
		rows, err := srv.bc.Query("SHOW WARNINGS")
		if err != nil {
			t.Fatalf("SHOW WARNINGS after %s: %v", q, err)
		}
		var kept bool
		switch {
		case failed:
			t.Logf("%s: failed (replaces the list whatever its text)", q)
			continue
		case len(rows.Values) == 0:
			kept = false
		case len(rows.Values) == 1 && rows.Values[0][1].S == "1292" && rows.Values[0][2].S == "Incorrect datetime value: '2024-13-01'":
			kept = true
		default:
			t.Logf("%s: raised conditions of its own (replaces the list whatever its text)", q)
			continue
		}
		c := classify.Classify([]byte(q))
		if got := classify.KeepsDiagnostics(&c); got != kept {
			t.Errorf("%s: the server kept the previous warnings: %v; KeepsDiagnostics says %v (kind %v, flags %v)", q, kept, got, c.Kind, c.Flags)
		}
		if classify.ReadsDiagnostics(&c) && !kept {
			t.Errorf("%s: a diagnostics statement cleared the warnings", q)
		}
	}
	srv.exec(t, "DROP DATABASE diagtest")
}
