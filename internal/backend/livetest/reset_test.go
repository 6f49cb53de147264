package livetest

import (
	"context"
	"os"
	"testing"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

// TestResetSessionGuards: on a read-only connection ResetSession sends the read-only guard
// with the reset (one write) and the server runs both: after it the session is read-only again,
// its user variables and session variables gone, and the connection at rest (Wake takes it
// once, with nothing to send). A connection handed on unreset (Continue) is not clean: Rest
// refuses it, so a pool resets it before another session.
func TestResetSessionGuards(t *testing.T) {
	if os.Getenv("SLUICE_DIFF_ADDR") != "" {
		t.Skip("needs the package's own cluster")
	}
	c := testutil.Cluster(t)
	bc, err := backend.Dial(context.Background(), backend.Options{
		Address:     c.Primary().Address,
		Credentials: backend.Credentials{User: sandbox.AppUser, Password: sandbox.AppPassword, HasPassword: true},
		Charset:     utf8mb4GeneralCI,
		ReadOnly:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	if ro := scalar(t, bc, "SELECT @@session.tx_read_only"); ro != "1" {
		t.Fatalf("a read-only connection after its login: tx_read_only %s", ro)
	}
	for _, askDB := range []bool{false, true} {
		exec(t, bc, "SET SESSION TRANSACTION READ WRITE")
		exec(t, bc, "SET @guard_probe = 7, SESSION sql_mode = 'ANSI'")
		if _, err := bc.ResetSession(askDB); err != nil {
			t.Fatalf("ResetSession(%v): %v", askDB, err)
		}
		if !bc.Wake(3) {
			t.Fatalf("ResetSession(%v) left the connection not at rest", askDB)
		}
		if bc.Wake(4) {
			t.Fatal("Wake took the connection twice")
		}
		if ro := scalar(t, bc, "SELECT @@session.tx_read_only"); ro != "1" {
			t.Errorf("after ResetSession(%v): tx_read_only %s, want the guard back", askDB, ro)
		}
		if v := scalar(t, bc, "SELECT @guard_probe"); v != "NULL" {
			t.Errorf("after ResetSession(%v): @guard_probe %s", askDB, v)
		}
		if m := scalar(t, bc, "SELECT @@session.sql_mode = @@global.sql_mode"); m != "1" {
			t.Errorf("after ResetSession(%v): the session's sql_mode survived", askDB)
		}
		if fp := bc.Fingerprint(); fp.Epoch != 3 || fp.Applied != 0 {
			t.Errorf("after Wake(3): fingerprint %+v", fp)
		}
	}
	// Taken clean, untouched: it may rest. Handed on unreset: never.
	if !bc.Rest() || !bc.Wake(5) {
		t.Error("a clean, untouched connection does not rest")
	}
	bc.Continue(&backend.State{Epoch: 6})
	if bc.Rest() {
		t.Error("a connection handed on unreset rests (the next session would skip its reset)")
	}
	if bc.Wake(7) {
		t.Error("Wake took a connection that is not at rest")
	}
}
