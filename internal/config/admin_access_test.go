package config

import (
	"strings"
	"testing"
)

// TestAdminAccess: the admin section and tls.cert are read, ${NAME} expanded, from a file
// whose other sections would not validate (an unset password reference, a backend half
// written, an unknown key); problems in what is read are reported with their line.
func TestAdminAccess(t *testing.T) {
	env := map[string]string{"ADMIN_TOKEN": "s3cret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	const others = `users:
  - name: app
    password: ${APP_PASSWORD_NOT_SET}
backends:
  - name: primary
    adress: 127.0.0.1:3306
endpoints: [{name: rw}]
bogus_key: 1
`
	a, err := parseAdminAccess("s.yaml", []byte(others+`admin:
  listen: 0.0.0.0:6080
  token: ${ADMIN_TOKEN}
  tls: true
tls:
  cert: /etc/sluice/cert.pem
  key: ${KEY_NOT_SET}
`), lookup)
	if err != nil {
		t.Fatalf("the admin section of a file whose other sections are wrong: %v", err)
	}
	if want := (AdminAccess{Admin: Admin{Listen: "0.0.0.0:6080", Token: "s3cret", TLS: true}, Cert: "/etc/sluice/cert.pem"}); *a != want {
		t.Errorf("got %+v, want %+v", *a, want)
	}
	// The same file fails Parse: the reason ctl must not use it.
	if _, err := parse("s.yaml", []byte(others), lookup); err == nil {
		t.Fatal("Parse accepted the broken sections")
	}

	for _, c := range []struct{ yaml, want string }{
		{"admin:\n  listen: 127.0.0.1:6080\n  token: ${NOT_SET}\n", "s.yaml:3: admin.token: environment variable NOT_SET is not set"},
		{"admin:\n  listn: 127.0.0.1:6080\n", "s.yaml:2: admin.listn: unknown key"},
		{"admin:\n  tls: maybe\n", "s.yaml:2: admin.tls: invalid value"},
		{"admin: {listen: a}\nadmin: {listen: b}\n", "s.yaml:2: admin: duplicate key"},
		{"tls: {cert: [a]}\n", "tls.cert: expected a string"},
		{"- admin\n", "the top level must be a mapping"},
		{"admin: {listen: [\n", "invalid YAML"},
	} {
		_, err := parseAdminAccess("s.yaml", []byte(c.yaml), lookup)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
	for _, empty := range []string{"", "users: []\n", "admin:\n"} {
		if a, err := parseAdminAccess("s.yaml", []byte(empty), lookup); err != nil || *a != (AdminAccess{}) {
			t.Errorf("%q: %+v, %v; want nothing set", empty, a, err)
		}
	}
}
