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
	f.Add([]byte(longSelect))
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
		if cmd, ok := IsProxyInternal(stmt); ok != (cmd == ShowLastRoute) {
			t.Fatalf("IsProxyInternal = %v %v", cmd, ok)
		}
	})
}
