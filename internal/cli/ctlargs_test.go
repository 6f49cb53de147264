package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestParseCtl: one parser for every command: global and command flags before or after the
// command and its arguments, -h/--help anywhere (the command's usage, nothing sent), "--" ending
// the flags, and the command's own argument count and flags checked.
func TestParseCtl(t *testing.T) {
	for _, c := range []struct {
		args []string
		cmd  string   // "" none
		pos  []string // the command's arguments
		help bool
		want func(f ctlFlags) bool // the flags read; nil: not checked
		err  string                // "" no error
	}{
		{args: []string{"status"}, cmd: "status", pos: []string{}},
		{args: []string{"sessions", "-o", "json"}, cmd: "sessions", pos: []string{}, want: func(f ctlFlags) bool { return f.output == "json" }},
		{args: []string{"-o", "json", "sessions"}, cmd: "sessions", pos: []string{}, want: func(f ctlFlags) bool { return f.output == "json" }},
		{args: []string{"sessions", "--o=json"}, cmd: "sessions", pos: []string{}, want: func(f ctlFlags) bool { return f.output == "json" }},
		{args: []string{"drain", "replica1", "--timeout", "30s"}, cmd: "drain", pos: []string{"replica1"}, want: func(f ctlFlags) bool { return f.timeout == "30s" }},
		{args: []string{"drain", "--timeout=30s", "replica1"}, cmd: "drain", pos: []string{"replica1"}, want: func(f ctlFlags) bool { return f.timeout == "30s" }},
		{args: []string{"--timeout", "5s", "drain", "replica1"}, cmd: "drain", pos: []string{"replica1"}, want: func(f ctlFlags) bool { return f.timeout == "5s" }},
		{args: []string{"drain", "replica1"}, cmd: "drain", pos: []string{"replica1"}, want: func(f ctlFlags) bool { return f.timeout == "" }},
		{args: []string{"endpoint", "rw", "balance=weighted", "--admin", "127.0.0.1:7080", "-token", "t", "mode=read-only"}, cmd: "endpoint",
			pos: []string{"rw", "balance=weighted", "mode=read-only"}, want: func(f ctlFlags) bool { return f.admin == "127.0.0.1:7080" && f.token == "t" }},
		{args: []string{"status", "--insecure", "--admin", "https://h:1"}, cmd: "status", pos: []string{}, want: func(f ctlFlags) bool { return f.insecure && f.admin == "https://h:1" }},
		{args: []string{"status", "--insecure=false"}, cmd: "status", pos: []string{}, want: func(f ctlFlags) bool { return !f.insecure }},
		{args: []string{"--", "drain", "--help"}, cmd: "drain", pos: []string{"--help"}},
		{args: []string{"drain", "--", "-odd-name"}, cmd: "drain", pos: []string{"-odd-name"}},
		{args: []string{"--config", "s.yaml", "kill", "42"}, cmd: "kill", pos: []string{"42"}, want: func(f ctlFlags) bool { return f.config == "s.yaml" }},

		// Help: everywhere, for the command named, whatever else is wrong with the line.
		{args: []string{"--help"}, help: true},
		{args: []string{"-h"}, help: true},
		{args: []string{"help"}, help: true},
		{args: []string{"help", "drain"}, cmd: "drain", help: true},
		{args: []string{"drain", "--help"}, cmd: "drain", help: true},
		{args: []string{"drain", "-h"}, cmd: "drain", help: true},
		{args: []string{"-help", "drain"}, cmd: "drain", help: true},
		{args: []string{"drain", "replica1", "--timeout", "5s", "-h"}, cmd: "drain", help: true},
		{args: []string{"status", "extra", "--help"}, cmd: "status", help: true},
		{args: []string{"status", "--timeout", "5s", "--help"}, cmd: "status", help: true},
		{args: []string{"kill", "--help"}, cmd: "kill", help: true},
		{args: []string{"endpoint", "--help"}, cmd: "endpoint", help: true},
		{args: []string{"create-node", "-h"}, cmd: "create-node", help: true},

		// Refused: nothing is sent.
		{args: []string{}, err: "a command is needed"},
		{args: []string{"-o", "json"}, err: "a command is needed"},
		{args: []string{"bogus"}, err: `unknown command "bogus"`},
		{args: []string{"bogus", "--help"}, help: true, err: `unknown command "bogus"`},
		{args: []string{"status", "--bogus"}, cmd: "status", err: "unknown flag --bogus"},
		{args: []string{"drain"}, cmd: "drain", err: "drain needs NODE"},
		{args: []string{"drain", "a", "b"}, cmd: "drain", err: `drain takes NODE, not ["a" "b"]`},
		{args: []string{"status", "extra"}, cmd: "status", err: `status takes no arguments, not ["extra"]`},
		{args: []string{"status", "--timeout", "5s"}, cmd: "status", err: "status takes no flag -timeout"},
		{args: []string{"sessions", "-o", "yaml"}, cmd: "sessions", err: `-o "yaml": want table or json`},
		{args: []string{"drain", "replica1", "--timeout"}, cmd: "drain", err: "flag -timeout needs a value"},
		{args: []string{"status", "--insecure=maybe"}, cmd: "status", err: `-insecure "maybe"`},
		{args: []string{"create-endpoint", "x"}, cmd: "create-endpoint", err: "create-endpoint needs NAME listen=ADDR"},
	} {
		l, err := parseCtl(c.args)
		name := strings.Join(c.args, " ")
		switch {
		case c.err == "" && err != nil:
			t.Errorf("ctl %s: %v", name, err)
			continue
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ctl %s: error %v, want %q", name, err, c.err)
		}
		if l == nil {
			t.Errorf("ctl %s: no line returned", name)
			continue
		}
		got := ""
		if l.cmd != nil {
			got = l.cmd.name
		}
		if got != c.cmd || l.help != c.help {
			t.Errorf("ctl %s: command %q help %v; want %q help %v", name, got, l.help, c.cmd, c.help)
		}
		if c.err == "" && !c.help && !slices.Equal(l.args, c.pos) {
			t.Errorf("ctl %s: arguments %q, want %q", name, l.args, c.pos)
		}
		if c.want != nil && !c.want(l.flags) {
			t.Errorf("ctl %s: flags %+v", name, l.flags)
		}
	}
}

