package cli

import (
	"fmt"
	"log/slog"
	"os"
	rpprof "runtime/pprof"
)

// startProfiling starts the CPU profile serve's --cpuprofile asks for and returns the function
// that stops it. (Go's /debug/pprof/ handlers are on the admin listener, behind its token.)
func startProfiling(cpuFile string, log *slog.Logger) (stop func(), err error) {
	if cpuFile == "" {
		return func() {}, nil
	}
	f, err := os.Create(cpuFile)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := rpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	log.Info("writing a CPU profile", "file", cpuFile)
	return func() {
		rpprof.StopCPUProfile()
		f.Close()
	}, nil
}
