package config

import (
	"strings"
	"testing"
	"time"
)

// TestPoolLayers: the top-level pool, an endpoint's own keys over it, a user's over both; and
// an explicit 0 is kept (max_per_node: 0 under a top-level limit).
func TestPoolLayers(t *testing.T) {
	src := strings.Replace(minimal, "    password: secret\n", "    password: secret\n    pool:\n      max_per_node: 0\n      acquire_timeout: 1s\n      min_idle: 1\n", 1) +
		"    pool_mode: off\n    pool:\n      idle_timeout: 2m\n" +
		"  - name: rw2\n    listen: 127.0.0.1:6034\n" +
		"pool:\n  max_per_node: 3\n  max_lifetime: 1h\n  min_idle: 2\n"
	c, err := parse("sluice.yaml", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Pool != (Pool{MaxPerNode: 3, IdleTimeout: dur(time.Minute), MaxLifetime: dur(time.Hour), AcquireTimeout: dur(5 * time.Second), MinIdle: 2}) {
		t.Errorf("top-level pool = %+v", c.Pool)
	}
	rw, rw2 := &c.Endpoints[0], &c.Endpoints[1]
	if rw.PoolMode != PoolModeOff || rw2.PoolMode != PoolModeSession {
		t.Errorf("pool_mode = %q, %q; want off, session (the default)", rw.PoolMode, rw2.PoolMode)
	}
	if want := (Pool{MaxPerNode: 3, IdleTimeout: dur(2 * time.Minute), MaxLifetime: dur(time.Hour), AcquireTimeout: dur(5 * time.Second), MinIdle: 2}); rw.Pool != want {
		t.Errorf("rw's pool = %+v, want %+v", rw.Pool, want)
	}
	if want := (Pool{MaxPerNode: 0, IdleTimeout: dur(2 * time.Minute), MaxLifetime: dur(time.Hour), AcquireTimeout: dur(time.Second), MinIdle: 1}); c.PoolOf(rw, "app") != want {
		t.Errorf("app's pool on rw = %+v, want %+v", c.PoolOf(rw, "app"), want)
	}
	if got := c.PoolOf(rw2, "nobody"); got != rw2.Pool || got.IdleTimeout != dur(time.Minute) {
		t.Errorf("an unlisted user's pool on rw2 = %+v, want the endpoint's %+v", got, rw2.Pool)
	}
	if u := c.PoolUsers(); len(u) != 1 || u[0] != "app" {
		t.Errorf("PoolUsers = %q", u)
	}
}

func TestPoolErrors(t *testing.T) {
	for _, tc := range []struct {
		name, add, want string
	}{
		{"unknown mode", "    pool_mode: always\n", "endpoints[0].pool_mode"},
		{"negative limit", "pool:\n  max_per_node: -1\n", "pool.max_per_node: must not be negative"},
		{"negative timeout", "    pool:\n      acquire_timeout: -1s\n", "endpoints[0].pool.acquire_timeout: invalid value -1s"},
		{"negative min_idle", "pool:\n  min_idle: -1\n", "pool.min_idle: must not be negative"},
		{"min_idle over max_per_node", "    pool:\n      max_per_node: 2\n      min_idle: 3\n",
			"endpoints[0].pool.min_idle: 3 is more than max_per_node (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("sluice.yaml", []byte(minimal+tc.add), env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	// A user's min_idle against the max_per_node the endpoint gives it.
	src := strings.Replace(minimal, "    password: secret\n", "    password: secret\n    pool:\n      min_idle: 4\n", 1) +
		"    pool:\n      max_per_node: 2\n"
	want := "users[0].pool.min_idle: 4 is more than max_per_node (2) on endpoint rw"
	if _, err := parse("sluice.yaml", []byte(src), env(nil)); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error with %q", err, want)
	}
}
