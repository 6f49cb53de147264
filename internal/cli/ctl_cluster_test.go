package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
)

// fakeAdmin is an admin API that answers each METHOD+path with the status and body set for
// it, and keeps the requests' bodies.
type fakeAdmin struct {
	answers map[string]struct {
		code int
		body string
	}
	got map[string][]byte
}

func newFakeAdmin(t *testing.T) (*fakeAdmin, *httptest.Server) {
	f := &fakeAdmin{answers: map[string]struct {
		code int
		body string
	}{}, got: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		f.got[key], _ = io.ReadAll(r.Body)
		a, ok := f.answers[key]
		if !ok {
			a.code, a.body = 404, `{"error":{"code":"not_found","message":"no such path"}}`
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeAdmin) answer(key string, code int, body any) {
	b, ok := body.(string)
	if !ok {
		j, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		b = string(j)
	}
	f.answers[key] = struct {
		code int
		body string
	}{code, b}
}

// ctlRun runs sluice ctl against url with args: its exit status, output and errors.
func ctlRun(url string, args ...string) (int, string, string) {
	var out, errOut strings.Builder
	code := Run(append([]string{"ctl", "--admin", url}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestCtlCluster: ctl cluster prints the store's link (connected or since when not, and why),
// the stored and applied revisions, a refused revision and the settings waiting for a restart,
// then the live nodes, this one marked and those behind the stored revision flagged; -o json
// prints the API's answer; without a store, the API's 404 is the message and exit status 1.
// ctl status shows the store's lines too (GET /v1/proxy's store), and none without one.
func TestCtlCluster(t *testing.T) {
	f, srv := newFakeAdmin(t)
	started := time.Now().Add(-90 * time.Minute).UTC()
	info := admin.ClusterInfo{
		Store: admin.StoreState{Kind: "etcd", Endpoints: []string{"127.0.0.11:2379", "127.0.0.12:2379"}, Prefix: "/sluice/prod/",
			Name: "a", Connected: true, Since: started, Revision: 7, Applied: 7},
		Members: []admin.Member{
			{Name: "a", Zone: "z1", Admin: "127.0.1.1:6080", Endpoints: map[string]string{"rw": "127.0.1.1:6033", "ro": "127.0.1.1:6034"},
				Version: "1.2.0", Started: started, Applied: 7, Self: true},
			{Name: "b", Version: "1.2.0", Started: started, Applied: 6},
		},
		MembersAsOf: time.Now(),
	}
	f.answer("GET /v1/cluster", 200, info)
	code, out, errOut := ctlRun(srv.URL, "cluster")
	if code != 0 {
		t.Fatalf("ctl cluster: exit %d: %s", code, errOut)
	}
	for _, re := range []string{
		`(?m)^store etcd 127\.0\.0\.11:2379,127\.0\.0\.12:2379 prefix /sluice/prod/: connected$`,
		`(?m)^configuration: revision 7 stored, 7 applied here$`,
		`(?m)^NAME +ZONE +ADMIN +ENDPOINTS +VERSION +APPLIED REV +STARTED$`,
		`(?m)^a \(this\) +z1 +127\.0\.1\.1:6080 +ro=127\.0\.1\.1:6034,rw=127\.0\.1\.1:6033 +1\.2\.0 +7 +` + regexp.QuoteMeta(started.Format("2006-01-02 15:04:05")) + ` \(1h30m0s ago\)$`,
		`(?m)^b +- +- +- +1\.2\.0 +6 \(behind\) `,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("ctl cluster lacks %s:\n%s", re, out)
		}
	}
	if strings.Contains(out, "REFUSED") || strings.Contains(out, "restart") || strings.Contains(out, "NOT CONNECTED") || strings.Contains(out, "not listed") {
		t.Errorf("ctl cluster of a healthy store:\n%s", out)
	}

	lost := time.Now().Add(-5 * time.Minute)
	info.Store.Connected, info.Store.Since, info.Store.LastError = false, lost, "context deadline exceeded"
	info.Store.Revision, info.Store.Refused, info.Store.RefusedRevision = 9, "backends[1].address: required", 9
	info.Store.PendingRestart = []string{"threads", "log.format"}
	info.MembersAsOf = lost
	info.Members = info.Members[1:]
	f.answer("GET /v1/cluster", 200, info)
	_, out, _ = ctlRun(srv.URL, "cluster")
	for _, want := range []string{
		"NOT CONNECTED since " + lost.UTC().Format("2006-01-02 15:04:05") + " (5m0s ago) (context deadline exceeded)\n",
		"configuration: revision 9 stored, 7 applied here (BEHIND)\n",
		"REFUSED revision 9: backends[1].address: required\n",
		"in force here only after a restart: threads, log.format\n",
		"the nodes as the store listed them at " + lost.UTC().Format("2006-01-02 15:04:05"),
		"this sluice (a) is not listed: not registered yet, or the store is not reachable\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("ctl cluster with the store lost lacks %q:\n%s", want, out)
		}
	}

	_, out, _ = ctlRun(srv.URL, "-o", "json", "cluster")
	var back admin.ClusterInfo
	if err := json.Unmarshal([]byte(out), &back); err != nil || len(back.Members) != 1 || back.Store.Refused == "" {
		t.Errorf("ctl cluster -o json: %v\n%s", err, out)
	}

	f.answer("GET /v1/cluster", 404, `{"error":{"code":"not_found","message":"this sluice shares no store (store.etcd): it is a cluster of one"}}`)
	if code, _, errOut := ctlRun(srv.URL, "cluster"); code != 1 || errOut != "sluice ctl: this sluice shares no store (store.etcd): it is a cluster of one (HTTP 404)\n" {
		t.Errorf("ctl cluster without a store: exit %d, %q", code, errOut)
	}
	// ctl status: the store's lines under the first, when there is a store.
	f.answer("GET /v1/proxy", 200, admin.Proxy{Version: "1.2.0", Store: &info.Store})
	if _, out, _ := ctlRun(srv.URL, "status"); !regexp.MustCompile(`\A[^\n]+\nstore etcd [^\n]+: NOT CONNECTED since [^\n]+\nconfiguration: revision 9 stored, 7 applied here \(BEHIND\)\n`).MatchString(out) {
		t.Errorf("ctl status with a store:\n%s", out)
	}
	f.answer("GET /v1/proxy", 200, admin.Proxy{Version: "1.2.0"})
	if _, out, _ := ctlRun(srv.URL, "status"); strings.Contains(out, "store") || !regexp.MustCompile(`\A[^\n]+\n\nNODE `).MatchString(out) {
		t.Errorf("ctl status without a store:\n%s", out)
	}
	if code, _, errOut := ctlRun(srv.URL, "cluster", "x"); code != 2 || !strings.Contains(errOut, "cluster takes no arguments") {
		t.Errorf("ctl cluster x: exit %d, %q", code, errOut)
	}
}

// TestCtlExport: ctl export writes the configuration's text as the API gives it (newlines
// and all) after a line naming its revision and key, or the file without a store, to
// standard output or to --output's file (created 0600: it may hold hashes); an older export's
// line stored with the text is not repeated; an error is the API's.
func TestCtlExport(t *testing.T) {
	f, srv := newFakeAdmin(t)
	text := "# the shared part\nusers:\n  - {name: app, password_hash: '*AB'}\nbackends: []\n"
	f.answer("GET /v1/config", 200, admin.SharedConfig{Source: "etcd:/sluice/prod/config", Revision: 12, Config: text})
	code, out, errOut := ctlRun(srv.URL, "export")
	if want := "# sluice configuration, revision 12 of etcd:/sluice/prod/config\n" + text; code != 0 || out != want {
		t.Errorf("ctl export: exit %d %s\n%q\nwant\n%q", code, errOut, out, want)
	}

	f.answer("GET /v1/config", 200, admin.SharedConfig{Source: "etcd:/sluice/prod/config", Revision: 13,
		Config: "# sluice configuration, revision 12 of etcd:/sluice/prod/config\n" + text})
	path := filepath.Join(t.TempDir(), "shared.yaml")
	if code, out, errOut := ctlRun(srv.URL, "export", "--output", path); code != 0 || out != "written to "+path+"\n" {
		t.Errorf("ctl export --output: exit %d, %q %q", code, out, errOut)
	}
	got, err := os.ReadFile(path)
	if want := "# sluice configuration, revision 13 of etcd:/sluice/prod/config\n" + text; err != nil || string(got) != want {
		t.Errorf("the exported file: %v\n%q\nwant\n%q", err, got, want)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the exported file's mode: %v %v", st.Mode(), err)
	}

	f.answer("GET /v1/config", 200, admin.SharedConfig{Source: "/etc/sluice/sluice.yaml", Config: "users: []"})
	if _, out, _ := ctlRun(srv.URL, "export"); out != "# sluice configuration, from /etc/sluice/sluice.yaml\nusers: []\n" {
		t.Errorf("ctl export without a store: %q", out)
	}
	if _, out, _ := ctlRun(srv.URL, "export", "-o", "json"); !strings.Contains(out, `"source":"/etc/sluice/sluice.yaml"`) {
		t.Errorf("ctl export -o json: %q", out)
	}

	f.answer("GET /v1/config", 401, `{"error":{"code":"unauthorized","message":"a bearer token is required"}}`)
	if code, out, errOut := ctlRun(srv.URL, "export", "--output", path); code != 1 || out != "" || !strings.Contains(errOut, "a bearer token is required (HTTP 401)") {
		t.Errorf("ctl export refused: exit %d, %q %q", code, out, errOut)
	}
	if got2, _ := os.ReadFile(path); string(got2) != string(got) {
		t.Errorf("a refused export changed the file:\n%s", got2)
	}
}

// TestCtlImport: ctl import sends a whole sluice.yaml's shared part (its own keys left out,
// and export's first line), at the revision that line names unless --revision says another,
// and prints what changed; 409, 503 and 400 are the API's words and exit status 1 (409 with
// what to do); a file with only local keys sends nothing.
func TestCtlImport(t *testing.T) {
	f, srv := newFakeAdmin(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	whole := `# sluice configuration, revision 5 of etcd:/sluice/prod/config
name: node-a
store: {etcd: {endpoints: [127.0.0.1:2379], prefix: /sluice/prod/}}
admin: {listen: 127.0.0.1:6080}
# the application's account
users:
  - {name: app, password_hash: '*AB'}
listen: {rw: 127.0.0.1:6033}
endpoints:
  - {name: rw, listen: 127.0.0.1:6033, mode: read-write}
`
	if err := os.WriteFile(path, []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	f.answer("PUT /v1/config", 200, admin.Change{Changed: []string{"users.app", "endpoints.rw.mode"}, Persisted: true, Restart: []string{"threads"}})
	code, out, errOut := ctlRun(srv.URL, "import", path)
	if code != 0 {
		t.Fatalf("ctl import: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"changed: users.app, endpoints.rw.mode\n", "in force only after a restart: threads\n", "stored"} {
		if !strings.Contains(out, want) {
			t.Errorf("ctl import's answer lacks %q:\n%s", want, out)
		}
	}
	var sent struct {
		Config   string
		Revision int64
	}
	if err := json.Unmarshal(f.got["PUT /v1/config"], &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Revision != 5 {
		t.Errorf("revision sent: %d, want 5 (export's line)", sent.Revision)
	}
	for _, local := range []string{"name: node-a", "store:", "admin:", "listen: {", "sluice configuration"} {
		if strings.Contains(sent.Config, local) {
			t.Errorf("the text sent holds %q:\n%s", local, sent.Config)
		}
	}
	if !strings.Contains(sent.Config, "# the application's account") || !strings.Contains(sent.Config, "mode: read-write") {
		t.Errorf("the text sent lost the shared part:\n%s", sent.Config)
	}

	ctlRun(srv.URL, "import", path, "--revision", "9")
	if err := json.Unmarshal(f.got["PUT /v1/config"], &sent); err != nil || sent.Revision != 9 {
		t.Errorf("--revision 9 sent %d (%v)", sent.Revision, err)
	}
	ctlRun(srv.URL, "import", "--revision=0", path)
	if err := json.Unmarshal(f.got["PUT /v1/config"], &sent); err != nil || sent.Revision != 0 {
		t.Errorf("--revision 0 sent %d (%v)", sent.Revision, err)
	}

	for _, c := range []struct {
		code       int
		body, want string
	}{
		{409, `{"error":{"code":"conflict","field":"revision","message":"this sluice has revision 6 in force, not 5: read it again (GET /v1/config) and retry"}}`,
			"sluice ctl: revision: this sluice has revision 6 in force, not 5: read it again (GET /v1/config) and retry (HTTP 409)\nnothing was imported: export the configuration again (sluice ctl export)"},
		{409, `{"error":{"code":"conflict","message":"this sluice shares no store: edit /etc/sluice.yaml and reload it (POST /v1/reload)"}}`,
			"sluice ctl: this sluice shares no store: edit /etc/sluice.yaml and reload it (POST /v1/reload) (HTTP 409)\n"},
		{503, `{"error":{"code":"unavailable","message":"etcd: context deadline exceeded: nothing was changed; the configuration last applied stays in force"}}`,
			"sluice ctl: etcd: context deadline exceeded: nothing was changed; the configuration last applied stays in force (HTTP 503)\n"},
		{400, `{"error":{"code":"invalid","field":"endpoints[0].mode","message":"invalid value \"rw\""}}`,
			"sluice ctl: endpoints[0].mode: invalid value \"rw\" (HTTP 400)\n"},
	} {
		f.answer("PUT /v1/config", c.code, c.body)
		code, out, errOut := ctlRun(srv.URL, "import", path)
		if code != 1 || out != "" || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("ctl import answered %d: exit %d, %q\n%q\nwant %q", c.code, code, out, errOut, c.want)
		}
		if c.code == 409 && strings.Contains(c.want, "shares no store") && strings.Contains(errOut, "export") {
			t.Errorf("a sluice without a store: the hint to export again does not apply:\n%s", errOut)
		}
	}

	delete(f.got, "PUT /v1/config")
	own := filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(own, []byte("name: node-a\nstore: {etcd: {endpoints: [127.0.0.1:2379]}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ctlRun(srv.URL, "import", own); code != 1 || !strings.Contains(errOut, "holds no shared setting") {
		t.Errorf("ctl import of only local keys: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctlRun(srv.URL, "import", filepath.Join(dir, "none.yaml")); code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("ctl import of no file: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctlRun(srv.URL, "import", path, "--revision", "latest"); code != 2 || !strings.Contains(errOut, `--revision "latest"`) {
		t.Errorf("ctl import --revision latest: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctlRun(srv.URL, "import"); code != 2 || !strings.Contains(errOut, "import needs FILE") {
		t.Errorf("ctl import without a file: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctlRun(srv.URL, "export", "--revision", "3"); code != 2 || !strings.Contains(errOut, "export takes no flag -revision") {
		t.Errorf("ctl export --revision: exit %d, %q", code, errOut)
	}
	if _, ok := f.got["PUT /v1/config"]; ok {
		t.Error("a refused import line sent a request")
	}
}
