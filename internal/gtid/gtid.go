// Package gtid reads and compares the GTID positions of MariaDB and MySQL nodes: what a node has
// applied, and whether that contains another position (a replica has everything the primary had
// at some moment). MariaDB positions (domain-server-seq, one per replication domain) are compared
// here, by sequence number per domain, as replication under gtid_strict_mode orders them; MySQL
// GTID sets (uuid:intervals, tagged GTIDs included) are go-mysql's. The SQL that reads positions
// and replication status from a server of either family is here too (queries.go), shared by the
// monitor, the binlog streamer and the sandbox.
package gtid

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Flavor is the GTID format of a server family.
type Flavor uint8

const (
	MariaDB Flavor = iota // domain-server-seq[,domain-server-seq...]
	MySQL                 // uuid:interval[:interval...][,uuid:...]
)

// FlavorOf tells the family from a server's version (@@version, the handshake's): MariaDB
// says so in it; any other is MySQL.
//
// It does not allocate: the read path asks it per read under a consistency level.
func FlavorOf(version string) Flavor {
	const word = "mariadb"
	for i := 0; i+len(word) <= len(version); i++ {
		if version[i]|0x20 == 'm' && strings.EqualFold(version[i:i+len(word)], word) {
			return MariaDB
		}
	}
	return MySQL
}

// Position is what a node has applied (or written), parsed. Immutable.
type Position struct {
	flavor  Flavor
	text    string
	domains map[uint32]mariaGTID // MariaDB: the last GTID of each domain
	mysql   *gomysql.MysqlGTIDSet
}

type mariaGTID struct {
	server uint32
	seq    uint64
}

// Parse reads a position as the server prints it (@@gtid_current_pos, @@gtid_binlog_pos,
// @@gtid_executed). The empty string is the empty position.
func Parse(f Flavor, s string) (Position, error) {
	s = strings.TrimSpace(s)
	p := Position{flavor: f, text: s}
	if f == MySQL {
		set, err := gomysql.ParseMysqlGTIDSet(s)
		if err != nil {
			return Position{}, fmt.Errorf("gtid: %q: %w", s, err)
		}
		p.mysql = set.(*gomysql.MysqlGTIDSet)
		return p, nil
	}
	p.domains = map[uint32]mariaGTID{}
	if s == "" {
		return p, nil
	}
	for _, g := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(g), "-")
		if len(parts) != 3 {
			return Position{}, fmt.Errorf("gtid: %q: want domain-server-seq", g)
		}
		d, err1 := strconv.ParseUint(parts[0], 10, 32)
		srv, err2 := strconv.ParseUint(parts[1], 10, 32)
		seq, err3 := strconv.ParseUint(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return Position{}, fmt.Errorf("gtid: %q: want domain-server-seq numbers", g)
		}
		if prev, ok := p.domains[uint32(d)]; ok && prev.seq >= seq {
			continue // a position names each domain once; keep the highest
		}
		p.domains[uint32(d)] = mariaGTID{server: uint32(srv), seq: seq}
	}
	return p, nil
}

// String is the position as parsed.
func (p Position) String() string { return p.text }

// IsZero reports whether p is the zero Position (never parsed), not the empty position.
func (p Position) IsZero() bool { return p.domains == nil && p.mysql == nil }

// Contains reports whether p has everything q has: every domain of q at a sequence number at
// least q's (MariaDB), every GTID of q (MySQL). Positions of different flavours contain nothing
// of each other; the zero Position contains nothing, and is contained by nothing.
func (p Position) Contains(q Position) bool {
	if p.IsZero() || q.IsZero() || p.flavor != q.flavor {
		return false
	}
	if p.flavor == MySQL {
		return p.mysql.Contain(q.mysql)
	}
	for d, g := range q.domains {
		if mine, ok := p.domains[d]; !ok || mine.seq < g.seq {
			return false
		}
	}
	return true
}

// ContainsGTID reports whether MariaDB position p has g, one GTID (domain-server-seq, as a
// commit's OK reports it): p's sequence number in g's domain is at least g's. It does not
// allocate (a commit's GTID is checked against a known position on every commit); it reports
// false for a MySQL or zero p and for a g that is not one MariaDB GTID.
func (p Position) ContainsGTID(g []byte) bool {
	if p.flavor != MariaDB || p.domains == nil {
		return false
	}
	one, ok := ParseGTID(g)
	if !ok {
		return false
	}
	mine, ok := p.domains[one.Domain]
	return ok && mine.seq >= one.Seq
}

