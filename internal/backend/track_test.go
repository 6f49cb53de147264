package backend

import "testing"

// TestTrackShown: under sluice's '*' a client is shown the changes of the list the connection
// had (case-insensitively), nothing is hidden when that list was '*' or unknown, and a
// session's own statement naming session_track_system_variables, or a reset, ends the hiding.
func TestTrackShown(t *testing.T) {
	c := &Conn{}
	if c.HidesVar([]byte("sql_mode")) || !c.CanTrackAll() {
		t.Fatal("a fresh connection: hides, or cannot track all")
	}
	c.track, c.shown = trackAll, ",autocommit,time_zone,last_gtid,"
	for name, hidden := range map[string]bool{"sql_mode": true, "TIME_ZONE": false, "autocommit": false,
		"time": true, "zone": true, "last_gtid": false, "max_statement_time": true} {
		if got := c.HidesVar([]byte(name)); got != hidden {
			t.Errorf("HidesVar(%s) = %v, want %v", name, got, hidden)
		}
	}
	if c.CanTrackAll() {
		t.Error("CanTrackAll under '*'")
	}
	c.noteTrackStmt([]byte("SET time_zone = '+01:00'"))
	if !c.HidesVar([]byte("sql_mode")) {
		t.Error("a SET of another variable ended the hiding")
	}
	c.noteTrackStmt([]byte("SET SESSION Session_Track_System_Variables = 'sql_mode'"))
	if c.HidesVar([]byte("sql_mode")) || c.CanTrackAll() {
		t.Error("after the session's own list: still hides, or sluice may change the list")
	}
	c.MarkReset(1)
	if !c.CanTrackAll() {
		t.Error("after a reset: cannot track all")
	}
	c.track, c.shown = trackAll, ",*,"
	if c.HidesVar([]byte("sql_mode")) {
		t.Error("the list was '*': hides")
	}
	c.shown = ""
	if c.HidesVar([]byte("sql_mode")) {
		t.Error("the list unknown: hides")
	}
	c.track, c.shown, c.trackKept = trackAll, ",autocommit,", true
	c.MarkReset(2)
	if c.CanTrackAll() || !c.HidesVar([]byte("sql_mode")) {
		t.Error("the MarkReset of ResetTrackingAll's reset dropped its tracking")
	}
	c.MarkReset(3)
	if !c.CanTrackAll() {
		t.Error("a later reset kept the tracking")
	}
	noteBlock := func(entries ...[]byte) []byte {
		var b []byte
		for _, e := range entries {
			b = append(b, e...)
		}
		return b
	}
	sysvar := func(name, value string) []byte {
		data := append(append([]byte{byte(len(name))}, name...), append([]byte{byte(len(value))}, value...)...)
		return append([]byte{0, byte(len(data))}, data...)
	}
	c.track, c.shown = trackAll, ",autocommit,"
	c.NoteReported(noteBlock(sysvar("time_zone", "+01:00")))
	if !c.HidesVar([]byte("sql_mode")) {
		t.Error("a reported time_zone ended the hiding")
	}
	c.NoteReported(noteBlock(sysvar("sql_mode", ""), sysvar("session_track_system_variables", "*")))
	if c.HidesVar([]byte("sql_mode")) {
		t.Error("a reported change of the list itself: still hides")
	}
}
