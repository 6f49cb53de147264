package classify

import (
	"bytes"
	"testing"
)

// FuzzClassify checks what must hold for any input: no panic, the same answer twice, offsets
// inside the statement, and values inside their enums. Seeds: every table case here and the
// corpus in testdata/fuzz/FuzzClassify.
func FuzzClassify(f *testing.F) {
	for _, tc := range kindCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range hintCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range innerCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range nameCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range stateCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range firstWordCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range releaseAllCases {
		f.Add([]byte(tc.in))
	}
	for _, tc := range killCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(longSelect))
	for _, tc := range dialectCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, stmt []byte) {
		orig := bytes.Clone(stmt)
		r := Classify(stmt)
		if r2 := Classify(stmt); r2 != r {
			t.Fatalf("not deterministic: %+v then %+v", r, r2)
		}
		if !bytes.Equal(stmt, orig) {
			t.Fatal("Classify modified its input")
		}
		n := int32(len(stmt))
		for _, rg := range [][2]int32{r.NodeName, r.Name} {
			if rg[0] < 0 || rg[0] > rg[1] || rg[1] > n {
				t.Fatalf("range %v outside [0, %d]", rg, n)
			}
		}
		if r.Hint == HintForceNode && r.NodeName[0] == r.NodeName[1] {
			t.Fatal("HintForceNode without a node name")
		}
		if r.Hint == HintForceNode && bytes.Contains(stmt[r.NodeName[0]:r.NodeName[1]], []byte("*/")) {
			t.Fatalf("node name %q holds the */ that ends the hint's comment", stmt[r.NodeName[0]:r.NodeName[1]])
		}
		if r.Hint != HintForceNode && r.NodeName != [2]int32{} {
			t.Fatalf("node name %v without HintForceNode", r.NodeName)
		}
		if int(r.Kind) >= numKinds || int(r.Inner) >= numKinds || int(r.Show) >= numShowKinds || r.Hint > HintForceNode {
			t.Fatalf("value out of range: %+v", r)
		}
		// (Every bit of Flags is defined now; the check holds again once Flags grows.)
		if uint64(r.Flags)>>numFlags != 0 || uint64(r.InnerFlags)>>numFlags != 0 {
			t.Fatalf("unknown flags: %+v", r)
		}
		if r.Autocommit < -1 || r.Autocommit > 1 {
			t.Fatalf("autocommit %d", r.Autocommit)
		}
		if r.Kinds != 0 && !r.Kinds.Has(r.Kind) {
			t.Fatalf("Kinds %b lacks Kind %v", r.Kinds, r.Kind)
		}
		if r.Flags&Multi == 0 && r.Kinds != 0 && r.Kinds != 1<<r.Kind {
			t.Fatalf("single statement with Kinds %b", r.Kinds)
		}
		if cmd, ok := IsProxyInternal(stmt); ok != (cmd != ProxyNone) || cmd > ProxyUnknown {
			t.Fatalf("IsProxyInternal = %v %v", cmd, ok)
		}
		if n, ok := SelectsConnectionID(stmt); ok && (r.Kind != Select || r.Flags&ConnectionID == 0 || r.Flags&Multi != 0 || n[0] < 0 || n[0] > n[1] || int(n[1]) > len(stmt)) {
			t.Fatalf("SelectsConnectionID %v on %+v", n, r)
		}
		checkSession(t, stmt, &r)
		checkKill(t, stmt, &r)
		checkDepends(t, stmt)
		if !bytes.Equal(stmt, orig) {
			t.Fatal("a scanner modified its input")
		}
	})
}

// checkSession checks the session-state scanners against Classify's answer r for stmt.
func checkSession(t *testing.T, stmt []byte, r *Result) {
	state := LeavesSessionState(r)
	switch {
	case r.Kinds&(1<<Set|1<<Use|1<<Begin|1<<LockTables) != 0 && !state:
		t.Fatalf("kinds %b leave no state", r.Kinds)
	case r.Flags&(TempTable|UserVarAssign|LockFunction) != 0 && !state:
		t.Fatalf("flags %v leave no state", r.Flags)
	}
	all := ReleasesAllLocks(stmt)
	if all != ReleasesAllLocks(stmt) {
		t.Fatal("ReleasesAllLocks not deterministic")
	}
	if all && r.Flags&ReleaseLock == 0 {
		t.Fatalf("RELEASE_ALL_LOCKS without ReleaseLock: %v", r.Flags)
	}
	create, drop := FirstWordIs(stmt, "CREATE"), FirstWordIs(stmt, "DROP")
	if create && drop {
		t.Fatal("first word both CREATE and DROP")
	}
	// FirstWordIs sees the word Classify's head sees.
	if FirstWordIs(stmt, "SELECT") && r.Kind != Select || FirstWordIs(stmt, "KILL") && r.Kind != Kill {
		t.Fatalf("first word disagrees with kind %v", r.Kind)
	}
}

// checkKill checks ParseKill against Classify and FirstWordIs, and KillsUser against ParseKill.
func checkKill(t *testing.T, stmt []byte, r *Result) {
	id, queryOnly, ok := ParseKill(stmt)
	if !ok {
		if id != 0 || queryOnly {
			t.Fatalf("ParseKill = %d %v without ok", id, queryOnly)
		}
		return
	}
	if KillsUser(stmt) {
		t.Fatal("a KILL of a connection id is also a KILL USER")
	}
	if id > 1<<32-1 {
		t.Fatalf("id %d over 32 bits", id)
	}
	if r.Kind != Kill || !FirstWordIs(stmt, "KILL") {
		t.Fatalf("ParseKill accepts a %v", r.Kind)
	}
}

// fuzzDialects are servers sluice supports (MariaDB 10+, MySQL 5.7+) around the versions
// where their rules change.
var fuzzDialects = []Dialect{
	{Flavor: FlavorMariaDB, Version: 100000}, maria1011, maria1104,
	mysql57, mysql8033, mysql8034, mysql84, mysql90,
}

// checkDepends checks that Depends tells every reading that may differ: a text whose reading
// under one mode does not depend on the server reads the same under every server in that
// mode, and one whose reading does not depend on the mode reads the same in every mode. The
// proxy reads once when Depends is zero: a dependence missed here is a misread there.
func checkDepends(t *testing.T, stmt []byte) {
	same := func(a, b Result) bool {
		a.Depends, b.Depends = 0, 0
		return a == b
	}
	for _, m := range []Mode{0, NoBackslashEscapes, AnsiQuotes, AnsiQuotes | Brackets, AllModes} {
		base := ClassifyFor(stmt, Dialect{Mode: m})
		if base.Depends&DependsVersion == 0 {
			for _, d := range fuzzDialects {
				d.Mode = m
				if r := ClassifyFor(stmt, d); !same(r, base) {
					t.Fatalf("mode %b: no DependsVersion, but %+v reads %+v, any server %+v", m, d, r, base)
				}
			}
		}
		if base.Depends&DependsMode == 0 {
			for _, m2 := range []Mode{0, NoBackslashEscapes, AnsiQuotes, AnsiQuotes | Brackets, AllModes} {
				if r := ClassifyFor(stmt, Dialect{Mode: m2}); !same(r, base) {
					t.Fatalf("no DependsMode under mode %b, but mode %b reads %+v, not %+v", m, m2, r, base)
				}
			}
		}
	}
}
