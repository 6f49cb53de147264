package cli_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestCtlStore: a sluice whose configuration is in etcd (it seeds the empty store with its
// file's shared part). ctl cluster shows the store connected and this node; SLUICE SHOW
// CLUSTER answers the same through a client connection; ctl export writes the stored text
// under a line naming its revision; the exported file, edited and imported, is applied (the
// balance changes) at a new revision; imported again, its line's revision is stale: 409, and
// nothing changes.
func TestCtlStore(t *testing.T) {
	etcd, err := sandbox.StartEtcd(context.Background(), filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcd.Stop() })
	adminAddr := "127.0.0.1:" + strconv.Itoa(testutil.FreePort(t))
	addr, _, _, logs, _ := startServeAt(t, "admin: {listen: '"+adminAddr+"'}\nname: node-a\nstore:\n  etcd: {endpoints: ['"+
		etcd.ClientAddr+"'], prefix: /sluice/ctltest/}\n  clear_secrets: true\n")
	ctl, mustCtl := ctlAt(t, adminAddr, "", logs)

	var out string
	waitFor(t, func() bool {
		out = mustCtl("cluster")
		return regexp.MustCompile(`(?m)^node-a \(this\) `).MatchString(out)
	}, "node-a to be listed")
	if !strings.Contains(out, "store etcd "+etcd.ClientAddr+" prefix /sluice/ctltest/: connected\n") ||
		!regexp.MustCompile(`(?m)^configuration: revision (\d+) stored, (\d+) applied here$`).MatchString(out) {
		t.Errorf("ctl cluster:\n%s", out)
	}

	if out := mustCtl("status"); !strings.Contains(out, "\nstore etcd "+etcd.ClientAddr+" prefix /sluice/ctltest/: connected\n") {
		t.Errorf("ctl status lacks the store:\n%s", out)
	}

	db, err := sql.Open("mysql", "app:app@tcp("+addr+")/?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	showCluster := func() map[string]sql.NullString {
		t.Helper()
		rows, err := db.Query("SLUICE SHOW CLUSTER")
		if err != nil {
			t.Fatalf("SLUICE SHOW CLUSTER: %v", err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var mine map[string]sql.NullString
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := map[string]sql.NullString{}
			for i, c := range cols {
				row[c] = vals[i]
			}
			if row["this"].String == "yes" {
				mine = row
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if mine == nil {
			t.Fatal("SLUICE SHOW CLUSTER has no row for this sluice")
		}
		return mine
	}
	row := showCluster()
	rev := row["applied_revision"].String
	if row["name"].String != "node-a" || row["store"].String != "connected" || row["stored_revision"].String != rev ||
		!row["refused"].Valid || row["refused"].String != "" || !strings.Contains(row["endpoints"].String, "rw=127.0.0.1:") {
		t.Errorf("SLUICE SHOW CLUSTER, this sluice's row: %v", row)
	}

	exported := mustCtl("export")
	head := "# sluice configuration, revision " + rev + " of etcd:/sluice/ctltest/config\n"
	if !strings.HasPrefix(exported, head) || strings.Contains(exported, "node-a") || !strings.Contains(exported, "balance: least-active") {
		t.Fatalf("ctl export, want first %q:\n%s", head, exported)
	}
	file := filepath.Join(t.TempDir(), "shared.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(exported, "balance: least-active", "balance: weighted", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustCtl("import", file); !strings.Contains(out, "changed: ") || !strings.Contains(out, "rw") {
		t.Errorf("ctl import:\n%s", out)
	}
	if out := mustCtl("endpoint", "rw"); !regexp.MustCompile(`(?m)^balance +weighted$`).MatchString(out) {
		t.Errorf("rw after the import:\n%s", out)
	}
	row = showCluster()
	if n, _ := strconv.Atoi(row["applied_revision"].String); strconv.Itoa(n) == rev || row["stored_revision"].String != row["applied_revision"].String {
		t.Errorf("SLUICE SHOW CLUSTER after the import (revision %s before): %v", rev, row)
	}
	if out := mustCtl("export"); !strings.HasPrefix(out, "# sluice configuration, revision "+row["applied_revision"].String+" ") ||
		strings.Count(out, "# sluice configuration") != 1 || !strings.Contains(out, "balance: weighted") {
		t.Errorf("ctl export after the import:\n%s", out)
	}

	if err := os.WriteFile(file, []byte(strings.Replace(exported, "balance: least-active", "balance: least-connections", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := ctl("import", file)
	if code != 1 || !strings.Contains(errOut, "(HTTP 409)") || !strings.Contains(errOut, "sluice ctl export") {
		t.Errorf("an import on revision %s, now stale: exit %d, %q", rev, code, errOut)
	}
	if out := mustCtl("endpoint", "rw"); !regexp.MustCompile(`(?m)^balance +weighted$`).MatchString(out) {
		t.Errorf("rw after a refused import:\n%s", out)
	}
}
