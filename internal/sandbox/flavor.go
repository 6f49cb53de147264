package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/internal/gtid"
)

// Flavors of server the sandbox can run.
const (
	FlavorMariaDB = "mariadb"
	FlavorMySQL   = "mysql"
)

// ErrServerNotFound is returned (wrapped) by Up and Available when neither mariadbd nor
// mysqld can be found. Tests use it to tell "cannot run here" from "broken".
var ErrServerNotFound = errors.New("no MariaDB or MySQL server binary found")

// installHint is appended to ErrServerNotFound so the user knows the one command that fixes it.
const installHint = "install MariaDB (Debian/Ubuntu: sudo apt-get install mariadb-server mariadb-client)"

// extraBinDirs are searched after PATH: an ordinary user's PATH on Debian lacks /usr/sbin,
// where mariadbd lives, and tarball installs of MySQL live under /usr/local/mysql/bin.
var extraBinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/bin", "/usr/local/mysql/bin"}

// lookBin finds an executable by name on PATH or in extraBinDirs.
func lookBin(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
			return p
		}
	}
	for _, n := range names {
		for _, d := range extraBinDirs {
			p := filepath.Join(d, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	return ""
}

// flavor holds what differs between MariaDB and MySQL: binaries, config lines and the SQL
// spelling of replication control.
type flavor struct {
	name    string // FlavorMariaDB | FlavorMySQL
	server  string // mariadbd or mysqld, absolute
	install string // mariadb-install-db (MariaDB only; MySQL bootstraps with mysqld --initialize-insecure)
}

// Available reports whether a server the sandbox can run is installed; the error wraps
// ErrServerNotFound and says how to install one.
func Available() error {
	_, err := findFlavor()
	return err
}

// findFlavor prefers mariadbd. A lone mysqld may still be MariaDB (Debian ships mysqld as a
// symlink to mariadbd), so its --version decides.
func findFlavor() (*flavor, error) {
	if srv := lookBin("mariadbd"); srv != "" {
		inst := lookBin("mariadb-install-db", "mysql_install_db")
		if inst == "" {
			return nil, fmt.Errorf("%w: found %s but not mariadb-install-db; %s", ErrServerNotFound, srv, installHint)
		}
		return &flavor{name: FlavorMariaDB, server: srv, install: inst}, nil
	}
	srv := lookBin("mysqld")
	if srv == "" {
		return nil, fmt.Errorf("%w (looked for mariadbd and mysqld on PATH and in %s); %s",
			ErrServerNotFound, strings.Join(extraBinDirs, ", "), installHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, srv, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %s --version: %v: %s", srv, err, bytes.TrimSpace(out))
	}
	if bytes.Contains(bytes.ToLower(out), []byte("mariadb")) {
		inst := lookBin("mariadb-install-db", "mysql_install_db")
		if inst == "" {
			return nil, fmt.Errorf("%w: found %s (MariaDB) but not mariadb-install-db; %s", ErrServerNotFound, srv, installHint)
		}
		return &flavor{name: FlavorMariaDB, server: srv, install: inst}, nil
	}
	return &flavor{name: FlavorMySQL, server: srv}, nil
}

// flavorFor rebuilds the flavor of an existing cluster from sandbox.json.
func flavorFor(name, server string) *flavor {
	return &flavor{name: name, server: server}
}

func (f *flavor) mariadb() bool { return f.name == FlavorMariaDB }

// family is the flavour as the topology's shared queries know it.
func (f *flavor) family() gtid.Flavor {
	if f.mariadb() {
		return gtid.MariaDB
	}
	return gtid.MySQL
}

// nodeConfig is what the per-node option file is rendered from.
type nodeConfig struct {
	user              string // "" = no user= line (not running as root)
	dir               string // the node's own directory
	port              int
	serverID          int
	replica           bool
	writable          bool // a replica with read_only OFF
	bufferPoolMB      int
	maxConnections    int
	performanceSchema bool
	certFile, keyFile string // "" = no TLS
	proxyProtocol     bool   // take PROXY headers from sluice's address (MariaDB only)
}

// File names inside a node's directory.
const (
	cnfName     = "my.cnf"
	socketName  = "mysqld.sock"
	pidName     = "mysqld.pid"
	errLogName  = "error.log"
	outLogName  = "server.log" // the server's own stdout/stderr
	instLogName = "install.log"
	initName    = "init.sql"
)

// ProxyProtocolNetworks is the nodes' proxy_protocol_networks under Options.ProxyProtocol:
// the address sluice connects to them from, and nothing else.
const ProxyProtocolNetworks = "127.0.0.1/32"

// cnf renders the node's option file. The [mysqld] group is read by every MariaDB and MySQL
// version, by mariadbd, mysqld and mariadb-install-db alike.
func (f *flavor) cnf(n nodeConfig) string {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	data := filepath.Join(n.dir, "data")
	line("# written by sluice sandbox; the server reads only this file (--defaults-file)")
	line("[mysqld]")
	if n.user != "" {
		// mariadbd/mysqld refuse to run as root without an explicit user.
		line("user=%s", n.user)
	}
	line("datadir=%s", data)
	line("socket=%s", filepath.Join(n.dir, socketName))
	line("pid-file=%s", filepath.Join(n.dir, pidName))
	// Own tmpdir per node: parallel bootstraps sharing /tmp failed now and then with
	// "Could not remove temporary table" and then a broken mysql.user (see the recipe).
	line("tmpdir=%s", filepath.Join(n.dir, "tmp"))
	line("log-error=%s", filepath.Join(n.dir, errLogName))
	line("port=%d", n.port)
	line("bind-address=127.0.0.1")
	line("skip-name-resolve")
	line("server_id=%d", n.serverID)
	line("log_bin=%s", filepath.Join(data, "binlog"))
	line("relay_log=%s", filepath.Join(data, "relay"))
	if f.mariadb() {
		line("binlog_format=ROW")
		line("log_slave_updates=ON")
		line("gtid_domain_id=0")
		line("gtid_strict_mode=ON")
		line("slave_parallel_threads=2")
		line("innodb_log_file_size=64M")
		line("read_only=%s", onOff(n.replica && !n.writable))
		// Makes every OK packet after a commit carry last_gtid (with CLIENT_SESSION_TRACK).
		line("session_track_system_variables=autocommit,character_set_client,character_set_connection,character_set_results,time_zone,last_gtid")
	} else {
		// MySQL 8.0+: ROW binlogs and log_replica_updates are the defaults (and the options
		// to set them are deprecated), so only GTID mode needs saying.
		line("gtid_mode=ON")
		line("enforce_gtid_consistency=ON")
		// super_read_only: on MySQL, read_only alone lets SUPER/CONNECTION_ADMIN holders (the
		// app account has ALL) write on a replica.
		line("read_only=%s", onOff(n.replica && !n.writable))
		line("super_read_only=%s", onOff(n.replica && !n.writable))
		line("session_track_gtids=OWN_GTID")
		line("session_track_system_variables=autocommit,character_set_client,character_set_connection,character_set_results,time_zone")
		// The X plugin would listen on 33060 on every node and the nodes would collide.
		line("mysqlx=OFF")
	}
	line("innodb_buffer_pool_size=%dM", n.bufferPoolMB)
	line("max_connections=%d", n.maxConnections)
	line("max_prepared_stmt_count=100000")
	line("max_allowed_packet=48M")
	line("local_infile=ON")
	line("performance_schema=%s", onOff(n.performanceSchema))
	if n.proxyProtocol {
		// Only sluice's own address (the proxy dials the nodes from 127.0.0.1): a header from
		// anywhere else is refused, and a connection from here without one (replication, the
		// monitor) is taken as it is.
		line("proxy_protocol_networks=%s", ProxyProtocolNetworks)
	}
	if n.certFile != "" {
		line("ssl_cert=%s", n.certFile)
		line("ssl_key=%s", n.keyFile)
	}
	line("# fast and not durable: for tests and benchmarks only")
	line("innodb_flush_log_at_trx_commit=2")
	line("sync_binlog=0")
	return b.String()
}

// initSQL is run once at bootstrap on every node, before the server ever listens. It creates
// the administrator sluice's sandbox code logs in as: go-sql-driver cannot use root's
// unix_socket authentication, and a password-less root reachable over TCP is worse. The
// account is @localhost, which under skip-name-resolve matches only unix-socket connections.
func (f *flavor) initSQL(adminUser, adminPassword string) string {
	var b strings.Builder
	if f.mariadb() {
		// mariadb-install-db runs this with --skip-grant-tables; FLUSH PRIVILEGES loads the
		// grant tables so that CREATE USER works. Bootstrap does not write the binlog.
		b.WriteString("FLUSH PRIVILEGES;\n")
	} else {
		// Keep the account out of the binlog: it exists on every node separately, and a
		// replicated CREATE USER would collide on the replicas.
		b.WriteString("SET SESSION sql_log_bin=0;\n")
		// --initialize-insecure leaves root@localhost without a password.
		fmt.Fprintf(&b, "ALTER USER 'root'@'localhost' IDENTIFIED BY %s;\n", quote(adminPassword))
	}
	fmt.Fprintf(&b, "CREATE USER %s@'localhost' IDENTIFIED BY %s;\n", quote(adminUser), quote(adminPassword))
	fmt.Fprintf(&b, "GRANT ALL PRIVILEGES ON *.* TO %s@'localhost' WITH GRANT OPTION;\n", quote(adminUser))
	return b.String()
}

// bootstrapCmd returns the command that creates a node's system tables.
func (f *flavor) bootstrapCmd(cnf, initFile string) (string, []string) {
	if f.mariadb() {
		// --defaults-file must be the first option. Root keeps unix_socket login, so a human
		// who is OS root can still run `mariadb -uroot -S DIR/NODE/mysqld.sock`.
		return f.install, []string{"--defaults-file=" + cnf, "--skip-test-db",
			"--auth-root-authentication-method=socket", "--extra-file=" + initFile}
	}
	// read_only settings in the cnf are for the running replica, not for initialization.
	return f.server, []string{"--defaults-file=" + cnf, "--initialize-insecure", "--init-file=" + initFile,
		"--read-only=OFF", "--super-read-only=OFF"}
}

// serverArgs are the arguments of a node's server process; --defaults-file must come first.
func serverArgs(cnf string) []string { return []string{"--defaults-file=" + cnf} }

// changeSourceSQL points a replica at the primary.
func (f *flavor) changeSourceSQL(primaryPort int, tls bool) []string {
	if f.mariadb() {
		ssl := "MASTER_SSL=0"
		if tls {
			ssl = "MASTER_SSL=1, MASTER_SSL_VERIFY_SERVER_CERT=0"
		}
		return []string{
			"SET GLOBAL gtid_slave_pos=''",
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, "+
				"MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1, %s",
				primaryPort, quote(ReplUser), quote(ReplPassword), ssl),
			"START SLAVE",
		}
	}
	ssl := "SOURCE_SSL=0"
	if tls {
		ssl = "SOURCE_SSL=1"
	}
	return []string{
		// GET_SOURCE_PUBLIC_KEY: caching_sha2_password over a non-TLS link needs the RSA key.
		fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER=%s, SOURCE_PASSWORD=%s, "+
			"SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, GET_SOURCE_PUBLIC_KEY=1, %s",
			primaryPort, quote(ReplUser), quote(ReplPassword), ssl),
		"START REPLICA",
	}
}

// repointSQL makes a node replicate from the primary at primaryPort, continuing from the
// transactions it has. On MariaDB a replica continues from what it applied
// (MASTER_USE_GTID=slave_pos, which leaves out any transaction it wrote itself), and a demoted
// primary from what it wrote as a primary as well (current_pos: its slave_pos has none of
// that). MySQL's auto-position uses gtid_executed, which has both.
func (f *flavor) repointSQL(primaryPort int, tls, wasPrimary bool) []string {
	if f.mariadb() {
		ssl := "MASTER_SSL=0"
		if tls {
			ssl = "MASTER_SSL=1, MASTER_SSL_VERIFY_SERVER_CERT=0"
		}
		use := "slave_pos"
		if wasPrimary {
			use = "current_pos"
		}
		return []string{
			"STOP SLAVE",
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER=%s, MASTER_PASSWORD=%s, "+
				"MASTER_USE_GTID=%s, MASTER_CONNECT_RETRY=1, %s",
				primaryPort, quote(ReplUser), quote(ReplPassword), use, ssl),
			"START SLAVE",
		}
	}
	return append([]string{"STOP REPLICA"}, f.changeSourceSQL(primaryPort, tls)...)
}

