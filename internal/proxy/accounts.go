package proxy

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/mysql"
)

// Accounts from the primary (accounts.from_primary): the app loads the primary's accounts and
// hands them over (SetAccounts); a client logs in against them as the server would: the
// account whose host matches the client best, its password, its lock. The users list of the
// configuration wins on a clash of names, but the host rules apply to its users too: a user
// whose accounts on the primary all name other hosts gets error 1045 whatever its password, as
// from the server (a client an endpoint's allow list does not cover gets 1130 before the
// greeting).

// Account is one account of the primary.
type Account struct {
	User, Host string
	// Plugin is the authentication plugin sluice verifies the client with:
	// mysql_native_password (Hash, or NoPassword), or one sluice cannot verify and relay
	// (ed25519, caching_sha2_password, unix_socket...): such an account cannot log in through
	// sluice unless the users list has it with its password.
	Plugin     string
	Hash       [20]byte
	NoPassword bool
	Locked     bool
}

// user is the account as a user sluice authenticates: mysql_native_password against its hash
// (or no password), another plugin refused with the reason.
func (a *Account) user() *User {
	u := &User{Name: a.User, Plugin: mysql.AuthNativePassword, Locked: a.Locked}
	switch {
	case a.Plugin != mysql.AuthNativePassword && a.Plugin != "":
		u.Unsupported = "the account authenticates with " + a.Plugin + ", which sluice cannot verify and pass on to the nodes: add the user to sluice's users list with its password"
	case a.NoPassword:
		u.HasPassword = true
	default:
		u.Hash, u.HasHash = a.Hash, true
	}
	return u
}

// HostRules are the primary's rules for matching a client's host to an account's.
type HostRules struct {
	// CIDR: the primary reads IP/prefix-length hosts (10.0.0.0/8) as networks, as MySQL does
	// from 8.0.23. MariaDB (and older MySQL) know only IP/netmask (10.0.0.0/255.0.0.0): to
	// them 10.0.0.0/8 is a literal pattern no client address matches.
	CIDR bool
	// ResolveNames: the primary resolves client addresses (skip_name_resolve OFF), so a
	// loopback client is also "localhost". Under skip_name_resolve a TCP client is only its
	// address: 'u'@'localhost' then matches unix-socket clients only, never one of sluice's.
	// sluice resolves nothing else: an account naming another host lets no client in
	// (refusing some the server would take, never the other way round).
	ResolveNames bool
}

// accountTable is the accounts by user name, each user's best host match first, and the
// anonymous accounts (an empty user name), which the server weighs against a named user's.
type accountTable struct {
	byUser map[string][]Account
	anon   []Account
	rules  HostRules
}

// SetAccounts replaces the accounts clients log in with (nil: accounts.from_primary is off),
// matched under the primary's host rules.
func (p *Proxy) SetAccounts(accts []Account, rules HostRules) {
	if accts == nil {
		p.accounts.Store(nil)
		return
	}
	t := &accountTable{byUser: map[string][]Account{}, rules: rules}
	for _, a := range accts {
		if a.User == "" {
			t.anon = append(t.anon, a)
			continue
		}
		t.byUser[a.User] = append(t.byUser[a.User], a)
	}
	byHost := func(a, b Account) int { return hostRank(b.Host) - hostRank(a.Host) }
	for _, as := range t.byUser {
		slices.SortStableFunc(as, byHost)
	}
	slices.SortStableFunc(t.anon, byHost)
	p.accounts.Store(t)
}

// match returns the account that lets user in from client ip, as the server picks it: the
// most specific host first and, between equally specific hosts, the named account before an
// anonymous one; so an anonymous account with a more specific host than all of the user's own
// takes the login (the user then authenticates with the anonymous account's password). known
// reports whether the user has any account of its own.
func (t *accountTable) match(user string, ip netip.Addr) (best *Account, known bool) {
	as := t.byUser[user]
	i, j := 0, 0
	for i < len(as) || j < len(t.anon) {
		var a *Account
		if j >= len(t.anon) || i < len(as) && hostRank(as[i].Host) >= hostRank(t.anon[j].Host) {
			a, i = &as[i], i+1
		} else {
			a, j = &t.anon[j], j+1
		}
		if hostMatches(a.Host, ip, t.rules) {
			return a, len(as) > 0
		}
	}
	return nil, len(as) > 0
}

// any returns one of user's accounts (the most specific), to check a password against.
func (t *accountTable) any(user string) *Account {
	return &t.byUser[user][0]
}

// hostRank orders host patterns as the server does, most specific first: an exact host, then an
// IP/netmask, then a pattern with wildcards (the longer its text before the first wildcard,
// the higher), then % (or an empty host).
func hostRank(h string) int {
	switch {
	case h == "" || h == "%":
		return 0
	case strings.Contains(h, "/"):
		return 3 << 16
	case strings.ContainsAny(h, "%_"):
		return 1<<16 + strings.IndexAny(h, "%_")
	}
	return 4 << 16
}

// hostMatches reports whether account host pattern h lets a client from ip in under the
// primary's rules: % and _ wildcards (on the address as text, and on "localhost" for a
// loopback client when the primary resolves names), IP/netmask, IP/prefix-length where the
// primary reads it (rules.CIDR), an exact address, localhost for a loopback client when the
// primary resolves names. Other host names match nothing: sluice does not resolve client
// addresses.
func hostMatches(h string, ip netip.Addr, rules HostRules) bool {
	ip = ip.Unmap()
	local := rules.ResolveNames && ip.IsLoopback()
	switch {
	case h == "" || h == "%":
		return true
	case strings.EqualFold(h, "localhost"):
		return local
	}
	if addr, mask, ok := strings.Cut(h, "/"); ok {
		if a, err := netip.ParseAddr(addr); err == nil && a.Is4() {
			bits := -1
			if m, err := netip.ParseAddr(mask); err == nil && m.Is4() {
				bits = maskBits(m)
			} else if n, err := strconv.Atoi(mask); err == nil && rules.CIDR && n >= 0 && n <= 32 && strconv.Itoa(n) == mask {
				bits = n
			}
			if bits >= 0 {
				p, err := a.Prefix(bits)
				// The server compares the client's masked address with the pattern's as
				// written: a pattern with host bits set (10.0.0.1/255.0.0.0) lets nobody in.
				return err == nil && p.Addr() == a && p.Contains(ip)
			}
		}
		// Not a network the primary reads (a prefix length on MariaDB, an IPv6 address, a
		// mask with holes): the server takes it as a literal pattern, which no address
		// matches.
		return false
	}
	h = strings.ToLower(h)
	return likeMatch(h, strings.ToLower(ip.String())) || local && likeMatch(h, "localhost")
}

// maskBits is the prefix length of a contiguous IPv4 netmask, or -1.
func maskBits(m netip.Addr) int {
	b := m.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n := 0
	for v&(1<<31) != 0 {
		n++
		v <<= 1
	}
	if v != 0 {
		return -1
	}
	return n
}

// likeMatch is SQL LIKE without escapes: % any run, _ one character. Linear in
// len(pattern)*len(s) at worst (the greedy matcher with one backtrack point).
func likeMatch(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '_' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '%':
			star, mark = p, i
			p++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '%' {
		p++
	}
	return p == len(pattern)
}

// hostRefused is the server's refusal of a client host no account lets in.
func hostRefused(host string) *mysql.SQLError {
	return mysql.NewError(mysql.ErrHostNotPrivileged, "HY000", "Host '%s' is not allowed to connect to this server", host)
}
