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

// TestCPUParsers: utime + stime after a command name with spaces and parentheses; the
// machine's busy time leaves out idle and iowait (and guest, already in user).
func TestCPUParsers(t *testing.T) {
	stat := "4242 (sl (ice) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 12 0 100 0"
	if got, err := procCPU(stat); err != nil || got != 3 {
		t.Fatalf("procCPU = %v, %v; want 3 s", got, err)
	}
	if _, err := procCPU("4242 (x) S 1"); err == nil {
		t.Fatal("a short stat line was accepted")
	}
	machine := "cpu  100 0 50 800 50 0 0 0 30 0\ncpu0 50 0 25 400 25 0 0 0 15 0\ncpu1 50 0 25 400 25 0 0 0 15 0\nintr 1\n"
	busy, total, cpus, err := machineCPU(machine)
	if err != nil || busy != 1.5 || total != 10 || cpus != 2 {
		t.Fatalf("machineCPU = %v %v %v %v; want 1.5 10 2", busy, total, cpus, err)
	}
	if _, _, _, err := machineCPU("intr 1\n"); err == nil {
		t.Fatal("no cpu line was accepted")
	}
}

// TestParseMemstats: the gauges wanted, in KiB, in either float notation; others left out.
func TestParseMemstats(t *testing.T) {
	got := parseMemstats("# HELP x\ngo_memstats_stack_inuse_bytes 2.097152e+06\ngo_memstats_heap_alloc_bytes 4096\ngo_memstats_mallocs_total 5\ngo_memstats_frees_bytes 9\n")
	if len(got) != 2 || got["stack_inuse"] != 2048 || got["heap_alloc"] != 4 {
		t.Fatalf("parseMemstats = %v", got)
	}
}
