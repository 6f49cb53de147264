package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The "changes" column of internal/config/REFERENCE.md (generated there from config's
// changeOf) says, for every key, whether the admin API and a reload put a new value in force or
// only a restart does. TestReferenceChanges checks the column against what the app does: for
// every key, a fresh app gets the key changed in its file and reloads, and for the API's keys
// a PATCH too.

const referencePath = "../config/REFERENCE.md"

// The column's words (internal/config's ChangeAPI, ChangeReload, ChangeRestart).
const (
	changeAPI     = "API, reload"
	changeReload  = "reload"
	changeRestart = "restart"
)

// refRow is one key of the reference's tables.
type refRow struct{ key, typ, def, changes string }

// referenceRows reads the key tables of REFERENCE.md.
func referenceRows(t *testing.T) []refRow {
	t.Helper()
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	var rows []refRow
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.SplitN(line, " | ", 5)
		if len(cells) < 5 {
			continue // the reference's other tables
		}
		key := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		if strings.ContainsAny(key, "$ ") {
			continue // the ${NAME} table
		}
		rows = append(rows, refRow{key: key, typ: cells[1], def: cells[2], changes: cells[3]})
	}
	if len(rows) < 40 {
		t.Fatalf("%s: only %d keys found in its tables", referencePath, len(rows))
	}
	return rows
}

// refFiles are the PEM files the test configuration's TLS keys name.
type refFiles struct{ cert, key, cert2, key2, pub string }

// writeRefFiles writes two self-signed certificates with their keys, and an RSA public key.
func writeRefFiles(t *testing.T, dir string) refFiles {
	t.Helper()
	f := refFiles{cert: filepath.Join(dir, "a.crt"), key: filepath.Join(dir, "a.key"),
		cert2: filepath.Join(dir, "b.crt"), key2: filepath.Join(dir, "b.key"), pub: filepath.Join(dir, "nodes.pub")}
	for _, pair := range [][2]string{{f.cert, f.key}, {f.cert2, f.key2}} {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		pk, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, pair[0], "CERTIFICATE", der)
		writePEM(t, pair[1], "PRIVATE KEY", pk)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, f.pub, "PUBLIC KEY", pub)
	return f
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// refBase is the configuration every key is changed from: the offline nodes, a monitor account
// and a certificate, so that every value below validates.
func refBase(f refFiles) map[string]any {
	return map[string]any{
		"zone":      "az1",
		"users":     []any{map[string]any{"name": "app", "password": "app"}},
		"monitor":   map[string]any{"user": "monitor", "password": "monitor"},
		"tls":       map[string]any{"cert": f.cert, "key": f.key},
		"admin":     map[string]any{"listen": "127.0.0.1:0"},
		"accounts":  map[string]any{},
		"limits":    map[string]any{},
		"timeouts":  map[string]any{},
		"log":       map[string]any{},
		"endpoints": []any{map[string]any{"name": "rw", "listen": "127.0.0.1:0"}},
		"backends": []any{
			map[string]any{"name": "primary", "address": "127.0.0.1:1", "role": "primary"},
			map[string]any{"name": "replica1", "address": "127.0.0.1:2", "role": "replica"},
			map[string]any{"name": "replica2", "address": "127.0.0.1:3", "role": "replica"},
		},
	}
}

