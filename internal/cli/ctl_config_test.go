package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCtlConfigReadsOnlyAdmin: ctl --config takes the admin API's address and token from a
// file whose users section would not validate (a password from an unset variable, as on a
// host without the application's secrets) and whose backends are half written; a problem in
// the admin section itself is still reported.
func TestCtlConfigReadsOnlyAdmin(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"version":"test","nodes":[{"name":"primary","role":"primary","state":"up"}],"endpoints":[]}`))
	}))
	defer srv.Close()
	t.Setenv("SLUICE_ADMIN_TOKEN", "")
	t.Setenv("SLUICE_TEST_CTL_TOKEN", "s3cret")
	dir := t.TempDir()
	write := func(name, admin string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`users:
  - name: app
    password: ${SLUICE_TEST_UNSET_APP_PASSWORD}
backends:
  - name: primary
    adress: 127.0.0.1:3306
`+admin), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "admin:\n  listen: "+strings.TrimPrefix(srv.URL, "http://")+"\n  token: ${SLUICE_TEST_CTL_TOKEN}\n")
	var out, errOut strings.Builder
	if code := Run([]string{"ctl", "--config", good, "status"}, &out, &errOut); code != 0 {
		t.Fatalf("ctl --config with broken users: exit %d: %s%s", code, out.String(), errOut.String())
	}
	if len(auth) != 1 || auth[0] != "Bearer s3cret" || !strings.Contains(out.String(), "primary") {
		t.Errorf("requests' Authorization %q, output:\n%s", auth, out.String())
	}

	bad := write("bad.yaml", "admin:\n  listen: "+strings.TrimPrefix(srv.URL, "http://")+"\n  token: ${SLUICE_TEST_UNSET_TOKEN}\n")
	out.Reset()
	errOut.Reset()
	if code := Run([]string{"ctl", "--config", bad, "status"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "bad.yaml:9: admin.token: environment variable SLUICE_TEST_UNSET_TOKEN is not set") ||
		strings.Contains(errOut.String(), "SLUICE_TEST_UNSET_APP_PASSWORD") {
		t.Errorf("an unset token reference: exit %d, %q; want exit 1 and only admin.token's problem", code, errOut.String())
	}
	if len(auth) != 1 {
		t.Errorf("a request was sent with a broken admin section: %d requests", len(auth))
	}
}
