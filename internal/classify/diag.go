package classify

// The diagnostics area: the warnings and errors of a session's previous statement, which SHOW
// WARNINGS, SHOW ERRORS, SHOW COUNT(*) WARNINGS|ERRORS and @@warning_count / @@error_count
// read. A proxy that spreads a session's statements over nodes must send such a statement to
// the node whose diagnostics area holds what the server would show, and for that know which
// statements change it. The rule, as MariaDB 10.11 follows it (checked statement by statement
// on a live server: servertest's TestDiagnosticsRule):
//
//   - a statement that raises a condition (a warning, a note, an error; a parse error too)
//     replaces the list with its own;
//   - otherwise a statement that names a table (TableRef: FROM t, a derived table, a CTE's
//     reference, information_schema, a SHOW answered from the catalog; any INSERT, UPDATE,
//     DELETE, LOAD DATA, CREATE TABLE …) clears it before it runs;
//   - a statement that names none (SELECT 1, SELECT @@server_id, SELECT f() whatever f reads,
//     SET, USE, BEGIN, COMMIT, DO 1, HELP, SHOW GRANTS, SHOW CREATE DATABASE, CREATE USER …)
//     and raises nothing leaves it as it was: the previous statement's warnings stay;
//   - the diagnostics statements themselves never change it (but for their own error).

// ReadsDiagnostics reports whether c reads the session's diagnostics area: SHOW WARNINGS,
// SHOW ERRORS, SHOW COUNT(*) WARNINGS|ERRORS, or a SELECT of @@warning_count / @@error_count
// that names no table (one that does clears the list first, and reads 0 anywhere). A batch
// does not count: it runs where batches run.
func ReadsDiagnostics(c *Result) bool {
	if c.Flags&Multi != 0 {
		return false
	}
	switch c.Kind {
	case Show:
		return c.Show == ShowWarnings
	case Select:
		return c.Flags&(DiagnosticsRead|TableRef) == DiagnosticsRead
	}
	return false
}

// KeepsDiagnostics reports whether the server, running c without raising any condition,
// leaves the session's diagnostics area as the previous statement left it: c names no table
// (see the rule above). In doubt it answers false, as for a statement that names a table: a
// batch, CALL (the procedure's statements may), EXECUTE of a prepared statement, DDL, writes,
// anything unknown. The diagnostics statements keep it (ReadsDiagnostics).
func KeepsDiagnostics(c *Result) bool {
	if c.Flags&Multi != 0 {
		return false
	}
	switch c.Kind {
	case Select, Show, Explain, Set, Do:
		return c.Flags&TableRef == 0
	case Use, Begin, Commit, Rollback, Savepoint, RollbackTo, ReleaseSavepoint, Deallocate, Help, Get:
		return true
	case Prepare:
		// PREPARE opens the tables its text names.
		inner := Result{Kind: c.Inner, Flags: c.InnerFlags}
		return c.Inner != Prepare && KeepsDiagnostics(&inner)
	}
	return false
}