// TestCtlHelpSendsNothing: every command's --help and -h print that command's usage once, on
// stdout, exit 0 and send no request; a refused line exits 2 with the command's usage on
// stderr and sends none either (before, drain --help asked to drain a node named "--help").
func TestCtlHelpSendsNothing(t *testing.T) {
	requests, drainBody := 0, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		if strings.HasSuffix(r.URL.Path, "/drain") {
			b, _ := io.ReadAll(r.Body)
			drainBody = r.URL.Path + " " + string(b)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	for _, c := range ctlCommands {
		for _, h := range []string{"--help", "-h"} {
			for _, args := range [][]string{{c.name, h}, {h, c.name}, {c.name, "x", "y", h}} {
				var out, errOut strings.Builder
				code := Run(append([]string{"ctl", "--admin", srv.URL}, args...), &out, &errOut)
				if code != 0 || errOut.Len() != 0 || strings.Count(out.String(), "Usage: sluice ctl "+c.name+" ") != 1 {
					t.Errorf("ctl %q: exit %d, stdout %q, stderr %q; want %s's usage on stdout", args, code, out.String(), errOut.String(), c.name)
				}
			}
		}
	}
	for _, args := range [][]string{{"drain"}, {"status", "--timeout", "1s"}, {"sessions", "-o", "yaml"}, {"kill", "x"}} {
		var out, errOut strings.Builder
		code := Run(append([]string{"ctl", "--admin", srv.URL}, args...), &out, &errOut)
		if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "sluice ctl: ") {
			t.Errorf("ctl %q: exit %d, stdout %q, stderr %q; want exit 2 and the error", args, code, out.String(), errOut.String())
		}
	}
	if requests != 0 {
		t.Errorf("%d requests sent for help and refused lines", requests)
	}
	// The lines the issue found refused now run: a flag after the command's arguments.
	for _, args := range [][]string{{"sessions", "-o", "json"}, {"drain", "replica1", "--timeout", "30s", "-o", "json"}, {"status", "-o", "json"}} {
		var out, errOut strings.Builder
		if code := Run(append([]string{"ctl", "--admin", srv.URL}, args...), &out, &errOut); code != 0 || out.String() != "{}" {
			t.Errorf("ctl %q: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	if requests != 3 || drainBody != `/v1/nodes/replica1/drain {"timeout":"30s"}` {
		t.Errorf("%d requests for 3 lines; the drain: %q", requests, drainBody)
	}
}
