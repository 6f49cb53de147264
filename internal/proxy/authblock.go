package proxy

import (
	"container/list"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Blocking client addresses after repeated authentication failures (limits.max_auth_failures,
// limits.auth_block), as MaxScale's max_auth_errors_until_block does.
//
// sluice checks passwords itself, so the servers' own lockouts (max_password_errors,
// FAILED_LOGIN_ATTEMPTS, max_connect_errors) never see a client's failures: without this,
// guessing would run at full speed, over new connections or with COM_CHANGE_USER on one
// connection.
//
// Every refused login counts for the client's address (wrong password, unknown user, no
// account for the host, require_tls: every 1045 of a login or a COM_CHANGE_USER). A failure
// more than the block time after the address's previous one starts the count again; once the
// count reaches the limit, the address is blocked until the block time has passed since its last
// failure: a new connection from it gets error 1129 in place of the greeting, and a
// COM_CHANGE_USER from it gets 1129 and ends the connection. As in MaxScale, a successful login
// does not reset the count (else one known password would let an address guess others forever:
// nine wrong ones, one right one, and again).

// maxAuthAddrs bounds the addresses the table tracks: past it a new address evicts the one
// whose last failure is oldest, so many addresses cannot grow the table.
const maxAuthAddrs = 10000

// authFailure is one address's count.
type authFailure struct {
	addr     netip.Addr
	failures int
	last     time.Time // the latest failure
}

// authBlocker counts authentication failures per client address. Its entries are in a list
// ordered by their last failure (oldest first), so that expired entries are dropped from the
// front as failures arrive and a full table evicts in constant time.
type authBlocker struct {
	max   int           // failures that block an address
	block time.Duration // how long; also how long a failure counts
	limit int           // entries kept (maxAuthAddrs)
	now   func() time.Time

	// n is the number of entries, read without the lock: while no address has failed
	// recently (the common case), a new connection's check takes no lock.
	n       atomic.Int64
	blocked atomic.Uint64 // addresses blocked so far (a counter for the metrics)

	mu    sync.Mutex
	addrs map[netip.Addr]*list.Element // of *authFailure
	order list.List                    // of *authFailure, oldest last failure first
}

// newAuthBlocker returns the table for max failures and block time block (max 0: nil, no
// blocking).
func newAuthBlocker(max int, block time.Duration) *authBlocker {
	if max <= 0 {
		return nil
	}
	if block <= 0 {
		block = 60 * time.Second
	}
	return &authBlocker{max: max, block: block, limit: maxAuthAddrs, now: time.Now, addrs: make(map[netip.Addr]*list.Element)}
}

// key is the address as the table knows it: IPv4-mapped IPv6 as IPv4, without zone.
func authKey(ip netip.Addr) netip.Addr { return ip.Unmap().WithZone("") }

// isBlocked reports whether connections from ip are refused now.
func (b *authBlocker) isBlocked(ip netip.Addr) bool {
	if b == nil || !ip.IsValid() || b.n.Load() == 0 {
		return false
	}
	ip = authKey(ip)
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.addrs[ip]
	if !ok {
		return false
	}
	f := e.Value.(*authFailure)
	return f.failures >= b.max && b.now().Sub(f.last) <= b.block
}

// fail counts an authentication failure from ip. It reports whether this failure blocked the
// address (once per block).
func (b *authBlocker) fail(ip netip.Addr) bool {
	if b == nil || !ip.IsValid() {
		return false
	}
	ip = authKey(ip)
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	// Expired entries go first: the list is ordered by last failure.
	for e := b.order.Front(); e != nil; e = b.order.Front() {
		f := e.Value.(*authFailure)
		if now.Sub(f.last) <= b.block {
			break
		}
		b.remove(e)
	}
	e, ok := b.addrs[ip]
	if !ok {
		if len(b.addrs) >= b.limit {
			b.remove(b.order.Front()) // the oldest failure of all
		}
		e = b.order.PushBack(&authFailure{addr: ip})
		b.addrs[ip] = e
		b.n.Store(int64(len(b.addrs)))
	} else {
		b.order.MoveToBack(e)
	}
	f := e.Value.(*authFailure)
	f.failures++
	f.last = now
	if f.failures == b.max {
		b.blocked.Add(1)
		return true
	}
	return false
}

func (b *authBlocker) remove(e *list.Element) {
	delete(b.addrs, e.Value.(*authFailure).addr)
	b.order.Remove(e)
	b.n.Store(int64(len(b.addrs)))
}

// size is the number of addresses tracked (for tests).
func (b *authBlocker) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.addrs)
}

// hostBlocked is the refusal of a blocked address, in place of the greeting or to its
// COM_CHANGE_USER.
func hostBlocked(host string) *mysql.SQLError {
	return mysql.NewError(mysql.ErrHostIsBlocked, "HY000", "Host '%s' is temporarily blocked due to too many authentication failures", host)
}

// failed counts a refused login of the client and logs the block it causes.
func (l *login) failed(env authEnv) {
	if b := env.p.authBlock; b.fail(l.ip) {
		env.log.Warn("client address blocked: too many authentication failures", "address", authKey(l.ip).String(), "failures", b.max, "for", b.block)
	}
}

// blockedHost is the client's address as its 1129 names it.
func (l *login) blockedHost() string {
	if l.ip.IsValid() {
		return authKey(l.ip).String()
	}
	return l.host
}

// AuthBlocked is the number of client addresses blocked so far for too many authentication
// failures.
func (p *Proxy) AuthBlocked() uint64 {
	if p.authBlock == nil {
		return 0
	}
	return p.authBlock.blocked.Load()
}
