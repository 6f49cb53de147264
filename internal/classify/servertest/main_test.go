// Package servertest compares the classifier's reading of statements with a live server's:
// the differential test of package classify. It holds tests only.
package servertest

import (
	"os"
	"testing"

	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_DIFF_ADDR") != "" {
		// A server of the caller's (SLUICE_DIFF_ADDR, SLUICE_DIFF_USER, SLUICE_DIFF_PASSWORD):
		// no cluster of our own.
		os.Exit(m.Run())
	}
	os.Exit(testutil.Main(m, sandbox.Options{Replicas: 1}))
}
