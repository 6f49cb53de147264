package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestCtlNodes: a replica added while sluice runs (sluice ctl create-node) is watched by the
// monitor and takes reads once it is up, on a connection opened before (counted by
// @@server_id), with read-your-writes kept on it; the file gains it. A node in service cannot
// be deleted; drained, it can, and reads leave it. A reload of a file that lists it again adds
// it back.
func TestCtlNodes(t *testing.T) {
	c := testutil.Cluster(t)
	r2, err := c.Node("replica2")
	if err != nil {
		t.Fatal(err)
	}
	withoutReplica2 := func(data []byte) []byte {
		out, err := config.RemoveBackend("sluice.yaml", data, "replica2")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	adminAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	addr, _, _, logs, path := startServeEdited(t, withoutReplica2, "admin: {listen: '"+adminAddr+"', token: s3cret}\ntimeouts: {shutdown: 1s}\n")
	ctl, mustCtl := ctlAt(t, adminAddr, "s3cret", logs)
	nodeState := func(name string) string {
		var p struct {
			Nodes []struct{ Name, State string }
		}
		if err := json.Unmarshal([]byte(mustCtl("-o", "json", "status")), &p); err != nil {
			t.Fatal(err)
		}
		for _, n := range p.Nodes {
			if n.Name == name {
				return n.State
			}
		}
		return ""
	}
	if s := nodeState("replica2"); s != "" {
		t.Fatalf("replica2 is known before it was added: %s", s)
	}

	ids := serverIDs(t, "replica1", "replica2")
	db, err := sql.Open("mysql", "app:app@tcp("+addr+")/test?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	readSplit := func() map[string]int { return readSplitOn(t, conn, ids) }
	mustCtl("endpoint", "rw", "balance=weighted")
	if got := readSplit(); got["replica1"] != 40 {
		t.Fatalf("before replica2 was added the reads went %v", got)
	}
	// A read-only session bound to replica1, the ro endpoint's only replica before replica2.
	var ro struct{ Address string }
	if err := json.Unmarshal([]byte(mustCtl("-o", "json", "endpoint", "ro")), &ro); err != nil || ro.Address == "" {
		t.Fatalf("the ro endpoint's address: %v %+v", err, ro)
	}
	roDB, err := sql.Open("mysql", "app:app@tcp("+ro.Address+")/test?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer roDB.Close()
	roConn, err := roDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer roConn.Close()
	roNode := func() string {
		t.Helper()
		var id string
		if err := roConn.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
			t.Fatalf("the read-only session: %v\nsluice's log:\n%s", err, logs.String())
		}
		return ids[id]
	}
	if n := roNode(); n != "replica1" {
		t.Fatalf("the read-only session is on %s", n)
	}
	r1, err := c.Node("replica1")
	if err != nil {
		t.Fatal(err)
	}

	// Bad additions: the words say what is wrong; nothing changes.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"create-node", "replica3", "zone=az1"}, "address: required"},
		{[]string{"create-node", "replica1", "address=" + r2.Address}, `a node is named "replica1" already (HTTP 409)`},
		{[]string{"create-node", "replica3", "address=" + r2.Address, "role=primary"}, "only replicas can be added"},
		{[]string{"create-node", "replica3", "address=nowhere"}, "backends[2].address"},
		{[]string{"create-node", "replica3", "address=" + r2.Address, "read_weights=nope:1"}, `read_weights.nope: no endpoint is named "nope"`},
		{[]string{"create-node", "replica3", "address=" + r2.Address, "read_weights=rw:20000"}, "read_weights.replica3: invalid value 20000"},
		{[]string{"create-node", "replica3", "address=" + r2.Address, "colour=blue"}, "colour: unknown setting"},
		{[]string{"create-node", "replica3", "address=${HOME}"}, `may not contain "$"`},
		{[]string{"create-node", "${HOME}", "address=" + r2.Address}, `name: a value from the API may not contain "$"`},
		{[]string{"create-node", "replica3", "address=" + r1.Address}, "node replica1 is at " + r1.Address + " already"},
	} {
		if code, _, errOut := ctl(bad.args...); code != 1 || !strings.Contains(errOut, bad.want) {
			t.Errorf("ctl %v: exit %d, %q; want %q", bad.args, code, errOut, bad.want)
		}
	}
	if s := nodeState("replica3"); s != "" {
		t.Fatalf("a refused addition left replica3: %s", s)
	}

	// A file changed on disk since sluice read it: the nodes do not change (a reload would undo it).
	file, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(file, "# edited by hand\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ctl("create-node", "replica2", "address="+r2.Address); code != 1 || !strings.Contains(errOut, "changed on disk") {
		t.Errorf("create-node with the file changed on disk: exit %d, %q", code, errOut)
	}
	if s := nodeState("replica2"); s != "" {
		t.Fatalf("a refused addition left replica2: %s", s)
	}
	mustCtl("reload")

	out := mustCtl("create-node", "replica2", "address="+r2.Address, "read_weights=rw:100,ro:100")
	for _, want := range []string{"backends.replica2 (new)", "endpoints.rw.read_weights.replica2: 100", "written to the configuration file"} {
		if !strings.Contains(out, want) {
			t.Errorf("create-node's answer lacks %q:\n%s", want, out)
		}
	}
	waitFor(t, func() bool { return nodeState("replica2") == "up" }, "the added replica2 to be up")
	if got := readSplit(); got["replica1"] != 20 || got["replica2"] != 20 {
		t.Errorf("with replica2 added at weight 100 the reads went %v", got)
	}
	// Read your writes (the rw endpoint is at consistency session) on a node added live.
	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS nodes_live (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := conn.ExecContext(ctx, "REPLACE INTO nodes_live VALUES (1, ?)", i); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := conn.QueryRowContext(ctx, "SELECT v FROM nodes_live WHERE id = 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != i {
			t.Fatalf("read %d after writing %d", v, i)
		}
	}
	// The read-only session moves from a drained replica1 to replica2, which it did not know of
	// when it began.
	mustCtl("drain", "replica1", "--timeout", "5s")
	if n := roNode(); n != "replica2" {
		t.Errorf("with replica1 drained the read-only session is on %s", n)
	}
	mustCtl("undrain", "replica1")
	file, _ = os.ReadFile(path)
	if !strings.Contains(string(file), "name: replica2") || !strings.Contains(string(file), "replica2: 100") ||
		!strings.Contains(string(file), "# edited by hand") {
		t.Errorf("the file after create-node:\n%s", file)
	}
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `sluice_statements_total{endpoint="rw",node="replica2",reason="read"}`) {
		t.Errorf("/metrics does not count replica2's reads")
	}

	// Removal: only drained.
	if code, _, errOut := ctl("delete-node", "replica2"); code != 1 || !strings.Contains(errOut, "replica2 is in service: drain it first") {
		t.Errorf("delete-node of a node in service: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctl("delete-node", "primary"); code != 1 || !strings.Contains(errOut, "primary is the primary") {
		t.Errorf("delete-node of the primary: exit %d, %q", code, errOut)
	}
	mustCtl("drain", "replica2", "--timeout", "5s")
	waitFor(t, func() bool {
		if err := conn.PingContext(ctx); err != nil { // a statement boundary: the session lets go
			t.Fatal(err)
		}
		return nodeState("replica2") == "drained"
	}, "replica2 drained")
	out = mustCtl("delete-node", "replica2")
	if !strings.Contains(out, "backends.replica2 (removed)") || !strings.Contains(out, "written to the configuration file") {
		t.Errorf("delete-node's answer:\n%s", out)
	}
	if s := nodeState("replica2"); s != "" {
		t.Errorf("replica2 is still listed after its removal: %s", s)
	}
	// The read-only session, on replica2 since replica1's drain and idle through replica2's,
	// moves to replica1 at its next statement.
	if n := roNode(); n != "replica1" {
		t.Errorf("after replica2 was removed the read-only session is on %s", n)
	}
	if got := readSplit(); got["replica1"] != 40 {
		t.Errorf("after replica2 was removed the reads went %v", got)
	}
	if code, _, errOut := ctl("delete-node", "replica2"); code != 1 || !strings.Contains(errOut, "HTTP 404") {
		t.Errorf("delete-node twice: exit %d, %q", code, errOut)
	}
	file, _ = os.ReadFile(path)
	if strings.Contains(string(file), "replica2") {
		t.Errorf("the file after delete-node still names replica2:\n%s", file)
	}

	// A reload of the file with replica2 again adds it back (into its old slot).
	data, err := config.AddBackend(path, file, "replica2", map[string]any{"address": r2.Address, "role": "replica"})
	if err == nil {
		data, err = config.EditEndpoint(path, data, "rw", map[string]any{"read_weights": map[string]int{"primary": 0, "replica1": 100, "replica2": 100}})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustCtl("reload"); !strings.Contains(out, "backends.replica2 (new)") {
		t.Errorf("reload's answer:\n%s", out)
	}
	waitFor(t, func() bool { return nodeState("replica2") == "up" }, "replica2 up again after the reload")
	if got := readSplit(); got["replica1"] != 20 || got["replica2"] != 20 {
		t.Errorf("with replica2 back the reads went %v", got)
	}
	// A file with a new backend at a node's address is refused whole.
	dup, err := config.AddBackend(path, data, "replica3", map[string]any{"address": r2.Address, "role": "replica"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, dup, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ctl("reload"); code != 1 || !strings.Contains(errOut, "new backend replica3 is at "+r2.Address+", where replica2 is already") {
		t.Errorf("reload with a second backend at replica2's address: exit %d, %q", code, errOut)
	}
	if s := nodeState("replica3"); s != "" {
		t.Errorf("a refused reload added replica3: %s", s)
	}
	// A file that drops a node still in service is refused whole.
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ctl("reload"); code != 1 || !strings.Contains(errOut, "no longer lists backend replica2") {
		t.Errorf("reload dropping a node in service: exit %d, %q", code, errOut)
	}
	if s := nodeState("replica2"); s != "up" {
		t.Errorf("a refused reload changed replica2: %s", s)
	}
}
