package binlog

import (
	"context"
	"log/slog"
	"time"
)

// warnEvery is how long one failure, repeating, stays quiet after it was logged.
const warnEvery = time.Minute

// maxRemembered bounds the failures remembered for rate limiting.
const maxRemembered = 16

// logLimiter decides which of a stream's state changes are logged: a failure when it is new
// or was last logged warnEvery ago (with how often it repeated meanwhile), a start when the
// last line logged was a failure (or nothing). A stream that keeps failing the same way logs
// once a minute; one that flaps between streaming and one failure, twice (the failure, and the
// start after it). Used from the Run goroutine only.
type logLimiter struct {
	failures  map[string]*seen
	streaming bool // the last line logged said the stream works
}

type seen struct {
	at      time.Time // last logged
	repeats int       // since then, not logged
}

// failed reports whether a failure with message msg is logged now, and how many times it
// happened unlogged since it last was.
func (l *logLimiter) failed(msg string, now time.Time) (log bool, repeats int) {
	if s, ok := l.failures[msg]; ok && now.Sub(s.at) < warnEvery {
		s.repeats++
		return false, 0
	} else if ok {
		repeats = s.repeats
	}
	if l.failures == nil {
		l.failures = map[string]*seen{}
	}
	if len(l.failures) >= maxRemembered {
		for k, s := range l.failures {
			if now.Sub(s.at) >= warnEvery {
				delete(l.failures, k)
			}
		}
		if len(l.failures) >= maxRemembered {
			clear(l.failures)
		}
	}
	l.failures[msg] = &seen{at: now}
	l.streaming = false
	return true, repeats
}

// started reports whether a start is logged now.
func (l *logLimiter) started() bool {
	if l.streaming {
		return false
	}
	l.streaming = true
	return true
}

// debugHandler passes go-mysql's own log records on at Debug level. The syncer logs every
// connection, and each failure as an Error, on every attempt; this package logs what matters
// once (rate-limited), so the library's lines are detail for debugging.
type debugHandler struct{ h slog.Handler }

func (d debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return debugHandler{d.h.WithAttrs(attrs)}
}

func (d debugHandler) WithGroup(name string) slog.Handler { return debugHandler{d.h.WithGroup(name)} }
