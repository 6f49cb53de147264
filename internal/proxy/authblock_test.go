package proxy_test

import (
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
)

// TestAuthFailuresBlockHost: a client address with limits.max_auth_failures failed logins is
// refused with 1129 in place of the greeting, whatever password it then brings, until
// limits.auth_block has passed; failed COM_CHANGE_USERs count as failed logins, and a
// COM_CHANGE_USER from a blocked address gets 1129 and ends its connection.
func TestAuthFailuresBlockHost(t *testing.T) {
	const block = 1500 * time.Millisecond
	s := startSluice(t, func(c *config.Config) {
		c.Limits.MaxAuthFailures = 10
		c.Limits.AuthBlock.Duration = block
	})
	login := func(user, pw string) error {
		db, err := sql.Open("mysql", dsn(s.rw, user, pw, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return db.Ping()
	}
	blocked := func(err error) bool {
		t.Helper()
		me, ok := err.(*mysql.MySQLError)
		return ok && me.Number == 1129 && string(me.SQLState[:]) == "HY000" &&
			me.Message == "Host '127.0.0.1' is temporarily blocked due to too many authentication failures"
	}
	t.Run("logins", func(t *testing.T) {
		// A success between failures does not reset the count (as MaxScale).
		for i := range 10 {
			if err := login("app", "app"); i == 5 && err != nil {
				t.Fatalf("right password after %d failures: %v", i, err)
			}
			user := "app"
			if i%3 == 0 {
				user = "nobody" // unknown users count too
			}
			if me := mysqlErr(t, login(user, "wrong")); me.Number != 1045 {
				t.Fatalf("failure %d: %v", i+1, me)
			}
		}
		if err := login("app", "app"); !blocked(err) {
			t.Fatalf("11th connection, right password: %v, want 1129", err)
		}
		if got := s.app.Stats().AuthBlocked; got != 1 {
			t.Errorf("sluice_auth_blocked_total %d, want 1", got)
		}
		time.Sleep(block + 200*time.Millisecond)
		if err := login("app", "app"); err != nil {
			t.Fatalf("after the block: %v", err)
		}
	})
	t.Run("change user", func(t *testing.T) {
		time.Sleep(block + 200*time.Millisecond) // the count of the logins above has expired
		via := rawConnect(t, s.rw, "app", "app")
		defer via.Close()
		other := rawConnect(t, s.rw, "app", "app") // logged in before the block
		defer other.Close()
		// A connection left open where it should have been closed fails the test, not hangs it.
		_ = via.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
		_ = other.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
		for i := range 9 {
			r := changeUserRaw(t, via, "app", "wrong")
			if !smysql.IsERR(r) || smysql.ParseERR(r).Code != 1045 {
				t.Fatalf("change user %d: %q", i+1, r)
			}
		}
		if got := query(t, via, "SELECT 1"); got != "1" {
			t.Fatalf("after 9 failed changes of user: %q", got)
		}
		// The 10th failure blocks the address and ends the connection (no node login for it).
		if r := changeUserRaw(t, via, "app", "wrong"); !smysql.IsERR(r) || smysql.ParseERR(r).Code != 1045 {
			t.Fatalf("change user 10: %q", r)
		}
		if _, err := via.ReadPacket(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the connection whose failure blocked the address is still open")
		}
		if err := login("app", "app"); !blocked(err) {
			t.Fatalf("new connection after 10 failed changes of user: %v, want 1129", err)
		}
		// A connection logged in before the block works on, but may not change user.
		if got := query(t, other, "SELECT 2"); got != "2" {
			t.Fatalf("earlier session: %q", got)
		}
		r := changeUserRaw(t, other, "app", "app")
		if e := smysql.ParseERR(r); !smysql.IsERR(r) || e.Code != 1129 || !strings.Contains(e.Message, "temporarily blocked") {
			t.Fatalf("change user while blocked: %q", r)
		}
		if _, err := other.ReadPacket(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the connection refused a change of user while blocked is still open")
		}
		time.Sleep(block + 200*time.Millisecond)
		if err := login("app", "app"); err != nil {
			t.Fatalf("after the block: %v", err)
		}
	})
}
