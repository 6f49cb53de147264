package backend

import "fmt"

// TLSMode is how sluice's connections to the nodes use TLS (backend_tls.mode): the proxy's
// sessions and the monitor dial with it. A plain value; safe to copy and share.
type TLSMode uint8

const (
	TLSMirror    TLSMode = iota // TLS to the node exactly when the client uses TLS (the monitor: none)
	TLSOff                      // never
	TLSPreferred                // whenever the node offers it
	TLSRequired                 // always; a node without TLS is an error
)

// ParseTLSMode reads backend_tls.mode as the configuration spells it.
func ParseTLSMode(s string) (TLSMode, error) {
	switch s {
	case "", "mirror":
		return TLSMirror, nil
	case "off":
		return TLSOff, nil
	case "preferred":
		return TLSPreferred, nil
	case "required":
		return TLSRequired, nil
	}
	return TLSMirror, fmt.Errorf("unknown backend_tls mode %q (want mirror, off, preferred or required)", s)
}
