package classify

import "testing"

var killCases = []struct {
	in        string
	id        uint64
	queryOnly bool
	ok        bool
}{
	{"KILL 5", 5, false, true},
	{"kill 5", 5, false, true},
	{"Kill Connection 7", 7, false, true},
	{"kill connection 7;", 7, false, true},
	{"  KILL QUERY 12 ", 12, true, true},
	{"KILL HARD QUERY 3", 3, true, true},
	{"KILL SOFT CONNECTION 3", 3, false, true},
	{"kill soft 3", 3, false, true},
	{"KILL\tQUERY\n9\r\n", 9, true, true},
	{"KILL 5;", 5, false, true},
	{"KILL 5 ; ", 5, false, true},
	{"KILL 5;;", 5, false, true},
	{"KILL 0", 0, false, true},
	{"KILL 007", 7, false, true},
	{"KILL 4294967295", 4294967295, false, true},
	{"KILL 000000000000004294967295", 4294967295, false, true},
	// Comments between and around the words; executable comments are text.
	{"/* app */ KILL 5", 5, false, true},
	{"/*FORCE_MASTER*/ KILL QUERY 5", 5, true, true},
	{"# c\nKILL 5", 5, false, true},
	{"-- c\nKILL 5", 5, false, true},
	{"KILL/* c */QUERY/* d */5/* e */", 5, true, true},
	{"KILL QUERY 5 -- why", 5, true, true},
	{"KILL 5 # why", 5, false, true},
	{"KILL 5; -- done", 5, false, true},
	{"/*!KILL 5*/", 5, false, true},
	{"KILL /*!QUERY*/ 5", 5, true, true},
	{"/*M!100100 KILL 5 */", 0, false, false}, // nothing to MySQL: read two ways
	{"KILL /*!50000 QUERY */ 5", 5, true, true},
	{"KILL /*!99999 QUERY */ 5", 0, false, false}, // KILL 5 to MariaDB, KILL QUERY 5 to MySQL 9
	{"KILL /*M!100000 QUERY */ 5", 0, false, false},
	{"KILL QUERY /*M!999999 5 */ 5", 0, false, false},
	{"KILL /*!99999 */ 5", 5, false, true}, // the comment holds nothing: one reading

	// Other forms go to the node as they are.
	{"KILL USER app", 0, false, false},
	{"KILL QUERY ID 4", 0, false, false},
	{"KILL CONNECTION USER app", 0, false, false},
	{"KILL @v", 0, false, false},
	{"KILL 1+1", 0, false, false},
	{"KILL 1 + 1", 0, false, false},
	{"KILL (5)", 0, false, false},
	{"KILL '5'", 0, false, false},
	{"KILL `5`", 0, false, false},
	{"KILL -5", 0, false, false},
	{"KILL +5", 0, false, false},
	{"KILL 0x5", 0, false, false},
	{"KILL 5.0", 0, false, false},
	{"KILL 5e0", 0, false, false},
	{"KILL 5abc", 0, false, false},
	{"KILL ?", 0, false, false},
	{"KILL CONNECTION_ID()", 0, false, false},
	{"KILL 4294967296", 0, false, false},
	{"KILL 99999999999999999999999999", 0, false, false},
	{"KILL 4 5", 0, false, false},
	{"KILL 5; SELECT 1", 0, false, false},
	{"KILL 5 */", 0, false, false},
	{"KILL QUERY HARD 5", 0, false, false},
	{"KILL CONNECTION QUERY 5", 0, false, false},
	{"KILL HARD HARD 5", 0, false, false},
	{"KILL", 0, false, false},
	{"KILL ;", 0, false, false},
	{"KILL QUERY", 0, false, false},
	{"KILLX 4", 0, false, false},
	{"KILL_ 4", 0, false, false},
	{"`KILL` 4", 0, false, false},
	{"'KILL 4'", 0, false, false},
	{"/* KILL 4 */", 0, false, false},
	{"-- KILL 4", 0, false, false},
	{"SELECT 1; KILL 4", 0, false, false},
	{"EXPLAIN KILL 4", 0, false, false},
	{"--KILL 4", 0, false, false},
	{"", 0, false, false},
	{"   ", 0, false, false},
	{"\x00\xff", 0, false, false},
	{"K", 0, false, false},
}

func TestParseKill(t *testing.T) {
	for _, tc := range killCases {
		q := []byte(tc.in)
		id, queryOnly, ok := ParseKill(q)
		if id != tc.id || queryOnly != tc.queryOnly || ok != tc.ok {
			t.Errorf("ParseKill(%q) = %d %v %v, want %d %v %v", tc.in, id, queryOnly, ok, tc.id, tc.queryOnly, tc.ok)
		}
		if ok && Classify(q).Kind != Kill {
			t.Errorf("Classify(%q) is not Kill", tc.in)
		}
	}
}

