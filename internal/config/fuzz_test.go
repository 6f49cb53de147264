package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, that every failure is
// a list of located *Errors, and that every success is a usable config.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("testdata", "sluice.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example),
		minimal,
		"",
		"users: app\n",
		edit("    read_weights: {primary: 0, replica1: 100}\n    mode: read-only\n"),
		edit("timeouts: {connect: 1s, read: 0, write: 2m, shutdown: -1s, idle: 5}\n"),
		edit("monitor: &m {user: *m}\n"),
		edit("", "password: secret", "password: ${APP_PASSWORD}$$${MISSING}${"),
		edit("log: {<<: {level: debug}}\n"),
		"a: &a [*a]\nusers: *a\n",
		"---\nusers: []\n---\n",
		"\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	lookup := env(map[string]string{"APP_PASSWORD": "pw", "MONITOR_PASSWORD": "mon"})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse("fuzz.yaml", data, lookup)
		if err != nil {
			if c != nil {
				t.Fatalf("config %+v returned with error %v", c, err)
			}
			list := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				list = j.Unwrap()
			}
			prev := 0
			for _, e := range list {
				var ce *Error
				if !errors.As(e, &ce) || ce.File != "fuzz.yaml" || ce.Line < 0 {
					t.Fatalf("error %#v is not a located *Error", e)
				}
				if len(list) > 1 && ce.Line < prev {
					t.Fatalf("errors not sorted by line: %v", err)
				}
				prev = ce.Line
			}
			return
		}
		if c.Primary() == nil {
			t.Fatal("valid config without primary")
		}
		if c.User(c.Users[0].Name) == nil {
			t.Fatal("User() cannot find the first user")
		}
		for _, e := range c.Endpoints {
			for _, b := range c.Backends {
				if _, ok := e.ReadWeights[b.Name]; !ok {
					t.Fatalf("endpoint %s has no weight for backend %s", e.Name, b.Name)
				}
			}
		}
		// Parse's result must stand on its own, and ApplyDefaults must
		// not change a parsed config into an invalid one.
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config fails Validate: %v", err)
		}
		c.ApplyDefaults()
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config fails Validate after ApplyDefaults: %v", err)
		}
	})
}
