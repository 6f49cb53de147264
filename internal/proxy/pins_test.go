package proxy_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/config"
)

// TestPinReasons: each statement that pins a session names its reason where an operator looks:
// SHOW LAST ROUTE's pins column, the session's pins in GET /v1/sessions, and
// sluice_pinned_sessions{endpoint,reason}; the reason goes away when its state is released
// (DROP TEMPORARY TABLE, RELEASE_LOCK, UNLOCK TABLES), while a SET sluice cannot replay keeps
// its pin for the session's life.
func TestPinReasons(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		c.Admin.Listen, c.Admin.Token = "127.0.0.1:0", ""
	})
	ctx := context.Background()
	db := open(t, dsn(s.rw, "app", "app", "test", ""))
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var id uint64
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	// Another session, never pinned: it must not count.
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}

	sessionPins := func() []string {
		t.Helper()
		resp, err := http.Get("http://" + s.app.AdminAddr() + "/v1/sessions")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Sessions []struct {
				ID   uint64   `json:"id"`
				Pins []string `json:"pins"`
			} `json:"sessions"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		for _, se := range out.Sessions {
			if se.ID == id {
				if se.Pins == nil {
					t.Fatalf("session %d: pins is null, want a list", id)
				}
				return se.Pins
			}
		}
		t.Fatalf("session %d not in /v1/sessions", id)
		return nil
	}
	reasons := []string{"temporary_table", "lock_tables", "user_lock", "session_variable", "multi_statement", "user_variable"}
	check := func(step string, want ...string) {
		t.Helper()
		// SHOW LAST ROUTE answers after the previous statement's end was published: what
		// /v1/sessions and /metrics read below is that statement's outcome.
		var node, role, reason, pins string
		if err := c.QueryRowContext(ctx, "SLUICE SHOW LAST ROUTE").Scan(&node, &role, &reason, &pins); err != nil {
			t.Fatal(err)
		}
		if pins != strings.Join(want, ",") {
			t.Errorf("%s: SHOW LAST ROUTE pins %q, want %q", step, pins, strings.Join(want, ","))
		}
		if got := sessionPins(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: /v1/sessions pins %v, want %v", step, got, want)
		}
		m := scrape(t, s)
		for _, r := range reasons {
			series := `sluice_pinned_sessions{endpoint="rw",reason="` + r + `"}`
			v, ok := m[series]
			if !ok {
				t.Errorf("%s: no series %s", step, series)
			}
			w := 0.0
			if slices.Contains(want, r) {
				w = 1
			}
			if v != w {
				t.Errorf("%s: %s = %v, want %v", step, series, v, w)
			}
		}
	}
	exec := func(q string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var got sql.NullInt64
	check("a new session")
	exec("CREATE TEMPORARY TABLE t_pin (id INT)")
	check("temporary table", "temporary_table")
	if err := c.QueryRowContext(ctx, "SELECT GET_LOCK('sluice_pin_test', 5)").Scan(&got); err != nil || got.Int64 != 1 {
		t.Fatalf("GET_LOCK: %v %v", got, err)
	}
	check("temporary table and user lock", "temporary_table", "user_lock")
	exec("DROP TEMPORARY TABLE t_pin")
	check("temporary table dropped", "user_lock")
	if err := c.QueryRowContext(ctx, "SELECT RELEASE_LOCK('sluice_pin_test')").Scan(&got); err != nil || got.Int64 != 1 {
		t.Fatalf("RELEASE_LOCK: %v %v", got, err)
	}
	check("lock released")
	exec("CREATE TABLE IF NOT EXISTS t_pin_lock (id INT)")
	exec("LOCK TABLES t_pin_lock READ")
	check("LOCK TABLES", "lock_tables")
	exec("UNLOCK TABLES")
	check("UNLOCK TABLES")
	exec("SET @pin_var = 1")
	check("a user variable", "user_variable")
	exec("SELECT 1")
	check("a user variable, a statement later", "user_variable")
}
