package relay

import "testing"

// TestSameFileName: a node names the file as it read the statement's literal: doubled quotes as
// one, backslash escapes undone, or (NO_BACKSLASH_ESCAPES) backslashes as they are.
func TestSameFileName(t *testing.T) {
	for _, tc := range []struct {
		name, lit string
		want      bool
	}{
		{"data.csv", "data.csv", true},
		{"/etc/passwd", "data.csv", false},
		{"data.csv", "data.csv2", false},
		{"it's.csv", "it''s.csv", true},
		{"it's.csv", "it\\'s.csv", true},
		{`C:\data\x.csv`, `C:\\data\\x.csv`, true},
		{`C:\data\x.csv`, `C:\data\x.csv`, true},
		{"a\nb", `a\nb`, true},
		{"", "", true},
	} {
		got := sameFileName([]byte(tc.name), []byte(tc.lit), true) || sameFileName([]byte(tc.name), []byte(tc.lit), false)
		if got != tc.want {
			t.Errorf("node names %q, statement writes %q: %v, want %v", tc.name, tc.lit, got, tc.want)
		}
	}
}
