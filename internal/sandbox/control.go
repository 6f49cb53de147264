package sandbox

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
	"github.com/sluicedb/sluice/internal/pause"
)

// launch starts a node's server and waits until it answers on its socket. On failure the
// process is killed and the error carries the log lines it wrote during this attempt.
func (c *Cluster) launch(ctx context.Context, n *Node) error {
	errLog, outLog := filepath.Join(n.Dir, errLogName), filepath.Join(n.Dir, outLogName)
	errOff, outOff := fileSize(errLog), fileSize(outLog)
	pid, exited, err := startDetached(c.Server, serverArgs(n.cnf()), outLog)
	if err != nil {
		return fmt.Errorf("sandbox: start %s: %w", n.Name, err)
	}
	werr := c.setPID(n, pid, exited)
	if werr == nil {
		werr = c.waitReady(ctx, n, exited)
	}
	if werr == nil {
		return nil
	}
	_ = kill(context.Background(), pid, n.cnf())
	_ = c.setPID(n, 0, nil)
	logs := tail(errLog, errOff, 15) + tail(outLog, outOff, 15)
	if strings.Contains(logs, "Bind on TCP/IP port") {
		return fmt.Errorf("sandbox: %s did not start: %w: %s%s", n.Name, errPortInUse, n.Address, logs)
	}
	return fmt.Errorf("sandbox: %s (%s) did not start: %w%s", n.Name, n.Address, werr, logs)
}

// waitReady polls the node's socket until the administrator can log in, the process exits,
// or readyTimeout passes.
func (c *Cluster) waitReady(ctx context.Context, n *Node, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	db := c.adminDB(n)
	defer db.Close()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		err := db.PingContext(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("the server exited")
		case <-ctx.Done():
			return fmt.Errorf("not answering on %s: %w (last error: %v)", n.Socket, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// exec runs statements in order on one administrator session of node n.
func (c *Cluster) exec(ctx context.Context, n *Node, stmts ...string) error {
	db := c.adminDB(n)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sandbox: %s: %w", n.Name, err)
	}
	defer conn.Close()
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("sandbox: %s: %s: %w", n.Name, redact(s), err)
		}
	}
	return nil
}

// secretRE matches the password literals in our CREATE USER and CHANGE MASTER statements.
var secretRE = regexp.MustCompile(`(IDENTIFIED BY |PASSWORD=)'(?:[^'\\]|\\.)*'`)

// redact hides passwords in statements quoted in errors.
func redact(s string) string { return secretRE.ReplaceAllString(s, "$1'***'") }

