package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/app"
	"github.com/sluicedb/sluice/internal/config"
	"github.com/sluicedb/sluice/internal/sandbox"
	"github.com/sluicedb/sluice/internal/testutil"
)

func TestMain(m *testing.M) {
	// Writable replicas (read_only OFF, MariaDB's default): a write that reached a replica
	// through sluice fails the package (testutil.Main checks the replicas' GTIDs).
	os.Exit(testutil.Main(m, sandbox.Options{PerformanceSchema: true, TLS: true, WritableReplicas: true}))
}

// sluice is a proxy running in the test process in front of the package's cluster.
type sluice struct {
	app  *app.App
	rw   string
	ro   string
	stop func()
}

// startSluice runs sluice with the cluster's generated configuration, changed by edit, on free
// ports. It stops when the test ends.
func startSluice(t testing.TB, edit func(*config.Config)) *sluice {
	t.Helper()
	c := testutil.Cluster(t)
	cfg, err := config.Load(filepath.Join(c.Dir, sandbox.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Endpoints {
		cfg.Endpoints[i].Listen = "127.0.0.1:0"
	}
	cfg.Timeouts.Shutdown.Duration = 5 * time.Second
	// The sandbox's rw endpoint reads at consistency session; the tests of routing rules
	// expect each read where eventual sends it (a read right after a DDL would otherwise wait,
	// and may end on the primary). The consistency tests set their level.
	for i := range cfg.Endpoints {
		cfg.Endpoints[i].Consistency = config.ConsistencyEventual
	}
	if edit != nil {
		edit(cfg)
	}
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	a, err := app.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("sluice did not start: %v", err)
	}
	s := &sluice{app: a, rw: a.Addr("rw"), ro: a.Addr("ro")}
	var stopped bool
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sluice: %v", err)
		}
	}
	t.Cleanup(s.stop)
	return s
}

// dsn is a go-sql-driver DSN for addr.
func dsn(addr, user, password, db, params string) string {
	d := fmt.Sprintf("%s:%s@tcp(%s)/%s?timeout=10s", user, password, addr, db)
	if params != "" {
		d += "&" + params
	}
	return d
}

func open(t testing.TB, d string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mysqlErr returns the server error in err, failing the test if there is none.
func mysqlErr(t testing.TB, err error) *mysql.MySQLError {
	t.Helper()
	me, ok := err.(*mysql.MySQLError)
	if !ok {
		t.Fatalf("want a MySQL error, got %T %v", err, err)
	}
	return me
}

// primaryReads makes the rw endpoint read from the primary only: for tests that read their own
// writes at once, which replicas may not have applied yet.
func primaryReads(c *config.Config) {
	for i := range c.Endpoints {
		if c.Endpoints[i].Mode == "read-write" {
			for name := range c.Endpoints[i].ReadWeights {
				c.Endpoints[i].ReadWeights[name] = 0
			}
			c.Endpoints[i].ReadWeights["primary"] = 100
		}
	}
}
