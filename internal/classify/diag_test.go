package classify

import "testing"

// TestKeepsDiagnostics: which statements leave the previous statement's warnings in place, as
// MariaDB 10.11 answered (servertest's TestDiagnosticsRule runs the same on a live server).
func TestKeepsDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		stmt  string
		keeps bool
	}{
		{"SELECT 1", true},
		{"SELECT 1 FROM DUAL", true},
		{"select 1 from dual where 1", true},
		{"(SELECT 1)", true},
		{"SELECT 1 UNION SELECT 2", true},
		{"VALUES (1)", true},
		{"SELECT @@server_id", true},
		{"SELECT NOW(), CONNECTION_ID()", true},
		{"SELECT (SELECT 1)", true},
		{"SELECT EXTRACT(YEAR FROM NOW())", true},
		{"SELECT TRIM(LEADING 'x' FROM 'xy') FROM DUAL", true},
		{"SELECT SUBSTRING('abc' FROM 2), (SELECT 1), EXTRACT(DAY FROM NOW())", true},
		{"SELECT f()", true}, // a stored function's tables are not the statement's
		{"SELECT 1 INTO @z", true},
		{"SELECT 'FROM t' AS `from`", true},
		{"SELECT 1 -- FROM t", true},
		{"SET @x = 1", true},
		{"SET @x = (SELECT 1 FROM DUAL)", true},
		{"SET NAMES utf8mb4", true},
		{"SET SESSION sql_mode = DEFAULT", true},
		{"SET STATEMENT max_statement_time=1 FOR SELECT 1", true},
		{"DO 1", true},
		{"USE db", true},
		{"BEGIN", true},
		{"START TRANSACTION READ ONLY", true},
		{"COMMIT", true},
		{"ROLLBACK", true},
		{"SAVEPOINT a", true},
		{"HELP 'select'", true},
		{"GET DIAGNOSTICS @n = NUMBER", true},
		{"PREPARE q FROM 'SELECT 1'", true},
		{"DEALLOCATE PREPARE q", true},
		{"EXPLAIN SELECT 1", true},
		{"DESCRIBE SELECT 1", true},
		{"ANALYZE SELECT 1", true},
		{"EXECUTE IMMEDIATE 'SELECT 1'", true},
		{"SHOW WARNINGS", true},
		{"SHOW ERRORS", true},
		{"SHOW COUNT(*) WARNINGS", true},
		{"SHOW GRANTS", true},
		{"SHOW CREATE DATABASE db", true},
		{"SHOW CREATE PROCEDURE p", true},
		{"SHOW PROCESSLIST", true},
		{"SHOW PRIVILEGES", true},
		{"SHOW PROFILES", true},
		{"SHOW ENGINE innodb STATUS", true},
		{"SHOW MASTER STATUS", true},
		{"SHOW SLAVE STATUS", true},
		{"SHOW BINARY LOGS", true},

		{"SELECT a FROM t", false},
		{"SELECT a FROM db.t WHERE 0", false},
		{"(SELECT a FROM t)", false},
		{"SELECT * FROM (SELECT 1) x", false},
		{"SELECT 1 FROM DUAL WHERE EXISTS (SELECT 1 FROM t)", false},
		{"SELECT (SELECT a FROM t)", false},
		{"SELECT EXTRACT(YEAR FROM (SELECT d FROM t))", false},
		{"WITH c AS (SELECT 1) SELECT * FROM c", false},
		{"SELECT * FROM seq_1_to_3", false},
		{"SELECT COUNT(*) FROM information_schema.schemata", false},
		{"SELECT @@warning_count FROM t", false},
		{"SELECT a INTO @z FROM t", false},
		{"SELECT a FROM t FOR UPDATE", false},
		{"SET @y = (SELECT a FROM t)", false},
		{"DO (SELECT a FROM t)", false},
		{"SET STATEMENT max_statement_time=1 FOR SELECT a FROM t", false},
		{"EXPLAIN SELECT a FROM t", false},
		{"ANALYZE SELECT a FROM t", false},
		{"DESCRIBE t", false},
		{"DESC `t`", false},
		{"PREPARE q FROM 'SELECT a FROM t'", false},
		{"EXECUTE IMMEDIATE 'SELECT a FROM t'", false},
		{"SHOW TABLES", false},
		{"SHOW FULL TABLES FROM db", false},
		{"SHOW TABLE STATUS", false},
		{"SHOW DATABASES LIKE 'x'", false},
		{"SHOW COLUMNS FROM t", false},
		{"SHOW INDEX FROM t", false},
		{"SHOW STATUS", false},
		{"SHOW GLOBAL STATUS", false},
		{"SHOW SESSION VARIABLES LIKE 'x'", false},
		{"SHOW CHARACTER SET", false},
		{"SHOW COLLATION", false},
		{"SHOW STORAGE ENGINES", false},
		{"SHOW PLUGINS", false},
		{"SHOW OPEN TABLES", false},
		{"SHOW TRIGGERS", false},
		{"SHOW EVENTS", false},
		{"SHOW PROCEDURE STATUS", false},
		{"SHOW PACKAGE BODY STATUS", false},
		{"SHOW CREATE TABLE t", false},
		{"SHOW CREATE VIEW v", false},
		{"SHOW PROFILE", false},
		{"SHOW USER_STATISTICS", false},
		{"INSERT INTO t VALUES (1)", false},
		{"UPDATE t SET a = a WHERE 0", false},
		{"LOCK TABLES t READ", false},
		{"CALL p()", false},           // in doubt: the procedure's statements may
		{"EXECUTE q", false},          // in doubt: what q runs is not in the text
		{"SELECT 1; SELECT 2", false}, // a batch: in doubt
		{"garbage", false},
	} {
		c := Classify([]byte(tc.stmt))
		if got := KeepsDiagnostics(&c); got != tc.keeps {
			t.Errorf("KeepsDiagnostics(%q) = %v, want %v (kind %v, flags %v)", tc.stmt, got, tc.keeps, c.Kind, c.Flags)
		}
	}
}

// TestReadsDiagnostics: the statements that read the previous statement's diagnostics area.
func TestReadsDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		stmt  string
		reads bool
	}{
		{"SHOW WARNINGS", true},
		{"show warnings limit 1", true},
		{"SHOW ERRORS", true},
		{"SHOW COUNT(*) WARNINGS", true},
		{"SHOW COUNT(*) ERRORS", true},
		{"SELECT @@warning_count", true},
		{"SELECT @@session.warning_count, @@SESSION.ERROR_COUNT", true},
		{"select @@error_count as e from dual", true},
		{"/*FORCE_MASTER*/ SELECT @@warning_count", true}, // a hint still wins (route)
		{"SELECT @@warning_count FROM t", false},          // clears first: 0 anywhere
		{"SELECT @@server_id", false},
		{"SELECT 1", false},
		{"SHOW WARNINGS; SELECT 1", false},
		{"SHOW GRANTS", false},
		{"SELECT 'warning_count'", false},
	} {
		c := Classify([]byte(tc.stmt))
		if got := ReadsDiagnostics(&c); got != tc.reads {
			t.Errorf("ReadsDiagnostics(%q) = %v, want %v (kind %v, flags %v)", tc.stmt, got, tc.reads, c.Kind, c.Flags)
		}
		if c.Flags&FoundRows != 0 {
			t.Errorf("%q: FoundRows set", tc.stmt)
		}
	}
}
