// Command nodecost measures what one command costs a node in CPU: it runs N of one kind of
// command against a MariaDB or MySQL server on this machine (loopback only) over one or more
// connections and reads the server process's CPU time (utime + stime of -pid in /proc) before
// and after. It prints one JSON line per kind: commands, seconds, the node's CPU µs per
// command and this tool's own.
//
//	nodecost -addr 127.0.0.1:PORT -pid PID [-n 5000 -user app -password app -db sbtest -kinds login,reset,select,guard]
//
// Kinds: login (a new connection, its login and COM_QUIT), reset (COM_RESET_CONNECTION),
// resetguard (COM_RESET_CONNECTION and the read-only guard in one write, as sluice gives a
// replica's connection back to its pool: backend.Conn.ResetSession), select (SELECT c FROM sbtest1 WHERE id = 1), guard (the
// read-only guard SET alone), ping (COM_PING). It answers "what does the pool save a node per
// short connection" with numbers from this machine rather than guesses (bench/RESULTS.md).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	"github.com/sluicedb/sluice/internal/mysql"
)

type result struct {
	Kind        string  `json:"kind"`
	Commands    int     `json:"commands"`
	Seconds     float64 `json:"seconds"`
	NodeCPUUs   float64 `json:"node_cpu_us_per_command"`
	ClientCPUUs float64 `json:"client_cpu_us_per_command"`
}

func main() {
	addr := flag.String("addr", "", "host:port of the node (loopback only)")
	pid := flag.Int("pid", 0, "the node's server process id (its CPU time is read from /proc)")
	n := flag.Int("n", 5000, "commands per kind")
	user := flag.String("user", "app", "user name")
	password := flag.String("password", "app", "password")
	db := flag.String("db", "sbtest", "database")
	kinds := flag.String("kinds", "login,reset,resetguard,select,guard,ping", "comma-separated kinds")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || *pid <= 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "nodecost: -addr must be a loopback host:port, -pid and -n positive")
		os.Exit(2)
	}
	o := backend.Options{Address: *addr, Database: *db, Charset: 45, Capabilities: backend.AlwaysCaps,
		Credentials: backend.Credentials{User: *user, Password: *password, HasPassword: true}, ConnectTimeout: 5 * time.Second}
	for _, k := range strings.Split(*kinds, ",") {
		r, err := run(k, o, *pid, *n)
		if err != nil {
			fmt.Fprintf(os.Stderr, "nodecost: %s: %v\n", k, err)
			os.Exit(1)
		}
		out, _ := json.Marshal(r)
		fmt.Println(string(out))
	}
}

func run(kind string, o backend.Options, pid, n int) (*result, error) {
	var c *backend.Conn
	if kind != "login" {
		var err error
		o.ReadOnly = kind == "resetguard"
		if c, err = backend.Dial(context.Background(), o); err != nil {
			return nil, err
		}
		defer c.Close()
	}
	one := func() error {
		switch kind {
		case "login":
			c, err := backend.Dial(context.Background(), o)
			if err != nil {
				return err
			}
			c.SetSeq(0)
			err = c.WritePacketFlush([]byte{mysql.ComQuit})
			c.Close()
			return err
		case "reset":
			return c.Command([]byte{mysql.ComResetConnection})
		case "resetguard":
			_, err := c.ResetSession(false)
			return err
		case "select":
			_, err := c.Query("SELECT c FROM sbtest1 WHERE id = 1")
			return err
		case "guard":
			return c.Exec(backend.ReadOnlyGuard)
		case "ping":
			return c.Command([]byte{mysql.ComPing})
		}
		return fmt.Errorf("unknown kind %q", kind)
	}
	if err := one(); err != nil { // warm up, and fail early on a bad kind
		return nil, err
	}
	node0, self0, t0 := procCPU(pid), selfCPU(), time.Now()
	for range n {
		if err := one(); err != nil {
			return nil, err
		}
	}
	el := time.Since(t0)
	node, self := procCPU(pid)-node0, selfCPU()-self0
	return &result{Kind: kind, Commands: n, Seconds: el.Seconds(),
		NodeCPUUs:   float64(node.Microseconds()) / float64(n),
		ClientCPUUs: float64(self.Microseconds()) / float64(n)}, nil
}

// procCPU is pid's CPU time so far (utime + stime of /proc/PID/stat), 0 when unreadable.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
