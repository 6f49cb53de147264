package backend

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/mysql"
)

// columnDef is a ColumnDefinition41 for a VARCHAR column called name.
func columnDef(name string) []byte {
	b := mysql.AppendLenEncString(nil, []byte("def"))
	for _, s := range []string{"", "t", "t", name, name} {
		b = mysql.AppendLenEncString(b, []byte(s))
	}
	return append(b, 0x0c, 45, 0, 0xff, 0, 0, 0, 0xfd, 0, 0, 0, 0, 0)
}

// textRowPacket encodes a text row; a nil cell is NULL.
func textRowPacket(cells ...*string) []byte {
	var b []byte
	for _, c := range cells {
		if c == nil {
			b = append(b, 0xfb)
			continue
		}
		b = mysql.AppendLenEncString(b, []byte(*c))
	}
	return b
}

func str(s string) *string { return &s }

// writeResultSet writes a text result set as a node does for a client with caps, ending with
// status.
func writeResultSet(c *mysql.Conn, caps uint32, cols []string, rows [][]*string, status uint16) {
	_ = c.WritePacket(mysql.AppendLenEncInt(nil, uint64(len(cols))))
	for _, col := range cols {
		_ = c.WritePacket(columnDef(col))
	}
	deprecateEOF := caps&mysql.ClientDeprecateEOF != 0
	if !deprecateEOF {
		_ = c.WritePacket(mysql.AppendEOF(nil, 0, status))
	}
	for _, r := range rows {
		_ = c.WritePacket(textRowPacket(r...))
	}
	if deprecateEOF {
		_ = c.WritePacket(mysql.AppendOK(nil, mysql.OK{Header: 0xfe, Status: status}, AlwaysCaps))
	} else {
		_ = c.WritePacket(mysql.AppendEOF(nil, 0, status))
	}
	_ = c.Flush()
}

// resultNode answers the statements of a scripted node:
//
//	SELECT status     a result set of two columns and three rows, with NULLs
//	SELECT many N M   N one-column rows of M bytes
//	SELECT multi      the result set, then an OK, then a second result set
//	SELECT multi err  the result set, then an ERR
//	SELECT bad row    a row with a cell missing
//	LOAD DATA LOCAL   a LOCAL INFILE request, then (after the empty packet) an OK
//	DO 1, SET ...     an OK
//	SELECT wait X     one column, one row: X ("null": NULL)
//	anything else     ERR 1064
func resultNode(c *mysql.Conn, caps uint32, p []byte) {
	const st = mysql.StatusAutocommit
	statusRows := [][]*string{{str("Slave_IO_Running"), str("Yes")}, {str("Seconds_Behind_Master"), nil}, {str(""), str("")}}
	cols := []string{"Variable_name", "Value"}
	q := string(p[1:])
	switch {
	case q == "SELECT status":
		writeResultSet(c, caps, cols, statusRows, st|mysql.StatusInTrans)
	case strings.HasPrefix(q, "SELECT many "):
		var n, m int
		_, _ = fmt.Sscanf(q, "SELECT many %d %d", &n, &m)
		rows := make([][]*string, n)
		cell := str(strings.Repeat("x", m))
		for i := range rows {
			rows[i] = []*string{cell}
		}
		writeResultSet(c, caps, []string{"x"}, rows, st)
	case q == "SELECT multi":
		writeResultSet(c, caps, cols, statusRows, st|mysql.StatusMoreResultsExists)
		_ = c.WritePacket(mysql.AppendOK(nil, mysql.OK{AffectedRows: 1, Status: st | mysql.StatusMoreResultsExists}, AlwaysCaps))
		writeResultSet(c, caps, []string{"y"}, [][]*string{{str("2")}}, st)
	case q == "SELECT multi err":
		writeResultSet(c, caps, cols, statusRows, st|mysql.StatusMoreResultsExists)
		_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1146, "42S02", "Table 't.nope' doesn't exist")))
	case q == "SELECT bad row":
		writeResultSet(c, caps, cols, [][]*string{{str("a")}, {str("b"), str("c")}}, st)
	case q == "LOAD DATA LOCAL INFILE 'f' INTO TABLE t":
		_ = c.WritePacketFlush(append([]byte{0xfb}, 'f'))
		if p, err := c.ReadPacket(); err != nil || len(p) != 0 {
			return
		}
		_ = c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: st}, AlwaysCaps))
	case strings.HasPrefix(q, "SELECT wait "):
		v := str(strings.TrimPrefix(q, "SELECT wait "))
		if *v == "null" {
			v = nil
		}
		writeResultSet(c, caps, []string{"w"}, [][]*string{{v}}, st)
	case q == "DO 1", strings.HasPrefix(q, "SET "):
		_ = c.WritePacketFlush(mysql.AppendOK(nil, mysql.OK{Status: st | mysql.StatusInTrans}, AlwaysCaps))
	default:
		_ = c.WritePacketFlush(mysql.AppendERR(nil, mysql.NewError(1064, "42000", "You have an error in your SQL syntax")))
	}
}

