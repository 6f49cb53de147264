package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCtlPrintsAllowAndReload: `ctl endpoint` shows the endpoint's allow list (an operator who
// set one must be able to see it; empty is "any"), and `ctl reload` does not say the file was
// written: a reload reads the file, and its answer's persisted is always true.
func TestCtlPrintsAllowAndReload(t *testing.T) {
	allow := `["10.0.0.0/8","192.168.1.5"]`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/reload":
			_, _ = w.Write([]byte(`{"changed":[],"persisted":true,"restart":["log.format"]}`))
		default:
			_, _ = w.Write([]byte(`{"name":"rw","listen":"127.0.0.1:6033","settings":{"mode":"read-write","allow":` + allow + `}}`))
		}
	}))
	defer srv.Close()
	run := func(args ...string) string {
		t.Helper()
		var out, errOut strings.Builder
		if code := Run(append([]string{"ctl", "--admin", srv.URL}, args...), &out, &errOut); code != 0 {
			t.Fatalf("ctl %v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	if out := run("endpoint", "rw"); !strings.Contains(out, "allow") || !strings.Contains(out, "10.0.0.0/8,192.168.1.5") {
		t.Errorf("ctl endpoint does not show the allow list:\n%s", out)
	}
	allow = `null`
	if out := run("endpoint", "rw"); !strings.Contains(out, "any") {
		t.Errorf("ctl endpoint without an allow list:\n%s", out)
	}
	out := run("reload")
	if strings.Contains(out, "written") {
		t.Errorf("ctl reload says the file was written:\n%s", out)
	}
	if !strings.Contains(out, "nothing changed") || !strings.Contains(out, "in force only after a restart: log.format") {
		t.Errorf("ctl reload:\n%s", out)
	}
}
