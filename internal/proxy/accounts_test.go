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

// TestAccountsFromPrimary: with accounts.from_primary, an account created on the primary logs in
// through sluice at once (its first login makes sluice read the accounts again), with its own
// password only; its reads go to the replicas as that user; a host pattern that does not cover
// the client gets 1045 with the right password as with a wrong one (as from the server:
// TestHostRefusalIsNoPasswordOracle); a locked account gets 4151 and a dropped one 1045 after the refresh; an
// account whose plugin sluice cannot verify gets 1045 as for a wrong password (its plugin is
// told only in sluice's log); the users list still logs in.
func TestAccountsFromPrimary(t *testing.T) {
	cl := testutil.Cluster(t)
	admin, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []string{
		"DROP USER IF EXISTS 'acc1'@'%', 'acc2'@'10.%', 'acc3'@'%'",
		"CREATE USER 'acc1'@'%' IDENTIFIED BY 'pw1'",
		"GRANT SELECT ON test.* TO 'acc1'@'%'",
		"CREATE USER 'acc2'@'10.%' IDENTIFIED BY 'pw2'",
		"CREATE USER 'acc3'@'%' IDENTIFIED VIA unix_socket",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, "DROP USER IF EXISTS 'acc1'@'%', 'acc2'@'10.%', 'acc3'@'%'") })
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := startSluice(t, func(c *config.Config) {
		c.Accounts.FromPrimary = true
		c.Accounts.Refresh.Duration = time.Second
	})
	login := func(user, password string) error {
		db, err := sql.Open("mysql", dsn(s.rw, user, password, "test", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var who string
		err = db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&who)
		if err == nil && !strings.HasPrefix(who, user+"@") {
			t.Errorf("%s logged in as %s", user, who)
		}
		return err
	}
	if err := login("acc1", "pw1"); err != nil {
		t.Fatalf("acc1, created on the primary: %v", err)
	}
	for _, c := range []struct{ user, password, want string }{
		{"acc1", "wrong", "Error 1045"},
		{"acc2", "pw2", "Error 1045"},   // as from the server: not even the right password
		{"acc2", "wrong", "Error 1045"}, // tells a client on another host anything
		{"acc3", "", "Error 1045"},      // refused as a wrong password is: its plugin is not told
		{"nobody", "x", "Error 1045"},
	} {
		if err := login(c.user, c.password); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.user, err, c.want)
		}
	}
	if err := login("app", "app"); err != nil {
		t.Errorf("app, in the users list: %v", err)
	}
	if _, err := admin.ExecContext(ctx, "ALTER USER 'acc1'@'%' ACCOUNT LOCK"); err != nil {
		t.Fatal(err)
	}
	waitLogin(t, func() error { return login("acc1", "pw1") }, "Error 4151 (HY000): Access denied, this account is locked")
	if _, err := admin.ExecContext(ctx, "DROP USER 'acc1'@'%'"); err != nil {
		t.Fatal(err)
	}
	waitLogin(t, func() error { return login("acc1", "pw1") }, "Error 1045")
}

// waitLogin waits (up to 5 s: a few refreshes) until login fails with want.
func waitLogin(t *testing.T, login func() error, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := login()
		if err != nil && strings.Contains(err.Error(), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("login: %v, want %q within 5 s", err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAccountHostRulesMatchServer: sluice lets a client in exactly when the primary itself
// would, the server being the oracle: each login is tried directly against the primary and
// through sluice (both from 127.0.0.1 over TCP) and must succeed or fail on both. The cases are
// the ones where sluice used to differ: an IP/prefix-length host (a network to MySQL 8.0.23+, a
// literal pattern to MariaDB), localhost under skip-name-resolve (the sandbox's: it matches
// unix-socket clients only), and an anonymous account with a more specific host than a named
// user's, which takes that user's login (with its own password) and any unknown user's.
func TestAccountHostRulesMatchServer(t *testing.T) {
	cl := testutil.Cluster(t)
	admin, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Every sandbox account is at 127.0.0.1 exactly, which ranks above 127.0.0.%: the
	// anonymous account shadows only this test's hr_shadow@'%'.
	drop := "DROP USER IF EXISTS 'hr_cidr'@'127.0.0.0/8', 'hr_mask'@'127.0.0.0/255.0.0.0', 'hr_local'@'localhost', " +
		"'hr_shadow'@'%', ''@'127.0.0.%'"
	for _, q := range []string{
		drop,
		"CREATE USER 'hr_cidr'@'127.0.0.0/8' IDENTIFIED BY 'p1'",
		"CREATE USER 'hr_mask'@'127.0.0.0/255.0.0.0' IDENTIFIED BY 'p2'",
		"CREATE USER 'hr_local'@'localhost' IDENTIFIED BY 'p3'",
		"CREATE USER 'hr_shadow'@'%' IDENTIFIED BY 'p4'",
		"CREATE USER ''@'127.0.0.%' IDENTIFIED BY 'anonpw'",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, drop) })
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := startSluice(t, func(c *config.Config) { c.Accounts.FromPrimary = true })
	primary := cl.Primary().Address
	login := func(addr, user, password string) (string, error) {
		db, err := sql.Open("mysql", dsn(addr, user, password, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var who string
		err = db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&who)
		return who, err
	}
	for _, c := range []struct{ user, password string }{
		{"hr_cidr", "p1"},
		{"hr_mask", "p2"},
		{"hr_local", "p3"},
		{"hr_shadow", "p4"},
		{"hr_shadow", "anonpw"},
		{"hr_nobody", "anonpw"},
		{"hr_nobody", "wrong"},
	} {
		direct, derr := login(primary, c.user, c.password)
		via, serr := login(s.rw, c.user, c.password)
		t.Logf("%s/%s: primary %q %v; sluice %q %v", c.user, c.password, direct, derr, via, serr)
		if (derr == nil) != (serr == nil) || direct != via {
			t.Errorf("%s with password %s: the primary says %q (%v), sluice %q (%v)", c.user, c.password, direct, derr, via, serr)
		}
	}
}

// TestHostRefusalIsNoPasswordOracle: a client on a host that none of a user's accounts lets in
// learns nothing of the password from sluice, as from the server: the right password and a
// wrong one get the same error (the live primary as oracle: 1045 for both). Before, sluice
// answered the right one with 1130 and a wrong one with 1045, so a client from anywhere could
// test passwords of an account meant only for 10.%; so could it for a user of the users list
// with no account for its host.
func TestHostRefusalIsNoPasswordOracle(t *testing.T) {
	cl := testutil.Cluster(t)
	admin, err := cl.AdminDB("primary")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	drop := "DROP USER IF EXISTS 'hr_far'@'10.%'"
	for _, q := range []string{drop, "CREATE USER 'hr_far'@'10.%' IDENTIFIED BY 'pfar'"} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(ctx, drop) })
	if err := cl.WaitCaughtUp(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := startSluice(t, func(c *config.Config) { c.Accounts.FromPrimary = true })
	primary := cl.Primary().Address
	login := func(addr, password string) string {
		db, err := sql.Open("mysql", dsn(addr, "hr_far", password, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = db.PingContext(ctx)
		if err == nil {
			return "logged in"
		}
		return err.Error()
	}
	for _, password := range []string{"pfar", "wrong"} {
		direct, via := login(primary, password), login(s.rw, password)
		t.Logf("password %s: primary %q, sluice %q", password, direct, via)
		if direct != via {
			t.Errorf("password %s: the primary says %q, sluice %q", password, direct, via)
		}
	}
}
