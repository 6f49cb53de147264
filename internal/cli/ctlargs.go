package cli

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/admin"
)

// ctlFlags holds sluice ctl's flag values: the global ones, which every command takes, and the
// commands' own (drain's --timeout), each command naming those it takes.
type ctlFlags struct {
	admin, token, ca, config, output string
	insecure                         bool
	timeout                          string // drain
	outFile                          string // export
	revision                         string // import
}

// globalSet defines the flags every command takes, bound to f.
func (f *ctlFlags) globalSet() *flag.FlagSet {
	fs := flag.NewFlagSet("sluice ctl", flag.ContinueOnError)
	fs.StringVar(&f.admin, "admin", "", "the admin API's `URL`")
	fs.StringVar(&f.token, "token", "", "the admin `TOKEN`")
	fs.StringVar(&f.ca, "ca", "", "PEM certificate(s) `FILE` to trust for an https admin URL (default: --config's tls.cert, else the system's)")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify an https admin URL's certificate")
	fs.StringVar(&f.config, "config", "", "a configuration `FILE` to take the address and token from (only its admin section and tls.cert are read)")
	fs.StringVar(&f.output, "o", "table", "output `FORMAT`: table or json")
	return fs
}

// commandSet defines every command's own flags, bound to f; ctlCommand.flags says which of
// them a command takes.
func (f *ctlFlags) commandSet() *flag.FlagSet {
	fs := flag.NewFlagSet("sluice ctl", flag.ContinueOnError)
	fs.StringVar(&f.timeout, "timeout", "", "close the sessions still on the node after `D` (default 30s)")
	fs.StringVar(&f.outFile, "output", "", "write to `FILE` (default: standard output)")
	fs.StringVar(&f.revision, "revision", "", "replace the stored configuration only if it is still at revision `N` (default: the one the\nfile's first line names, as export wrote it, else the one in force on that sluice)")
	return fs
}

// ctlCommand is one command of sluice ctl: what it takes and what it does. The table
// ctlCommands is the one place that says so, for the parser, the usage texts and the run.
type ctlCommand struct {
	name     string
	args     string   // its positional arguments, as its usage shows them ("NODE")
	min, max int      // how many positional arguments it takes (max < 0: any number more)
	flags    []string // its own flags (commandSet's), besides the global ones
	help     string   // what it does; lines after the first are continuations
	run      func(c *ctl, args []string, f *ctlFlags) error
}

// usageError is a command line that cannot be run (exit status 2); run returns one for an
// argument it cannot read.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

