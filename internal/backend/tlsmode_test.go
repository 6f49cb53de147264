package backend

import "testing"

func TestParseTLSMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want TLSMode
		err  bool
	}{
		{"", TLSMirror, false}, {"mirror", TLSMirror, false}, {"off", TLSOff, false},
		{"preferred", TLSPreferred, false}, {"required", TLSRequired, false},
		{"on", TLSMirror, true}, {"Required", TLSMirror, true},
	} {
		got, err := ParseTLSMode(c.in)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("ParseTLSMode(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}
