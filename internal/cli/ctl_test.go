package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/sluicedb/sluice/internal/testutil"
)

// TestCtl: sluice ctl against a running sluice (its admin API, with a token). The read split
// follows a weights change on a connection opened before it (counted by @@server_id), the
// change is written to the configuration file with its comments, a bad value gets the
// configuration's own message, sessions are listed and killed, SIGHUP applies a valid file and
// refuses an invalid one, and -o json prints the API's JSON.
func TestCtl(t *testing.T) {
	adminAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	addr, cmd, _, logs, path := startServeAt(t, "# the control plane\nadmin: {listen: '"+adminAddr+"', token: s3cret}\ntimeouts: {shutdown: 1s}\n")
	ctl, mustCtl := ctlAt(t, adminAddr, "s3cret", logs)

	out := mustCtl("status")
	for _, want := range []string{"NODE", "primary", "replica1", "replica2", "ENDPOINT", "rw", "ro", "read-only"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := runCLI("ctl", "--admin", adminAddr, "--token", "nope", "status"); code != 1 || !strings.Contains(errOut, "HTTP 401") {
		t.Errorf("a wrong token: exit %d, %q", code, errOut)
	}

	ids := serverIDs(t, "replica1", "replica2")
	db, err := sql.Open("mysql", "app:app@tcp("+addr+")/test?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	readSplit := func() map[string]int { return readSplitOn(t, conn, ids) }
	for _, to := range []string{"replica1", "replica2"} {
		other := map[string]string{"replica1": "replica2", "replica2": "replica1"}[to]
		out := mustCtl("endpoint", "rw", "read_weights=primary:0,"+to+":100,"+other+":0", "balance=weighted")
		if !strings.Contains(out, "written to the configuration file") || !strings.Contains(out, to+":100") {
			t.Errorf("the change's answer:\n%s", out)
		}
		if got := readSplit(); got[to] != 40 {
			t.Errorf("weights all on %s: reads went %v", to, got)
		}
	}
	file, _ := os.ReadFile(path)
	if !strings.Contains(string(file), "# the control plane") || !regexp.MustCompile(`replica2: 100`).Match(file) ||
		!strings.Contains(string(file), "balance: weighted") {
		t.Errorf("the configuration file after the changes:\n%s", file)
	}

	// Bad changes: the configuration's own words; nothing changes.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"endpoint", "rw", "consistency=strong"}, `consistency: invalid value "strong" (want eventual, session, global or latest)`},
		{[]string{"endpoint", "rw", "read_weights=replica9:1"}, `read_weights.replica9: no backend is named "replica9"`},
		{[]string{"endpoint", "rw", "listen=127.0.0.1:1"}, "listen: cannot change while the endpoint listens"},
		{[]string{"endpoint", "nope", "balance=weighted"}, `no endpoint is named "nope" (HTTP 404)`},
		{[]string{"endpoint", "ro", "consistency=session"}, "consistency"},
		{[]string{"endpoint", "rw", "balance=${HOME}"}, `balance: a value from the API may not contain "$"`},
		{[]string{"endpoint", "rw", "read_weights=${X}:1"}, `may not contain "$"`},
	} {
		code, _, errOut := ctl(c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("ctl %v: exit %d, %q; want %q", c.args, code, errOut, c.want)
		}
	}
	if got := readSplit(); got["replica2"] != 40 {
		t.Errorf("after refused changes the reads went %v", got)
	}

	// Without a store: no cluster to show, said by the API and by SLUICE SHOW CLUSTER.
	if code, _, errOut := ctl("cluster"); code != 1 || !strings.Contains(errOut, "shares no store") || !strings.Contains(errOut, "HTTP 404") {
		t.Errorf("ctl cluster without a store: exit %d, %q", code, errOut)
	}
	if _, err := conn.ExecContext(context.Background(), "SLUICE SHOW CLUSTER"); err == nil || !strings.Contains(err.Error(), "shares no store") {
		t.Errorf("SLUICE SHOW CLUSTER without a store: %v", err)
	}

	// The session list shows the held connection; kill ends it.
	var cid int
	if err := conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&cid); err != nil {
		t.Fatal(err)
	}
	var sessions struct {
		Sessions []struct {
			ID       uint64
			User     string
			Endpoint string
			Nodes    []string
		}
	}
	if err := json.Unmarshal([]byte(mustCtl("-o", "json", "sessions")), &sessions); err != nil {
		t.Fatal(err)
	}
	var mine uint64
	for _, s := range sessions.Sessions {
		if s.User == "app" && s.Endpoint == "rw" && strings.Contains(strings.Join(s.Nodes, ","), "replica2") {
			mine = s.ID
		}
	}
	if mine == 0 {
		t.Fatalf("the held session is not listed: %+v", sessions)
	}
	if out := mustCtl("sessions"); !strings.Contains(out, "ID") || !strings.Contains(out, strconv.FormatUint(mine, 10)) {
		t.Errorf("sessions:\n%s", out)
	}
	// The pool (pool_mode session, the default): the held session's connections were made by it.
	if out := mustCtl("pools"); !regexp.MustCompile(`(?m)^NODE +USER +OPEN +IDLE +IN USE`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^primary +app +[1-9]`).MatchString(out) {
		t.Errorf("pools:\n%s", out)
	}
	var pools struct {
		Pools []struct {
			Node, User string
			Created    int
		}
	}
	if err := json.Unmarshal([]byte(mustCtl("-o", "json", "pools")), &pools); err != nil {
		t.Fatal(err)
	}
	if len(pools.Pools) == 0 || pools.Pools[0].Created == 0 {
		t.Errorf("pools as JSON: %+v", pools)
	}
	mustCtl("kill", strconv.FormatUint(mine, 10))
	if err := conn.PingContext(context.Background()); err == nil {
		t.Error("the killed session still answers")
	}
	if code, _, errOut := ctl("kill", "999999"); code != 1 || !strings.Contains(errOut, "HTTP 404") {
		t.Errorf("kill of no session: exit %d, %q", code, errOut)
	}

	// SIGHUP: a valid file's change is applied; an invalid file changes nothing.
	file, _ = os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(file), "balance: weighted", "balance: least-connections", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	hup := func() {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	hup()
	waitFor(t, func() bool { return strings.Contains(mustCtl("endpoint", "rw"), "least-connections") }, "SIGHUP to apply balance: least-connections")
	if err := os.WriteFile(path, []byte(strings.Replace(string(file), "balance: weighted", "balance: fastest", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	hup()
	waitFor(t, func() bool { return strings.Contains(logs.String(), "reload refused") }, "the invalid file's refusal in the log")
	if out := mustCtl("endpoint", "rw"); !strings.Contains(out, "least-connections") {
		t.Errorf("an invalid file changed the endpoint:\n%s", out)
	}
	if code, _, errOut := ctl("reload"); code != 1 || !strings.Contains(errOut, `balance: invalid value "fastest"`) {
		t.Errorf("reload of an invalid file: exit %d, %q", code, errOut)
	}

	// An allow list: a client from elsewhere gets 1130 before the greeting.
	mustCtl("endpoint", "rw", "allow=10.0.0.0/8,192.168.1.5")
	db2, _ := sql.Open("mysql", "app:app@tcp("+addr+")/test?timeout=5s")
	if err := db2.Ping(); err == nil || !strings.Contains(err.Error(), "1130") {
		t.Errorf("a client outside the allow list: %v, want 1130", err)
	}
	db2.Close()
	if code, _, errOut := ctl("endpoint", "rw", "allow=10.0.0.300/8"); code != 1 || !strings.Contains(errOut, "allow[0]: invalid value") {
		t.Errorf("a bad allow entry: exit %d, %q", code, errOut)
	}
	mustCtl("endpoint", "rw", "allow=default")
	db2, _ = sql.Open("mysql", "app:app@tcp("+addr+")/test?timeout=5s")
	if err := db2.Ping(); err != nil {
		t.Errorf("after the allow list was removed: %v", err)
	}
	db2.Close()

	// Back to a valid file, read again: sluice then writes the next changes to it.
	if err := os.WriteFile(path, []byte(strings.Replace(string(file), "balance: weighted", "balance: least-connections", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	mustCtl("reload")

	// An endpoint created while sluice runs listens at once; deleted, it takes no new
	// connection, and its sessions are closed after timeouts.shutdown (1 s here).
	rw2 := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	if out := mustCtl("create-endpoint", "rw2", "listen="+rw2, "mode=read-write"); !strings.Contains(out, "endpoints.rw2 (new)") {
		t.Errorf("create-endpoint: %s", out)
	}
	db3, _ := sql.Open("mysql", "app:app@tcp("+rw2+")/test?timeout=5s")
	defer db3.Close()
	held, err := db3.Conn(context.Background())
	if err != nil {
		t.Fatalf("the new endpoint: %v", err)
	}
	if err := held.PingContext(context.Background()); err != nil {
		t.Fatalf("the new endpoint: %v", err)
	}
	if file, _ := os.ReadFile(path); !strings.Contains(string(file), "name: rw2") {
		t.Errorf("the new endpoint is not in the file:\n%s", file)
	}
	if code, _, errOut := ctl("create-endpoint", "rw2", "listen="+rw2); code != 1 || !strings.Contains(errOut, "HTTP 409") {
		t.Errorf("a second rw2: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctl("create-endpoint", "rw3", "listen="+rw2); code != 1 || !strings.Contains(errOut, "is already used by endpoints[") {
		t.Errorf("rw3 on rw2's address: exit %d, %q", code, errOut)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if code, _, errOut := ctl("create-endpoint", "rw3", "listen="+busy.Addr().String()); code != 1 || !strings.Contains(errOut, "address already in use") {
		t.Errorf("rw3 on a port in use: exit %d, %q", code, errOut)
	}
	mustCtl("delete-endpoint", "rw2")
	if nc, err := net.DialTimeout("tcp", rw2, time.Second); err == nil {
		nc.Close()
		t.Error("the deleted endpoint still accepts connections")
	}
	if err := held.PingContext(context.Background()); err != nil {
		t.Errorf("a session of the deleted endpoint, within the grace period: %v", err)
	}
	waitFor(t, func() bool { return held.PingContext(context.Background()) != nil }, "the deleted endpoint's session to be closed")
	if file, _ := os.ReadFile(path); strings.Contains(string(file), "name: rw2") {
		t.Errorf("the deleted endpoint is still in the file")
	}

	// Drain and undrain (the drain under load is TestDrainUnderLoad's).
	if out := mustCtl("drain", "replica1", "--timeout", "5s"); !regexp.MustCompile(`^replica1: (draining|drained) `).MatchString(out) {
		t.Errorf("drain: %q", out)
	}
	waitFor(t, func() bool { return strings.Contains(mustCtl("status"), "drained") }, "replica1 drained")
	if out := mustCtl("undrain", "replica1"); out != "replica1: up\n" {
		t.Errorf("undrain: %q", out)
	}
	if code, _, errOut := ctl("drain", "primary"); code != 1 || !strings.Contains(errOut, "primary is the primary: switch over") {
		t.Errorf("drain of the primary: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctl("drain", "replica1", "--timeout", "soon"); code != 1 || !strings.Contains(errOut, "timeout: invalid value") {
		t.Errorf("drain with a bad timeout: exit %d, %q", code, errOut)
	}

	// /metrics: open without the token, promlint-clean, and it counted the reads above.
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %+v", err, problems)
	}
	for _, re := range []string{
		`(?m)^sluice_statements_total\{endpoint="rw",node="replica2",reason="read"\} [1-9]`,
		`(?m)^sluice_statement_duration_seconds_bucket\{node="replica2",le="\+Inf"\} [1-9]`,
		`(?m)^sluice_node_state\{node="primary",state="up"\} 1$`,
		`(?m)^sluice_node_primary\{node="primary"\} 1$`,
		`(?m)^sluice_client_sessions\{endpoint="rw"\} `,
		`(?m)^sluice_admin_changes_total\{kind="patch_endpoint",outcome="applied"\} 4$`,
		`(?m)^sluice_admin_changes_total\{kind="patch_endpoint",outcome="refused"\} 8$`,
		`(?m)^sluice_admin_changes_total\{kind="drain_node",outcome="refused"\} 1$`,
		`(?m)^sluice_admin_changes_total\{kind="create_endpoint",outcome="applied"\} 1$`,
		`(?m)^sluice_admin_changes_total\{kind="delete_endpoint",outcome="applied"\} 1$`,
		`(?m)^sluice_consistency_waits_total `,
		`(?m)^go_goroutines `,
	} {
		if !regexp.MustCompile(re).Match(body) {
			t.Errorf("/metrics lacks %s", re)
		}
	}

	var p struct {
		Nodes []struct{ Name, State string }
	}
	if err := json.Unmarshal([]byte(mustCtl("-o", "json", "status")), &p); err != nil || len(p.Nodes) != 3 {
		t.Errorf("status -o json: %v, %+v", err, p)
	}
}

// ctlAt returns sluice ctl against the admin API at adminAddr with token, and a variant that
// fails the test, with sluice's log, when ctl exits non-zero (returning its output otherwise).
func ctlAt(t *testing.T, adminAddr, token string, logs *syncBuffer) (func(args ...string) (int, string, string), func(args ...string) string) {
	t.Helper()
	// sluice opens the admin listener after the endpoints', which is what starting it waited
	// for: a first ctl command could otherwise find nothing listening yet.
	waitListen(t, adminAddr, logs)
	ctl := func(args ...string) (int, string, string) {
		return runCLI(append([]string{"ctl", "--admin", adminAddr, "--token", token}, args...)...)
	}
	return ctl, func(args ...string) string {
		t.Helper()
		code, out, errOut := ctl(args...)
		if code != 0 {
			t.Fatalf("ctl %v: exit %d: %s%s\nsluice's log:\n%s", args, code, out, errOut, logs.String())
		}
		return out
	}
}

// serverIDs maps the @@server_id of each of the test cluster's nodes named to its name, asked
// directly.
func serverIDs(t *testing.T, names ...string) map[string]string {
	t.Helper()
	c := testutil.Cluster(t)
	ids := map[string]string{}
	for _, n := range names {
		db, err := c.AdminDB(n)
		if err != nil {
			t.Fatal(err)
		}
		var id string
		if err := db.QueryRow("SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[id] = n
	}
	return ids
}

// readSplitOn counts where 40 reads on conn went, by node name (ids: serverIDs).
func readSplitOn(t *testing.T, conn *sql.Conn, ids map[string]string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range 40 {
		var id string
		if err := conn.QueryRowContext(context.Background(), "SELECT @@server_id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		got[ids[id]]++
	}
	return got
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
