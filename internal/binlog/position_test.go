package binlog

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"

	"github.com/sluicedb/sluice/internal/gtid"
)

// mariaEvent is a MARIADB_GTID_EVENT as the raw-mode syncer delivers it.
func mariaEvent(domain, server uint32, seq uint64) *replication.BinlogEvent {
	body := make([]byte, 13, 21)
	binary.LittleEndian.PutUint64(body, seq)
	binary.LittleEndian.PutUint32(body[8:], domain)
	body[12] = 0x0c // TRANSACTIONAL | ALLOW_PARALLEL, as a DML transaction has
	return &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.MARIADB_GTID_EVENT, ServerID: server},
		Event:  &replication.GenericEvent{Data: body},
	}
}

// mysqlEvent is a GTID_EVENT (without the logical-clock part, which is not read).
func mysqlEvent(u string, gno int64) *replication.BinlogEvent {
	body := make([]byte, 25)
	body[0] = 1
	id := uuid.MustParse(u)
	copy(body[1:], id[:])
	binary.LittleEndian.PutUint64(body[17:], uint64(gno))
	return &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.GTID_EVENT, ServerID: 1},
		Event:  &replication.GenericEvent{Data: body},
	}
}

func otherEvent(t replication.EventType) *replication.BinlogEvent {
	return &replication.BinlogEvent{Header: &replication.EventHeader{EventType: t}, Event: &replication.GenericEvent{}}
}

type gt struct {
	domain, server uint32
	seq            uint64
}

func TestMariaDBPosition(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  string
		events []gt
		want   []string // the position after each event
	}{
		{
			name:   "one domain",
			start:  "0-1-5",
			events: []gt{{0, 1, 6}, {0, 1, 7}},
			want:   []string{"0-1-6", "0-1-7"},
		},
		{
			name:   "empty start",
			start:  "",
			events: []gt{{0, 1, 1}},
			want:   []string{"0-1-1"},
		},
		{
			name:   "several domains, each moves alone",
			start:  "0-1-31,5-1-1",
			events: []gt{{5, 1, 2}, {0, 1, 32}, {0, 1, 33}},
			want:   []string{"0-1-31,5-1-2", "0-1-32,5-1-2", "0-1-33,5-1-2"},
		},
		{
			// The facts file: the primary committed 0-1-210, 0-1-211, 0-1-212, then 5-1-4; a
			// replica's binlog had 0-1-210, 0-1-211, 5-1-4, 0-1-212 (parallel apply). Both
			// end at the same position.
			name:   "domains interleaved on a replica",
			start:  "0-1-209,5-1-3",
			events: []gt{{0, 1, 210}, {0, 1, 211}, {5, 1, 4}, {0, 1, 212}},
			want:   []string{"0-1-210,5-1-3", "0-1-211,5-1-3", "0-1-211,5-1-4", "0-1-212,5-1-4"},
		},
		{
			name:   "new domains are printed in domain order",
			start:  "0-1-5,5-1-2",
			events: []gt{{10, 1, 1}, {2, 3, 1}, {1, 1, 9}},
			want:   []string{"0-1-5,5-1-2,10-1-1", "0-1-5,2-3-1,5-1-2,10-1-1", "0-1-5,1-1-9,2-3-1,5-1-2,10-1-1"},
		},
		{
			// After a switchover the new primary writes the domain with its own server id.
			name:   "server id changes",
			start:  "0-1-212",
			events: []gt{{0, 2, 213}},
			want:   []string{"0-2-213"},
		},
		{
			name:   "start given out of domain order",
			start:  "5-1-1,0-1-31",
			events: []gt{{0, 1, 32}},
			want:   []string{"0-1-32,5-1-1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := newTracker(true, tc.start)
			if err != nil {
				t.Fatal(err)
			}
			if got := tr.start().String(); !mustParse(t, got).Equal(*mustParse(t, tc.start)) {
				t.Errorf("start %q, want %q", got, tc.start)
			}
			for i, e := range tc.events {
				moved, err := tr.advance(mariaEvent(e.domain, e.server, e.seq))
				if err != nil || !moved {
					t.Fatalf("event %d: moved %v, %v", i, moved, err)
				}
				if got := tr.String(); got != tc.want[i] {
					t.Errorf("after %d-%d-%d: %q, want %q", e.domain, e.server, e.seq, got, tc.want[i])
				}
				// What it prints, the gtid package reads back as the same position.
				if p := mustParse(t, tr.String()); !p.Equal(*mustParse(t, tc.want[i])) {
					t.Errorf("%q does not parse back", tr.String())
				}
			}
		})
	}
}

