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

// TestAddAndRemoveBackend: a backend added goes last in the list, in the list's style, and
// parses; removing it takes its read weights out of the endpoints, keeping the comments.
func TestAddAndRemoveBackend(t *testing.T) {
	out, err := AddBackend("sluice.yaml", []byte(commented), "replica2", map[string]any{"address": "127.0.0.1:3308", "role": "replica", "zone": nil})
	if err != nil {
		t.Fatal(err)
	}
	out, err = EditEndpoint("sluice.yaml", out, "rw", map[string]any{"read_weights": map[string]int{"primary": 0, "replica1": 100, "replica2": 50}})
	if err != nil {
		t.Fatal(err)
	}
	env := func(string) (string, bool) { return "secret", true }
	c, err := parse("sluice.yaml", out, env)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b := c.Backend("replica2"); b == nil || b.Address != "127.0.0.1:3308" || b.Role != RoleReplica || c.Backends[2].Name != "replica2" {
		t.Fatalf("the added backend: %+v\n%s", c.Backends, out)
	}
	if c.Endpoints[0].ReadWeights["replica2"] != 50 || c.Endpoints[1].ReadWeights["replica2"] != DefaultReplicaWeight {
		t.Errorf("weights: rw %v, ro %v", c.Endpoints[0].ReadWeights, c.Endpoints[1].ReadWeights)
	}
	if _, err := AddBackend("sluice.yaml", out, "replica1", map[string]any{"address": "127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), `a backend is named "replica1" already`) {
		t.Errorf("a second replica1: %v", err)
	}

	out, err = RemoveBackend("sluice.yaml", out, "replica2")
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	if strings.Contains(got, "replica2") || !strings.Contains(got, "# sluice for the shop") || !strings.Contains(got, "# reads on the replica") ||
		!strings.Contains(got, "read_weights: {primary: 0, replica1: 100}") {
		t.Errorf("after RemoveBackend:\n%s", got)
	}
	if _, err := parse("sluice.yaml", out, env); err != nil {
		t.Errorf("after RemoveBackend: %v", err)
	}
	if _, err := RemoveBackend("sluice.yaml", out, "replica2"); err == nil || !strings.Contains(err.Error(), `no backend is named "replica2"`) {
		t.Errorf("removing it twice: %v", err)
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
