package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// The second user of these tests: it logs in through sluice (the users list) and on the nodes
// (an account on the primary, replicated), with SELECT only: no CONNECTION ADMIN, no SUPER.
const (
	plainUser     = "ids_plain"
	plainPassword = "ids_plain_pw"
)

// primaryUser creates 'name'@'127.0.0.1' on the primary with the CREATE USER tail spec and
// SELECT on everything, dropped when the test ends, and waits until the replicas have it.
func primaryUser(t *testing.T, name, spec string) {
	t.Helper()
	cl := testutil.Cluster(t)
	admin, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	account := "'" + name + "'@'127.0.0.1'"
	for _, q := range []string{
		"DROP USER IF EXISTS " + account,
		"CREATE USER " + account + " " + spec,
		"GRANT SELECT ON *.* TO " + account,
	} {
		mustExec(t, admin, q)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, "DROP USER IF EXISTS "+account) })
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// withPlainUser creates plainUser on the cluster (gone when the test ends) and returns the
// configuration edit that lets it log in to sluice.
func withPlainUser(t *testing.T) func(*config.Config) {
	t.Helper()
	primaryUser(t, "ids_plain", "IDENTIFIED BY 'ids_plain_pw'")
	return func(c *config.Config) {
		c.Users = append(c.Users, config.User{Name: plainUser, Password: plainPassword})
	}
}

