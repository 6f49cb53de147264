package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	vars := env(map[string]string{"A": "a", "B": "b", "EMPTY": "", "NESTED": "${A}", "_X1": "x"})
	for _, tc := range []struct {
		in, want string
		missing  []string
		err      string
	}{
		{in: "", want: ""},
		{in: "plain", want: "plain"},
		{in: "${A}", want: "a"},
		{in: "x${A}y${B}z", want: "xaybz"},
		{in: "${_X1}", want: "x"},
		{in: "${EMPTY}", want: ""},
		{in: "$$", want: "$"},
		{in: "$$${A}", want: "$a"},
		{in: "$${A}", want: "${A}"},
		{in: "$", want: "$"},
		{in: "a$b", want: "a$b"},
		{in: "price: 5$", want: "price: 5$"},
		{in: "$ {A}", want: "$ {A}"},
		{in: "$A", want: "$A"},
		{in: "${NESTED}", want: "${A}"}, // values are not expanded again
		{in: "p€${A}€", want: "p€a€"},
		{in: "${MISSING}", missing: []string{"MISSING"}},
		{in: "${M1}-${A}-${M2}", missing: []string{"M1", "M2"}},
		{in: "${A", err: "unterminated"},
		{in: "x${", err: "unterminated"},
		{in: "${}", err: "invalid"},
		{in: "${1A}", err: "invalid"},
		{in: "${A-B}", err: "invalid"},
		{in: "${A B}", err: "invalid"},
	} {
		got, missing, err := expand(tc.in, vars)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("expand(%q) error = %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("expand(%q) error = %v", tc.in, err)
		case !reflect.DeepEqual(missing, tc.missing):
			t.Errorf("expand(%q) missing = %q, want %q", tc.in, missing, tc.missing)
		case tc.missing == nil && got != tc.want:
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseEnvErrors(t *testing.T) {
	vars := env(map[string]string{"PORT": "3307"})
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"missing variable", edit("", "password: secret", "password: ${APP_PASSWORD}"), []string{
			`sluice.yaml:3: users[0].password: environment variable APP_PASSWORD is not set`,
		}},
		{"two missing variables", edit("", "password: secret", "password: ${PW1}${PW2}"), []string{
			`sluice.yaml:3: users[0].password: environment variable PW1 is not set`,
			`sluice.yaml:3: users[0].password: environment variable PW2 is not set`,
		}},
		{"missing in list item", edit("", "    listen: 127.0.0.1:6033\n", "    listen: ${LISTEN}\n"), []string{
			`sluice.yaml:13: endpoints[0].listen: environment variable LISTEN is not set`,
		}},
		{"missing in duration", edit("timeouts:\n  connect: ${CONNECT_TIMEOUT}\n"), []string{
			`sluice.yaml:15: timeouts.connect: environment variable CONNECT_TIMEOUT is not set`,
		}},
		// The password is never quoted in the message, even partly.
		{"unterminated", edit("", "password: secret", "password: s3cr${t"), []string{
			`sluice.yaml:3: users[0].password: unterminated "${" (write "$$" for a literal "$")`,
		}},
		{"invalid name", edit("", "password: secret", "password: \"s3cr${e t}\""), []string{
			`sluice.yaml:3: users[0].password: invalid "${...}": the name must be letters, digits and _, not starting with a digit (write "$$" for a literal "$")`,
		}},
		{"expanded value is validated", edit("", "127.0.0.1:3307", "127.0.0.1:${PORT}0000"), []string{
			`sluice.yaml:9: backends[1].address: invalid value "127.0.0.1:33070000" (the port must be a number from 1 to 65535)`,
		}},
		// Keys are names, not values: they are never expanded.
		{"keys not expanded", edit("    read_weights:\n      replica1: 1\n      ${PORT}: 1\n"), []string{
			`sluice.yaml:16: endpoints[0].read_weights."${PORT}": no backend is named "${PORT}"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("sluice.yaml", []byte(tc.src), vars)
			if err == nil {
				t.Fatalf("no error; source:\n%s", tc.src)
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("error:\n%s\nwant:\n%s", got, want)
			}
			if strings.Contains(err.Error(), "s3cr") {
				t.Errorf("error leaks the password: %s", err)
			}
		})
	}
}

func TestParseEnvValues(t *testing.T) {
	vars := env(map[string]string{
		"APP_PASSWORD": "p@ss ${NOT_EXPANDED} $$",
		"EMPTY":        "",
		"PORT":         "3307",
		"MAXCONN":      "64",
		"INTERVAL":     "500ms",
	})
	src := edit(`    max_connections: ${MAXCONN}
monitor:
  user: mon$
  password: ${EMPTY}
  interval: ${INTERVAL}
`,
		"password: secret", "password: ${APP_PASSWORD}",
		"name: replica1", "name: $$replica$1",
		"127.0.0.1:3307", "127.0.0.1:${PORT}",
	)
	c, err := parse("sluice.yaml", []byte(src), vars)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Users[0].Password; got != "p@ss ${NOT_EXPANDED} $$" {
		t.Errorf("password = %q", got)
	}
	if got := c.Backends[1]; got.Name != "$replica$1" || got.Address != "127.0.0.1:3307" {
		t.Errorf("backend = %+v", got)
	}
	if got := c.Endpoints[0].MaxConnections; got != 64 {
		t.Errorf("max_connections = %d", got)
	}
	if want := (Monitor{User: "mon$", Interval: dur(500 * time.Millisecond), DownAfter: 3, SwitchoverTimeout: dur(10 * time.Second)}); c.Monitor != want {
		t.Errorf("monitor = %+v, want %+v", c.Monitor, want)
	}
}

// TestParseUsesEnvironment checks that the exported Parse reads the real
// process environment.
func TestParseUsesEnvironment(t *testing.T) {
	t.Setenv("SLUICE_CONFIG_TEST_PW", "from-env")
	src := edit("", "password: secret", "password: ${SLUICE_CONFIG_TEST_PW}")
	c, err := Parse("sluice.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if c.Users[0].Password != "from-env" {
		t.Errorf("password = %q", c.Users[0].Password)
	}
}
