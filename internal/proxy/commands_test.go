package proxy_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/backend"
	smysql "github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/testutil"
)

// command sends one command packet and returns every packet of the response, read up to its
// end according to shape: "single" (one packet), "fields" (up to EOF or ERR), "result" (OK, ERR
// or one text result set).
func command(t testing.TB, bc *backend.Conn, payload []byte, shape string) [][]byte {
	t.Helper()
	bc.SetSeq(0)
	if err := bc.WritePacketFlush(payload); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	read := func() []byte {
		p, err := bc.ReadPacket()
		if err != nil {
			t.Fatalf("reading response to 0x%02x: %v", payload[0], err)
		}
		c := append([]byte(nil), p...)
		out = append(out, c)
		return c
	}
	switch shape {
	case "single":
		read()
	case "fields":
		for {
			p := read()
			if p[0] == 0xfe || p[0] == 0xff {
				break
			}
		}
	case "result":
		p := read()
		if p[0] == 0x00 || p[0] == 0xff {
			break
		}
		eofs := 0
		want := 2
		if bc.Caps&smysql.ClientDeprecateEOF != 0 {
			want = 1
		}
		for eofs < want {
			p := read()
			if p[0] == 0xff {
				break
			}
			if p[0] == 0xfe && len(p) < 0xffffff {
				eofs++
			}
		}
	}
	return out
}

