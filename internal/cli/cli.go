// Package cli implements sluice's subcommands: flags, signals and exit codes.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Version is set at build time with -ldflags "-X github.com/sluicedb/sluice/internal/cli.Version=...";
// without it, sluice reports what Go recorded of the build (see formatVersion).
var Version = "dev"

const usage = `sluice: a read/write-splitting proxy for MySQL and MariaDB

Usage:
  sluice serve [--config FILE] [--check]   run the proxy (default config ./sluice.yaml)
  sluice ctl [FLAGS] COMMAND [ARGS]        describe and change a running sluice (its admin API)
  sluice sandbox [SUBCOMMAND] [FLAGS]      start and control a local primary + replicas cluster
  sluice version                           print the version
  sluice help [COMMAND]                    show help for a command

Run 'sluice COMMAND --help' for the flags of one command.
`

// Run runs the subcommand named by args[0] and returns the process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "sandbox":
		return runSandbox(args[1:], stdout, stderr)
	case "ctl":
		return runCtl(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "sluice %s\n", version())
		return 0
	case "help", "-h", "--help":
		if len(args) > 1 {
			return Run([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// parseFlags parses args with fs, whose Usage writes to fs.Output(). On --help it prints the
// usage once, to stdout, and returns 0; on a bad flag the flag package's message and the usage
// go to fs's output (stderr) and it returns 2. ok is false in both cases.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // Parse would print it on --help too, to stderr
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		out := fs.Output()
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(out)
		return 0, false
	default:
		fs.Usage()
		return 2, false
	}
}
