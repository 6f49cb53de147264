package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/config"
)

// TestWarningsFollowTheStatement: through the read-write endpoint with reads balanced over both
// replicas (weighted: serial reads alternate), SHOW WARNINGS, SHOW ERRORS, @@warning_count and
// @@error_count answer for the statement before them, as on one server, across a statement that
// uses no table (which MariaDB runs without touching the warning list). Before, SELECT 1 went
// to the other replica, and SHOW WARNINGS there showed that replica's older list.
func TestWarningsFollowTheStatement(t *testing.T) {
	s := startSluice(t, func(c *config.Config) {
		for i := range c.Endpoints {
			e := &c.Endpoints[i]
			e.Balance = config.BalanceWeighted
			e.ReadWeights["primary"] = 0
			e.ReadWeights["replica1"], e.ReadWeights["replica2"] = 100, 100
		}
	})
	db := open(t, dsn(s.rw, "app", "app", "", ""))
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	one := func(q string) string {
		t.Helper()
		var v sql.NullString
		if err := conn.QueryRowContext(ctx, q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v.String
	}
	rows := func(q string) []string {
		t.Helper()
		rs, err := conn.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			var level, code, msg string
			if err := rs.Scan(&level, &code, &msg); err != nil {
				t.Fatal(err)
			}
			out = append(out, level+" "+code+" "+msg)
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for day := 1; day <= 6; day++ {
		bad := fmt.Sprintf("2024-13-%02d", day)
		one("SELECT CAST('" + bad + "' AS DATE)")
		one("SELECT 1")
		w := rows("SHOW WARNINGS")
		if len(w) != 1 || !strings.Contains(w[0], bad) {
			t.Fatalf("round %d: SHOW WARNINGS after CAST('%s'); SELECT 1 = %q, want the CAST's one warning", day, bad, w)
		}
		if n := one("SELECT @@warning_count"); n != "1" {
			t.Fatalf("round %d: @@warning_count = %s, want 1", day, n)
		}
		if e := rows("SHOW ERRORS"); len(e) != 0 {
			t.Fatalf("round %d: SHOW ERRORS = %q, want none", day, e)
		}
		if n := one("SELECT @@error_count"); n != "0" {
			t.Fatalf("round %d: @@error_count = %s, want 0", day, n)
		}
		// A statement that uses a table clears the list wherever it runs.
		one("SELECT COUNT(*) FROM information_schema.COLLATIONS")
		if w := rows("SHOW WARNINGS"); len(w) != 0 {
			t.Fatalf("round %d: SHOW WARNINGS after a statement with a table = %q, want none", day, w)
		}
	}
}