func TestKillsUser(t *testing.T) {
	for q, want := range map[string]bool{
		"KILL USER app":                true,
		"kill hard connection user x":  true,
		"KILL /* c */ QUERY USER 'a'":  true,
		"KILL 5":                       false,
		"KILL QUERY ID 5":              false,
		"SELECT 'KILL USER app'":       false,
		"KILL USERS":                   false,
		"":                             false,
		"KILL":                         false,
		"/*!KILL USER app*/":           true,
		"KILL CONNECTION QUERY USER a": false,
	} {
		if got := KillsUser([]byte(q)); got != want {
			t.Errorf("KillsUser(%q) = %v, want %v", q, got, want)
		}
	}
}

// TestSelectsConnectionID: exactly SELECT CONNECTION_ID() (an alias, FROM DUAL, comments and
// ';' allowed) is recognised, with the column's name as the server gives it; anything more is
// left to a node.
func TestSelectsConnectionID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		name string
	}{
		{"SELECT CONNECTION_ID()", true, "CONNECTION_ID()"},
		{"select connection_id ( )", true, "connection_id ( )"},
		{"SELECT CONNECTION_ID();", true, "CONNECTION_ID()"},
		{"  SELECT /* c */ CONNECTION_ID() ; ; ", true, "CONNECTION_ID()"},
		{"/*FORCE_MASTER*/ SELECT CONNECTION_ID()", true, "CONNECTION_ID()"},
		{"SELECT CONNECTION_ID() AS id", true, "id"},
		{"SELECT CONNECTION_ID() id", true, "id"},
		{"SELECT CONNECTION_ID() AS `my id`", true, "my id"},
		{"SELECT CONNECTION_ID() AS 'my id'", true, "my id"},
		{"SELECT CONNECTION_ID() 'x'", true, "x"},
		{"SELECT CONNECTION_ID() FROM DUAL", true, "CONNECTION_ID()"},
		{"SELECT CONNECTION_ID() AS id FROM dual;", true, "id"},
		{"SELECT CONNECTION_ID() -- x\n", true, "CONNECTION_ID()"},
		// The server keeps ordinary comments in the name, not executable comments' markers.
		{"SELECT CONNECTION_ID(/* x */)", true, "CONNECTION_ID(/* x */)"},
		{"SELECT CONNECTION_ID(#x\n)", true, "CONNECTION_ID(#x\n)"},
		{"SELECT CONNECTION_ID() /* z */", true, "CONNECTION_ID()"},
		{"SELECT CONNECTION_ID(/*!*/) AS id", true, "id"},
		// Left to a node.
		{"SELECT CONNECTION_ID(), 1", false, ""},
		{"SELECT CONNECTION_ID() + 0", false, ""},
		{"SELECT 1, CONNECTION_ID()", false, ""},
		{"SELECT CONNECTION_ID(1)", false, ""},
		{"SELECT CONNECTION_ID", false, ""},
		{"SELECT CONNECTION_ID() FROM t", false, ""},
		{"SELECT CONNECTION_ID() FROM DUAL WHERE 0", false, ""},
		{"SELECT CONNECTION_ID() LIMIT 1", false, ""},
		{"SELECT CONNECTION_ID() AS", false, ""},
		{"SELECT CONNECTION_ID() AS from", false, ""},
		{"SELECT CONNECTION_ID() AS a b", false, ""},
		{"SELECT CONNECTION_ID() AS `a``b`", false, ""},
		{"SELECT CONNECTION_ID() AS 'a\\'b'", false, ""},
		{"SELECT CONNECTION_ID() AS 'a", false, ""},
		{"SELECT CONNECTION_ID() '", false, ""},
		{"SELECT CONNECTION_ID() AS \"id\"", false, ""},
		{"SELECT CONNECTION_ID() /*!50000 , 1 */", false, ""},
		{"SELECT CONNECTION_ID(/*!*/)", false, ""},
		{"SELECT CONNECTION_ID(/*!50000 */)", false, ""},
		{"SELECT CONNECTION_ID /*M!100000 */ ()", false, ""},
		{"SELECT CONNECTION_ID(); SELECT 1", false, ""},
		{"SELECT CONNECTION_ID() INTO @v", false, ""},
		{"SELECT CONNECTION_ID() FOR UPDATE", false, ""},
		{"SELECT t.CONNECTION_ID()", false, ""},
		{"SELECT", false, ""},
		{"", false, ""},
	} {
		r, ok := SelectsConnectionID([]byte(tc.in))
		if ok != tc.ok || ok && tc.in[r[0]:r[1]] != tc.name {
			t.Errorf("SelectsConnectionID(%q) = %v %v, want %v %q", tc.in, r, ok, tc.ok, tc.name)
		}
	}
	q := []byte("SELECT CONNECTION_ID() AS id FROM DUAL")
	if a := testing.AllocsPerRun(100, func() { SelectsConnectionID(q) }); a != 0 {
		t.Errorf("%v allocs", a)
	}
}
