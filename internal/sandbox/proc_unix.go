//go:build unix

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/pause"
)

// startDetached starts a long-running server in its own session, so that a Ctrl-C in the
// parent's terminal (delivered to the whole foreground process group) does not kill it before
// Down runs, and so it outlives a CLI process that only brought the cluster up. Its
// stdout/stderr go to logPath. The returned channel is closed when the process exits: a
// goroutine waits for it, which also reaps it, so a dead child never lingers as a zombie that
// kill(pid, 0) would still report as alive.
func startDetached(bin string, args []string, logPath string) (pid int, exited <-chan struct{}, err error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, nil, err
	}
	// The child has its own copy of the descriptor; ours is not needed after Start.
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf // Stdin nil = /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return cmd.Process.Pid, done, nil
}

// runGroup runs a short-lived command (a bootstrap) to completion in its own process group,
// killing the whole group when ctx ends: mariadb-install-db is a shell script whose child
// mariadbd --bootstrap would otherwise survive the script.
func runGroup(ctx context.Context, bin string, args []string, logPath string) error {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd.Run()
}

// alive reports whether pid is a live (not zombie) process that runs with our option file.
// The command-line check protects against pid reuse: sandbox.json can outlive its servers
// (a reboot, a crash), and Down must never signal an unrelated process. Where /proc is not
// available or not readable the pid alone decides.
func alive(pid int, cnf string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// Format: pid (comm) S ...; comm may contain spaces and parentheses, so split at the last ')'.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return true
	}
	want := []byte("--defaults-file=" + cnf)
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if bytes.Equal(arg, want) {
			return true
		}
	}
	return false
}

// signalPID sends sig to pid; a process that is already gone is not an error.
func signalPID(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %d: %w", pid, err)
	}
	return nil
}

// exited reports whether pid is gone or a zombie. Unlike alive it does not look at the
// command line: a process in the middle of exiting has already released its memory, so its
// cmdline reads empty (or fails) while the process still holds its files and port. Use it
// only for a pid alive has identified as ours.
func exited(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// waitGone polls until the node's process (identified by alive before it was signalled) has
// exited or ctx ends.
func waitGone(ctx context.Context, pid int) error {
	for !exited(pid) {
		if !pause.For(ctx, 20*time.Millisecond) {
			return fmt.Errorf("process %d still running: %w", pid, ctx.Err())
		}
	}
	return nil
}

// terminate stops a node's process: SIGTERM (a clean InnoDB shutdown), then SIGKILL after
// grace, and waits until it is gone.
func terminate(ctx context.Context, pid int, cnf string, grace time.Duration) error {
	if !alive(pid, cnf) {
		return nil
	}
	if err := signalPID(pid, syscall.SIGTERM); err != nil {
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	err := waitGone(gctx, pid)
	cancel()
	if err == nil {
		return nil
	}
	return kill(ctx, pid, cnf)
}

// kill stops a node's process at once, like a crash, and waits until it is gone.
func kill(ctx context.Context, pid int, cnf string) error {
	if !alive(pid, cnf) {
		return nil
	}
	if err := signalPID(pid, syscall.SIGKILL); err != nil {
		return err
	}
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return waitGone(kctx, pid)
}
