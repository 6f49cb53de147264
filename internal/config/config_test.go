package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// env returns a lookup function backed by a map, so tests do not depend on
// (or modify) the process environment.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func dur(d time.Duration) Duration { return Duration{d} }

func TestLoadExample(t *testing.T) {
	t.Setenv("APP_PASSWORD", "app-secret")
	t.Setenv("MONITOR_PASSWORD", "mon-secret")
	path := filepath.Join("testdata", "sluice.yaml")
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Path:  path,
		Users: []User{{Name: "app", Password: "app-secret"}},
		Backends: []Backend{
			{Name: "primary", Address: "127.0.0.1:23306", Role: "primary", Zone: "az1", ProxyProtocol: "off"},
			{Name: "replica1", Address: "127.0.0.1:23307", Role: "replica", ProxyProtocol: "off"},
		},
		Monitor:  Monitor{User: "sluice_monitor", Password: "mon-secret", Interval: dur(time.Second), DownAfter: 3, SwitchoverTimeout: dur(10 * time.Second)},
		Accounts: Accounts{Refresh: dur(time.Minute)},
		Endpoints: []Endpoint{{
			Name:        "rw",
			Listen:      "127.0.0.1:6033",
			Mode:        "read-write",
			ReadWeights: map[string]int{"primary": 0, "replica1": 100},
			Balance:     "least-active",
			TLS:         "off",

			MaxConnections:  DefaultMaxConnections,
			MultiStatements: "state", Consistency: "eventual", ConsistencyTimeout: dur(10 * time.Millisecond),
			MaxReplicaLag:   dur(30 * time.Second),
			ConnectionsFrom: "proxy",
			PoolMode:        "session",
			Pool:            Pool{IdleTimeout: dur(time.Minute), AcquireTimeout: dur(5 * time.Second)},
		}},
		Pool: Pool{IdleTimeout: dur(time.Minute), AcquireTimeout: dur(5 * time.Second)},
		Log:  Log{Format: "text", Level: "info"},
		Timeouts: Timeouts{
			Connect:  dur(5 * time.Second),
			Write:    dur(30 * time.Second),
			Shutdown: dur(30 * time.Second),
			Login:    dur(10 * time.Second),
		},
		BackendTLS: BackendTLS{Mode: "mirror"},
		Store:      Store{Etcd: Etcd{Prefix: DefaultStorePrefix, DialTimeout: dur(DefaultStoreDialTimeout)}},
		Limits: Limits{MaxPreparedStatements: 16382, MaxLongData: 64 << 20,
			MaxPendingLogins: 1000, MaxPendingLoginBytes: 16 << 20,
			MaxAuthFailures: 10, AuthBlock: Duration{time.Minute}},
	}
	got.pos = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load(%s) =\n%+v\nwant\n%+v", path, got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

// minimal is the smallest valid config; the error tests below edit it, and
// their expected line numbers refer to its lines.
const minimal = `users:
  - name: app
    password: secret
backends:
  - name: primary
    address: 127.0.0.1:3306
    role: primary
  - name: replica1
    address: 127.0.0.1:3307
    role: replica
endpoints:
  - name: rw
    listen: 127.0.0.1:6033
`

