// Package livetest checks package backend against a live server: what a scripted node cannot
// prove (how MariaDB types, converts and restores session values). It holds tests only; its
// cluster starts once for the package, so backend's own unit tests need none.
package livetest

import (
	"context"
	"os"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_DIFF_ADDR") != "" {
		// A server of the caller's (SLUICE_DIFF_ADDR, SLUICE_DIFF_USER, SLUICE_DIFF_PASSWORD, as
		// classify's servertest reads them): no cluster of our own.
		os.Exit(m.Run())
	}
	os.Exit(testutil.Main(m, sandbox.Options{Replicas: 1}))
}

// utf8mb4GeneralCI is the collation id the test connections log in with.
const utf8mb4GeneralCI = 45

// dial opens a connection to the server the tests read: SLUICE_DIFF_ADDR, or the cluster's
// primary, in utf8mb4, in database uvtest (created by the first call).
func dial(t *testing.T) *backend.Conn { t.Helper(); return dialCaps(t, 0) }

// dialCaps is dial asking for MariaDB's extended capabilities mariaDBCaps.
func dialCaps(t *testing.T, mariaDBCaps uint32) *backend.Conn {
	t.Helper()
	addr, user, pw := os.Getenv("SLUICE_DIFF_ADDR"), os.Getenv("SLUICE_DIFF_USER"), os.Getenv("SLUICE_DIFF_PASSWORD")
	if addr == "" {
		c := testutil.Cluster(t)
		addr, user, pw = c.Primary().Address, sandbox.AppUser, sandbox.AppPassword
	}
	bc, err := backend.Dial(context.Background(), backend.Options{
		Address:     addr,
		Credentials: backend.Credentials{User: user, Password: pw, HasPassword: pw != ""},
		Charset:     utf8mb4GeneralCI,
		// MariaDB's extended capabilities, as a client of sluice's may have asked for them.
		MariaDBCapabilities: mariaDBCaps,
		InitSQL:             []string{"CREATE DATABASE IF NOT EXISTS uvtest", "USE uvtest"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bc.Close() })
	return bc
}

func exec(t *testing.T, c *backend.Conn, q string) {
	t.Helper()
	if err := c.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// scalar runs q and returns its one value ("NULL" for NULL).
func scalar(t *testing.T, c *backend.Conn, q string) string {
	t.Helper()
	rows, err := c.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != 1 {
		t.Fatalf("%s: %d rows", q, len(rows.Values))
	}
	if v := rows.Values[0][0]; !v.Null {
		return v.S
	}
	return "NULL"
}
