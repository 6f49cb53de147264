package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const commented = `# sluice for the shop
users:
  - name: app
    password: ${APP_PASSWORD} # from the environment
backends:
  - {name: primary, address: "127.0.0.1:3306", role: primary}
  - {name: replica1, address: "127.0.0.1:3307", role: replica}
endpoints:
  # the application's endpoint
  - name: rw
    listen: 127.0.0.1:6033
    read_weights: {primary: 0, replica1: 100} # reads on the replica
    balance: weighted
  - name: ro
    listen: 127.0.0.1:6034
    mode: read-only
`

// TestEditEndpoint: a change keeps the file's comments, key order and ${NAME} references,
// touches only the endpoint named, keeps flow style, and parses to the new values.
func TestEditEndpoint(t *testing.T) {
	out, err := EditEndpoint("sluice.yaml", []byte(commented), "rw", map[string]any{
		"read_weights":        map[string]int{"primary": 10, "replica1": 90},
		"balance":             nil,
		"consistency_timeout": "20ms",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"# sluice for the shop", "password: ${APP_PASSWORD} # from the environment", "# the application's endpoint",
		"read_weights: {primary: 10, replica1: 90} # reads on the replica", "consistency_timeout: 20ms",
		"mode: read-only",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the edited file lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "balance") {
		t.Errorf("balance was not removed:\n%s", got)
	}
	if strings.Index(got, "listen: 127.0.0.1:6033") > strings.Index(got, "read_weights") {
		t.Errorf("key order changed:\n%s", got)
	}
	c, err := parse("sluice.yaml", out, func(string) (string, bool) { return "secret", true })
	if err != nil {
		t.Fatal(err)
	}
	rw := c.Endpoints[0]
	if rw.ReadWeights["primary"] != 10 || rw.ReadWeights["replica1"] != 90 || rw.Balance != BalanceLeastActive || rw.ConsistencyTimeout.String() != "20ms" {
		t.Errorf("parsed back: %+v", rw)
	}
	if c.Users[0].Password != "secret" {
		t.Errorf("the ${APP_PASSWORD} reference was lost: %q", c.Users[0].Password)
	}
	if _, err := EditEndpoint("sluice.yaml", []byte(commented), "nope", map[string]any{"balance": "weighted"}); err == nil || !strings.Contains(err.Error(), `no endpoint is named "nope"`) {
		t.Errorf("unknown endpoint: %v", err)
	}
}

// TestWriteFile: the file is replaced whole, keeps its mode, and leaves no temporary file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	entries, _ := os.ReadDir(dir)
	if string(b) != "new" || st.Mode().Perm() != 0o600 || len(entries) != 1 {
		t.Fatalf("content %q, mode %v, %d files", b, st.Mode().Perm(), len(entries))
	}
}

// TestWriteFileThroughSymlink: a configuration file reached through a symbolic link keeps the
// link; the file it points to gets the new text.
func TestWriteFileThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.yaml")
	link := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(real, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(link)
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is gone: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(real); string(b) != "new" {
		t.Fatalf("the linked file holds %q", b)
	}
}