func mustParse(t *testing.T, s string) *gtid.Position {
	t.Helper()
	p, err := gtid.Parse(gtid.MariaDB, s)
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestMariaDBPositionIgnoresOtherEvents(t *testing.T) {
	tr, _ := newTracker(true, "0-1-5")
	for _, ty := range []replication.EventType{
		replication.HEARTBEAT_EVENT, replication.MARIADB_GTID_LIST_EVENT, replication.TABLE_MAP_EVENT,
		replication.WRITE_ROWS_EVENTv1, replication.XID_EVENT, replication.QUERY_EVENT,
	} {
		if moved, err := tr.advance(otherEvent(ty)); moved || err != nil {
			t.Errorf("%s: moved %v, %v", ty, moved, err)
		}
	}
	rot := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.ROTATE_EVENT}, Event: &replication.RotateEvent{}}
	if moved, err := tr.advance(rot); moved || err != nil {
		t.Errorf("rotate: moved %v, %v", moved, err)
	}
	if got := tr.String(); got != "0-1-5" {
		t.Errorf("position %q", got)
	}
}

func TestMariaDBPositionBadEvents(t *testing.T) {
	tr, _ := newTracker(true, "0-1-5")
	short := mariaEvent(0, 1, 6)
	short.Event.(*replication.GenericEvent).Data = short.Event.(*replication.GenericEvent).Data[:12]
	if _, err := tr.advance(short); !errors.Is(err, errShortEvent) {
		t.Errorf("short event: %v", err)
	}
	decoded := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.MARIADB_GTID_EVENT}, Event: &replication.MariadbGTIDEvent{}}
	if _, err := tr.advance(decoded); err == nil {
		t.Error("a decoded event was taken for a raw one")
	}
	if _, err := newTracker(true, "0-1"); err == nil {
		t.Error("bad start position accepted")
	}
}

func TestMariaDBPositionAllocations(t *testing.T) {
	tr, _ := newTracker(true, "0-1-5,5-1-2")
	evs := []*replication.BinlogEvent{mariaEvent(0, 1, 6), mariaEvent(5, 1, 3)}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := tr.advance(evs[i%2]); err != nil {
			t.Fatal(err)
		}
		_ = tr.String()
		i++
	})
	// The printed string is the one allocation per event.
	if allocs > 1 {
		t.Errorf("%.1f allocations per event, want at most 1", allocs)
	}
}

func TestMySQLPosition(t *testing.T) {
	const a, b = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "8a94f357-aab4-11df-86ab-c80aa9429562"
	tr, err := newTracker(false, b+":1-100,\n"+a+":1-5")
	if err != nil {
		t.Fatal(err)
	}
	start := tr.start().String()
	for _, step := range []struct {
		ev   *replication.BinlogEvent
		want string
	}{
		{mysqlEvent(a, 6), a + ":1-6," + b + ":1-100"},
		{mysqlEvent(b, 102), a + ":1-6," + b + ":1-100:102"},
		{mysqlEvent(b, 101), a + ":1-6," + b + ":1-102"},
	} {
		if moved, err := tr.advance(step.ev); err != nil || !moved {
			t.Fatalf("moved %v, %v", moved, err)
		}
		if got := tr.String(); got != step.want {
			t.Errorf("%q, want %q", got, step.want)
		}
	}
	if moved, err := tr.advance(otherEvent(replication.ANONYMOUS_GTID_EVENT)); moved || err != nil {
		t.Errorf("anonymous GTID: moved %v, %v", moved, err)
	}
	if got := tr.start().String(); got != start {
		t.Errorf("the start position handed to the syncer changed: %q, was %q", got, start)
	}
	short := mysqlEvent(a, 7)
	short.Event.(*replication.GenericEvent).Data = short.Event.(*replication.GenericEvent).Data[:24]
	if _, err := tr.advance(short); !errors.Is(err, errShortEvent) {
		t.Errorf("short event: %v", err)
	}
	if _, err := newTracker(false, "nope"); err == nil {
		t.Error("bad start position accepted")
	}
}