func TestParseDefaults(t *testing.T) {
	c, err := parse("sluice.yaml", []byte(minimal), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Endpoints[0]
	if e.Mode != ModeReadWrite || e.Balance != BalanceLeastActive || e.MaxConnections != 20000 {
		t.Errorf("endpoint defaults = %+v", e)
	}
	if want := map[string]int{"primary": 0, "replica1": 100}; !reflect.DeepEqual(e.ReadWeights, want) {
		t.Errorf("default read_weights = %v, want %v", e.ReadWeights, want)
	}
	if c.Log != (Log{Format: "text", Level: "info"}) {
		t.Errorf("log = %+v", c.Log)
	}
	if c.Monitor != (Monitor{Interval: dur(time.Second), DownAfter: 3, SwitchoverTimeout: dur(10 * time.Second)}) {
		t.Errorf("monitor = %+v", c.Monitor)
	}
	want := Timeouts{Connect: dur(5 * time.Second), Write: dur(30 * time.Second), Shutdown: dur(30 * time.Second), Login: dur(10 * time.Second)}
	if c.Timeouts != want {
		t.Errorf("timeouts = %+v, want %+v", c.Timeouts, want)
	}
	if c.Limits.MaxAuthFailures != 10 || c.Limits.AuthBlock != dur(time.Minute) {
		t.Errorf("auth block limits = %d, %v; want 10, 1m", c.Limits.MaxAuthFailures, c.Limits.AuthBlock)
	}
	// An explicit 0 turns blocking off (and auth_block may then be 0 too).
	c, err = parse("sluice.yaml", []byte(minimal+"limits:\n  max_auth_failures: 0\n  auth_block: 0s\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.MaxAuthFailures != 0 {
		t.Errorf("max_auth_failures: 0 became %d", c.Limits.MaxAuthFailures)
	}
}

func TestParseExplicitValues(t *testing.T) {
	src := minimal + `    mode: read-only
    balance: weighted
    max_connections: 500
    read_weights:
      replica1: 7
log:
  format: json
  level: debug
timeouts:
  connect: 250ms
  read: 1m30s
  write: 0.5s
  shutdown: 0
  idle: 1h
monitor:
  user: mon
  interval: 2s
`
	c, err := parse("sluice.yaml", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Endpoints[0]
	if e.Mode != ModeReadOnly || e.Balance != BalanceWeighted || e.MaxConnections != 500 {
		t.Errorf("endpoint = %+v", e)
	}
	// Backends left out of read_weights are filled in with 0.
	if want := map[string]int{"primary": 0, "replica1": 7}; !reflect.DeepEqual(e.ReadWeights, want) {
		t.Errorf("read_weights = %v, want %v", e.ReadWeights, want)
	}
	if c.Log != (Log{Format: "json", Level: "debug"}) {
		t.Errorf("log = %+v", c.Log)
	}
	wantT := Timeouts{
		Connect: dur(250 * time.Millisecond),
		Read:    dur(90 * time.Second),
		Write:   dur(500 * time.Millisecond),
		Idle:    dur(time.Hour),
		// An explicit 0 is kept (no drain) rather than replaced by the default.
		Shutdown: dur(0),
		Login:    dur(10 * time.Second),
	}
	if c.Timeouts != wantT {
		t.Errorf("timeouts = %+v, want %+v", c.Timeouts, wantT)
	}
	if c.Monitor != (Monitor{User: "mon", Interval: dur(2 * time.Second), DownAfter: 3, SwitchoverTimeout: dur(10 * time.Second)}) {
		t.Errorf("monitor = %+v", c.Monitor)
	}
}

func TestNullMeansAbsent(t *testing.T) {
	src := minimal + `    mode:
    read_weights: ~
monitor:
timeouts:
  connect:
`
	c, err := parse("sluice.yaml", []byte(src), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoints[0].Mode != ModeReadWrite || c.Endpoints[0].ReadWeights["replica1"] != 100 {
		t.Errorf("endpoint = %+v", c.Endpoints[0])
	}
	if c.Timeouts.Connect.Duration != DefaultConnectTimeout || c.Monitor.Interval.Duration != DefaultMonitorInterval {
		t.Errorf("timeouts = %+v, monitor = %+v", c.Timeouts, c.Monitor)
	}
}

func TestUserAuthVariants(t *testing.T) {
	const hash = "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"
	for _, tc := range []struct {
		name, user string
		want       User
	}{
		{"empty password", `{name: u, password: ""}`, User{Name: "u"}},
		{"null password", `{name: u, password: }`, User{Name: "u"}},
		{"upper hash", `{name: u, password_hash: "` + hash + `"}`, User{Name: "u", PasswordHash: hash}},
		{"lower hash native", `{name: u, password_hash: "` + strings.ToLower(hash) + `", auth_plugin: mysql_native_password}`,
			User{Name: "u", PasswordHash: strings.ToLower(hash), AuthPlugin: AuthNativePassword}},
		{"sha2 with password", `{name: u, password: pw, auth_plugin: caching_sha2_password}`,
			User{Name: "u", Password: "pw", AuthPlugin: AuthCachingSHA2}},
		{"numeric password kept verbatim", `{name: u, password: 0123}`, User{Name: "u", Password: "0123"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(minimal, "  - name: app\n    password: secret\n", "  - "+tc.user+"\n", 1)
			c, err := parse("sluice.yaml", []byte(src), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if c.Users[0] != tc.want {
				t.Errorf("user = %+v, want %+v", c.Users[0], tc.want)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	c, err := parse("sluice.yaml", []byte(minimal), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Primary(); p == nil || p.Name != "primary" {
		t.Errorf("Primary() = %+v", p)
	}
	if b := c.Backend("replica1"); b == nil || b.Address != "127.0.0.1:3307" {
		t.Errorf("Backend(replica1) = %+v", b)
	}
	if b := c.Backend("nope"); b != nil {
		t.Errorf("Backend(nope) = %+v", b)
	}
	if u := c.User("app"); u == nil || u.Password != "secret" {
		t.Errorf("User(app) = %+v", u)
	}
	if u := c.User("APP"); u != nil {
		t.Errorf("User(APP) = %+v, want nil (names are case-sensitive)", u)
	}
	// The accessors return pointers into the config, not copies.
	c.Backend("replica1").Zone = "az2"
	if c.Backends[1].Zone != "az2" {
		t.Error("Backend() returned a copy")
	}
	if p := (&Config{}).Primary(); p != nil {
		t.Errorf("Primary() of empty config = %+v", p)
	}
}

func TestCodeBuiltConfig(t *testing.T) {
	c := &Config{
		Users: []User{{Name: "app", Password: "pw"}},
		Backends: []Backend{
			{Name: "p", Address: "db1:3306", Role: RolePrimary},
			{Name: "r", Address: "db2:3306", Role: RoleReplica},
		},
		Endpoints: []Endpoint{{Name: "rw", Listen: "127.0.0.1:0"}},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate without ApplyDefaults succeeded")
	}
	// Without a file there is no position to report, only the key.
	if !strings.Contains(err.Error(), "\nendpoints[0].mode: required (want read-write or read-only)\n") {
		t.Errorf("unexpected error:\n%v", err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Endpoints[0].ReadWeights["r"] != 100 || c.Timeouts.Connect.Duration != DefaultConnectTimeout {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestErrorType(t *testing.T) {
	src := strings.Replace(minimal, "role: replica", "role: replicant", 1) + "    mode: rw\n"
	_, err := parse("sluice.yaml", []byte(src), env(nil))
	var list interface{ Unwrap() []error }
	if !errors.As(err, &list) || len(list.Unwrap()) != 2 {
		t.Fatalf("err = %#v, want two joined errors", err)
	}
	var e *Error
	if !errors.As(list.Unwrap()[1], &e) {
		t.Fatalf("%T is not *Error", list.Unwrap()[1])
	}
	want := Error{File: "sluice.yaml", Line: 14, Key: "endpoints[0].mode", Msg: `invalid value "rw" (want read-write or read-only)`}
	if *e != want {
		t.Errorf("error = %+v, want %+v", *e, want)
	}
}

func TestDurationYAML(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5s", 5 * time.Second, true},
		{"250ms", 250 * time.Millisecond, true},
		{"1m", time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"0", 0, true},
		{"-1s", -time.Second, true}, // syntax is fine; Validate rejects it
		{"5", 0, false},
		{"1.5", 0, false},
		{"", 0, false},
		{"5 s", 0, false},
		{"1d", 0, false},
	} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestDurationUnmarshalYAML(t *testing.T) {
	var v struct {
		D Duration `yaml:"d"`
	}
	if err := yaml.Unmarshal([]byte("d: 1m30s\n"), &v); err != nil || v.D.Duration != 90*time.Second {
		t.Fatalf("Unmarshal = %v, %v", v.D, err)
	}
	for _, bad := range []string{"d: 5\n", "d: [1s]\n", "d: soon\n"} {
		if err := yaml.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("Unmarshal(%q) succeeded", bad)
		}
	}
	out, err := yaml.Marshal(v)
	if err != nil || string(out) != "d: 1m30s\n" {
		t.Errorf("Marshal = %q, %v", out, err)
	}
}

// TestConnectionsFromCluster: least-connections counted over the cluster is accepted with a
// store, in a plain file or in the shared configuration read with the node's own file.
func TestConnectionsFromCluster(t *testing.T) {
	store := "store: {etcd: {endpoints: ['127.0.0.1:2379']}}\n"
	shared := strings.Replace(minimal, "    listen: 127.0.0.1:6033\n", "    listen: 127.0.0.1:6033\n    balance: least-connections\n    connections_from: cluster\n", 1)
	c, err := parse("sluice.yaml", []byte(shared+store), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Endpoints[0]; e.Balance != BalanceLeastConnections || e.ConnectionsFrom != ConnectionsFromCluster {
		t.Errorf("endpoint = %s from %s", e.Balance, e.ConnectionsFrom)
	}
	if _, err := ParseShared("sluice.yaml", []byte(store), "etcd:/sluice/config", []byte(shared)); err != nil {
		t.Errorf("shared: %v", err)
	}
	_, err = ParseShared("sluice.yaml", []byte("name: a\n"), "etcd:/sluice/config", []byte(shared))
	if err == nil || !strings.Contains(err.Error(), "cluster needs store.etcd") {
		t.Errorf("without a store: %v", err)
	}
}