// newValues are the values the test gives keys whose type alone does not say one that
// validates against refBase; the rest get one by type (newValue). Several edits for one key
// change keys that must go with it.
func newValues(f refFiles) map[string]map[string]any {
	return map[string]map[string]any{
		"zone":                            {"zone": "az2"},
		"users[].name":                    {"users[].name": "app2"},
		"users[].password":                {"users[].password": "other"},
		"users[].password_hash":           {"users[].password": nil, "users[].password_hash": "*" + strings.Repeat("A", 40)},
		"backends[].address":              {"backends[].address": "127.0.0.1:9"},
		"backends[].zone":                 {"backends[].zone": "az2"},
		"backends[].role":                 {"backends[].role": "replica", "backends[1].role": "primary"},
		"monitor.user":                    {"monitor.user": "monitor2"},
		"monitor.password":                {"monitor.password": "other"},
		"endpoints[].name":                {"endpoints[].name": "rw2"},
		"endpoints[].listen":              {"endpoints[].listen": "127.0.0.2:0"},
		"endpoints[].tls":                 {"endpoints[].tls": "required"},
		"endpoints[].read_weights":        {"endpoints[].read_weights": map[string]any{"replica1": 50}},
		"endpoints[].allow":               {"endpoints[].allow": []any{"127.0.0.0/8"}},
		"accounts.topology_users":         {"accounts.topology_users": []any{"app"}},
		"admin.listen":                    {"admin.listen": "127.0.0.2:0"},
		"admin.token":                     {"admin.token": "secret"},
		"tls.cert":                        {"tls.cert": f.cert2, "tls.key": f.key2},
		"tls.key":                         {"tls.cert": f.cert2, "tls.key": f.key2},
		"backend_tls.ca":                  {"backend_tls.ca": f.cert},
		"backend_tls.server_name":         {"backend_tls.server_name": "db.example"},
		"backend_tls.server_public_key":   {"backend_tls.server_public_key": f.pub},
		"limits.max_pending_login_bytes":  {"limits.max_pending_login_bytes": 1 << 20},
		"endpoints[].consistency_timeout": {"endpoints[].consistency_timeout": "20ms"},
		"name":                            {"name": "p9"},
		"listen":                          {"listen": map[string]any{"rw": "127.0.0.2:0"}},
		"store.etcd.endpoints":            {"store.etcd.endpoints": []any{etcdAddr}},
		"store.etcd.prefix":               {"store.etcd.endpoints": []any{etcdAddr}, "store.etcd.prefix": "/x/"},
		"store.etcd.username":             {"store.etcd.endpoints": []any{etcdAddr}, "store.etcd.username": "u"},
		"store.etcd.password":             {"store.etcd.endpoints": []any{etcdAddr}, "store.etcd.username": "u", "store.etcd.password": "p"},
		"store.etcd.tls.ca":               {"store.etcd.endpoints": []any{etcdAddr}, "store.etcd.tls.ca": f.cert},
		"store.etcd.tls.cert":             {"store.etcd.endpoints": []any{etcdAddr}, "store.etcd.tls.cert": f.cert2, "store.etcd.tls.key": f.key2},
		"store.etcd.tls.key":              {"store.etcd.endpoints": []any{etcdAddr}, "store.etcd.tls.cert": f.cert2, "store.etcd.tls.key": f.key2},
		"store.etcd.dial_timeout":         {"store.etcd.endpoints": []any{etcdAddr}, "store.etcd.dial_timeout": "7s"},
		"store.clear_secrets":             {"store.etcd.endpoints": []any{etcdAddr}, "store.clear_secrets": true},
		"store.cache_file":                {"store.etcd.endpoints": []any{etcdAddr}, "store.cache_file": "/tmp/sluice-cache.json"},
	}
}

// etcdAddr is a store address for the store keys' rows: a reload never dials it (the store is
// read at start only).
const etcdAddr = "127.0.0.1:2379"

// newValue is a value of row's type other than its default, or nil when the type says none.
func newValue(row refRow) any {
	switch {
	case row.typ == "bool":
		return row.def != "`true`"
	case row.typ == "duration":
		return "7s"
	case row.typ == "integer":
		return 7
	case strings.HasPrefix(row.typ, "one of "):
		for _, v := range strings.Split(strings.TrimPrefix(row.typ, "one of "), ", ") {
			v = strings.Trim(v, "`")
			if !strings.HasPrefix(row.def, "`"+v+"`") {
				return v
			}
		}
	}
	return nil
}

// setRefKey sets (nil: removes) a reference path ("endpoints[].mode", or "backends[1].role" for
// another item) in a file made by refBase.
func setRefKey(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		name, idx := p, 0
		if i := strings.IndexByte(p, '['); i > 0 {
			name = p[:i]
			if p[i+1] != ']' {
				idx = int(p[i+1] - '0')
			}
			m = m[name].([]any)[idx].(map[string]any)
			continue
		}
		sub, _ := m[name].(map[string]any)
		if sub == nil {
			sub = map[string]any{}
			m[name] = sub
		}
		m = sub
	}
	if v == nil {
		delete(m, parts[len(parts)-1])
		return
	}
	m[parts[len(parts)-1]] = v
}