var ctlCommands = []*ctlCommand{
	{name: "status", help: "nodes and endpoints, as the monitor and the endpoints see them now, and which\nnodes take each endpoint's reads (and why not the others)",
		run: func(c *ctl, _ []string, _ *ctlFlags) error { return c.status() }},
	{name: "endpoint", args: "NAME [KEY=VALUE...]", min: 1, max: -1,
		help: `one endpoint's settings and figures; with KEY=VALUE, change settings
while it serves: read_weights=replica1:50 (only the nodes named change; the
answer lists every weight in force), balance=weighted,
consistency=session, consistency_timeout=20ms, max_replica_lag=5s,
transaction_split=true, max_connections=500, nearest_zone=true,
connections_from=nodes, multi_statements=strict, mode=read-only (new
connections), allow=10.0.0.0/8,192.168.1.5; KEY=default puts the default back`,
		run: func(c *ctl, args []string, _ *ctlFlags) error {
			if len(args) == 1 {
				return c.endpoint(args[0])
			}
			patch, err := parseSettings(args[1:])
			if err != nil {
				return &usageError{err.Error()}
			}
			return c.patch(args[0], patch)
		}},
	{name: "create-endpoint", args: "NAME listen=ADDR [KEY=VALUE...]", min: 2, max: -1,
		help: "a new endpoint, listening at once (settings as in the file)", run: createRun("endpoints")},
	{name: "delete-endpoint", args: "NAME", min: 1, max: 1,
		help: "stop it accepting; its sessions finish within timeouts.shutdown", run: deleteRun("endpoints")},
	{name: "create-node", args: "NAME address=HOST:PORT [zone=Z] [read_weights=ENDPOINT:WEIGHT,...]", min: 2, max: -1,
		help: "add a replica: watched at once, reads once it is seen answering", run: createRun("nodes")},
	{name: "delete-node", args: "NAME", min: 1, max: 1, help: "remove a drained node", run: deleteRun("nodes")},
	{name: "drain", args: "NODE", min: 1, max: 1, flags: []string{"timeout"},
		help: `take a replica out of service: no new reads at once, sessions leave
at their next statement boundary, what is left is closed after --timeout`,
		run: func(c *ctl, args []string, f *ctlFlags) error {
			var body any
			if f.timeout != "" {
				body = map[string]string{"timeout": f.timeout}
			}
			var n admin.Node
			return c.do("POST", "/v1/nodes/"+url.PathEscape(args[0])+"/drain", body, &n, func(any) {
				fmt.Fprintf(c.stdout, "%s: %s (%d connections from sluice)\n", n.Name, n.State, n.Connections)
			})
		}},
	{name: "undrain", args: "NODE", min: 1, max: 1, help: "put it back in service",
		run: func(c *ctl, args []string, _ *ctlFlags) error {
			var n admin.Node
			return c.do("POST", "/v1/nodes/"+url.PathEscape(args[0])+"/undrain", nil, &n, func(any) { fmt.Fprintf(c.stdout, "%s: %s\n", n.Name, n.State) })
		}},
	{name: "pools", help: "the session-level pool per node and user: open, idle, in use, waiting, created, reused, resets",
		run: func(c *ctl, _ []string, _ *ctlFlags) error { return c.pools() }},
	{name: "sessions", help: "client sessions: user, client, endpoint, nodes, transaction, age",
		run: func(c *ctl, _ []string, _ *ctlFlags) error { return c.sessions() }},
	{name: "kill", args: "ID", min: 1, max: 1, help: "close a client session",
		run: func(c *ctl, args []string, _ *ctlFlags) error {
			id, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil {
				return usagef("kill %q: want a session id (a number)", args[0])
			}
			return c.do("DELETE", "/v1/sessions/"+strconv.FormatUint(id, 10), nil, nil, func(any) { fmt.Fprintf(c.stdout, "session %d killed\n", id) })
		}},
	{name: "cluster", help: "the store the sluice nodes share their configuration through (etcd: connected,\nrevisions) and the live nodes",
		run: func(c *ctl, _ []string, _ *ctlFlags) error { return c.cluster() }},
	{name: "export", flags: []string{"output"},
		help: "the configuration in force: with a store, the stored one (without the nodes' own\nsettings: name, zone, admin, log, listen, store), first line its revision",
		run:  func(c *ctl, _ []string, f *ctlFlags) error { return c.export(f.outFile) }},
	{name: "import", args: "FILE", min: 1, max: 1, flags: []string{"revision"},
		help: `replace the stored configuration with FILE's (its own settings, such as a whole
sluice.yaml's store and admin, are left out); every sluice node applies it`,
		run: func(c *ctl, args []string, f *ctlFlags) error { return c.importConfig(args[0], f.revision) }},
	{name: "reload", help: "read the configuration file again and apply what changed",
		run: func(c *ctl, _ []string, _ *ctlFlags) error {
			var ch admin.Change
			return c.do("POST", "/v1/reload", nil, &ch, func(any) { c.printChange(ch, true) })
		}},
}