// GTID is one MariaDB GTID: a transaction's replication domain, the server that first
// committed it, and its sequence number in the domain.
type GTID struct {
	Domain, Server uint32
	Seq            uint64
}

// ParseGTID reads one MariaDB GTID (domain-server-seq, as a commit's OK reports it) without
// allocating; ok is false for anything else (a MySQL GTID, a list, numbers out of range).
func ParseGTID(g []byte) (GTID, bool) {
	var nums [3]uint64
	part, digits := 0, 0
	for _, c := range g {
		switch {
		case c >= '0' && c <= '9':
			if d := uint64(c - '0'); nums[part] > (1<<64-1-d)/10 {
				return GTID{}, false // out of range
			}
			nums[part] = nums[part]*10 + uint64(c-'0')
			digits++
		case c == '-' && digits > 0 && part < 2:
			part, digits = part+1, 0
		default:
			return GTID{}, false
		}
	}
	if part != 2 || digits == 0 || nums[0] > 1<<32-1 || nums[1] > 1<<32-1 {
		return GTID{}, false
	}
	return GTID{Domain: uint32(nums[0]), Server: uint32(nums[1]), Seq: nums[2]}, true
}

// MariaDBPosition builds the MariaDB position of gs, the last GTID of each domain (a domain
// named twice keeps its highest sequence number); no GTID gives the empty position.
func MariaDBPosition(gs []GTID) Position {
	p := Position{flavor: MariaDB, domains: make(map[uint32]mariaGTID, len(gs))}
	for _, g := range gs {
		if prev, ok := p.domains[g.Domain]; !ok || prev.seq < g.Seq {
			p.domains[g.Domain] = mariaGTID{server: g.Server, seq: g.Seq}
		}
	}
	p.text = p.format()
	return p
}

// AppendGTIDs appends the last GTID of each domain of MariaDB position p to dst (nothing for a
// MySQL or zero p), in no particular order.
func (p Position) AppendGTIDs(dst []GTID) []GTID {
	if p.flavor != MariaDB {
		return dst
	}
	for d, g := range p.domains {
		dst = append(dst, GTID{Domain: d, Server: g.server, Seq: g.seq})
	}
	return dst
}

// Flavor is the family p was parsed for.
func (p Position) Flavor() Flavor { return p.flavor }

// Equal reports whether p and q contain each other.
func (p Position) Equal(q Position) bool { return p.Contains(q) && q.Contains(p) }

// Merge returns a position with everything p and q have: per domain the higher sequence number
// (MariaDB), the union of the sets (MySQL). A zero or other-flavour q leaves p as it is; a zero
// p gives q. p and q are not changed.
func (p Position) Merge(q Position) Position {
	switch {
	case q.IsZero() || (!p.IsZero() && p.flavor != q.flavor) || p.Contains(q):
		return p
	case p.IsZero() || q.Contains(p):
		return q
	}
	if p.flavor == MySQL {
		set := p.mysql.Clone().(*gomysql.MysqlGTIDSet)
		if err := set.Update(q.mysql.String()); err != nil {
			return p // q was parsed by go-mysql: not reached
		}
		return Position{flavor: MySQL, text: set.String(), mysql: set}
	}
	m := Position{flavor: MariaDB, domains: make(map[uint32]mariaGTID, len(p.domains)+len(q.domains))}
	for d, g := range p.domains {
		m.domains[d] = g
	}
	for d, g := range q.domains {
		if mine, ok := m.domains[d]; !ok || mine.seq < g.seq {
			m.domains[d] = g
		}
	}
	m.text = m.format()
	return m
}

// format prints a MariaDB position as the server does: domain-server-seq per domain, by domain.
func (p Position) format() string {
	ds := make([]uint32, 0, len(p.domains))
	for d := range p.domains {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte(',')
		}
		g := p.domains[d]
		fmt.Fprintf(&b, "%d-%d-%d", d, g.server, g.seq)
	}
	return b.String()
}