// setupAccounts runs once on the fresh cluster. Node-local clean-up (anonymous users) runs
// on every node with the binlog off; accounts and databases are created on the primary with
// the binlog on, so they reach the replicas through replication and every node's GTID
// history starts at the same place (gtid_strict_mode would stop a replica that had local
// transactions of its own).
func (c *Cluster) setupAccounts(ctx context.Context) error {
	p := c.Primary()
	db := c.adminDB(p)
	defer db.Close()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT @@version").Scan(&version); err != nil {
		return fmt.Errorf("sandbox: primary: %w", err)
	}
	c.Version = version
	privs, err := privileges(ctx, db)
	if err != nil {
		return fmt.Errorf("sandbox: primary: SHOW PRIVILEGES: %w", err)
	}

	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		n := &c.Nodes[i]
		wg.Go(func() { errs[i] = c.dropAnonymous(ctx, n) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	var stmts []string
	for _, host := range []string{"127.0.0.1", "localhost"} {
		acct := quote(AppUser) + "@" + quote(host)
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER %s IDENTIFIED BY %s", acct, quote(AppPassword)),
			fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO %s WITH GRANT OPTION", acct))
		// The app account must never write on a read_only replica: one such write stops the
		// replica's replication at the primary's next transaction. MariaDB 10.11's ALL
		// includes READ_ONLY ADMIN, which bypasses read_only.
		if privs["read only admin"] {
			stmts = append(stmts, fmt.Sprintf("REVOKE READ_ONLY ADMIN ON *.* FROM %s", acct))
		}
		// Before 10.11, SUPER also bypassed read_only on MariaDB. (On MySQL the replicas run
		// with super_read_only instead.)
		if major, minor := parseVersion(version); c.fl.mariadb() && (major < 10 || major == 10 && minor < 11) {
			stmts = append(stmts, fmt.Sprintf("REVOKE SUPER ON *.* FROM %s", acct))
		}
	}
	stmts = append(stmts,
		fmt.Sprintf("CREATE USER %s@'127.0.0.1' IDENTIFIED BY %s", quote(ReplUser), quote(ReplPassword)),
		fmt.Sprintf("GRANT REPLICATION SLAVE ON *.* TO %s@'127.0.0.1'", quote(ReplUser)))
	// What a health checker needs: the process list, and SHOW SLAVE/REPLICA STATUS and the
	// binlog position, under whichever names this version has. And REPLICATION SLAVE, so the
	// monitor can stream each node's binlog as a replica (internal/binlog: GTID positions as
	// they are written, for the consistency levels); without it MariaDB refuses the replica's
	// registration with a misleading ERROR 1045. It also lets the account read every row
	// change from the binlog: the monitor account is as secret as the replication account.
	monitor := []string{}
	for _, p := range []string{"PROCESS", "REPLICATION CLIENT", "BINLOG MONITOR", "SLAVE MONITOR"} {
		if privs[strings.ToLower(p)] {
			monitor = append(monitor, p)
		}
	}
	if len(monitor) == 0 {
		monitor = []string{"PROCESS", "REPLICATION CLIENT"}
	}
	monitor = append(monitor, "REPLICATION SLAVE")
	for _, host := range []string{"127.0.0.1", "localhost"} {
		acct := quote(MonitorUser) + "@" + quote(host)
		stmts = append(stmts,
			fmt.Sprintf("CREATE USER %s IDENTIFIED BY %s", acct, quote(MonitorPassword)),
			fmt.Sprintf("GRANT %s ON *.* TO %s", strings.Join(monitor, ", "), acct))
		// accounts.from_primary: the accounts' names, hosts, plugins and hashes.
		if c.fl.mariadb() {
			stmts = append(stmts, fmt.Sprintf("GRANT SELECT (User, Host, Priv) ON mysql.global_priv TO %s", acct))
		} else {
			stmts = append(stmts, fmt.Sprintf("GRANT SELECT ON mysql.user TO %s", acct))
		}
	}
	stmts = append(stmts, "CREATE DATABASE IF NOT EXISTS test", "CREATE DATABASE IF NOT EXISTS gotest")
	return c.exec(ctx, p, stmts...)
}

// privileges returns the server's privilege names, lower case with spaces ("read only admin").
func privileges(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SHOW PRIVILEGES")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, r := range scanAll(rows) {
		name := strings.ToLower(strings.ReplaceAll(r["Privilege"], "_", " "))
		out[name] = true
	}
	return out, rows.Err()
}

// dropAnonymous removes anonymous accounts (older bootstraps create them; ”@localhost would
// shadow app@localhost), without writing the binlog: each node has its own.
func (c *Cluster) dropAnonymous(ctx context.Context, n *Node) error {
	db := c.adminDB(n)
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT Host FROM mysql.user WHERE User = ''")
	if err != nil {
		return fmt.Errorf("sandbox: %s: %w", n.Name, err)
	}
	stmts := []string{"SET SESSION sql_log_bin=0"}
	for _, r := range scanAll(rows) {
		stmts = append(stmts, fmt.Sprintf("DROP USER ''@%s", quote(r["Host"])))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sandbox: %s: %w", n.Name, err)
	}
	if len(stmts) == 1 {
		return nil
	}
	return c.exec(ctx, n, stmts...)
}