// refApp builds an app (never run) from the configuration m, written to a file.
func refApp(t *testing.T, m map[string]any) (*App, http.Handler, string) {
	t.Helper()
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return offlineApp(t, string(data))
}

// TestReferenceChanges: for every key of REFERENCE.md, what the "changes" column says is what
// the app does: `API, reload` keys are changed by PATCH /v1/endpoints/NAME and by a reload with
// nothing listed for a restart; `reload` keys by a reload; `restart` keys are listed by a
// reload under restart_needed (the top-level zone is neither applied nor listed, as the
// reference says); a new endpoint name starts that endpoint and stops the old one.
func TestReferenceChanges(t *testing.T) {
	f := writeRefFiles(t, t.TempDir())
	values := newValues(f)
	for _, row := range referenceRows(t) {
		t.Run(row.key, func(t *testing.T) {
			if row.key == "backends[].name" {
				// A new name is a node added, the old one removed only once drained: that is
				// TestNodes' and the reload's own tests' business, not a value's.
				if !strings.HasPrefix(row.changes, changeAPI) {
					t.Errorf("changes %q, want the API's and a reload's", row.changes)
				}
				return
			}
			edits, ok := values[row.key]
			if !ok {
				v := newValue(row)
				if v == nil {
					t.Fatalf("no value to change %s to (type %s): add one to newValues", row.key, row.typ)
				}
				edits = map[string]any{row.key: v}
			}
			a, _, path := refApp(t, refBase(f))
			changed := refBase(f)
			for k, v := range edits {
				setRefKey(changed, k, v)
			}
			data, err := yaml.Marshal(changed)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			ch, err := a.Reload()
			if err != nil {
				t.Fatalf("reload of %s: %v\n%s", row.key, err, data)
			}
			switch {
			case row.key == "endpoints[].name":
				if !slices.Contains(ch.Changed, "endpoints.rw (removed)") || len(ch.Restart) > 0 {
					t.Errorf("reload of a renamed endpoint: changed %q, restart %q", ch.Changed, ch.Restart)
				}
			case row.key == "zone":
				if row.changes != changeRestart || len(ch.Changed)+len(ch.Restart) > 0 || a.config().Zone != "az1" {
					t.Errorf("zone (%s): changed %q, restart %q, zone in force %q: want neither applied nor listed",
						row.changes, ch.Changed, ch.Restart, a.config().Zone)
				}
			case row.changes == changeRestart:
				if len(ch.Restart) == 0 {
					t.Errorf("the reference says restart, but a reload lists nothing to restart (changed: %q): "+
						"change changeOf in internal/config/reference_test.go and regenerate", ch.Changed)
				}
			case row.changes == changeAPI || row.changes == changeReload:
				if len(ch.Restart) > 0 || len(ch.Changed) == 0 {
					t.Errorf("the reference says %q, but a reload lists %q to restart and changed %q: "+
						"change changeOf in internal/config/reference_test.go and regenerate", row.changes, ch.Restart, ch.Changed)
				}
			default:
				t.Fatalf("changes %q: not a kind this test knows", row.changes)
			}

			// PATCH takes the API's keys, and refuses the others (400).
			leaf, isEndpoint := strings.CutPrefix(row.key, "endpoints[].")
			if !isEndpoint || row.key == "endpoints[].name" {
				return
			}
			_, h2, _ := refApp(t, refBase(f))
			body, err := json.Marshal(map[string]any{leaf: edits[row.key]})
			if err != nil {
				t.Fatal(err)
			}
			code, _ := patch(t, h2, "rw", string(body))
			if want := row.changes == changeAPI; (code == http.StatusOK) != want {
				t.Errorf("PATCH %s: %d, the reference says %q", body, code, row.changes)
			}
		})
	}
}
