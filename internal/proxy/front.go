package proxy

import (
	"sync/atomic"

	"github.com/sluicedb/sluice/internal/mysql"
)

// What an endpoint counts of its clients, for /metrics: logins accepted and refused (by
// reason), authentication failures, the errors its clients got (by code). The traffic (bytes in
// and out) is each session's own (sessionStats), folded as statements are.

// refusal is why a client connection ended before it logged in.
type refusal uint8

const (
	// refusedHandshake: the client broke off its login or sent one sluice cannot read (a bad
	// handshake packet, a failed TLS handshake, TLS asked of an endpoint without it, a
	// connection closed mid-login).
	refusedHandshake          refusal = iota
	refusedMaxConnections             // past the endpoint's max_connections (1040)
	refusedTooManyLogins              // past limits.max_pending_logins or their memory (1040)
	refusedNotAllowed                 // not in the endpoint's allow list (1130)
	refusedBlocked                    // the address is blocked for its authentication failures (1129)
	refusedTLSRequired                // without TLS on an endpoint with tls: required (3159)
	refusedLoginTimeout               // the login took longer than timeouts.login (1159)
	refusedAuth                       // authentication failed (1045, a locked account...)
	refusedNoNode                     // logged in, but no node could take the session
	refusedShuttingDown               // sluice was shutting down (closed without a word)
	refusedMaxUserConnections         // the user was at its max_user_connections (1226)
	numRefusals
)

// RefusalReasons label the refusals (sluice_client_connections_refused_total's reason), by
// refusal.
var RefusalReasons = [numRefusals]string{"handshake", "max_connections", "too_many_logins", "not_allowed", "blocked",
	"tls_required", "login_timeout", "auth_failed", "no_node", "shutting_down",
	"max_user_connections"}

// frontStats counts one endpoint's client side. Shared by the endpoint's sessions and its accept
// loop: atomics, written at a login's end, an authentication failure and a command that failed,
// never per successful statement.
type frontStats struct {
	accepted     atomic.Uint64 // connections that logged in
	refused      [numRefusals]atomic.Uint64
	authFailures atomic.Uint64 // failed authentications: logins and COM_CHANGE_USER
	errors       errorCounts
}

// refuse writes se to c in place of the login's next packet, and counts it as an error the
// client got; the caller says why the login ends (login.refused).
func (f *frontStats) refuse(c *mysql.Conn, se *mysql.SQLError) {
	f.errors.count(se.Code)
	_ = writeErr(c, se)
}

// errorCounts counts error codes: the label set is the codes seen, at most 65536 however many
// errors. Codes live in pages of 256 counters, each allocated by the first error of its range
// (MySQL's and MariaDB's codes fill a handful: 1xxx-4xxx), so that counting never allocates
// after that and takes no lock. Safe from any goroutine.
type errorCounts struct {
	pages [256]atomic.Pointer[[256]atomic.Uint64]
}

// count counts one error with code.
func (e *errorCounts) count(code uint16) {
	slot := &e.pages[code>>8]
	p := slot.Load()
	if p == nil {
		slot.CompareAndSwap(nil, new([256]atomic.Uint64))
		p = slot.Load()
	}
	p[code&0xff].Add(1)
}

// each calls f for every code counted, in increasing order.
func (e *errorCounts) each(f func(code uint16, n uint64)) {
	for hi := range e.pages {
		p := e.pages[hi].Load()
		if p == nil {
			continue
		}
		for lo := range p {
			if n := p[lo].Load(); n > 0 {
				f(uint16(hi<<8|lo), n)
			}
		}
	}
}

// ClientStats are what an endpoint counted of its clients since it was added.
type ClientStats struct {
	Accepted     uint64
	Refused      [numRefusals]uint64 // by refusal, labelled by RefusalReasons
	AuthFailures uint64
	// Errors counts the error packets the clients got, by code: sluice's own and the nodes'.
	Errors map[uint16]uint64
	// BytesIn and BytesOut count what the clients sent and received, on their connections.
	BytesIn, BytesOut uint64
}

// ClientStats returns endpoint name's client counts (zero for no such endpoint). The bytes of
// live sessions are those of their last finished command.
func (p *Proxy) ClientStats(name string) ClientStats {
	ep := p.endpoint(name)
	if ep == nil {
		return ClientStats{}
	}
	f := &ep.front
	st := ClientStats{Accepted: f.accepted.Load(), AuthFailures: f.authFailures.Load(), Errors: map[uint16]uint64{}}
	for i := range f.refused {
		st.Refused[i] = f.refused[i].Load()
	}
	f.errors.each(func(code uint16, n uint64) { st.Errors[code] = n })
	p.mu.Lock()
	st.BytesIn, st.BytesOut = ep.done.bytesIn.Load(), ep.done.bytesOut.Load()
	for s := range p.sessions {
		if s.ep == ep {
			c := s.view.counts()
			st.BytesIn += c.bytesIn.Load()
			st.BytesOut += c.bytesOut.Load()
		}
	}
	p.mu.Unlock()
	return st
}