// TestQuery: result sets under both protocols, NULLs, OK, ERR, bounds, several results; the
// connection stays usable after each.
func TestQuery(t *testing.T) {
	for _, caps := range []uint32{0, mysql.ClientDeprecateEOF | mysql.ClientMultiResults} {
		name := "classic EOF"
		if caps != 0 {
			name = "DEPRECATE_EOF"
		}
		t.Run(name, func(t *testing.T) {
			addr, _ := commandNode(t, mariaDBHandshake(), resultNode)
			bc := testDial(t, addr, Options{Capabilities: caps})
			if bc.Caps&mysql.ClientDeprecateEOF != caps&mysql.ClientDeprecateEOF {
				t.Fatalf("caps %#x", bc.Caps)
			}
			check := func(r *Rows) {
				t.Helper()
				want := &Rows{Columns: []string{"Variable_name", "Value"}, Values: [][]Value{
					{{S: "Slave_IO_Running"}, {S: "Yes"}},
					{{S: "Seconds_Behind_Master"}, {Null: true}},
					{{}, {}},
				}}
				if fmt.Sprint(r) != fmt.Sprint(want) {
					t.Fatalf("got %+v, want %+v", r, want)
				}
			}
			r, err := bc.Query("SELECT status")
			if err != nil {
				t.Fatal(err)
			}
			check(r)
			if bc.Status != mysql.StatusAutocommit|mysql.StatusInTrans {
				t.Fatalf("status %#x", bc.Status)
			}

			r, err = bc.Query("DO 1")
			if err != nil || len(r.Columns) != 0 || len(r.Values) != 0 {
				t.Fatalf("OK: %+v, %v", r, err)
			}

			_, err = bc.Query("SELEC 1")
			var se *mysql.SQLError
			if !errors.As(err, &se) || se.Code != 1064 {
				t.Fatalf("ERR: %v", err)
			}

			r, err = bc.Query(fmt.Sprintf("SELECT many %d 1", MaxQueryRows))
			if err != nil || len(r.Values) != MaxQueryRows {
				t.Fatalf("%d rows: %v", len(r.Values), err)
			}
			for _, q := range []string{
				fmt.Sprintf("SELECT many %d 1", MaxQueryRows+1),          // rows
				fmt.Sprintf("SELECT many %d 1000", MaxQueryBytes/1000+1), // bytes
			} {
				if r, err := bc.Query(q); !errors.Is(err, ErrResultTooLarge) || r != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}

			r, err = bc.Query("SELECT multi")
			if err != nil {
				t.Fatal(err)
			}
			check(r)
			if bc.Status != mysql.StatusAutocommit {
				t.Fatalf("status after the last result %#x", bc.Status)
			}
			if _, err := bc.Query("SELECT multi err"); !errors.As(err, &se) || se.Code != 1146 {
				t.Fatalf("ERR in a later result: %v", err)
			}

			if _, err := bc.Query("SELECT bad row"); err == nil || !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("malformed row: %v", err)
			}

			if _, err := bc.Query("LOAD DATA LOCAL INFILE 'f' INTO TABLE t"); !errors.Is(err, errLocalInfile) {
				t.Fatalf("LOCAL INFILE: %v", err)
			}

			// Exec skips result sets of either protocol too.
			if err := bc.Exec("SELECT multi"); err != nil {
				t.Fatal(err)
			}

			// Still in step: sequence ids and the read buffer.
			r, err = bc.Query("SELECT status")
			if err != nil {
				t.Fatal(err)
			}
			check(r)
		})
	}
}

