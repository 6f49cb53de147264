package proxy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/classify"
	"github.com/sluicedb/sluice/internal/mysql"
	"github.com/sluicedb/sluice/internal/route"
)

// readResult reads a text result set of n columns from what writeResult wrote: the column
// names, the rows (nil for NULL) and the terminator's status.
func readResult(t *testing.T, out []byte, deprecateEOF bool) (cols []string, rows [][]*string, status uint16) {
	t.Helper()
	c := mysql.NewConn(&memConn{in: out}, 0, 0)
	next := func() []byte {
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	n := int(next()[0])
	for range n {
		p := next()
		for range 4 { // catalog, schema, table, org_table
			_, k, err := mysql.ReadLenEncString(p)
			if err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		name, _, err := mysql.ReadLenEncString(p)
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, string(name))
	}
	if !deprecateEOF {
		if p := next(); p[0] != 0xfe || len(p) != 5 {
			t.Fatalf("no EOF after the columns: % x", p)
		}
	}
	for {
		p := next()
		if p[0] == 0xfe && len(p) < 9 {
			if deprecateEOF {
				ok, err := mysql.ParseOK(p, mysql.ClientProtocol41|mysql.ClientDeprecateEOF)
				if err != nil {
					t.Fatal(err)
				}
				return cols, rows, ok.Status
			}
			return cols, rows, uint16(p[3]) | uint16(p[4])<<8
		}
		var row []*string
		for range n {
			if p[0] == 0xfb {
				row, p = append(row, nil), p[1:]
				continue
			}
			v, k, err := mysql.ReadLenEncString(p)
			if err != nil {
				t.Fatal(err)
			}
			s := string(v)
			row, p = append(row, &s), p[k:]
		}
		rows = append(rows, row)
	}
}

// TestWriteResult: a result sluice builds, over a bare client connection, in both EOF styles;
// MORE_RESULTS never set on it.
func TestWriteResult(t *testing.T) {
	for _, deprecate := range []bool{false, true} {
		caps := uint32(mysql.ClientProtocol41)
		if deprecate {
			caps |= mysql.ClientDeprecateEOF
		}
		mc := &memConn{}
		c := mysql.NewConn(mc, 0, 0)
		status := mysql.StatusAutocommit | mysql.StatusInTrans | mysql.StatusMoreResultsExists
		buf, err := writeResult(c, nil, resultFormat{caps: caps, status: status}, []string{"a", "b"},
			[][]cell{{text("1"), null}, {text(""), text("x")}})
		if err != nil {
			t.Fatal(err)
		}
		if len(buf) == 0 {
			t.Error("the buffer is not handed back")
		}
		cols, rows, st := readResult(t, mc.out, deprecate)
		if !slices.Equal(cols, []string{"a", "b"}) || len(rows) != 2 || *rows[0][0] != "1" || rows[0][1] != nil ||
			*rows[1][0] != "" || *rows[1][1] != "x" {
			t.Fatalf("deprecate EOF %v: columns %q rows %d", deprecate, cols, len(rows))
		}
		if st != mysql.StatusAutocommit|mysql.StatusInTrans {
			t.Errorf("deprecate EOF %v: status %#x", deprecate, st)
		}
	}
}

// TestNodeRowsAndLastRoute: SHOW NODES and SHOW LAST ROUTE built from a snapshot alone.
func TestNodeRowsAndLastRoute(t *testing.T) {
	snap := testTopology(t, 2).Snapshot()
	cols, rows := nodeRows(snap, &route.Settings{Mode: route.ReadWrite, Weights: []int{0, 100}}, nil)
	if len(cols) != 15 || len(rows) != 2 {
		t.Fatalf("%d columns, %d rows", len(cols), len(rows))
	}
	if rows[0][0].s != "primary" || rows[0][2].s != "primary" || rows[1][2].s != "replica" || !rows[0][12].null {
		t.Errorf("rows %+v", rows)
	}
	// reads: this endpoint's verdict on each node.
	if rows[0][14].s != "no: weight 0" || rows[1][14].s != "yes" {
		t.Errorf("reads: %q, %q", rows[0][14].s, rows[1][14].s)
	}
	_, rows = lastRouteRow(routeInfo{}, 0, snap)
	if rows[0][0].s != "" || rows[0][2].s != "" || rows[0][3].s != "" {
		t.Errorf("before any statement: %+v", rows)
	}
	_, rows = lastRouteRow(routeInfo{valid: true, node: 1, reason: route.ReasonRead}, 0, snap)
	if rows[0][0].s != "replica1" || rows[0][1].s != "replica" || rows[0][2].s != route.ReasonRead.String() {
		t.Errorf("a read: %+v", rows)
	}
	_, rows = lastRouteRow(routeInfo{valid: true, node: -1, reason: route.ReasonRead}, 0, snap)
	if rows[0][0].s != "sluice" || rows[0][1].s != "proxy" {
		t.Errorf("answered by sluice: %+v", rows)
	}
	// The pins column: what holds the session on the primary now, by its stable names.
	cols, rows = lastRouteRow(routeInfo{valid: true, node: 0, reason: route.ReasonPinned}, route.PinTempTable|route.PinGetLock, snap)
	if len(cols) != 4 || cols[3] != "pins" || rows[0][3].s != "temporary_table,user_lock" {
		t.Errorf("pinned: %v %+v", cols, rows)
	}
}

// TestMayRun: who may run which sluice command: an unknown one is refused with the list of the
// known ones; SHOW NODES only by the users of topology_users when it names any.
func TestMayRun(t *testing.T) {
	app, ops := &User{Name: "app"}, &User{Name: "ops"}
	for _, tc := range []struct {
		cmd   classify.ProxyCommand
		user  *User
		users []string
		code  uint16 // 0: allowed
	}{
		{classify.ShowNodes, app, nil, 0},
		{classify.ShowNodes, ops, nil, 0},
		{classify.ShowNodes, ops, []string{"ops"}, 0},
		{classify.ShowNodes, app, []string{"ops"}, 1227},
		{classify.ShowNodes, nil, []string{"ops"}, 1227},
		{classify.ShowLastRoute, app, []string{"ops"}, 0},
		{classify.ShowConsistency, app, []string{"ops"}, 0},
		{classify.ShowCluster, app, nil, 0},
		{classify.ShowCluster, ops, []string{"ops"}, 0},
		{classify.ShowCluster, app, []string{"ops"}, 1227},
		{classify.ProxyUnknown, ops, nil, mysql.ErrUnknown},
	} {
		err := mayRun(tc.cmd, tc.user, tc.users)
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%v %v %v: %v, want allowed", tc.cmd, tc.user, tc.users, err)
		case tc.code != 0 && (err == nil || err.Code != tc.code):
			t.Errorf("%v %v %v: %v, want %d", tc.cmd, tc.user, tc.users, err, tc.code)
		}
	}
	if err := mayRun(classify.ShowCluster, app, []string{"ops"}); !strings.Contains(err.Message, "SLUICE SHOW CLUSTER") {
		t.Errorf("SHOW CLUSTER refused: %q", err.Message)
	}
	if err := mayRun(classify.ProxyUnknown, app, nil); !strings.Contains(err.Message, classify.ProxyCommands) {
		t.Errorf("unknown command: %q does not list the commands", err.Message)
	}
}

