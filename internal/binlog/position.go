package binlog

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
)

// tracker is a node's whole position, advanced by the GTID events of its binlog. One per
// stream, used from the Run goroutine only.
type tracker interface {
	// start is the position the stream asks the node to start after.
	start() gomysql.GTIDSet
	// advance applies one event; it reports whether the event was a GTID (the position moved).
	advance(ev *replication.BinlogEvent) (bool, error)
	// String prints the position as the node prints it.
	String() string
}

// newTracker parses pos, as the node printed it (@@gtid_binlog_pos, @@gtid_executed).
func newTracker(mariadb bool, pos string) (tracker, error) {
	if mariadb {
		set, err := gomysql.ParseMariadbGTIDSet(pos)
		if err != nil {
			return nil, fmt.Errorf("position %q: %w", pos, err)
		}
		return newMariaPos(set.(*gomysql.MariadbGTIDSet)), nil
	}
	set, err := gomysql.ParseMysqlGTIDSet(pos)
	if err != nil {
		return nil, fmt.Errorf("position %q: %w", pos, err)
	}
	return &mysqlPos{set: set.(*gomysql.MysqlGTIDSet), from: set.Clone()}, nil
}

// mariaPos is a MariaDB binlog position kept as @@gtid_binlog_pos has it: the last GTID written
// in each replication domain. A GTID event replaces its domain's entry and leaves the others
// alone, so domains may arrive in any order (a replica applying in parallel writes them to
// its binlog interleaved differently from its primary). Entries stay sorted by domain, the
// order the server prints them in, so printing needs no sort; there are a handful of domains,
// so a sorted slice is both the map and the print order.
type mariaPos struct {
	from  *gomysql.MariadbGTIDSet
	gtids []gomysql.MariadbGTID // sorted by DomainID, one per domain
	ev    replication.MariadbGTIDEvent
	buf   []byte // String's scratch
	last  string // String's result while gtids is unchanged
	stale bool   // last no longer matches gtids
}

func newMariaPos(set *gomysql.MariadbGTIDSet) *mariaPos {
	p := &mariaPos{from: set, stale: true}
	for _, g := range set.Sets {
		if g.ServerID == 0 && g.SequenceNumber == 0 {
			continue // go-mysql's reading of an empty element; no GTID has sequence number 0
		}
		p.set(*g)
	}
	return p
}

func (p *mariaPos) start() gomysql.GTIDSet { return p.from }

// set makes g its domain's last GTID.
func (p *mariaPos) set(g gomysql.MariadbGTID) {
	i, found := slices.BinarySearchFunc(p.gtids, g.DomainID, func(e gomysql.MariadbGTID, d uint32) int {
		switch {
		case e.DomainID < d:
			return -1
		case e.DomainID > d:
			return 1
		}
		return 0
	})
	if found {
		p.gtids[i] = g
	} else {
		p.gtids = slices.Insert(p.gtids, i, g)
	}
	p.stale = true
}

// errShortEvent is a GTID event too short to hold its fields: a corrupt stream.
var errShortEvent = errors.New("GTID event too short")

func (p *mariaPos) advance(ev *replication.BinlogEvent) (bool, error) {
	if ev.Header.EventType != replication.MARIADB_GTID_EVENT {
		return false, nil
	}
	body, err := eventBody(ev)
	if err != nil {
		return false, err
	}
	// seq_no (8), domain_id (4), flags (1); the server id is the event header's.
	if len(body) < 13 {
		return false, errShortEvent
	}
	if err := p.ev.Decode(body); err != nil {
		return false, err
	}
	g := p.ev.GTID
	g.ServerID = ev.Header.ServerID
	p.set(g)
	return true, nil
}

// String prints the position like @@gtid_binlog_pos: "0-1-5,5-1-2". One allocation (the
// string) per change.
func (p *mariaPos) String() string {
	if !p.stale {
		return p.last
	}
	b := p.buf[:0]
	for i, g := range p.gtids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(g.DomainID), 10)
		b = append(b, '-')
		b = strconv.AppendUint(b, uint64(g.ServerID), 10)
		b = append(b, '-')
		b = strconv.AppendUint(b, g.SequenceNumber, 10)
	}
	p.buf = b
	p.last, p.stale = string(b), false
	return p.last
}

// mysqlPos is a MySQL executed GTID set, each GTID event's GTID added to it (go-mysql's set:
// intervals per uuid and tag, merged as they grow).
type mysqlPos struct {
	set  *gomysql.MysqlGTIDSet
	from gomysql.GTIDSet // a copy for the syncer, which keeps it: set changes under us
	ev   replication.GTIDEvent
}

func (p *mysqlPos) start() gomysql.GTIDSet { return p.from }

func (p *mysqlPos) advance(ev *replication.BinlogEvent) (bool, error) {
	switch ev.Header.EventType {
	case replication.GTID_EVENT:
		body, err := eventBody(ev)
		if err != nil {
			return false, err
		}
		// flags (1), uuid (16), gno (8).
		if len(body) < 1+replication.SidLength+8 {
			return false, errShortEvent
		}
		if err := p.ev.Decode(body); err != nil {
			return false, err
		}
		u, err := uuid.FromBytes(p.ev.SID)
		if err != nil {
			return false, err
		}
		p.set.AddGTID(u, p.ev.GNO)
		return true, nil
	case replication.GTID_TAGGED_LOG_EVENT:
		// MySQL 8.4 tagged GTIDs (uuid:tag:gno): rare, so decoded by go-mysql as they come.
		body, err := eventBody(ev)
		if err != nil {
			return false, err
		}
		var e replication.GtidTaggedLogEvent
		if err := decodeSafely(&e, body); err != nil {
			return false, err
		}
		u, err := uuid.FromBytes(e.SID)
		if err != nil {
			return false, err
		}
		p.set.AddGTIDWithTag(u, e.Tag, e.GNO)
		return true, nil
	}
	// ANONYMOUS_GTID_EVENT (gtid_mode OFF) names no GTID: the position does not move.
	return false, nil
}

func (p *mysqlPos) String() string { return p.set.String() }

// eventBody is an event's body (after the common header, without checksum). The syncer runs
// in raw mode (see stream.go), so every event but FORMAT_DESCRIPTION and ROTATE arrives
// undecoded.
func eventBody(ev *replication.BinlogEvent) ([]byte, error) {
	if g, ok := ev.Event.(*replication.GenericEvent); ok {
		return g.Data, nil
	}
	return nil, fmt.Errorf("%s event arrived decoded as %T", ev.Header.EventType, ev.Event)
}

// decodeSafely runs a go-mysql decoder that indexes its input without checking its length.
func decodeSafely(e replication.Event, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoding a GTID event: %v", r)
		}
	}()
	return e.Decode(body)
}
