package proxy

import (
	"errors"
	"sync"
	"time"
)

// primaryPos shares reads of the primary's position among the global-level reads that arrive
// together, as a group commit shares a disk flush: a read needs a reading of the position that
// began after the read arrived (then it holds everything committed before), so a read that
// arrives while one is under way waits for it to end, then for the next, which one of the
// waiting sessions starts for all of them. Under load one reading serves many reads; alone, a
// read costs one round trip to the primary, as it would unshared.
type primaryPos struct {
	mu      sync.Mutex
	started uint64        // readings begun
	running bool          // reading number started is under way
	done    uint64        // the last reading finished
	pos     []byte        // its result; failed: it could not be read
	failed  bool          // (pos is kept, so its buffer is reused)
	end     chan struct{} // closed when the running reading ends
	reads   uint64        // readings made (SHOW CONSISTENCY)
}

var errNoPosition = errors.New("the primary's position could not be read")

// get appends to b the primary's position as read after the call began, read by read (which
// appends it to its argument, over the caller's primary connection) when no reading that the
// caller can use is under way. It gives up when killed is closed (the caller's session was
// killed) or after wait.
func (pp *primaryPos) get(read func([]byte) ([]byte, error), killed <-chan struct{}, b []byte, wait time.Duration) ([]byte, error) {
	pp.mu.Lock()
	want := pp.started + 1 // one under way began before this read arrived
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if pp.done >= want {
			defer pp.mu.Unlock()
			if pp.failed {
				return b, errNoPosition
			}
			return append(b, pp.pos...), nil
		}
		if !pp.running {
			// This session reads it, for itself and for the reads that arrive meanwhile.
			pp.started++
			pp.running, pp.end = true, make(chan struct{})
			pp.reads++
			pp.mu.Unlock()
			start := len(b)
			got, err := read(b)
			pp.mu.Lock()
			pp.done, pp.running = pp.started, false
			pp.failed = err != nil
			if err == nil {
				pp.pos = append(pp.pos[:0], got[start:]...)
			}
			close(pp.end)
			pp.mu.Unlock()
			return got, err
		}
		end := pp.end
		pp.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-end:
		case <-killed:
			return b, errNoPosition
		case <-timer.C:
			return b, errNoPosition
		}
		pp.mu.Lock()
	}
}

// readings reports how many times the primary's position was read.
func (pp *primaryPos) readings() uint64 {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.reads
}
