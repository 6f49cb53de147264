package sandbox

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Free ports are drawn at random from [freeLow, ephemeral low end), not from the kernel's
// ephemeral range that listening on port 0 uses. A port in the ephemeral range can be taken
// at any moment by some process's outgoing connection or another port-0 listener; that made
// Start fail now and then for a node that had been stopped for a few seconds on a busy host.
// Below the ephemeral range only an explicit bind can take it.
const (
	freeLow       = 20000
	ephemeralLow  = 32768 // Linux default; IANA (BSD, macOS, Windows) starts at 49152
	defaultBase   = 23306 // sluice sandbox's default base port: keep free draws off it
	reservedAbove = 70    // nodes and proxy ports of a default cluster
)

// ephemeralStart returns where the kernel's ephemeral port range begins.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ephemeralLow
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ephemeralLow
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return ephemeralLow
	}
	return min(lo, ephemeralLow)
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago. Each is
// held open until all n are picked, so none is returned twice; after they close, another
// process may still bind one first, which is why Up retries a node whose port was taken.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	hold := func(addr string) bool {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		return true
	}
	if hi := ephemeralStart(); hi-freeLow >= 1000 {
		for try := 0; len(ports) < n && try < 100*n; try++ {
			p := freeLow + rand.IntN(hi-freeLow)
			if p >= defaultBase && p < defaultBase+reservedAbove {
				continue
			}
			hold(net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		}
	}
	// Where there is no room below the ephemeral range, let the kernel choose.
	for len(ports) < n {
		if !hold("127.0.0.1:0") {
			return nil, fmt.Errorf("sandbox: cannot find a free port on 127.0.0.1")
		}
	}
	return ports, nil
}

// PortFree reports whether 127.0.0.1:port can be bound now. On Linux, a listener on 0.0.0.0
// or [::] also makes this bind fail, which is what we want: the server would fail the same way.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// PortUse is what a cluster's port is for: a node, an endpoint of the proxy, its admin API.
type PortUse uint8

const (
	PortNode  PortUse = iota // a node's (Options.BasePort + its index, or a free one)
	PortRW                   // the rw endpoint's (Options.ProxyPorts[0])
	PortRO                   // the ro endpoint's (Options.ProxyPorts[1])
	PortAdmin                // the admin API's (Options.AdminPort)
)

// BusyPort is a port Up would use that something else holds.
type BusyPort struct {
	Port int
	Use  PortUse
	Name string // what for, in words: "primary", "replica1", "endpoint rw", "endpoint ro", "admin API"
}

func (b BusyPort) String() string { return fmt.Sprintf("%d (%s)", b.Port, b.Name) }

// PortsInUseError is Up's error when ports it would use are held by something else: found
// before anything is created or started, every one of them at once. A caller with its own
// names for the ports (a command's flags) tells them by Use.
type PortsInUseError struct {
	Busy []BusyPort
}

func (e *PortsInUseError) Error() string {
	list := make([]string, len(e.Busy))
	for i, b := range e.Busy {
		list[i] = b.String()
	}
	if len(list) == 1 {
		return fmt.Sprintf("sandbox: port %s is already in use on 127.0.0.1; stop what uses it or choose another port", list[0])
	}
	return fmt.Sprintf("sandbox: ports %s are already in use on 127.0.0.1; stop what uses them or choose other ports", strings.Join(list, ", "))
}

// checkPortsFree fails with a *PortsInUseError naming every port of want in use.
func checkPortsFree(want []BusyPort) error {
	var busy []BusyPort
	for _, p := range want {
		if !PortFree(p.Port) {
			busy = append(busy, p)
		}
	}
	if len(busy) == 0 {
		return nil
	}
	return &PortsInUseError{Busy: busy}
}
