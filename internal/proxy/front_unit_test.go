package proxy

import (
	"sync"
	"testing"
)

// TestErrorCounts: codes anywhere below 65536 are counted, listed in order, and only those
// seen; counting from many goroutines loses nothing (the page a first error allocates is
// shared, never replaced); after its page exists, counting a code does not allocate.
func TestErrorCounts(t *testing.T) {
	var e errorCounts
	codes := []uint16{0, 255, 256, 1045, 1146, 2013, 4151, 65535}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				for _, c := range codes {
					e.count(c)
				}
			}
		})
	}
	wg.Wait()
	var got []uint16
	e.each(func(code uint16, n uint64) {
		got = append(got, code)
		if n != 800 {
			t.Errorf("code %d counted %d times, want 800", code, n)
		}
	})
	if len(got) != len(codes) {
		t.Fatalf("codes listed %v, want %v", got, codes)
	}
	for i := range codes {
		if got[i] != codes[i] {
			t.Fatalf("codes listed %v, want %v", got, codes)
		}
	}
	if a := testing.AllocsPerRun(100, func() { e.count(1047) }); a != 0 {
		t.Errorf("counting a code of a page already there: %v allocs", a)
	}
}

// TestRefusalReasonsLabelled: every refusal has its label, and the labels are distinct.
func TestRefusalReasonsLabelled(t *testing.T) {
	seen := map[string]bool{}
	for r, l := range RefusalReasons {
		if l == "" || seen[l] {
			t.Errorf("refusal %d: label %q empty or repeated", r, l)
		}
		seen[l] = true
	}
}
