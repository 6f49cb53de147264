package proxy

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/route"
)

// BenchmarkEndpointStats1000Sessions: what one /metrics scrape costs the proxy per endpoint with
// 1 000 client sessions (each with statements counted): the fold of their counters. The time
// the proxy's session lock is held is the copy of the session list only.
func BenchmarkEndpointStats1000Sessions(b *testing.B) {
	r := newTwoNodeSession(b, []int{0, 100}, &memConn{}, &memConn{})
	p, ep := r.s.p, r.s.ep
	for i := range 1000 {
		s := p.newSession(ep, &memConn{})
		s.view.count(i%2, route.ReasonRead, time.Millisecond, p.topo)
		p.sessions[s] = struct{}{}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st := p.EndpointStats("rw")
		if st.Statements < 1000 {
			b.Fatalf("%d statements", st.Statements)
		}
	}
}
