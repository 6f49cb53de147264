package admin

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNotJSONNamesTheHeader: a body sent as a form (what curl -d sends without -H, and what a
// cross-site HTML form can send) is still refused with 415, and the message names the header
// to add, in the form a curl user can paste.
func TestNotJSONNamesTheHeader(t *testing.T) {
	h := New(Options{Control: &fake{}}).Handler()
	for _, ct := range []string{"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"} {
		code, out := call(t, h, "PATCH", "/v1/endpoints/rw", "", `{"balance":"least-active"}`, "Content-Type", ct)
		ec, _, msg := errorOf(out)
		if code != 415 || ec != "bad_request" {
			t.Errorf("PATCH as %s: %d %v; want 415 bad_request", ct, code, out)
		}
		if !strings.Contains(msg, "-H 'Content-Type: application/json'") || !strings.Contains(msg, ct) {
			t.Errorf("PATCH as %s: the message %q does not show the header to add (-H 'Content-Type: application/json') and what was sent", ct, msg)
		}
	}
	if code, out := call(t, h, "PATCH", "/v1/endpoints/rw", "", `{"balance":"least-active"}`, "Content-Type", "application/json; charset=utf-8"); code != 200 {
		t.Errorf("PATCH as JSON: %d %v", code, out)
	}
}

// TestReadmeCurlSendsJSON: every curl example in the README that sends a body (-d) declares it
// JSON, as the API requires; without the header each one would get 415.
func TestReadmeCurlSendsJSON(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sends := regexp.MustCompile(`(^|\s)(-d|--data(-raw|-binary)?|--json)(\s|=|$)`)
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, "curl ") || !sends.MatchString(line) {
			continue
		}
		n++
		if !strings.Contains(line, "-H 'Content-Type: application/json'") && !strings.Contains(line, "--json") {
			t.Errorf("README.md:%d: a curl example sends a body without -H 'Content-Type: application/json':\n%s", i+1, line)
		}
	}
	if n == 0 {
		t.Error("README.md has no curl example with a body: the test looks in the wrong place")
	}
}