// lastRow returns the first column of the last row of a one-column text result.
func firstValue(t testing.TB, packets [][]byte) string {
	t.Helper()
	for _, p := range packets[1:] {
		if p[0] == 0xfe || bytes.HasPrefix(p, []byte("\x03def")) {
			continue
		}
		v, _, err := smysql.ReadLenEncString(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	t.Fatalf("no row in %q", packets)
	return ""
}

func query(t testing.TB, bc *backend.Conn, q string) string {
	t.Helper()
	ps := command(t, bc, append([]byte{smysql.ComQuery}, q...), "result")
	if smysql.IsERR(ps[0]) {
		t.Fatalf("%s: %v", q, smysql.ParseERR(ps[0]))
	}
	return firstValue(t, ps)
}

// TestCommandsLikeDirect sends each supported command straight to the primary and through
// sluice and compares the responses.
func TestCommandsLikeDirect(t *testing.T) {
	s := startSluice(t, nil)
	c := testutil.Cluster(t)
	direct := rawConnect(t, c.Primary().Address, "app", "app")
	defer direct.Close()
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	for _, bc := range []*backend.Conn{direct, via} {
		query(t, bc, "SELECT 1")
		if err := bc.Exec("CREATE TABLE IF NOT EXISTS test.t_fields (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL DEFAULT 'x')"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		shape   string
	}{
		{"ping", []byte{smysql.ComPing}, "single"},
		{"init db", append([]byte{smysql.ComInitDB}, "test"...), "single"},
		{"init db unknown", append([]byte{smysql.ComInitDB}, "no_such_db"...), "single"},
		{"field list", append([]byte{smysql.ComFieldList}, "t_fields\x00"...), "fields"},
		{"field list unknown", append([]byte{smysql.ComFieldList}, "no_such_table\x00"...), "fields"},
		{"set option on", []byte{smysql.ComSetOption, 0, 0}, "single"},
		{"set option off", []byte{smysql.ComSetOption, 1, 0}, "single"},
		{"reset connection", []byte{smysql.ComResetConnection}, "single"},
		{"query error", append([]byte{smysql.ComQuery}, "SELECT * FROM no_such_table"...), "result"},
		{"query ok", append([]byte{smysql.ComQuery}, "DO 1"...), "result"},
		{"query rows", append([]byte{smysql.ComQuery}, "SELECT 1 AS a, 'b' AS b, NULL AS c"...), "result"},
	} {
		d := command(t, direct, tc.payload, tc.shape)
		v := command(t, via, tc.payload, tc.shape)
		if len(d) != len(v) {
			t.Errorf("%s: %d packets direct, %d through sluice", tc.name, len(d), len(v))
			continue
		}
		for i := range d {
			if !bytes.Equal(d[i], v[i]) {
				t.Errorf("%s: packet %d differs:\ndirect %q\nsluice %q", tc.name, i, d[i], v[i])
			}
		}
	}
	// COM_STATISTICS: one string packet whose numbers change; compare its shape.
	d := command(t, direct, []byte{smysql.ComStatistics}, "single")
	v := command(t, via, []byte{smysql.ComStatistics}, "single")
	if !strings.HasPrefix(string(v[0]), "Uptime: ") || !strings.HasPrefix(string(d[0]), "Uptime: ") {
		t.Errorf("statistics: %q vs %q", v[0], d[0])
	}
	// The session is still usable after all of it.
	if got := query(t, via, "SELECT 41+1"); got != "42" {
		t.Fatalf("got %q", got)
	}
}

// TestResetConnection: COM_RESET_CONNECTION clears session state on the node.
func TestResetConnection(t *testing.T) {
	s := startSluice(t, nil)
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	query(t, via, "SELECT @x := 5")
	if got := query(t, via, "SELECT @x"); got != "5" {
		t.Fatalf("@x = %q", got)
	}
	ps := command(t, via, []byte{smysql.ComResetConnection}, "single")
	if !smysql.IsOK(ps[0]) {
		t.Fatalf("reset: %q", ps[0])
	}
	ps = command(t, via, append([]byte{smysql.ComQuery}, "SELECT @x IS NULL"...), "result")
	if got := firstValue(t, ps); got != "1" {
		t.Fatalf("@x survived the reset: %q", got)
	}
}

// TestChangeUser: COM_CHANGE_USER authenticates the new user against sluice's configuration
// and gives a fresh session as that user.
func TestChangeUser(t *testing.T) {
	s := startSluice(t, nil)
	via := rawConnect(t, s.rw, "app", "app")
	defer via.Close()
	query(t, via, "SELECT @y := 7")
	changeUser := func(user, password string) []byte { return changeUserRaw(t, via, user, password) }
	if r := changeUser("app", "app"); !smysql.IsOK(r) {
		t.Fatalf("change user: %v", smysql.ParseERR(r))
	}
	if got := query(t, via, "SELECT CONCAT(DATABASE(), ':', @y IS NULL)"); got != "test:1" {
		t.Fatalf("after change user: %q", got)
	}
	query(t, via, "SELECT @z := 1")
	r := changeUser("app", "wrong")
	if !smysql.IsERR(r) || smysql.ParseERR(r).Code != 1045 {
		t.Fatalf("change user with a wrong password: %q", r)
	}
	// As MariaDB does: the connection stays, as the previous user, with its session reset.
	const after = "SELECT CONCAT(SUBSTRING_INDEX(CURRENT_USER(), '@', 1), ':', DATABASE(), ':', @z IS NULL, ':', @@character_set_client = @@global.character_set_client)"
	if got := query(t, via, after); got != "app:test:1:1" {
		t.Fatalf("after a failed change user: %q, want app:test:1:1", got)
	}
}

// changeUserRaw sends COM_CHANGE_USER to user (mysql_native_password, database test) and returns
// the final answer.
func changeUserRaw(t testing.TB, via *backend.Conn, user, password string) []byte {
	t.Helper()
	// The auth data in COM_CHANGE_USER answers the connection's first nonce; sluice switches
	// to a fresh one, which the client answers again.
	p := []byte{smysql.ComChangeUser}
	p = append(p, user...)
	p = append(p, 0)
	auth := smysql.NativeScramble(password, via.Handshake.Nonce)
	p = append(p, byte(len(auth)))
	p = append(p, auth...)
	p = append(p, "test"...)
	p = append(p, 0, 45, 0)
	p = append(p, smysql.AuthNativePassword...)
	p = append(p, 0)
	via.SetSeq(0)
	if err := via.WritePacketFlush(p); err != nil {
		t.Fatal(err)
	}
	r, err := via.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if r[0] == 0xfe {
		plugin, nonce, err := smysql.ParseAuthSwitchRequest(r)
		if err != nil || plugin != smysql.AuthNativePassword {
			t.Fatalf("switch to %q: %v", plugin, err)
		}
		if err := via.WritePacketFlush(smysql.NativeScramble(password, nonce)); err != nil {
			t.Fatal(err)
		}
		if r, err = via.ReadPacket(); err != nil {
			t.Fatal(err)
		}
	}
	return append([]byte(nil), r...)
}

// TestKill: KILL QUERY and KILL CONNECTION with sluice's connection ids act on the node thread
// of that session, from another connection (how drivers cancel a query).
func TestKill(t *testing.T) {
	s := startSluice(t, nil)
	victim := rawConnect(t, s.rw, "app", "app")
	defer victim.Close()
	killer := rawConnect(t, s.rw, "app", "app")
	defer killer.Close()
	id := victim.Handshake.ConnectionID
	run := func(q string) (time.Duration, []byte) {
		start := time.Now()
		ps := command(t, victim, append([]byte{smysql.ComQuery}, q...), "result")
		return time.Since(start), ps[0]
	}
	done := make(chan []byte, 1)
	go func() { _, p := run("SELECT SLEEP(20)"); done <- p }()
	time.Sleep(300 * time.Millisecond)
	if err := killer.Exec(fmt.Sprintf("KILL QUERY %d", id)); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-done:
		// MariaDB ends SLEEP early with result 1 (or error 1317).
		if smysql.IsERR(p) && smysql.ParseERR(p).Code != 1317 {
			t.Fatalf("killed query: %v", smysql.ParseERR(p))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("KILL QUERY did not interrupt the statement")
	}
	if got := query(t, victim, "SELECT 'alive'"); got != "alive" {
		t.Fatalf("victim after KILL QUERY: %q", got)
	}
	// An unknown id gets the server's wording.
	err := killer.Exec("KILL 999999")
	if se, ok := err.(*smysql.SQLError); !ok || se.Code != 1094 {
		t.Fatalf("KILL of an unknown id: %v", err)
	}
	// A long comment does not hide a KILL: it names a sluice session, not a node thread (before,
	// a KILL over 128 bytes went to the primary as it was, where the number is another thread).
	long := fmt.Sprintf("KILL QUERY /* %s */ %d", strings.Repeat("x", 300), id)
	if err := killer.Exec(long); err != nil {
		t.Fatalf("KILL with a long comment: %v", err)
	}
	// Forms that would name a node thread are refused, not forwarded.
	for _, q := range []string{"KILL 1+1", "KILL (5)", "KILL QUERY ID 5", fmt.Sprintf("KILL %d; SELECT 1", id)} {
		err := killer.Exec(q)
		if se, ok := err.(*smysql.SQLError); !ok || se.Code != smysql.ErrUnknown || !strings.Contains(se.Message, "KILL takes") {
			t.Errorf("%s: %v, want sluice's refusal", q, err)
		}
	}
	if got := query(t, victim, "SELECT 'still alive'"); got != "still alive" {
		t.Fatalf("victim after the refused KILLs: %q", got)
	}
	// COM_PROCESS_KILL closes the victim's connection.
	killer.SetSeq(0)
	if err := killer.WritePacketFlush([]byte{smysql.ComProcessKill, byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}); err != nil {
		t.Fatal(err)
	}
	p, err := killer.ReadPacket()
	if err != nil || !smysql.IsOK(p) {
		t.Fatalf("COM_PROCESS_KILL: %q %v", p, err)
	}
	victim.SetSeq(0)
	_ = victim.WritePacketFlush(append([]byte{smysql.ComQuery}, "SELECT 1"...))
	if _, err := victim.ReadPacket(); err == nil {
		t.Fatal("killed connection still answers")
	}
	if got := query(t, killer, "SELECT 'killer ok'"); got != "killer ok" {
		t.Fatal(got)
	}
}