// TestClusterRows: SHOW CLUSTER, one row per live sluice node: every row has the stored
// revision beside its own applied one; only this sluice's row has the store's link, the
// revision it refused and the settings waiting for its restart (NULL elsewhere: unknown).
func TestClusterRows(t *testing.T) {
	started := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	v := ClusterView{Connected: false, Since: started.Add(time.Hour), LastError: "context deadline exceeded", Revision: 9,
		Refused: "backends[1].address: required", RefusedRevision: 9, PendingRestart: []string{"threads", "log.format"},
		Members: []ClusterMember{
			{Name: "a", Zone: "z1", Version: "1.2.0", Admin: "127.0.0.21:6080", Started: started, Applied: 8, Self: true,
				Endpoints: map[string]string{"rw": "127.0.0.21:6033", "ro": "127.0.0.21:6034"}},
			{Name: "b", Version: "1.2.0", Applied: 9},
		}}
	cols, rows := clusterRows(v)
	get := func(r int, col string) cell {
		i := slices.Index(cols, col)
		if i < 0 {
			t.Fatalf("no column %s in %v", col, cols)
		}
		return rows[r][i]
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for col, want := range map[string]string{"name": "a", "this": "yes", "zone": "z1", "started": "2026-12-02 12:00:00",
		"applied_revision": "8", "stored_revision": "9", "store": "not connected since 2026-12-02 13:00:00: context deadline exceeded",
		"refused": "revision 9: backends[1].address: required", "pending_restart": "threads,log.format",
		"admin": "127.0.0.21:6080", "endpoints": "ro=127.0.0.21:6034,rw=127.0.0.21:6033"} {
		if c := get(0, col); c.null || c.s != want {
			t.Errorf("this sluice's %s: %+v, want %q", col, c, want)
		}
	}
	for _, col := range []string{"store", "refused", "pending_restart", "started"} {
		if !get(1, col).null {
			t.Errorf("another sluice's %s: %+v, want NULL", col, get(1, col))
		}
	}
	if get(1, "this").s != "no" || get(1, "stored_revision").s != "9" || get(1, "applied_revision").s != "9" {
		t.Errorf("another sluice's row: %+v", rows[1])
	}
	v.Connected, v.Refused, v.PendingRestart = true, "", nil
	_, rows = clusterRows(v)
	if c := get(0, "store"); c.s != "connected" {
		t.Errorf("connected: %+v", c)
	}
	if c := get(0, "refused"); c.null || c.s != "" {
		t.Errorf("nothing refused: %+v", c)
	}
}
