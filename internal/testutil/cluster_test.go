package testutil_test

import (
	"database/sql"
	"os"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, sandbox.Options{Replicas: 1}))
}

func TestCluster(t *testing.T) {
	c := testutil.Cluster(t)
	if len(c.Replicas()) != 1 {
		t.Fatalf("want 1 replica, got %d", len(c.Replicas()))
	}
	db, err := sql.Open("mysql", c.DSN("replica1", sandbox.AppUser, sandbox.AppPassword, "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ro bool
	if err := db.QueryRow("SELECT @@read_only").Scan(&ro); err != nil || !ro {
		t.Fatalf("replica1 read_only = %v, %v", ro, err)
	}
}

func TestFreePort(t *testing.T) {
	p := testutil.FreePort(t)
	if p <= 0 || p > 65535 || !sandbox.PortFree(p) {
		t.Fatalf("FreePort = %d", p)
	}
}
