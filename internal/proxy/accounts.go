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
// whose accounts on the primary all name other hosts gets error 1130, as does a client an
// endpoint's allow list does not cover.

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

// accountTable is the accounts by user name, each user's best host match first.
type accountTable struct {
	byUser map[string][]Account
}

// SetAccounts replaces the accounts clients log in with (nil: accounts.from_primary is off).
func (p *Proxy) SetAccounts(accts []Account) {
	if accts == nil {
		p.accounts.Store(nil)
		return
	}
	t := &accountTable{byUser: map[string][]Account{}}
	for _, a := range accts {
		t.byUser[a.User] = append(t.byUser[a.User], a)
	}
	for _, as := range t.byUser {
		slices.SortStableFunc(as, func(a, b Account) int { return hostRank(b.Host) - hostRank(a.Host) })
	}
	p.accounts.Store(t)
}

// match returns user's account that matches client ip best, and whether the user has any
// account at all.
func (t *accountTable) match(user string, ip netip.Addr) (best *Account, known bool) {
	as := t.byUser[user]
	for i := range as {
		if hostMatches(as[i].Host, ip) {
			return &as[i], true
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

// hostMatches reports whether account host pattern h lets a client from ip in: % and _
// wildcards (on the address as text), IP/netmask (MariaDB) or IP/prefix (MySQL), an exact
// address, localhost for a loopback client. Host names other than localhost match nothing:
// sluice does not resolve client addresses (as a server with skip-name-resolve).
func hostMatches(h string, ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case h == "" || h == "%":
		return true
	case strings.EqualFold(h, "localhost"):
		return ip.IsLoopback()
	case strings.Contains(h, "/"):
		addr, mask, _ := strings.Cut(h, "/")
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return false
		}
		bits := -1
		if m, err := netip.ParseAddr(mask); err == nil && m.Is4() {
			bits = maskBits(m)
		} else if n, err := strconv.Atoi(mask); err == nil {
			bits = n
		}
		if !a.Is4() || bits < 0 || bits > 32 {
			return false // the server takes IPv4 netmasks only
		}
		p, err := a.Prefix(bits)
		// The server compares the client's masked address with the pattern's as written: a
		// pattern with host bits set (10.0.0.1/255.0.0.0) lets nobody in.
		return err == nil && p.Addr() == a && p.Contains(ip)
	}
	return likeMatch(strings.ToLower(h), strings.ToLower(ip.String()))
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
