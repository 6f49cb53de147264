package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	rpprof "runtime/pprof"
	"time"
)

// startProfiling starts what serve's profiling flags ask for and returns the function that
// stops it (writing the CPU profile out).
func startProfiling(cpuFile, pprofAddr string, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if pprofAddr != "" {
		ln, err := listenLoopback(pprofAddr)
		if err != nil {
			return nil, fmt.Errorf("--pprof: %w", err)
		}
		// Block and mutex profiles are off unless asked for; sample them lightly so that
		// /debug/pprof/block and /mutex say something without slowing the hot path much.
		runtime.SetBlockProfileRate(int(100 * time.Microsecond))
		runtime.SetMutexProfileFraction(100)
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("pprof server stopped", "err", err)
			}
		}()
		log.Info("pprof listening", "addr", ln.Addr().String())
		stops = append(stops, func() { _ = srv.Close() })
	}
	if cpuFile != "" {
		f, err := os.Create(cpuFile)
		if err != nil {
			stop()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := rpprof.StartCPUProfile(f); err != nil {
			f.Close()
			stop()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		stops = append(stops, func() {
			rpprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				log.Error("writing the CPU profile", "file", cpuFile, "err", err)
			}
		})
	}
	return stop, nil
}

// listenLoopback listens on addr, which must name a loopback host.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s is not a loopback address: the profiling handlers expose the process's memory", addr)
	}
	return net.Listen("tcp", addr)
}
