package main

import (
	"testing"
	"time"
)

// TestParseSteps: counts must be positive and increasing.
func TestParseSteps(t *testing.T) {
	got, err := parseSteps("200, 1000,10000")
	if err != nil || len(got) != 3 || got[0] != 200 || got[2] != 10000 {
		t.Fatalf("parseSteps = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1000,1000", "1000,200", "x", "-5"} {
		if _, err := parseSteps(bad); err == nil {
			t.Errorf("parseSteps(%q) accepted", bad)
		}
	}
}

// TestVmRSS reads the VmRSS line among the others, and refuses a text without one.
func TestVmRSS(t *testing.T) {
	got, err := vmRSS("Name:\tsluice\nVmHWM:\t   99999 kB\nVmRSS:\t   12345 kB\nThreads:\t5\n")
	if err != nil || got != 12345 {
		t.Fatalf("vmRSS = %d, %v; want 12345", got, err)
	}
	if _, err := vmRSS("Name:\tsluice\n"); err == nil {
		t.Fatal("vmRSS without a VmRSS line: no error")
	}
}

// TestPercentilePerMille: nearest rank over 1..1000 ms; one value is every percentile; none is 0.
func TestPercentilePerMille(t *testing.T) {
	d := make([]time.Duration, 1000)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, c := range []struct {
		p    int
		want float64
	}{{500, 500}, {990, 990}, {999, 999}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("percentile(%d) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(d[:1], 990); got != 1 {
		t.Errorf("p99 of one value = %v", got)
	}
	if got := percentile(nil, 990); got != 0 {
		t.Errorf("p99 of none = %v", got)
	}
}

// TestTotals sums every pool row's counters.
func TestTotals(t *testing.T) {
	got := totals([]pool{{Created: 2, Reused: 10, Waits: 1, WaitSeconds: 0.5}, {Created: 3, Reused: 5, WaitSeconds: 0.25}})
	if got.Created != 5 || got.Reused != 15 || got.Waits != 1 || got.WaitSeconds != 0.75 {
		t.Fatalf("totals = %+v", got)
	}
}