// TestSluiceCommands: the keyword form (SLUICE SHOW …) answers like the /*PROXY_INTERNAL*/
// one, so that clients that strip comments reach it; a command sluice does not know is
// answered by sluice with the list of the known ones (before, it went to the server and came
// back as a misleading 1064); SHOW NODES is for the users in accounts.topology_users.
func TestSluiceCommands(t *testing.T) {
	plain := withPlainUser(t)
	s := startSluice(t, func(c *config.Config) {
		plain(c)
		c.Accounts.TopologyUsers = []string{"app"}
	})
	ctx := context.Background()
	conn := func(user, pw string) *sql.Conn {
		c, err := open(t, dsn(s.rw, user, pw, "", "")).Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	app, other := conn("app", "app"), conn(plainUser, plainPassword)

	// Both spellings, any case, a trailing ';', leading comments before SLUICE.
	for _, q := range []string{"SELECT 1", "SLUICE SHOW LAST ROUTE", "sluice show last route;", "/* app */ SLUICE SHOW LAST ROUTE", "/*PROXY_INTERNAL*/ SHOW LAST ROUTE"} {
		var node, role, reason, pins string
		if q == "SELECT 1" {
			if _, err := app.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := app.QueryRowContext(ctx, q).Scan(&node, &role, &reason, &pins); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if node == "" || reason == "" {
			t.Errorf("%s: %q %q %q, want the SELECT's route", q, node, role, reason)
		}
	}

	nodes := func(c *sql.Conn, q string) (int, error) {
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		return n, rows.Err()
	}
	for _, q := range []string{"SLUICE SHOW NODES", "/*PROXY_INTERNAL*/ SHOW NODES"} {
		if n, err := nodes(app, q); err != nil || n != len(testutil.Cluster(t).Nodes) {
			t.Errorf("%s as app: %d rows, %v", q, n, err)
		}
		// A user outside topology_users: the server's access-denied error, sluice's words.
		_, err := nodes(other, q)
		if me := mysqlErr(t, err); me.Number != 1227 || !strings.Contains(me.Message, "topology_users") {
			t.Errorf("%s as %s: %d %q, want 1227", q, plainUser, me.Number, me.Message)
		}
	}
	// What is not topology stays open to every user.
	var node, role, reason, pins string
	if err := other.QueryRowContext(ctx, "SLUICE SHOW LAST ROUTE").Scan(&node, &role, &reason, &pins); err != nil {
		t.Errorf("SHOW LAST ROUTE as %s: %v", plainUser, err)
	}

	// Unknown commands: sluice's error with the list, not the server's 1064.
	for _, q := range []string{"/*PROXY_INTERNAL*/ SHOW ENDPOINTS", "SLUICE SHOW ENDPOINTS", "sluice", "SLUICE SHOW NODES; SELECT 1"} {
		_, err := app.ExecContext(ctx, q)
		if me := mysqlErr(t, err); me.Number != 1105 || !strings.Contains(me.Message, "SLUICE SHOW NODES") || !strings.Contains(me.Message, "SLUICE SHOW LAST ROUTE") {
			t.Errorf("%s: %d %q, want sluice's list of commands", q, me.Number, me.Message)
		}
	}
	// The session goes on.
	var one int
	if err := app.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the refusals: %d %v", one, err)
	}
}

// TestConnectionIDAndKill: CONNECTION_ID() and KILL speak one number, sluice's connection id (the
// handshake's), on every endpoint and whichever node runs the session's statements. Before,
// SELECT CONNECTION_ID() answered the node's thread id, which KILL read as a sluice id: a KILL of
// that number from another connection closed an unrelated session. Who may kill follows the
// server: the session's own user, or a user with CONNECTION ADMIN/SUPER (app has ALL), and any
// other gets 1095 naming the sluice id.
func TestConnectionIDAndKill(t *testing.T) {
	plain := withPlainUser(t)
	s := startSluice(t, plain)
	connect := func(addr, user, pw string) *backend.Conn {
		c := rawConnect(t, addr, user, pw)
		t.Cleanup(func() { c.Close() })
		return c
	}
	onRW, onRO := connect(s.rw, "app", "app"), connect(s.ro, "app", "app")
	plainRW, plainRO := connect(s.rw, plainUser, plainPassword), connect(s.ro, plainUser, plainPassword)

	// CONNECTION_ID() is the handshake's id on both endpoints, whatever node a hint names, with
	// an alias or FROM DUAL; SHOW LAST ROUTE says sluice answered it.
	for _, c := range []*backend.Conn{onRW, onRO, plainRW, plainRO} {
		want := strconv.FormatUint(uint64(c.Handshake.ConnectionID), 10)
		for _, q := range []string{"SELECT CONNECTION_ID()", "select connection_id() AS id from dual;",
			"/*FORCE_SLAVE*/ SELECT CONNECTION_ID()", "/*FORCE_MASTER*/ SELECT CONNECTION_ID() `id`"} {
			if got := query(t, c, q); got != want {
				t.Errorf("%s: %s, want the handshake's %s", q, got, want)
			}
		}
		if got := query(t, c, "SLUICE SHOW LAST ROUTE"); got != "sluice" {
			t.Errorf("SHOW LAST ROUTE after SELECT CONNECTION_ID(): node %q, want sluice", got)
		}
	}
	// The column is typed as the server types it: a BIGINT UNSIGNED a driver scans as a number.
	db := open(t, dsn(s.ro, "app", "app", "", ""))
	var id uint64
	if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil || id == 0 {
		t.Fatalf("SELECT CONNECTION_ID() through database/sql: %d %v", id, err)
	}
	// Inside a larger statement CONNECTION_ID() is the thread id of the node that runs it (the
	// statement runs as it is): what joins with the node's processlist need.
	if got := query(t, onRW, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID() AND USER = 'app'"); got != "1" {
		t.Errorf("CONNECTION_ID() inside a statement does not name the node's thread: %s", got)
	}

	// KILL QUERY across endpoints with the id CONNECTION_ID() gave: the victim's statement ends,
	// the victim goes on.
	victimID := query(t, onRO, "SELECT CONNECTION_ID()")
	done := make(chan error, 1)
	go func() { done <- onRO.Exec("SELECT SLEEP(20)") }()
	time.Sleep(300 * time.Millisecond)
	if err := onRW.Exec("KILL QUERY " + victimID); err != nil {
		t.Fatalf("KILL QUERY %s from the rw endpoint: %v", victimID, err)
	}
	select {
	case err := <-done:
		var se *smysql.SQLError
		if err != nil && (!errors.As(err, &se) || se.Code != 1317) {
			t.Fatalf("the killed query: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("KILL QUERY did not interrupt the statement on the ro endpoint")
	}
	if got := query(t, onRO, "SELECT 'alive'"); got != "alive" {
		t.Fatalf("victim after KILL QUERY: %q", got)
	}

	// Another user without the privilege: 1095 with the sluice id, on either form, and the
	// victim is untouched.
	for _, q := range []string{"KILL " + victimID, "KILL QUERY " + victimID, "KILL CONNECTION " + victimID} {
		err := plainRW.Exec(q)
		var se *smysql.SQLError
		if !errors.As(err, &se) || se.Code != 1095 || se.Message != "You are not owner of thread "+victimID {
			t.Errorf("%s by %s: %v, want 1095 naming %s", q, plainUser, err, victimID)
		}
	}
	if got := query(t, onRO, "SELECT 'still alive'"); got != "still alive" {
		t.Fatalf("victim after the refused KILLs: %q", got)
	}
	// An unknown id: 1094.
	var se *smysql.SQLError
	if err := plainRW.Exec("KILL 4000000000"); !errors.As(err, &se) || se.Code != 1094 {
		t.Errorf("KILL of an unknown id: %v", err)
	}

	// Its own user kills a session on the other endpoint; a user with the privilege kills
	// another user's session.
	closed := func(c *backend.Conn, who string) {
		t.Helper()
		if err := c.Exec("SELECT 1"); err == nil {
			t.Errorf("%s: the killed session still answers", who)
		}
	}
	if err := plainRW.Exec("KILL " + query(t, plainRO, "SELECT CONNECTION_ID()")); err != nil {
		t.Fatalf("%s killing its own session: %v", plainUser, err)
	}
	closed(plainRO, "own user")
	if err := onRO.Exec("KILL CONNECTION " + query(t, plainRW, "SELECT CONNECTION_ID()")); err != nil {
		t.Fatalf("app (ALL PRIVILEGES) killing %s's session: %v", plainUser, err)
	}
	closed(plainRW, "privileged user")
	if got := query(t, onRW, "SELECT 'killer ok'"); got != "killer ok" {
		t.Fatal(got)
	}
}