// TestQueryPacketTooLarge: one packet past the bound is refused without being read into memory.
func TestQueryPacketTooLarge(t *testing.T) {
	addr, _ := commandNode(t, mariaDBHandshake(), func(c *mysql.Conn, caps uint32, p []byte) {
		writeResultSet(c, caps, []string{"x"}, [][]*string{{str(strings.Repeat("x", MaxQueryBytes))}}, 0)
	})
	bc := testDial(t, addr, Options{})
	if _, err := bc.Query("SELECT big"); !errors.Is(err, mysql.ErrPacketTooLarge) {
		t.Fatalf("got %v", err)
	}
	if bc.MaxPacket != MaxAnswerPacket {
		t.Fatalf("MaxPacket left at %d, want the connection's own %d", bc.MaxPacket, MaxAnswerPacket)
	}
}

func TestRowsMap(t *testing.T) {
	r := &Rows{Columns: []string{"a", "b", "a", "c"}, Values: [][]Value{{{S: "1"}, {Null: true}, {S: "3"}, {}}}}
	m := r.Map(0)
	if len(m) != 2 || m["a"] != "1" || m["c"] != "" {
		t.Fatalf("%v", m)
	}
	if _, ok := m["b"]; ok {
		t.Fatal("NULL has an entry")
	}
	if r.Map(1) != nil || r.Map(-1) != nil || (*Rows)(nil).Map(0) != nil {
		t.Fatal("a missing row has a map")
	}
}

func FuzzTextRow(f *testing.F) {
	f.Add(textRowPacket(str("a"), nil, str("")), 3)
	f.Add([]byte{0xfc, 0xff}, 1)
	f.Add([]byte{0xfe, 1, 2}, 2)
	f.Fuzz(func(t *testing.T, p []byte, cols int) {
		if cols < 0 || cols > 1000 {
			return
		}
		row, err := textRow(p, cols)
		if err != nil {
			return
		}
		if len(row) != cols {
			t.Fatalf("%d cells, want %d", len(row), cols)
		}
		n := 0
		for _, v := range row {
			if v.Null && v.S != "" {
				t.Fatalf("NULL with text %q", v.S)
			}
			n += len(v.S)
		}
		if n > len(p) {
			t.Fatalf("%d bytes of cells from a %d-byte row", n, len(p))
		}
	})
}

func FuzzColumnName(f *testing.F) {
	f.Add(columnDef("Seconds_Behind_Master"))
	f.Add([]byte{3, 'd', 'e', 'f'})
	f.Fuzz(func(t *testing.T, p []byte) {
		name, err := columnName(p)
		if err == nil && len(name) > len(p) {
			t.Fatalf("name %q longer than the packet", name)
		}
	})
}

