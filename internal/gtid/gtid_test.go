package gtid

import "testing"

func TestMariaDBContains(t *testing.T) {
	for _, tc := range []struct {
		p, q string
		want bool
	}{
		{"0-1-100", "0-1-100", true},
		{"0-1-100", "0-1-99", true},
		{"0-1-99", "0-1-100", false},
		{"0-1-100,1-2-5", "0-1-100", true},
		{"0-1-100", "0-1-100,1-2-5", false},
		{"0-1-100,1-2-5", "1-2-5,0-1-3", true},
		{"0-2-101", "0-1-100", true}, // after a switchover the server id changes, the sequence goes on
		{"", "", true},
		{"0-1-1", "", true},
		{"", "0-1-1", false},
		{" 0-1-5 , 1-1-2 ", "1-1-2", true},
	} {
		p, err := Parse(MariaDB, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(MariaDB, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Contains(q); got != tc.want {
			t.Errorf("%q contains %q: %v, want %v", tc.p, tc.q, got, tc.want)
		}
	}
}

// TestContainsGTID: one commit's GTID against a MariaDB position, without parsing it into a
// position; anything that is not one GTID is contained by nothing.
func TestContainsGTID(t *testing.T) {
	p, err := Parse(MariaDB, "0-1-100,3-2-7")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g    string
		want bool
	}{
		{"0-1-100", true}, {"0-1-99", true}, {"0-9-100", true}, {"0-1-101", false}, {"3-2-7", true}, {"3-2-8", false},
		{"1-1-1", false}, {"", false}, {"0-1", false}, {"0-1-", false}, {"-1-5", false}, {"0--5", false},
		{"0-1-5-6", false}, {"0-1-5,1-1-1", false}, {"4294967296-1-1", false}, {"0-1-99999999999999999999", false},
		{"a-1-1", false},
	} {
		if got := p.ContainsGTID([]byte(tc.g)); got != tc.want {
			t.Errorf("%q has %q: %v, want %v", p, tc.g, got, tc.want)
		}
	}
	m, err := Parse(MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
	if err != nil {
		t.Fatal(err)
	}
	if m.ContainsGTID([]byte("0-1-1")) || (Position{}).ContainsGTID([]byte("0-1-1")) {
		t.Error("a MySQL or zero position has a MariaDB GTID")
	}
	if n := testing.AllocsPerRun(100, func() { p.ContainsGTID([]byte("0-1-50")) }); n != 0 {
		t.Errorf("%v allocs, want 0", n)
	}
}

func TestMySQLContains(t *testing.T) {
	const a, b = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "8a94f357-aab4-11df-86ab-c80aa9429562"
	for _, tc := range []struct {
		p, q string
		want bool
	}{
		{a + ":1-5", a + ":1-5", true},
		{a + ":1-5", a + ":1-3", true},
		{a + ":1-3", a + ":1-5", false},
		{a + ":1-5:7-9", a + ":8", true},
		{a + ":1-5:7-9", a + ":6", false},
		{a + ":1-5,\n" + b + ":1-100", b + ":50-60," + a + ":2", true},
		{a + ":1-5", b + ":1", false},
		{"", "", true},
	} {
		p, err := Parse(MySQL, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(MySQL, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Contains(q); got != tc.want {
			t.Errorf("%q contains %q: %v, want %v", tc.p, tc.q, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"0-1", "a-b-c", "0-1-2-3", "0-1-x", "-1-1-1"} {
		if _, err := Parse(MariaDB, s); err == nil {
			t.Errorf("MariaDB %q accepted", s)
		}
	}
	for _, s := range []string{"nope", "3e11fa47:1-5"} {
		if _, err := Parse(MySQL, s); err == nil {
			t.Errorf("MySQL %q accepted", s)
		}
	}
	var zero Position
	p, _ := Parse(MariaDB, "0-1-1")
	if zero.Contains(p) || p.Contains(zero) || !zero.IsZero() {
		t.Error("the zero position")
	}
	m, _ := Parse(MySQL, "")
	if p.Contains(m) || m.Contains(p) {
		t.Error("flavours mixed")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("0-1-100,1-2-5")
	f.Add("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7-9")
	f.Fuzz(func(t *testing.T, s string) {
		for _, fl := range []Flavor{MariaDB, MySQL} {
			p, err := Parse(fl, s)
			if err != nil {
				continue
			}
			if !p.Contains(p) {
				t.Fatalf("%q does not contain itself", s)
			}
		}
	})
}

func TestMerge(t *testing.T) {
	const a, b = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "8a94f357-aab4-11df-86ab-c80aa9429562"
	for _, tc := range []struct {
		f       Flavor
		p, q    string
		want    string
		strings bool // compare the printed form too
	}{
		{MariaDB, "0-1-100", "0-1-99", "0-1-100", true},
		{MariaDB, "0-1-99", "0-2-100", "0-2-100", true},
		{MariaDB, "0-1-100,5-1-3", "5-1-4,0-1-7", "0-1-100,5-1-4", true},
		{MariaDB, "", "9-3-2", "9-3-2", true},
		{MySQL, a + ":1-5", a + ":7", a + ":1-5:7", false},
		{MySQL, a + ":1-5", b + ":1-2", a + ":1-5," + b + ":1-2", false},
	} {
		p, err := Parse(tc.f, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(tc.f, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Parse(tc.f, tc.want)
		if err != nil {
			t.Fatal(err)
		}
		got := p.Merge(q)
		if !got.Equal(want) || (tc.strings && got.String() != tc.want) {
			t.Errorf("%q merged with %q: %q, want %q", tc.p, tc.q, got, tc.want)
		}
		if !got.Contains(p) || !got.Contains(q) {
			t.Errorf("%q merged with %q: %q lacks one of them", tc.p, tc.q, got)
		}
		if p.String() != tc.p {
			t.Errorf("Merge changed p to %q", p)
		}
	}
	var zero Position
	one, _ := Parse(MariaDB, "0-1-1")
	if got := zero.Merge(one); !got.Equal(one) {
		t.Errorf("zero merged with 0-1-1: %q", got)
	}
	if got := one.Merge(zero); !got.Equal(one) {
		t.Errorf("0-1-1 merged with zero: %q", got)
	}
}

func TestFlavorOf(t *testing.T) {
	for v, want := range map[string]Flavor{
		"10.11.19-MariaDB-0+deb12u1-log": MariaDB,
		"5.5.5-10.6.4-mariadb":           MariaDB,
		"8.0.36":                         MySQL,
		"8.4.0-commercial":               MySQL,
		"":                               MySQL,
		"MARIADB":                        MariaDB,
		"mariad":                         MySQL,
		"10.6-Maria-DB":                  MySQL,
	} {
		if got := FlavorOf(v); got != want {
			t.Errorf("FlavorOf(%q) = %v, want %v", v, got, want)
		}
	}
	// Asked per read under a consistency level: it must not allocate.
	if a := testing.AllocsPerRun(100, func() { _ = FlavorOf("10.11.19-MariaDB-0+deb12u1-log") }); a != 0 {
		t.Errorf("FlavorOf: %v allocations per call, want 0", a)
	}
}

// TestParseGTIDAndBuild: one MariaDB GTID is read without allocating; a position built from
// GTIDs keeps each domain's highest and prints as the server does; AppendGTIDs gives them back.
func TestParseGTIDAndBuild(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want GTID
		ok   bool
	}{
		{"0-1-5", GTID{0, 1, 5}, true},
		{"4294967295-4294967295-18446744073709551615", GTID{1<<32 - 1, 1<<32 - 1, 1<<64 - 1}, true},
		{"4294967296-1-1", GTID{}, false},
		{"0-1-18446744073709551616", GTID{}, false},
		{"0-1", GTID{}, false},
		{"0-1-5,1-1-2", GTID{}, false},
		{"uuid:5", GTID{}, false},
		{"", GTID{}, false},
		{"-1-5", GTID{}, false},
	} {
		got, ok := ParseGTID([]byte(tc.in))
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseGTID(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	in := []byte("12-3-456")
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseGTID(in) }); n != 0 {
		t.Errorf("ParseGTID allocates %v times", n)
	}
	p := MariaDBPosition([]GTID{{1, 1, 9}, {0, 2, 7}, {1, 3, 4}})
	if p.String() != "0-2-7,1-1-9" || p.Flavor() != MariaDB {
		t.Fatalf("MariaDBPosition: %q", p.String())
	}
	if empty := MariaDBPosition(nil); empty.IsZero() || empty.String() != "" {
		t.Fatalf("no GTID: %q (zero %v), want the empty position", empty.String(), empty.IsZero())
	}
	back := MariaDBPosition(p.AppendGTIDs(nil))
	if !back.Equal(p) {
		t.Fatalf("AppendGTIDs round trip: %q", back.String())
	}
}

// BenchmarkFlavorOf: a MariaDB version string, as the read path asks it.
func BenchmarkFlavorOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if FlavorOf("10.11.19-MariaDB-0+deb12u1-log") != MariaDB {
			b.Fatal("not MariaDB")
		}
	}
}
