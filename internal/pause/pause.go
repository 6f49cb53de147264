package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx ends, whichever comes first, and reports whether the whole of d
// passed (false: ctx ended, and the caller should stop). A d of zero or less returns at once,
// true unless ctx has ended. Safe from any goroutine; the timer is released either way.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
