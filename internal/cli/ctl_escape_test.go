package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCtlEscapesControlCharacters: what the admin API answers is printed with its control
// characters escaped: a node name holding an escape sequence and a newline cannot drive the
// terminal or forge a line of output, nor can an error message.
func TestCtlEscapesControlCharacters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/undrain"):
			_, _ = w.Write([]byte(`{"name":"r1\u001b[2J\nprimary: up","state":"up\u202e","address":"127.0.0.1:1"}`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"invalid","message":"bad \u001b]0;owned\u0007 name"}}`))
		}
	}))
	defer srv.Close()
	var out, errOut strings.Builder
	code := Run([]string{"ctl", "--admin", srv.URL, "undrain", "r1"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("undrain: exit %d: %s%s", code, out.String(), errOut.String())
	}
	if got, want := out.String(), "r1\\x1b[2J\\nprimary: up: up\\u202e\n"; got != want {
		t.Errorf("undrain printed %q, want %q", got, want)
	}
	out.Reset()
	errOut.Reset()
	if code := Run([]string{"ctl", "--admin", srv.URL, "drain", "r1"}, &out, &errOut); code == 0 {
		t.Fatalf("drain: exit 0 on HTTP 400")
	}
	if s := errOut.String(); strings.ContainsAny(s, "\x1b\x07") || !strings.Contains(s, `bad \x1b]0;owned\a name`) {
		t.Errorf("the error printed raw control characters: %q", s)
	}
}
