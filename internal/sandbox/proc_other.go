//go:build !unix

package sandbox

import (
	"context"
	"errors"
	"time"
)

// The sandbox runs servers the Unix way (sessions, signals, sockets). Elsewhere the package
// still compiles, so the sluice binary builds, but every operation says why it cannot work.
var errUnsupported = errors.New("sandbox: only supported on Unix-like systems")

type runAs struct {
	name     string
	uid, gid int
}

func chooseUser(string) (runAs, string) { return runAs{}, "" }

func (runAs) chownTree(string) error { return nil }

func startDetached(string, []string, string) (int, <-chan struct{}, error) {
	return 0, nil, errUnsupported
}

func runGroup(context.Context, string, []string, string) error { return errUnsupported }

func alive(int, string) bool { return false }

func terminate(context.Context, int, string, time.Duration) error { return errUnsupported }

func kill(context.Context, int, string) error { return errUnsupported }
