package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// The grants DEPLOYING.md documents live in deploy/grants.sql, which the guide shows verbatim
// (TestDeployGrantsInGuide) and TestDeployGrants runs: the two cannot drift apart.
const (
	grantsFile = "../../deploy/grants.sql"
	guideFile  = "../../DEPLOYING.md"
)

// TestDeployGrantsInGuide: DEPLOYING.md shows deploy/grants.sql whole, in one sql block.
func TestDeployGrantsInGuide(t *testing.T) {
	grants, err := os.ReadFile(grantsFile)
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(guideFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(guide, []byte("```sql\n"+string(grants)+"```\n")) {
		t.Errorf("%s does not show %s as it is, in a ```sql block: copy the file into the guide", guideFile, grantsFile)
	}
}

// grantStatements reads deploy/grants.sql as statements, with its accounts and database
// renamed (the test cluster has its own app and sluice_monitor accounts).
func grantStatements(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(grantsFile)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, "\n")
	for old, new := range map[string]string{"'sluice_monitor'@": "'dg_monitor'@", "'app'@": "'dg_app'@", " appdb.": " dg_appdb."} {
		if !strings.Contains(text, old) {
			t.Fatalf("%s no longer names %s: change this test with it", grantsFile, old)
		}
		text = strings.ReplaceAll(text, old, new)
	}
	var stmts []string
	for _, s := range strings.Split(text, ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// TestDeployGrants: with exactly the accounts of deploy/grants.sql, sluice works: the monitor
// sees every node up in its role, with positions streamed from the binlogs; `serve --check`
// logs in to every node as the monitor; a client account that exists only on the primary
// (accounts.from_primary) logs in through sluice, writes, reads its write back on a replica
// (consistency: session), and kills its own other session's query through sluice.
func TestDeployGrants(t *testing.T) {
	c := testutil.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := c.AdminDB(c.Primary().Name)
	if err != nil {
		t.Fatal(err)
	}
	setup := append([]string{"CREATE DATABASE dg_appdb"}, grantStatements(t)...)
	for _, s := range setup {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		for _, s := range []string{"DROP USER 'dg_monitor'@'%'", "DROP USER 'dg_app'@'%'", "DROP DATABASE dg_appdb"} {
			if _, err := admin.ExecContext(context.Background(), s); err != nil {
				t.Errorf("%s: %v", s, err)
			}
		}
		admin.Close()
	})
	if err := c.WaitCaughtUp(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	adminAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	monitorAs := func(b []byte) []byte {
		b = bytes.Replace(b, []byte("user: "+sandbox.MonitorUser+"\n"), []byte("user: dg_monitor\n"), 1)
		b = bytes.Replace(b, []byte("password: "+sandbox.MonitorPassword+"\n"), []byte("password: monitor-password\n  interval: 200ms\n"), 1)
		return b
	}
	addr, _, _, logs, path := startServeEdited(t, monitorAs,
		"admin: {listen: '"+adminAddr+"'}\naccounts: {from_primary: true}\n")
	if code, out, errOut := runCLI("serve", "--config", path, "--check"); code != 0 {
		t.Errorf("serve --check with the documented monitor grants: exit %d %s%s", code, out, errOut)
	}

	// Every node up in its role, its position streamed (REPLICATION SLAVE) and its
	// replication status read (SLAVE MONITOR): a replica's lag is known.
	type node struct {
		Name, Role, State, Error string
		Source                   string `json:"position_source"`
		Position                 string `json:"gtid_position"`
		LagMs                    *int64 `json:"lag_ms"`
	}
	var nodes struct{ Nodes []node }
	ok := func() bool {
		resp, err := http.Get("http://" + adminAddr + "/v1/nodes")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil || len(nodes.Nodes) != 3 {
			return false
		}
		for _, n := range nodes.Nodes {
			want := "replica"
			if n.Name == c.Primary().Name {
				want = "primary"
			}
			if n.State != "up" || n.Role != want || n.Source != "stream" || n.Position == "" || want == "replica" && n.LagMs == nil {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the nodes as the monitor with the documented grants sees them: %+v\nsluice's log:\n%s", nodes.Nodes, logs.String())
		}
	}

	// dg_app is in no users list: sluice knows it from the primary.
	open := func() *sql.DB {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "dg_app", "app-password", "tcp", addr, "dg_appdb"
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(conn)
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open()
	var got int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err = db.PingContext(ctx); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("dg_app through sluice: %v\nsluice's log:\n%s", err, logs.String())
	}
	for _, s := range []string{"CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (42)"} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (43)"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&got); err != nil || got != 2 {
		t.Errorf("read back after the writes: %d, %v", got, err)
	}

	// KILL QUERY through sluice, from a second session of the same user, with no privilege
	// beyond the application's.
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var x int
		done <- conn.QueryRowContext(ctx, "SELECT SLEEP(20)").Scan(&x)
	}()
	killer := open()
	time.Sleep(300 * time.Millisecond)
	if _, err := killer.ExecContext(ctx, "KILL QUERY "+strconv.FormatInt(id, 10)); err != nil {
		t.Fatalf("KILL QUERY: %v", err)
	}
	select {
	case err := <-done:
		// MariaDB's SLEEP() interrupted returns 1 rather than an error; either ends it at once.
		var me *mysql.MySQLError
		if err != nil && !(errors.As(err, &me) && me.Number == 1317) {
			t.Errorf("the killed query: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("KILL QUERY did not end the query")
	}
	if regexp.MustCompile(`(?i)access denied|command denied`).MatchString(logs.String()) {
		t.Errorf("sluice logged a refusal:\n%s", logs.String())
	}
}