// setupReplication points every replica at the primary and starts replicating.
func (c *Cluster) setupReplication(ctx context.Context) error {
	reps := c.Replicas()
	errs := make([]error, len(reps))
	var wg sync.WaitGroup
	for i, r := range reps {
		wg.Go(func() { errs[i] = c.exec(ctx, r, c.fl.changeSourceSQL(c.Primary().Port, c.TLS)...) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// WaitCaughtUp returns when every running replica has applied everything the primary had
// written when it was called (MASTER_GTID_WAIT on the primary's gtid_binlog_pos), or an error
// naming the replicas that did not within timeout. Stopped replicas are skipped; a paused one
// (SQL thread stopped) times out.
func (c *Cluster) WaitCaughtUp(ctx context.Context, timeout time.Duration) error {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	p := c.Primary()
	if !alive(c.pid(p), p.cnf()) {
		return fmt.Errorf("sandbox: primary is not running")
	}
	pdb := c.adminDB(p)
	var pos string
	err := pdb.QueryRowContext(ctx, gtid.PositionQuery(c.fl.family())).Scan(&pos)
	pdb.Close()
	if err != nil {
		return fmt.Errorf("sandbox: primary: read position: %w", err)
	}
	reps := c.Replicas()
	errs := make([]error, len(reps))
	var wg sync.WaitGroup
	for i, r := range reps {
		if !alive(c.pid(r), r.cnf()) {
			continue
		}
		wg.Go(func() { errs[i] = c.waitFor(ctx, r, pos, timeout) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Cluster) waitFor(ctx context.Context, r *Node, pos string, timeout time.Duration) error {
	db := c.adminDB(r)
	defer db.Close()
	var secs any = timeout.Seconds()
	if !c.fl.mariadb() {
		secs = int(math.Ceil(timeout.Seconds())) // integer timeouts work on every 8.0
	}
	var res sql.NullInt64
	if err := db.QueryRowContext(ctx, c.fl.waitSQL(), pos, secs).Scan(&res); err != nil {
		return fmt.Errorf("sandbox: %s: wait for %s: %w", r.Name, pos, err)
	}
	if !res.Valid || res.Int64 != waitOK {
		return fmt.Errorf("sandbox: %s did not reach the primary's position %s within %s", r.Name, pos, timeout.Round(time.Millisecond))
	}
	return nil
}

// Stop kills one server with SIGKILL, like a crash, and waits until the process is gone.
func (c *Cluster) Stop(ctx context.Context, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	pid := c.pid(n)
	if !alive(pid, n.cnf()) {
		return fmt.Errorf("sandbox: %s is not running", name)
	}
	if err := kill(ctx, pid, n.cnf()); err != nil {
		return fmt.Errorf("sandbox: stop %s: %w", name, err)
	}
	return c.setPID(n, 0, nil)
}

// Start starts a stopped server again with the same files and waits until it answers. A
// replica resumes replicating by itself (its replication settings survive restarts).
func (c *Cluster) Start(ctx context.Context, name string) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if pid := c.pid(n); alive(pid, n.cnf()) {
		return fmt.Errorf("sandbox: %s is already running (pid %d)", name, pid)
	}
	if !waitPortFree(ctx, n.Port, 5*time.Second) {
		return fmt.Errorf("sandbox: cannot start %s: port %d is in use on 127.0.0.1", name, n.Port)
	}
	return c.launch(ctx, n)
}

// waitPortFree waits up to d for port to be free: a transient holder (another process probing
// for free ports) lets go within moments.
func waitPortFree(ctx context.Context, port int, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for !PortFree(port) {
		if !pause.For(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return true
}

// replica returns the named node, which must be a replica.
func (c *Cluster) replica(name string) (*Node, error) {
	n, err := c.Node(name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	role := n.Role
	c.mu.Unlock()
	if role != RoleReplica {
		return nil, fmt.Errorf("sandbox: %s is not a replica", name)
	}
	return n, nil
}

// Pause stops a replica's SQL thread: it keeps receiving events but applies none, so it falls
// behind by transactions while Seconds_Behind_Master reads NULL.
func (c *Cluster) Pause(ctx context.Context, name string) error {
	n, err := c.replica(name)
	if err != nil {
		return err
	}
	return c.exec(ctx, n, c.fl.pauseSQL()...)
}

// Resume starts a paused replica's SQL thread again.
func (c *Cluster) Resume(ctx context.Context, name string) error {
	n, err := c.replica(name)
	if err != nil {
		return err
	}
	return c.exec(ctx, n, c.fl.resumeSQL()...)
}

// Lag makes a replica apply each event only seconds after the primary wrote it
// (MASTER_DELAY); 0 turns the delay off. It restarts both replication threads, so it also
// resumes a paused replica.
func (c *Cluster) Lag(ctx context.Context, name string, seconds int) error {
	if seconds < 0 {
		return fmt.Errorf("sandbox: lag must be 0 or more seconds, got %d", seconds)
	}
	n, err := c.replica(name)
	if err != nil {
		return err
	}
	return c.exec(ctx, n, c.fl.lagSQL(seconds)...)
}

// Down stops every node (SIGTERM, then SIGKILL after a grace period) and removes the cluster
// directory. It removes nothing while a server may still be running.
func (c *Cluster) Down(ctx context.Context) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		n := &c.Nodes[i]
		wg.Go(func() {
			pids := []int{c.pid(n)}
			if p := pidFromFile(n); p != pids[0] {
				pids = append(pids, p)
			}
			for _, pid := range pids {
				if err := terminate(ctx, pid, n.cnf(), stopGrace); err != nil {
					errs[i] = errors.Join(errs[i], fmt.Errorf("sandbox: stop %s: %w", n.Name, err))
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Refuse to delete a directory that does not look like ours.
	if _, err := os.Stat(filepath.Join(c.Dir, StateFile)); err != nil {
		return fmt.Errorf("sandbox: servers stopped, but %s was not removed: %w", c.Dir, err)
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		return fmt.Errorf("sandbox: remove %s: %w", c.Dir, err)
	}
	return nil
}

// scanAll reads every row into column-name maps (NULL becomes ""), for statements whose
// columns differ between versions and flavors (SHOW SLAVE STATUS has 50-odd).
func scanAll(rows *sql.Rows) []map[string]string {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil
	}
	var out []map[string]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if rows.Scan(ptrs...) != nil {
			return out
		}
		m := make(map[string]string, len(cols))
		for i, col := range cols {
			if vals[i].Valid {
				m[col] = vals[i].String
			} else {
				m[col] = nullMarker
			}
		}
		out = append(out, m)
	}
	return out
}

// nullMarker stands for SQL NULL in scanAll's maps; Seconds_Behind_Master is NULL (not 0)
// while the SQL thread is stopped, and the difference matters.
const nullMarker = "\x00NULL"

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// tail returns the last n lines a log got after offset, formatted to append to an error.
func tail(path string, offset int64, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) <= offset {
		return ""
	}
	b = bytes.TrimRight(b[offset:], "\n")
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("\n--- last lines of %s:\n%s", path, bytes.Join(lines, []byte("\n")))
}

// Switchover makes replica name the primary, as an operator would in a planned switchover:
// the primary goes read-only (writes stop there), name applies everything the primary wrote,
// then stops replicating and takes writes, and every other node, the old primary included,
// replicates from it with GTID positions (MariaDB MASTER_USE_GTID, MySQL auto-position). The
// old primary stays read-only (even in a cluster whose replicas are writable): a write that
// still reaches it fails instead of forking the data. A proxy in front follows by itself.
func (c *Cluster) Switchover(ctx context.Context, name string, timeout time.Duration) error {
	n, err := c.replica(name)
	if err != nil {
		return err
	}
	old := c.Primary()
	for _, x := range []*Node{old, n} {
		if !alive(c.pid(x), x.cnf()) {
			return fmt.Errorf("sandbox: switchover: %s is not running", x.Name)
		}
	}
	if err := c.exec(ctx, old, c.fl.readOnlySQL(true)...); err != nil {
		return err
	}
	// From here on a failure leaves the old primary read-only: the error says so.
	undo := func(err error) error {
		if uerr := c.exec(context.Background(), old, c.fl.readOnlySQL(false)...); uerr != nil {
			return fmt.Errorf("%w (and %s stayed read-only: %v)", err, old.Name, uerr)
		}
		return fmt.Errorf("%w (%s takes writes again)", err, old.Name)
	}
	odb := c.adminDB(old)
	var pos string
	err = odb.QueryRowContext(ctx, gtid.PositionQuery(c.fl.family())).Scan(&pos)
	odb.Close()
	if err != nil {
		return undo(fmt.Errorf("sandbox: switchover: %s: read position: %w", old.Name, err))
	}
	if err := c.waitFor(ctx, n, pos, timeout); err != nil {
		return undo(err)
	}
	if err := c.exec(ctx, n, c.fl.promoteSQL()...); err != nil {
		// Possibly half done (replication stopped or reset): point it at the old primary again.
		if rerr := c.exec(context.Background(), n, c.fl.repointSQL(old.Port, c.TLS, false)...); rerr != nil {
			err = fmt.Errorf("%w (and %s could not be repointed at %s: %v)", err, n.Name, old.Name, rerr)
		}
		return undo(err)
	}
	// A restart keeps the roles: the new primary's option file says read_only off, the old
	// one's what this cluster's replicas run with (n's, until now).
	replicasReadOnly, err := cnfReadOnly(n)
	if err == nil {
		err = errors.Join(setCnfReadOnly(n, false), setCnfReadOnly(old, replicasReadOnly))
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	old.Role, n.Role = RoleReplica, RolePrimary
	err = c.save()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range c.Replicas() {
		stmts := c.fl.repointSQL(n.Port, c.TLS, r == old)
		if !alive(c.pid(r), r.cnf()) {
			errs = append(errs, fmt.Errorf("sandbox: switchover: %s is not running: repoint it once started", r.Name))
			continue
		}
		errs = append(errs, c.exec(ctx, r, stmts...))
	}
	return errors.Join(errs...)
}

// cnfReadOnly reports whether n's option file starts it read-only.
func cnfReadOnly(n *Node) (bool, error) {
	b, err := os.ReadFile(n.cnf())
	if err != nil {
		return false, fmt.Errorf("sandbox: %w", err)
	}
	return strings.Contains("\n"+string(b), "\nread_only=ON"), nil
}

// setCnfReadOnly rewrites the read_only (and super_read_only) lines of n's option file.
func setCnfReadOnly(n *Node, on bool) error {
	b, err := os.ReadFile(n.cnf())
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		for _, key := range []string{"read_only=", "super_read_only="} {
			if strings.HasPrefix(l, key) {
				lines[i] = key + onOff(on)
			}
		}
	}
	if err := os.WriteFile(n.cnf(), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}
