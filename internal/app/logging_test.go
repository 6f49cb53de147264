package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/admin"
	"github.com/sluicedb/sluice/internal/config"
)

// syncBuffer is a log sink tests read while the app writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loggedApp is offlineApp with the process logger NewLogger builds (format, from the file's log
// section) writing to the returned buffer.
func loggedApp(t *testing.T, text string) (*App, http.Handler, string, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	a, err := New(cfg, NewLogger(cfg.Log, out))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.topo.Close)
	return a, admin.New(admin.Options{Control: a}).Handler(), path, out
}

// jsonLines decodes the JSON log lines in out whose msg is msg.
func jsonLines(t *testing.T, out string, msg string) []map[string]any {
	t.Helper()
	var found []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", line, err)
		}
		if m["msg"] == msg {
			found = append(found, m)
		}
	}
	return found
}

// TestReloadChangesLogLevel: a reload that brings a new log.level puts it in force at once (the
// logger's LevelVar): debug lines appear after a reload to debug and disappear after one back
// to info, and the reload lists log.level as changed, not as needing a restart; log.format
// still needs one.
func TestReloadChangesLogLevel(t *testing.T) {
	text := offline + "log: {format: json, level: info}\n"
	a, _, path, out := loggedApp(t, text)
	a.log.Debug("probe one")
	if strings.Contains(out.String(), "probe one") {
		t.Fatal("a debug line was written at level info")
	}
	reload := func(text string) admin.Change {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		ch, err := a.Reload()
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	ch := reload(offline + "log: {format: json, level: debug}\n")
	if !strings.Contains(strings.Join(ch.Changed, " "), "log.level") || strings.Contains(strings.Join(ch.Restart, " "), "log") {
		t.Errorf("reload to debug: changed %v, restart %v; want log.level changed, no restart", ch.Changed, ch.Restart)
	}
	a.log.Debug("probe two")
	// A session's logger, derived before or after, follows the same level.
	a.log.With("conn", 7).Debug("probe three")
	if s := out.String(); !strings.Contains(s, "probe two") || !strings.Contains(s, "probe three") {
		t.Fatalf("no debug lines after the reload to debug:\n%s", s)
	}
	changed := jsonLines(t, out.String(), "log level changed")
	if len(changed) != 1 || !strings.Contains(toJSON(changed[0]["log.level"]), `"from":"info"`) ||
		!strings.Contains(toJSON(changed[0]["log.level"]), `"to":"debug"`) {
		t.Errorf("the change's log line: %v", changed)
	}
	reload(offline + "log: {format: json, level: info}\n")
	a.log.Debug("probe four")
	if strings.Contains(out.String(), "probe four") {
		t.Error("a debug line was written after the reload back to info")
	}
	ch = reload(offline + "log: {format: text, level: info}\n")
	if !strings.Contains(strings.Join(ch.Restart, " "), "log.format") {
		t.Errorf("a new log.format: restart %v, want log.format listed", ch.Restart)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestLogDurationsAsStrings: durations are written as "1.5s" by the JSON handler (not integer
// nanoseconds) and by the text handler, in groups too.
func TestLogDurationsAsStrings(t *testing.T) {
	var jb, tb bytes.Buffer
	NewLogger(config.Log{Format: "json"}, &jb).Info("x", "took", 1500*time.Millisecond, "g", map[string]any{}, "wait", 250*time.Microsecond)
	NewLogger(config.Log{Format: "json"}, &jb).WithGroup("g").Info("y", "took", 2*time.Second)
	var m map[string]any
	line, _, _ := strings.Cut(jb.String(), "\n")
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	if m["took"] != "1.5s" || m["wait"] != "250µs" {
		t.Errorf("JSON durations: took %v, wait %v; want \"1.5s\", \"250µs\"", m["took"], m["wait"])
	}
	if !strings.Contains(jb.String(), `"g":{"took":"2s"}`) {
		t.Errorf("a grouped duration: %s", jb.String())
	}
	NewLogger(config.Log{Format: "text"}, &tb).Info("x", "took", 1500*time.Millisecond)
	if !strings.Contains(tb.String(), "took=1.5s") {
		t.Errorf("text duration: %s", tb.String())
	}
}

// TestChangeLogsCarryValues: the log line of a change from the admin API names every setting
// it changed with its value before and after (a merged read_weights whole, a duration as the
// file writes it), and an undrain is logged.
func TestChangeLogsCarryValues(t *testing.T) {
	a, h, _, out := loggedApp(t, offline+"log: {format: json}\n")
	if code, _ := patch(t, h, "rw", `{"read_weights": {"replica1": 50}, "max_replica_lag": "5s", "balance": "weighted"}`); code != http.StatusOK {
		t.Fatalf("PATCH: %d", code)
	}
	lines := jsonLines(t, out.String(), "endpoint changed from the admin API")
	if len(lines) != 1 {
		t.Fatalf("change log lines: %d\n%s", len(lines), out.String())
	}
	got := toJSON(lines[0]["changed"])
	for _, want := range []string{
		`"read_weights":{"from":{"primary":0,"replica1":100,"replica2":100},"to":{"primary":0,"replica1":50,"replica2":100}}`,
		`"max_replica_lag":{"from":"30s","to":"5s"}`,
		`"balance":{"from":"least-active","to":"weighted"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the change log's changed %s lacks %s", got, want)
		}
	}
	if strings.Contains(got, "consistency") || strings.Contains(got, "mode") {
		t.Errorf("unchanged settings logged: %s", got)
	}

	// A drain and its end.
	if _, err := a.DrainNode("replica2", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UndrainNode("replica2"); err != nil {
		t.Fatal(err)
	}
	if l := jsonLines(t, out.String(), "drain ended from the admin API: the node takes reads again"); len(l) != 1 || l[0]["node"] != "replica2" {
		t.Errorf("undrain log: %v", l)
	}
	if l := jsonLines(t, out.String(), "drain started from the admin API"); len(l) != 1 || l[0]["timeout"] != "1m0s" {
		t.Errorf("drain log: %v", l)
	}
}

// TestReloadLogsEndpointChanges: a reload's log names each endpoint setting that changed, old
// and new.
func TestReloadLogsEndpointChanges(t *testing.T) {
	text := offline + "log: {format: json}\n"
	a, _, path, out := loggedApp(t, text)
	next := strings.Replace(text, "replica2: 100", "replica2: 7", 1)
	if err := os.WriteFile(path, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	lines := jsonLines(t, out.String(), "reload: endpoint changed")
	if len(lines) != 1 || lines[0]["endpoint"] != "rw" {
		t.Fatalf("reload change lines: %v\n%s", lines, out.String())
	}
	if got, want := toJSON(lines[0]["changed"]), `{"read_weights":{"from":{"primary":0,"replica1":100,"replica2":100},"to":{"primary":0,"replica1":100,"replica2":7}}}`; got != want {
		t.Errorf("reload's changed: %s, want %s", got, want)
	}
}
