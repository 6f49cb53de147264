package livetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

// TestSessionVarsRoundTrip sets session system variables of every kind to expressions on one
// connection, reads the values back with ReadSessionVars, replays them with AppendSetSession on
// another connection whose sql_mode reads quotes and backslashes otherwise, and compares what
// each connection says of each variable: the hexadecimal literals are accepted by string,
// enum and set variables, the numbers' text by integer, unsigned, boolean and double ones.
func TestSessionVarsRoundTrip(t *testing.T) {
	a, b := dial(t), dial(t)
	sets := map[string]string{
		"sql_mode":                "CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES,PAD_CHAR_TO_FULL_LENGTH')",
		"time_zone":               "CONCAT('+0', '3:30')",
		"max_statement_time":      "2*5",
		"long_query_time":         "1/3",
		"wait_timeout":            "3600 + 1",
		"sql_auto_is_null":        "1 = 1",
		"sql_select_limit":        "18446744073709551614 + 0",
		"tx_isolation":            "REPLACE('READ_COMMITTED', '_', '-')",
		"optimizer_switch":        "CONCAT('index_merge=off', '')",
		"character_set_results":   "IF(1, NULL, 'utf8mb4')",
		"lc_time_names":           "LOWER('DE_DE')",
		"div_precision_increment": "LEAST(9, 20)",
		"collation_connection":    "CONCAT('utf8mb4_', 'bin')",
	}
	names := make([]string, 0, len(sets))
	for name, expr := range sets {
		exec(t, a, "SET SESSION "+name+" = "+expr)
		names = append(names, name)
	}
	vals, err := a.ReadSessionVars(names)
	if err != nil {
		t.Fatal(err)
	}
	stmt, ok := backend.AppendSetSession(nil, vals)
	if !ok {
		t.Fatalf("AppendSetSession refused %+v", vals)
	}
	exec(t, b, "SET sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'")
	if err := b.Exec(string(stmt)); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	for _, name := range names {
		q := "SELECT @@session." + name
		want, got := query1(t, a, q), query1(t, b, q)
		if got != want {
			t.Errorf("@@%s: replayed %q, original %q", name, got, want)
		}
	}
	if testing.Verbose() {
		t.Logf("%s", stmt)
	}
}

// TestSessionVarsRefused: a name that is no variable comes back as the node's error, and the
// connection goes on.
func TestSessionVarsRefused(t *testing.T) {
	a := dial(t)
	_, err := a.ReadSessionVars([]string{"sql_mode", "no_such_variable"})
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Code != 1193 {
		t.Fatalf("err %v, want ERROR 1193", err)
	}
	if got := query1(t, a, "SELECT 1"); got != "1" {
		t.Fatalf("after the refusal: %q", got)
	}
	if _, err := a.ReadSessionVars([]string{"sql_mode`"}); err == nil || !strings.Contains(err.Error(), "no system variable") {
		t.Fatalf("a quoted name: %v", err)
	}
}

func query1(t *testing.T, c *backend.Conn, q string) string {
	t.Helper()
	rows, err := c.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if v := rows.Values[0][0]; !v.Null {
		return v.S
	}
	return "NULL"
}
