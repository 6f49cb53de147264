package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/sluicedb/sluice/internal/app"
	"github.com/sluicedb/sluice/internal/config"
)

const serveUsage = `Usage: sluice serve [--config FILE] [--zone ZONE] [--check] [--cpuprofile FILE]

Runs the proxy with the configuration in FILE (default ./sluice.yaml) until SIGTERM or SIGINT,
then stops accepting, lets running statements finish for up to timeouts.shutdown, and exits.
SIGHUP reads FILE again and applies what can change while sluice runs (the endpoints and their
settings, replicas added or removed, log.level), as POST /v1/reload does, and logs what needs a
restart; an invalid file changes nothing, and the error is logged.

--zone (or the environment variable SLUICE_ZONE; the flag wins) says where this sluice runs, in
place of the file's zone: endpoints with nearest_zone read from that zone's nodes first.

Profiling: --cpuprofile writes a CPU profile of the whole run (read it with 'go tool pprof');
Go's /debug/pprof/ handlers are on the admin listener (admin.listen), behind its token.

Flags:
`

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "sluice.yaml", "configuration file")
	check := fs.Bool("check", false, "validate the configuration, try the monitor's login on every node, and exit")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	zone := fs.String("zone", "", "the zone this sluice runs in (overrides SLUICE_ZONE and the file's zone)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	data, err := os.ReadFile(*path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// With store.etcd, the file holds this sluice's own settings (LocalKeys) and the rest is
	// read from etcd (app.Open); without, it is the whole configuration.
	cfg, err := config.ParseLocal(*path, data)
	if err == nil && !cfg.Store.Enabled() {
		cfg, err = config.Parse(*path, data)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	z := os.Getenv("SLUICE_ZONE")
	if *zone != "" {
		z = *zone
	}
	if z != "" {
		cfg.Zone = z
	}
	if *check {
		if cfg.Store.Enabled() {
			fmt.Fprintf(stdout, "%s: this sluice's own settings are valid; the shared configuration is in etcd (sluice ctl export --config %s)\n", *path, *path)
			return 0
		}
		fmt.Fprintf(stdout, "%s: configuration is valid\n", *path)
		return checkMonitor(cfg, stdout)
	}
	logger := NewLogger(cfg.Log, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := app.Open(ctx, *path, z, version(), logger)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 1
	}
	if t := a.Threads(); t > 0 && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(t)
	}
	logger.Info("sluice starting", "version", version(), "threads", runtime.GOMAXPROCS(0))
	stopProfiling, err := startProfiling(*cpuprofile, logger)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return 1
	}
	defer stopProfiling()
	go func() {
		// The first signal starts the graceful shutdown; from then on the signals' default
		// action is back, so a second one ends the process at once.
		<-ctx.Done()
		stop()
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if _, err := a.Reload(); err != nil {
				logger.Error("SIGHUP: reload refused", "err", err)
			}
		}
	}()
	if err := a.Run(ctx); err != nil {
		logger.Error("sluice stopped", "err", err)
		return 1
	}
	return 0
}

// NewLogger builds the process logger from the log section of the configuration
// (app.NewLogger: its level follows reloads).
func NewLogger(c config.Log, w io.Writer) *slog.Logger { return app.NewLogger(c, w) }