func findCtlCommand(name string) *ctlCommand {
	for _, c := range ctlCommands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// ctlLine is a parsed sluice ctl command line.
type ctlLine struct {
	flags ctlFlags
	cmd   *ctlCommand // nil: none named (only with help)
	args  []string    // cmd's positional arguments
	help  bool        // -h, --help or "help" anywhere: print the usage, send nothing
}

// parseCtl reads a sluice ctl command line: the global flags and the command's own anywhere,
// before or after the command and its arguments, as -name, --name, -name=value or -name
// value; -h or --help anywhere, or the command help, asks for the usage (the command's, when
// one is named); "--" ends the flags. The first argument that is not a flag names the command.
// On error the line holds what was read, so that the usage shown is the command's.
func parseCtl(args []string) (*ctlLine, error) {
	l := &ctlLine{}
	global, own := l.flags.globalSet(), l.flags.commandSet()
	var pos, ownSet []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if name == "h" || name == "help" {
			l.help = true
			continue
		}
		fs := global
		f := global.Lookup(name)
		if f == nil {
			fs, f = own, own.Lookup(name)
			ownSet = append(ownSet, name)
		}
		if f == nil {
			return l.withCommand(pos), usagef("unknown flag %s", a)
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 == len(args) {
				return l.withCommand(pos), usagef("flag -%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return l.withCommand(pos), usagef("-%s %q: %v", name, value, err)
		}
	}
	if len(pos) > 0 && pos[0] == "help" {
		l.help, pos = true, pos[1:]
	}
	if len(pos) == 0 {
		if l.help {
			return l, nil
		}
		return l, usagef("a command is needed")
	}
	if l.withCommand(pos); l.cmd == nil {
		return l, usagef("unknown command %q", pos[0])
	}
	if l.help {
		return l, nil
	}
	for _, name := range ownSet {
		if !slices.Contains(l.cmd.flags, name) {
			return l, usagef("%s takes no flag -%s", l.cmd.name, name)
		}
	}
	if o := l.flags.output; o != "table" && o != "json" {
		return l, usagef("-o %q: want table or json", o)
	}
	switch n := len(l.args); {
	case n < l.cmd.min:
		return l, usagef("%s needs %s", l.cmd.name, l.cmd.args)
	case l.cmd.max >= 0 && n > l.cmd.max:
		return l, usagef("%s takes %s, not %q", l.cmd.name, orWord(l.cmd.args, "no arguments"), l.args)
	}
	return l, nil
}

// withCommand sets the command named by pos[0] (nil when pos is empty or names none) and its
// arguments, and returns l.
func (l *ctlLine) withCommand(pos []string) *ctlLine {
	if len(pos) > 0 {
		l.cmd, l.args = findCtlCommand(pos[0]), pos[1:]
	}
	return l
}

func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}

const ctlIntro = `Talks to a running sluice's admin API (admin.listen in its configuration).

--admin defaults to the admin.listen of --config's file (of which only admin and tls.cert are
read, so the application's secrets need not be set), else http://127.0.0.1:6080; --token to
the environment's SLUICE_ADMIN_TOKEN, else --config's admin.token. An https URL's certificate
is checked against --ca, else --config's tls.cert, else the system's (--insecure: not
checked). Flags go before or after the command and its arguments; "--" ends them. Exit
status: 0 done, 1 the API refused or could not be reached, 2 bad usage.
`

// usage writes the usage of l's command, or sluice ctl's when it names none.
func (l *ctlLine) usage(w io.Writer) {
	var fresh ctlFlags // the defaults, not what the command line set
	if l.cmd == nil {
		fmt.Fprint(w, "Usage: sluice ctl [FLAGS] COMMAND [ARGS] [FLAGS]\n\n"+ctlIntro+"\nCommands:\n")
		for _, c := range ctlCommands {
			line := c.name
			if c.args != "" {
				line += " " + c.args
			}
			for _, f := range c.flags {
				line += " [--" + f + " " + flagArg(fresh.commandSet().Lookup(f)) + "]"
			}
			if len(line) > 29 {
				fmt.Fprintf(w, "  %s\n  %-29s ", line, "")
			} else {
				fmt.Fprintf(w, "  %-29s ", line)
			}
			fmt.Fprintln(w, strings.ReplaceAll(c.help, "\n", "\n"+strings.Repeat(" ", 32)))
		}
		fmt.Fprint(w, "\nRun 'sluice ctl COMMAND --help' for one command.\n\nFlags:\n")
		printFlags(w, fresh.globalSet(), nil)
		return
	}
	c := l.cmd
	fmt.Fprintf(w, "Usage: sluice ctl %s", c.name)
	if c.args != "" {
		fmt.Fprint(w, " "+c.args)
	}
	for _, f := range c.flags {
		fmt.Fprintf(w, " [--%s %s]", f, flagArg(fresh.commandSet().Lookup(f)))
	}
	fmt.Fprintf(w, " [FLAGS]\n\n%s.\n", strings.ToUpper(c.help[:1])+c.help[1:])
	if len(c.flags) > 0 {
		fmt.Fprint(w, "\nFlags of "+c.name+":\n")
		printFlags(w, fresh.commandSet(), c.flags)
	}
	fmt.Fprint(w, "\nFlags of every command:\n")
	printFlags(w, fresh.globalSet(), nil)
}

// flagArg is the name of f's value as its usage quotes it (`D`).
func flagArg(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	return name
}

// printFlags writes fs's flags, only those named when names is not nil, as flag's
// PrintDefaults does.
func printFlags(w io.Writer, fs *flag.FlagSet, names []string) {
	out := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if names == nil || slices.Contains(names, f.Name) {
			out.Var(f.Value, f.Name, f.Usage)
		}
	})
	out.SetOutput(w)
	out.PrintDefaults()
}
