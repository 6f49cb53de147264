package main

import (
	"testing"
	"time"
)

// TestSummarize checks the rate and the nearest-rank percentiles on 100 iterations of 1..100 ms
// (connect: half of each), given out of order.
func TestSummarize(t *testing.T) {
	var all []sample
	for i := 100; i >= 1; i-- {
		d := time.Duration(i) * time.Millisecond
		all = append(all, sample{total: d, connect: d / 2})
	}
	res := summarize(all, 4*time.Second)
	want := result{Seconds: 4, Connections: 100, CPS: 25, P50: 50, P99: 99, Avg: 50.5, Max: 100, ConnectP50: 25, ConnectP99: 49.5}
	if *res != want {
		t.Fatalf("summarize = %+v, want %+v", *res, want)
	}
}

// TestSummarizeNone: no completed iteration gives zeros, not a panic or a division by zero.
func TestSummarizeNone(t *testing.T) {
	res := summarize(nil, time.Second)
	if res.Connections != 0 || res.CPS != 0 || res.P99 != 0 || res.Avg != 0 {
		t.Fatalf("summarize(nil) = %+v, want zeros", *res)
	}
}

// TestPercentileNearestRank: p99 of 1000 values is the 990th, p50 of an odd count the middle one,
// and one value is every percentile.
func TestPercentileNearestRank(t *testing.T) {
	d := make([]time.Duration, 1000)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Millisecond
	}
	if got := percentile(d, 99); got != 990 {
		t.Errorf("p99 of 1..1000 ms = %v, want 990", got)
	}
	if got := percentile(d[:3], 50); got != 2 {
		t.Errorf("p50 of 1,2,3 ms = %v, want 2", got)
	}
	if got := percentile(d[:1], 99); got != 1 {
		t.Errorf("p99 of one value = %v, want it", got)
	}
}
