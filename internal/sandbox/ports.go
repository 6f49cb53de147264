package sandbox

import (
	"fmt"
	"net"
	"strconv"
)

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago. All n
// listeners stay open until every port is picked, so the kernel cannot hand out the same port
// twice; after they close, another process may take a port before we use it, which is why Up
// retries a node whose port was taken in between.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("sandbox: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
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

// checkPortsFree fails with one error naming every port in use.
func checkPortsFree(ports []int, what []string) error {
	var busy []string
	for i, p := range ports {
		if !PortFree(p) {
			busy = append(busy, fmt.Sprintf("%d (%s)", p, what[i]))
		}
	}
	switch len(busy) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("sandbox: port %s is already in use on 127.0.0.1; stop what uses it or choose another base port", busy[0])
	default:
		return fmt.Errorf("sandbox: ports %v are already in use on 127.0.0.1; stop what uses them or choose another base port", busy)
	}
}
