//go:build !unix

package sandbox

import "context"

// Etcd is the sandbox's etcd server; it runs only on Unix-like systems.
type Etcd struct{ ClientAddr string }

// EtcdBinary says why there is none here.
func EtcdBinary() (string, error) { return "", errUnsupported }

// StartEtcd says why it cannot start here.
func StartEtcd(context.Context, string) (*Etcd, error) { return nil, errUnsupported }

func (e *Etcd) Start(context.Context) error { return errUnsupported }
func (e *Etcd) Stop() error                 { return errUnsupported }
func (e *Etcd) Kill() error                 { return errUnsupported }
func (e *Etcd) Pause() error                { return errUnsupported }
func (e *Etcd) Resume() error               { return errUnsupported }
func (e *Etcd) Dial() bool                  { return false }
