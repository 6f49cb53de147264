package proxy_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// replicaMarks is, per replica, what a statement that changes a node leaves there without a
// transaction of the primary's: its own GTIDs (ANALYZE TABLE, REPAIR TABLE, FLUSH TABLES are
// binlogged with the replica's server id) and its number of binlog files (FLUSH LOGS rotates).
func replicaMarks(t testing.TB) map[string]string {
	t.Helper()
	c := testutil.Cluster(t)
	ctx := context.Background()
	marks := map[string]string{}
	for _, n := range c.Replicas() {
		db, err := c.AdminDB(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, "SHOW BINARY LOGS")
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		files := 0
		for rows.Next() {
			files++
		}
		rows.Close()
		db.Close()
		marks[n.Name] = "binlog files: " + strconv.Itoa(files)
	}
	own, err := c.ReplicaWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range own {
		name, gtid, _ := strings.Cut(w, ": ")
		marks[name] += ", own GTID " + gtid
	}
	return marks
}

// checkReplicasUntouched fails the test when a replica's marks changed since before.
func checkReplicasUntouched(t testing.TB, before map[string]string) {
	t.Helper()
	after := replicaMarks(t)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("replica %s was changed through sluice: before %q, after %q", name, b, after[name])
		}
	}
}

// TestNodeChangingStatementsStayOffReplicas: with writable replicas, statements that change a
// node although a read-only transaction lets them (ANALYZE/OPTIMIZE/REPAIR TABLE, FLUSH, SELECT
// … INTO OUTFILE) never run on a replica: not as a batch behind START TRANSACTION READ ONLY
// (before, the batch went to a replica as a read-only transaction and ANALYZE TABLE wrote a
// GTID of the replica's own there), not inside a read-only transaction held on a replica, not
// with a hint; on the read-only endpoint they are refused (1290), in a batch too.
func TestNodeChangingStatementsStayOffReplicas(t *testing.T) {
	s := startSluice(t, nil)
	ctx := context.Background()
	c := testutil.Cluster(t)
	pdb, err := c.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	if _, err := pdb.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS test.t_guard (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	before := replicaMarks(t)

	rw := conn(t, open(t, dsn(s.rw, "app", "app", "test", "multiStatements=true")))
	// Batches behind a read-only transaction's start, or a COMMIT: the whole batch goes to the
	// primary and runs.
	for _, q := range []string{
		"START TRANSACTION READ ONLY; ANALYZE TABLE t_guard; COMMIT",
		"START TRANSACTION READ ONLY; FLUSH LOGS",
		"SET STATEMENT max_statement_time = 10 FOR ANALYZE TABLE t_guard",
		"EXECUTE IMMEDIATE 'OPTIMIZE TABLE t_guard'",
	} {
		if _, err := rw.ExecContext(ctx, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
		if _, role, reason := lastRoute(t, rw); role != "primary" {
			t.Errorf("%s ran on a %s (%s)", q, role, reason)
		}
		_, _ = rw.ExecContext(ctx, "COMMIT")
	}
	// Inside a read-only transaction held on a replica: refused as the server refuses a write in
	// a READ ONLY transaction (1792), the transaction stays open there.
	if _, err := rw.ExecContext(ctx, "START TRANSACTION READ ONLY"); err != nil {
		t.Fatal(err)
	}
	if node, role, _ := lastRoute(t, rw); role != "replica" {
		t.Fatalf("the read-only transaction opened on %s (%s), want a replica", node, role)
	}
	for _, q := range []string{
		"ANALYZE TABLE t_guard", "OPTIMIZE TABLE t_guard", "REPAIR TABLE t_guard", "FLUSH TABLES", "FLUSH LOGS",
		"SELECT 1 INTO OUTFILE '/tmp/sluice_guard_never'", "SELECT 1; FLUSH LOGS", "COMMIT; ANALYZE TABLE t_guard",
		"PREPARE s_guard FROM 'ANALYZE TABLE t_guard'", "ANALYZE SELECT 1 INTO OUTFILE '/tmp/sluice_guard_never'",
	} {
		_, err := rw.ExecContext(ctx, q)
		if err == nil {
			t.Errorf("%s in a read-only transaction on a replica: no error", q)
			continue
		}
		if me := mysqlErr(t, err); me.Number != 1792 {
			t.Errorf("%s in a read-only transaction on a replica: %v, want 1792", q, err)
		}
	}
	// A statement prepared through the binary protocol (on the primary) and executed in the
	// replica's transaction is judged by its text too.
	st, err := rw.PrepareContext(ctx, "ANALYZE TABLE t_guard")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx); err == nil || mysqlErr(t, err).Number != 1792 {
		t.Errorf("a prepared ANALYZE TABLE executed in a read-only transaction on a replica: %v, want 1792", err)
	}
	st.Close()
	if _, err := rw.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	// Hints do not send them to a replica either.
	for _, q := range []string{"/*FORCE_SLAVE*/ ANALYZE TABLE t_guard", "/*FORCE_NODE='replica1'*/ FLUSH LOGS",
		"/*FORCE_SLAVE*/ SELECT 1; FLUSH LOGS", "/*FORCE_NODE='replica2'*/ START TRANSACTION READ ONLY; ANALYZE TABLE t_guard"} {
		if _, err := rw.ExecContext(ctx, q); err == nil {
			t.Errorf("%s: no error", q)
		}
	}

	// The read-only endpoint refuses them all.
	ro := conn(t, open(t, dsn(s.ro, "app", "app", "test", "multiStatements=true")))
	for _, q := range []string{
		"ANALYZE TABLE t_guard", "FLUSH LOGS", "SELECT 1; FLUSH LOGS", "START TRANSACTION READ ONLY; ANALYZE TABLE t_guard",
		"COMMIT; SELECT 1 INTO OUTFILE '/tmp/sluice_guard_never'", "SELECT @a := 1 INTO OUTFILE '/tmp/sluice_guard_never'",
		"SET @a = 1; SELECT 2 INTO DUMPFILE '/tmp/sluice_guard_never'", "/*FORCE_SLAVE*/ OPTIMIZE TABLE t_guard",
		"PREPARE s_guard FROM 'FLUSH LOGS'", "EXECUTE IMMEDIATE 'ANALYZE TABLE t_guard'",
		"ANALYZE SELECT 1 INTO OUTFILE '/tmp/sluice_guard_never'", "SET STATEMENT max_statement_time = 10 FOR FLUSH LOGS",
	} {
		_, err := ro.ExecContext(ctx, q)
		if err == nil {
			t.Errorf("%s on the read-only endpoint: no error", q)
			continue
		}
		if me := mysqlErr(t, err); me.Number != 1290 {
			t.Errorf("%s on the read-only endpoint: %v, want 1290", q, err)
		}
	}
	// The binary protocol: preparing runs nothing; executing is refused.
	st, err = ro.PrepareContext(ctx, "FLUSH LOGS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx); err == nil || mysqlErr(t, err).Number != 1290 {
		t.Errorf("a prepared FLUSH LOGS executed on the read-only endpoint: %v, want 1290", err)
	}
	st.Close()
	checkReplicasUntouched(t, before)
}

// TestRefreshNeverOnReplica: COM_REFRESH (FLUSH and RESET as a command byte) is refused on the
// read-only endpoint (before, it ran on the bound replica: a FLUSH LOGS there rotated its binlog,
// and 0x80 would have been a RESET MASTER), and runs on the primary only through the read-write
// endpoint. The other administrative commands (COM_SHUTDOWN, COM_DEBUG, the replication
// protocol's, COM_CREATE_DB/COM_DROP_DB, …) never reach a replica either; COM_PROCESS_KILL names
// a sluice session and is sluice's own.
func TestRefreshNeverOnReplica(t *testing.T) {
	s := startSluice(t, nil)
	before := replicaMarks(t)
	ro := rawConnect(t, s.ro, "app", "app")
	defer ro.Close()
	for _, cmd := range [][]byte{
		{smysql.ComRefresh, 0x02}, {smysql.ComRefresh, 0x02 | 0x10}, {smysql.ComRefresh, 0x01},
		{smysql.ComShutdown, 0}, {smysql.ComDebug}, {smysql.ComProcessKill, 0xff, 0xff, 0xff, 0x7f},
		{smysql.ComBinlogDump, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0}, {smysql.ComRegisterSlave, 9, 0, 0, 0},
		{smysql.ComBinlogDumpGTID, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {smysql.ComCreateDB, 'x'}, {smysql.ComDropDB, 't', 'e', 's', 't'},
		{smysql.ComDaemon}, {smysql.ComTime}, {smysql.ComDelayedInsert}, {smysql.ComTableDump, 4, 't', 'e', 's', 't', 1, 't'},
	} {
		ps := command(t, ro, cmd, "single")
		if !smysql.IsERR(ps[0]) {
			t.Errorf("command % x on the read-only endpoint: % x, want an error", cmd, ps[0])
			continue
		}
		if se := smysql.ParseERR(ps[0]); cmd[0] == smysql.ComRefresh && (se.Code != 1290 || se.State != "HY000" || !strings.Contains(se.Message, "read-only")) {
			t.Errorf("COM_REFRESH %#x on the read-only endpoint: %v, want 1290 (HY000)", cmd[1], se)
		}
	}
	if got := query(t, ro, "SELECT 41+1"); got != "42" {
		t.Fatalf("the read-only session after the refusals: %q", got)
	}

	// Read-write: the primary rotates its binlog, no replica does.
	c := testutil.Cluster(t)
	pdb, err := c.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	files := func() int {
		rows, err := pdb.Query("SHOW BINARY LOGS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		return n
	}
	had := files()
	rw := rawConnect(t, s.rw, "app", "app")
	defer rw.Close()
	exec := func(q string) {
		if ps := command(t, rw, append([]byte{smysql.ComQuery}, q...), "result"); !smysql.IsOK(ps[0]) {
			t.Fatalf("%s: % x", q, ps[0])
		}
	}
	exec("START TRANSACTION READ ONLY") // a replica's transaction does not take it either
	if ps := command(t, rw, []byte{smysql.ComRefresh, 0x02}, "single"); !smysql.IsOK(ps[0]) {
		t.Fatalf("COM_REFRESH FLUSH LOGS on the read-write endpoint: % x", ps[0])
	}
	exec("COMMIT")
	if now := files(); now != had+1 {
		t.Errorf("the primary has %d binlog files after COM_REFRESH FLUSH LOGS, had %d", now, had)
	}
	checkReplicasUntouched(t, before)
}

// TestLoadDataLocalThroughSluice: a real LOAD DATA LOCAL goes through (the node's request names
// the statement's file as the server read the literal, doubled quotes included), so the check
// that refuses any other request does not stand in a client's way.
func TestLoadDataLocalThroughSluice(t *testing.T) {
	s := startSluice(t, nil)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "it's.csv")
	if err := os.WriteFile(path, []byte("1\n2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mysql.RegisterLocalFile(path)
	defer mysql.DeregisterLocalFile(path)
	mysql.RegisterReaderHandler("sluice_guard", func() io.Reader { return strings.NewReader("4\n5\n") })
	defer mysql.DeregisterReaderHandler("sluice_guard")
	c := conn(t, open(t, dsn(s.rw, "app", "app", "test", "")))
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS t_load (id INT PRIMARY KEY)", "DELETE FROM t_load",
		"LOAD DATA LOCAL INFILE '" + strings.ReplaceAll(path, "'", "''") + "' INTO TABLE t_load",
		"LOAD DATA LOW_PRIORITY LOCAL INFILE 'Reader::sluice_guard' INTO TABLE t_load",
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A prepared LOAD DATA LOCAL (MariaDB prepares it; mysqltest's ps mode sends it so): the
	// file request comes in answer to COM_STMT_EXECUTE.
	mysql.RegisterReaderHandler("sluice_guard_ps", func() io.Reader { return strings.NewReader("6\n7\n") })
	defer mysql.DeregisterReaderHandler("sluice_guard_ps")
	st, err := c.PrepareContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::sluice_guard_ps' INTO TABLE t_load")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ExecContext(ctx); err != nil {
		t.Fatalf("prepared LOAD DATA LOCAL: %v", err)
	}
	st.Close()
	var n int
	if err := c.QueryRowContext(ctx, "/*FORCE_MASTER*/ SELECT COUNT(*) FROM t_load").Scan(&n); err != nil || n != 7 {
		t.Fatalf("%d rows loaded (%v), want 7", n, err)
	}
}
