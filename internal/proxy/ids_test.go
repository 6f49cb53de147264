package proxy_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// The second user of these tests: it logs in through sluice (the users list) and on the nodes
// (an account on the primary, replicated), with SELECT only: no CONNECTION ADMIN, no SUPER.
const (
	plainUser     = "ids_plain"
	plainPassword = "ids_plain_pw"
)

// withPlainUser creates plainUser on the cluster (gone when the test ends) and returns the
// configuration edit that lets it log in to sluice.
func withPlainUser(t *testing.T) func(*config.Config) {
	t.Helper()
	cl := testutil.Cluster(t)
	admin, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{
		"DROP USER IF EXISTS 'ids_plain'@'127.0.0.1'",
		"CREATE USER 'ids_plain'@'127.0.0.1' IDENTIFIED BY 'ids_plain_pw'",
		"GRANT SELECT ON *.* TO 'ids_plain'@'127.0.0.1'",
	} {
		mustExec(t, admin, q)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, "DROP USER IF EXISTS 'ids_plain'@'127.0.0.1'") })
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
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
		var node, role, reason string
		if q == "SELECT 1" {
			if _, err := app.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := app.QueryRowContext(ctx, q).Scan(&node, &role, &reason); err != nil {
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
	var node, role, reason string
	if err := other.QueryRowContext(ctx, "SLUICE SHOW LAST ROUTE").Scan(&node, &role, &reason); err != nil {
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
