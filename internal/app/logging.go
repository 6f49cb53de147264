package app

import (
	"io"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/config"
)

// NewLogger builds the process logger from the log section of the configuration: text or JSON
// lines to w, at log.level. The level lives in a slog.LevelVar held by the logger's handler
// (levelHandler): an App built with this logger changes it when a reload (SIGHUP, POST
// /v1/reload) brings a new log.level, with no restart. log.format is read once.
//
// Durations are written as Go duration strings ("1.5s", "250ms") by both handlers: slog's JSON
// handler would write a time.Duration as integer nanoseconds, which reads wrong next to the
// configuration's own "30s" and the text format.
func NewLogger(c config.Log, w io.Writer) *slog.Logger {
	lv := new(slog.LevelVar)
	lv.Set(parseLevel(c.Level))
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: durationsAsStrings}
	var h slog.Handler
	if c.Format == config.LogFormatJSON {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(&levelHandler{Handler: h, level: lv})
}

// parseLevel is log.level's slog level (validated by config: unknown means info).
func parseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// durationsAsStrings is the handlers' ReplaceAttr: a time.Duration becomes its String(), in
// every group.
func durationsAsStrings(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// levelHandler is the root handler of a logger NewLogger built: it carries the LevelVar the
// wrapped handler filters with, so that the App finds it (logLevel). Loggers derived with With
// or WithGroup get the wrapped handler's own derivations, which share the same LevelVar.
type levelHandler struct {
	slog.Handler
	level *slog.LevelVar
}

// logLevel is the LevelVar of a logger NewLogger built; nil for any other logger (its level
// cannot change while sluice runs).
func logLevel(l *slog.Logger) *slog.LevelVar {
	if h, ok := l.Handler().(*levelHandler); ok {
		return h.level
	}
	return nil
}

// setLogLevel puts next's log.level in force when it differs from the one in force (under
// changeMu), and says so in the log and in ch; false when the level cannot change live (a
// logger sluice did not build).
func (a *App) setLogLevel(old, next string) bool {
	if a.level == nil {
		return false
	}
	if parseLevel(old) != parseLevel(next) {
		// Logged at warn, so that the line shows at the old level and the new one alike.
		a.log.Warn("log level changed", "log.level", fromTo(old, next))
		a.level.Set(parseLevel(next))
	}
	return true
}

// fromTo is a changed setting's value before and after, as one log attribute's group value
// ({"from": old, "to": new} in JSON; key.from=old key.to=new in text).
func fromTo(old, next any) slog.Value {
	return slog.GroupValue(slog.Any("from", loggable(old)), slog.Any("to", loggable(next)))
}

// loggable is a setting's value as the log shows it: config durations as their text ("30s").
func loggable(v any) any {
	switch v := v.(type) {
	case config.Duration:
		return v.Duration.String()
	case time.Duration:
		return v.String()
	}
	return v
}

// endpointChanges are the settings that differ between two versions of an endpoint, each a log
// attribute named by its configuration key with the value before and after (fromTo), in the
// order of the configuration's fields: what a change log says, so that the log alone tells
// what an operator changed ("read_weights" from map[replica1:100 replica2:100] to
// map[replica1:50 replica2:100]). A nil side is an endpoint that did not exist (or no longer
// does): every setting of the other is listed.
func endpointChanges(old, next *config.Endpoint) []any {
	var zero config.Endpoint
	if old == nil {
		old = &zero
	}
	if next == nil {
		next = &zero
	}
	ov, nv := reflect.ValueOf(old).Elem(), reflect.ValueOf(next).Elem()
	t := ov.Type()
	var out []any
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" || key == "name" {
			continue
		}
		o, n := ov.Field(i).Interface(), nv.Field(i).Interface()
		if !reflect.DeepEqual(o, n) {
			out = append(out, slog.Any(key, fromTo(o, n)))
		}
	}
	return out
}
