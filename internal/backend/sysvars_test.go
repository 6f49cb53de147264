package backend

import "testing"

func TestAppendReadSessionVars(t *testing.T) {
	got := string(AppendReadSessionVars([]byte("x"), []string{"sql_mode", "a"}))
	want := "xSELECT IF(FALSE,@@session.sql_mode,NULL),CAST(CONCAT_WS(' ',COLLATION(@@session.sql_mode),LENGTH(@@session.sql_mode)) AS BINARY)," +
		"IF(LENGTH(@@session.sql_mode)<=4096,CAST(@@session.sql_mode AS BINARY),NULL)," +
		"IF(FALSE,@@session.a,NULL),CAST(CONCAT_WS(' ',COLLATION(@@session.a),LENGTH(@@session.a)) AS BINARY)," +
		"IF(LENGTH(@@session.a)<=4096,CAST(@@session.a AS BINARY),NULL)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestAppendSetSession: literals for every type; anything that is not what ReadSessionVars
// gives is refused whole, never written into the statement.
func TestAppendSetSession(t *testing.T) {
	str := func(name, v string) UserVar {
		return UserVar{Name: name, Type: UserVarString, Value: v, Collation: "utf8mb3_general_ci"}
	}
	got, ok := AppendSetSession([]byte("x"), []UserVar{
		str("time_zone", "+00:00"),
		{Name: "wait_timeout", Type: UserVarInt, Value: "-5"},
		{Name: "sql_select_limit", Type: UserVarUnsigned, Value: "18446744073709551615"},
		{Name: "long_query_time", Type: UserVarDouble, Value: "10.000000"},
		{Name: "d", Type: UserVarDecimal, Value: "1.50"},
		{Name: "character_set_results", Type: UserVarString, Null: true, Collation: "binary"},
		str("q", "a'b\\c"),
	})
	want := "xSET SESSION time_zone=_utf8mb3 X'2b30303a3030' COLLATE utf8mb3_general_ci,wait_timeout=-5," +
		"sql_select_limit=18446744073709551615,long_query_time=10.000000,d=1.50,character_set_results=NULL," +
		"q=_utf8mb3 X'6127625c63' COLLATE utf8mb3_general_ci"
	if !ok || string(got) != want {
		t.Fatalf("got  %s (%v)\nwant %s", got, ok, want)
	}
	for _, bad := range [][]UserVar{
		nil,
		{{Name: "a=1,b", Type: UserVarInt, Value: "1"}},
		{{Name: "a", Type: UserVarInt, Value: "1; DROP TABLE t"}},
		{{Name: "a", Type: UserVarDouble, Value: "1e5)"}},
		{{Name: "a", Type: UserVarString, Value: "x", Collation: "utf8' OR '"}},
		{str("ok", "x"), {Name: "a", Type: UserVarDecimal, Value: "1.2.3"}},
	} {
		if got, ok := AppendSetSession([]byte("x"), bad); ok || string(got) != "x" {
			t.Errorf("%+v: appended %q, %v", bad, got, ok)
		}
	}
}
