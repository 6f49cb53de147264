package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicedb/sluice/internal/config"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// userLimitMessage is the server's ER_USER_LIMIT_REACHED for user at limit max.
func userLimitMessage(user string, max int) string {
	return fmt.Sprintf("User '%s' has exceeded the 'max_user_connections' resource (current value: %d)", user, max)
}

// appSessions counts the live sessions of user app.
func appSessions(s *sluice) int {
	n := 0
	for _, se := range s.app.Sessions() {
		if se.User == "app" {
			n++
		}
	}
	return n
}

// waitAppSessions waits until user app has want sessions (the proxy ends a session a moment
// after its client left).
func waitAppSessions(t *testing.T, s *sluice, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for appSessions(s) != want {
		if time.Now().After(deadline) {
			t.Fatalf("user app has %d sessions, want %d", appSessions(s), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMaxUserConnections: users[].max_user_connections counts a user's sessions over every
// endpoint; a login past it gets the server's error 1226 (42000) and is counted as refused for
// max_user_connections; a place comes back when a session ends by quitting, by a kill, by its
// client going away and by a login that failed after taking it; and many logins and kills at
// once neither leak places nor make more (the limit holds exactly afterwards).
func TestMaxUserConnections(t *testing.T) {
	const limit = 3
	plain := withPlainUser(t)
	s := startSluice(t, func(c *config.Config) {
		c.Admin.Listen, c.Admin.Token = "127.0.0.1:0", ""
		for i := range c.Users {
			if c.Users[i].Name == "app" {
				c.Users[i].MaxUserConnections = limit
			}
		}
		plain(c)
		c.Users[len(c.Users)-1].MaxUserConnections = 1
	})
	ctx := context.Background()
	rw := open(t, dsn(s.rw, "app", "app", "", ""))
	ro := open(t, dsn(s.ro, "app", "app", "", ""))
	rw.SetMaxIdleConns(0)
	ro.SetMaxIdleConns(0)
	before := scrape(t, s)

	// Two on rw and one on ro: the limit is the user's, over both endpoints.
	var held []*sql.Conn
	for _, db := range []*sql.DB{rw, rw, ro} {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	refused := func(db *sql.DB) {
		t.Helper()
		c, err := db.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
			c.Close()
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1226 || string(me.SQLState[:]) != "42000" || me.Message != userLimitMessage("app", limit) {
			t.Fatalf("login past max_user_connections: %v", err)
		}
	}
	refused(rw)
	refused(ro)
	after := scrape(t, s)
	if got := sample(after, "sluice_client_connections_refused_total", "endpoint=rw", "reason=max_user_connections") -
		sample(before, "sluice_client_connections_refused_total", "endpoint=rw", "reason=max_user_connections"); got != 1 {
		t.Errorf("refused for max_user_connections on rw: %v, want 1", got)
	}
	if got := sample(after, "sluice_client_errors_total", "endpoint=ro", "code=1226") -
		sample(before, "sluice_client_errors_total", "endpoint=ro", "code=1226"); got != 1 {
		t.Errorf("errors 1226 on ro: %v, want 1", got)
	}
	// Quit (COM_QUIT): a place comes back.
	held[0].Close()
	waitAppSessions(t, s, limit-1)
	c, err := rw.Conn(ctx)
	if err == nil {
		err = c.PingContext(ctx)
	}
	if err != nil {
		t.Fatalf("login after a session quit: %v", err)
	}
	held[0] = c
	refused(rw)
	// Killed from the admin API: a place comes back.
	var id uint64
	for _, se := range s.app.Sessions() {
		if se.User == "app" {
			id = se.ID
		}
	}
	if !s.app.KillSession(id) {
		t.Fatalf("no session %d to kill", id)
	}
	waitAppSessions(t, s, limit-1)
	// The client's connection goes away without a word: a place comes back.
	nc := rawConnect(t, s.rw, "app", "app")
	waitAppSessions(t, s, limit)
	refused(ro)
	nc.Close()
	waitAppSessions(t, s, limit-1)
	for _, c := range held {
		c.Close()
	}
	waitAppSessions(t, s, 0)

	// Many logins and kills at once.
	var wg sync.WaitGroup
	var in, out, kills, maxSeen atomic.Int64
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // kills app's sessions while they log in and run
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, se := range s.app.Sessions() {
				if se.User == "app" && se.ID%3 == 0 && s.app.KillSession(se.ID) {
					kills.Add(1)
				}
			}
			if n := int64(appSessions(s)); n > maxSeen.Load() {
				maxSeen.Store(n)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	errs := make(chan error, 64)
	var clients sync.WaitGroup
	for g := range 24 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			db := rw
			if g%2 == 1 {
				db = ro
			}
			for range 25 {
				c, err := db.Conn(ctx)
				if err == nil {
					err = c.PingContext(ctx)
				}
				var me *mysql.MySQLError
				switch {
				case err == nil:
					in.Add(1)
					_, _ = c.ExecContext(ctx, "DO SLEEP(0.01)")
					c.Close()
				case errors.As(err, &me) && me.Number == 1927: // killed: "Connection was killed"
					if c != nil {
						c.Close()
					}
				case errors.As(err, &me) && me.Number == 1226:
					out.Add(1)
					if c != nil {
						c.Close()
					}
				case errors.Is(err, mysql.ErrInvalidConn), strings.Contains(err.Error(), "bad connection"), strings.Contains(err.Error(), "EOF"),
					strings.Contains(err.Error(), "connection reset"), strings.Contains(err.Error(), "broken pipe"):
					// Killed in its login or first statement.
					if c != nil {
						c.Close()
					}
				default:
					errs <- err
					if c != nil {
						c.Close()
					}
					return
				}
			}
		}()
	}
	clients.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a login under load: %v", err)
	}
	if in.Load() == 0 || out.Load() == 0 {
		t.Errorf("under load: %d logins in, %d refused: the test did not reach the limit", in.Load(), out.Load())
	}
	if m := maxSeen.Load(); m > limit {
		t.Errorf("user app had %d sessions at once, limit %d", m, limit)
	}
	waitAppSessions(t, s, 0)
	// Exactly limit places are free again: none leaked, none made.
	held = held[:0]
	for range limit {
		c, err := rw.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			t.Fatalf("after the load, login %d of %d: %v", len(held)+1, limit, err)
		}
		held = append(held, c)
	}
	refused(rw)
	for _, c := range held {
		c.Close()
	}
	waitAppSessions(t, s, 0)
	t.Logf("under load: %d logins in, %d refused with 1226, %d kills", in.Load(), out.Load(), kills.Load())

	// COM_CHANGE_USER: to a user at its limit, the server's 1226, and the session stays with
	// its previous user (and its place); to a user with room, the place moves with it.
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	holder := rawConnect(t, s.rw, plainUser, plainPassword)
	r := changeUserRaw(t, via, plainUser, plainPassword)
	if !smysql.IsERR(r) || smysql.ParseERR(r).Code != 1226 || smysql.ParseERR(r).Message != userLimitMessage(plainUser, 1) {
		t.Fatalf("change to a user at its limit: %q", r)
	}
	if got := query(t, via, "SELECT SUBSTRING_INDEX(CURRENT_USER(), '@', 1)"); got != "app" {
		t.Fatalf("after a refused change of user: %q, want app", got)
	}
	waitAppSessions(t, s, 1)
	holder.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = changeUserRaw(t, via, plainUser, plainPassword)
		if smysql.IsOK(r) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // the holder's session ends a moment after it left
	}
	if !smysql.IsOK(r) {
		t.Fatalf("change to a user with room: %v", smysql.ParseERR(r))
	}
	waitAppSessions(t, s, 0) // app's place came back
	pdb := open(t, dsn(s.rw, plainUser, plainPassword, "", ""))
	if err := pdb.PingContext(ctx); mysqlErr(t, err).Number != 1226 {
		t.Fatalf("a login as %s while a changed session holds its place: %v", plainUser, err)
	}
	if r := changeUserRaw(t, via, "app", "app"); !smysql.IsOK(r) {
		t.Fatalf("change back to app: %v", smysql.ParseERR(r))
	}
	if err := pdb.PingContext(ctx); err != nil {
		t.Fatalf("a login as %s once the changed session left it: %v", plainUser, err)
	}
}

// TestMaxUserConnectionsLikeServer: the mariadb client past a user's limit sees through sluice
// what it sees from a server past the same account's MAX_USER_CONNECTIONS: the same words, code
// and SQLSTATE.
func TestMaxUserConnectionsLikeServer(t *testing.T) {
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		t.Skip("mariadb client not installed")
	}
	primaryUser(t, "ulim", "IDENTIFIED BY 'ulim_pw' WITH MAX_USER_CONNECTIONS 1")
	ctx := context.Background()
	s := startSluice(t, func(c *config.Config) {
		c.Users = append(c.Users, config.User{Name: "ulim", Password: "ulim_pw", MaxUserConnections: 1})
	})
	// One session through sluice holds the user's place in sluice and its one connection on
	// the primary.
	db := open(t, dsn(s.rw, "ulim", "ulim_pw", "", ""))
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var id int
	if err := c.QueryRowContext(ctx, "/*FORCE_NODE='primary'*/ SELECT 1").Scan(&id); err != nil {
		t.Fatal(err)
	}
	run := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		out, err := exec.Command(bin, "--no-defaults", "-h"+host, "-P"+port, "-uulim", "-pulim_pw", "-e", "SELECT 1").CombinedOutput()
		if err == nil {
			t.Fatalf("mariadb to %s logged in past the limit: %s", addr, out)
		}
		return strings.TrimSpace(string(out))
	}
	via, direct := run(s.rw), run(testutil.Cluster(t).Primary().Address)
	want := "ERROR 1226 (42000): " + userLimitMessage("ulim", 1)
	if via != direct || via != want {
		t.Errorf("past the limit:\nthrough sluice: %s\ndirect:         %s\nwant:           %s", via, direct, want)
	}
}
