package proxy

import "testing"

// In-memory command round trips: the session's own CPU per statement, without goroutine
// switches (the client and node sides are memConns).
func BenchmarkMemQuery(b *testing.B) {
	m := newMemSession(b)
	ex := textQuery(resultSet(1))
	b.ReportAllocs()
	for b.Loop() {
		m.run(b, ex)
	}
}

func BenchmarkMemExecute(b *testing.B) {
	m := newMemSession(b)
	m.run(b, prepareExchange)
	ex := executeExchange(binaryResultSet(1))
	b.ReportAllocs()
	for b.Loop() {
		m.run(b, ex)
	}
}
