package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestUpChecksEveryPortFirst: the admin API's port and the endpoints' are checked with the
// nodes' before anything is looked for, created or started (before, a taken admin port was
// found only once the whole cluster ran); every port in use is named at once, with its use.
// It needs no database server: Up fails before looking for one.
func TestUpChecksEveryPortFirst(t *testing.T) {
	hold := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().(*net.TCPAddr).Port
	}
	admin, ro := hold(), hold()
	dir := filepath.Join(t.TempDir(), "c")
	for _, c := range []struct {
		name string
		o    Options
		want []BusyPort
	}{
		{"admin", Options{Dir: dir, Replicas: 1, AdminPort: admin}, []BusyPort{{admin, PortAdmin, "admin API"}}},
		{"admin and ro", Options{Dir: dir, Replicas: 1, AdminPort: admin, ProxyPorts: [2]int{0, ro}},
			[]BusyPort{{ro, PortRO, "endpoint ro"}, {admin, PortAdmin, "admin API"}}},
	} {
		_, err := Up(context.Background(), c.o)
		var busy *PortsInUseError
		if !errors.As(err, &busy) || !slices.Equal(busy.Busy, c.want) {
			t.Errorf("%s: got %v, want the ports %v in use", c.name, err, c.want)
			continue
		}
		for _, b := range c.want {
			if !strings.Contains(err.Error(), strconv.Itoa(b.Port)+" ("+b.Name+")") {
				t.Errorf("%s: %q does not name %d (%s)", c.name, err, b.Port, b.Name)
			}
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s was created: %v", c.name, dir, err)
		}
	}
	// The admin port may not be one of the cluster's own either.
	free, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Up(context.Background(), Options{Dir: dir, Replicas: 1, ProxyPorts: [2]int{free[0], 0}, AdminPort: free[0]})
	if err == nil || !strings.Contains(err.Error(), "admin port "+strconv.Itoa(free[0])+" is also") {
		t.Errorf("the admin port on the rw endpoint's: %v", err)
	}
}
