package monitor

import (
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
)

// history keeps the primary's positions as the monitor saw them move, with when it first saw
// each: a replica's lag is how long ago the primary first moved past what the replica has
// applied.
type history struct {
	entries []entry // oldest first; a new entry only when the position moved
}

type entry struct {
	at  time.Time
	pos gtid.Position
}

// maxEntries bounds the history whatever its time span.
const maxEntries = 8192

// add records the primary's position at now, and forgets entries older than keep (always
// keeping the newest).
func (h *history) add(now time.Time, pos gtid.Position, keep time.Duration) {
	if n := len(h.entries); n == 0 || !h.entries[n-1].pos.Equal(pos) {
		h.entries = append(h.entries, entry{at: now, pos: pos})
	}
	drop := 0
	for drop < len(h.entries)-1 && (now.Sub(h.entries[drop].at) > keep || len(h.entries)-drop > maxEntries) {
		drop++
	}
	h.entries = append(h.entries[:0], h.entries[drop:]...)
}

// lag is how long before now the primary first had a position that applied does not contain:
// 0 when applied contains the newest position; at least the history's span when applied is
// behind all of it.
func (h *history) lag(now time.Time, applied gtid.Position) time.Duration {
	n := len(h.entries)
	if n == 0 || applied.Contains(h.entries[n-1].pos) {
		return 0
	}
	// The first entry applied does not contain: positions only grow, so every later one is
	// missing too.
	first := n - 1
	for first > 0 && !applied.Contains(h.entries[first-1].pos) {
		first--
	}
	return now.Sub(h.entries[first].at)
}
