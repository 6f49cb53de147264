package store

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/sandbox"
)

func startStore(t *testing.T) *Store {
	t.Helper()
	if _, err := sandbox.EtcdBinary(); err != nil && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	e, err := sandbox.StartEtcd(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	s, err := Open(Options{Endpoints: []string{e.ClientAddr}, Prefix: "/sluice/t/", DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A configuration larger than etcd takes is the change's fault, not the link's: ErrTooLarge,
// not ErrUnavailable (a 503 that says etcd is away), and the link stays up.
func TestPutTooLarge(t *testing.T) {
	s := startStore(t)
	rev, err := s.Put(context.Background(), []byte("backends: []\n"), 0, "a", "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1600 << 10, 3 << 20} { // past etcd's 1.5 MiB; past its client's 2 MiB
		big := []byte("# " + strings.Repeat("x", size) + "\n")
		_, err := s.Put(context.Background(), big, rev, "a", "test")
		if !errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("%d bytes: err = %v, want ErrTooLarge", size, err)
		}
		if st := s.State(); !st.Connected {
			t.Fatalf("%d bytes: the link is marked down: %+v", size, st)
		}
	}
}