// promoteSQL makes a replica that has applied everything a primary: it stops replicating,
// forgets its source, and takes writes.
func (f *flavor) promoteSQL() []string {
	if f.mariadb() {
		return []string{"STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only=OFF"}
	}
	return []string{"STOP REPLICA", "RESET REPLICA ALL", "SET GLOBAL super_read_only=OFF", "SET GLOBAL read_only=OFF"}
}

// readOnlySQL sets read_only (on MySQL, super_read_only with it, which stops every account).
func (f *flavor) readOnlySQL(on bool) []string {
	if f.mariadb() {
		return []string{"SET GLOBAL read_only=" + onOff(on)}
	}
	if on {
		return []string{"SET GLOBAL super_read_only=ON"}
	}
	return []string{"SET GLOBAL super_read_only=OFF", "SET GLOBAL read_only=OFF"}
}

func (f *flavor) pauseSQL() []string {
	if f.mariadb() {
		return []string{"STOP SLAVE SQL_THREAD"}
	}
	return []string{"STOP REPLICA SQL_THREAD"}
}

func (f *flavor) resumeSQL() []string {
	if f.mariadb() {
		return []string{"START SLAVE SQL_THREAD"}
	}
	return []string{"START REPLICA SQL_THREAD"}
}

// lagSQL sets a replication delay. Both threads must be stopped first: with only the SQL
// thread stopped MariaDB answers ERROR 1198 "run STOP SLAVE first".
func (f *flavor) lagSQL(seconds int) []string {
	if f.mariadb() {
		return []string{"STOP SLAVE", fmt.Sprintf("CHANGE MASTER TO MASTER_DELAY=%d", seconds), "START SLAVE"}
	}
	return []string{"STOP REPLICA", fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_DELAY=%d", seconds), "START REPLICA"}
}

// waitSQL waits on a replica until it applied a position; the result is waitOK when it did.
// MASTER_GTID_WAIT returns 0 or -1 (timeout); WAIT_FOR_EXECUTED_GTID_SET 0 or 1 (timeout).
func (f *flavor) waitSQL() string {
	if f.mariadb() {
		return "SELECT MASTER_GTID_WAIT(?, ?)"
	}
	return "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"
}

const waitOK = 0

// version splits "10.11.19-MariaDB-0+deb12u1-log" into 10, 11.
func parseVersion(v string) (major, minor int) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	major, _ = strconv.Atoi(parts[0])
	minor, _ = strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor
}

// quote renders s as a single-quoted SQL string literal. Only our own fixed names and
// passwords go through it, but escaping keeps it correct for any value.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}

func onOff(v bool) string {
	if v {
		return "ON"
	}
	return "OFF"
}