// TestCompressed: Sync and Query over the compressed protocol.
func TestCompressed(t *testing.T) {
	hs := mariaDBHandshake()
	hs.Capabilities |= mysql.ClientCompress
	got := make(chan []byte, 16)
	addr := scriptedNode(t, hs, func(c *mysql.Conn, r *mysql.HandshakeResponse) {
		if r.Capabilities&mysql.ClientCompress == 0 {
			return
		}
		writeOK(c)
		if c.EnableCompression(mysql.CompressServer, 1) != nil {
			return
		}
		for {
			c.SetSeq(0)
			p, err := c.ReadPacket()
			if err != nil {
				return
			}
			got <- append([]byte(nil), p...)
			if p[0] == mysql.ComQuery {
				resultNode(c, r.Capabilities, p)
			} else {
				writeOK(c)
			}
		}
	})
	bc := testDial(t, addr, Options{Compress: true, ReadOnly: true})
	if !bc.Compressed() {
		t.Fatal("not compressed")
	}
	if err := bc.Sync(&State{DB: "x", Stmts: [][]byte{[]byte("SET NAMES utf8mb4")}}); err != nil {
		t.Fatal(err)
	}
	r, err := bc.Query("SELECT status")
	if err != nil || len(r.Values) != 3 {
		t.Fatalf("%+v, %v", r, err)
	}
	expectPackets(t, bc, got, query(ReadOnlyGuard), initDB("x"), query("SET NAMES utf8mb4"), query(ReadOnlyGuard), query("SELECT status"))
}

// TestPipelinedScalar: a wait written ahead of another command and sent with it in one round
// trip; ReadScalarIs reads the wait's answer (its value is want, or not: another value, NULL, an
// OK, an ERR), DiscardResults the other command's answer, and the connection stays in step.
func TestPipelinedScalar(t *testing.T) {
	for _, caps := range []uint32{0, mysql.ClientDeprecateEOF | mysql.ClientMultiResults} {
		t.Run(fmt.Sprintf("caps %#x", caps), func(t *testing.T) {
			addr, _ := commandNode(t, mariaDBHandshake(), resultNode)
			bc := testDial(t, addr, Options{Capabilities: caps})
			for _, c := range []struct {
				wait, then string
				is         bool
				waitErr    int // the wait's ERR code
				thenErr    int // the second command's ERR code
			}{
				{wait: "SELECT wait 0", then: "SELECT status", is: true},
				{wait: "SELECT wait -1", then: "SELECT multi"},
				{wait: "SELECT wait null", then: "DO 1"},
				{wait: "SELECT wait 00", then: "SELECT multi err", thenErr: 1146},
				{wait: "SELEC wait", then: "SELECT status", waitErr: 1064},
				{wait: "DO 1", then: "SELECT bad row"},
				{wait: "SELECT many 2 1", then: "SELECT status"},
			} {
				if err := bc.WriteQuery([]byte(c.wait)); err != nil {
					t.Fatal(err)
				}
				if err := bc.WriteQuery([]byte(c.then)); err != nil {
					t.Fatal(err)
				}
				if err := bc.Flush(); err != nil {
					t.Fatal(err)
				}
				is, err := bc.ReadScalarIs("0")
				var se *mysql.SQLError
				if c.waitErr != 0 {
					if !errors.As(err, &se) || se.Code != uint16(c.waitErr) {
						t.Fatalf("%s: %v, want ERR %d", c.wait, err, c.waitErr)
					}
				} else if err != nil || is != c.is {
					t.Fatalf("%s: %v, %v; want %v", c.wait, is, err, c.is)
				}
				err = bc.DiscardResults()
				switch {
				case c.thenErr != 0:
					if !errors.As(err, &se) || se.Code != uint16(c.thenErr) {
						t.Fatalf("%s: %v, want ERR %d", c.then, err, c.thenErr)
					}
				case c.then == "SELECT bad row":
					// Dropped unread: a malformed row is not looked at.
					if err != nil {
						t.Fatalf("%s: %v", c.then, err)
					}
				case err != nil:
					t.Fatalf("%s: %v", c.then, err)
				}
				// In step: the next command gets its own answer.
				if r, err := bc.Query("SELECT wait 7"); err != nil || len(r.Values) != 1 || r.Values[0][0].S != "7" {
					t.Fatalf("after %s, %s: %+v, %v", c.wait, c.then, r, err)
				}
			}
		})
	}
}
