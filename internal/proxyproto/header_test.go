package proxyproto

import (
	"bytes"
	"net/netip"
	"testing"
)

func TestAppend(t *testing.T) {
	ap := netip.MustParseAddrPort
	sig := "\r\n\r\n\x00\r\nQUIT\n"
	for _, tc := range []struct {
		name     string
		v        Version
		src, dst netip.AddrPort
		want     string
	}{
		{"off", Off, ap("127.0.0.2:50000"), ap("127.0.0.1:6033"), ""},
		{"v1 tcp4", V1, ap("127.0.0.2:50000"), ap("127.0.0.1:6033"), "PROXY TCP4 127.0.0.2 127.0.0.1 50000 6033\r\n"},
		{"v1 tcp6", V1, ap("[2001:db8::1]:65535"), ap("[::1]:3306"), "PROXY TCP6 2001:db8::1 ::1 65535 3306\r\n"},
		{"v1 mapped alone is tcp4", V1, ap("[::ffff:10.1.2.3]:1"), ap("[::ffff:10.0.0.1]:2"), "PROXY TCP4 10.1.2.3 10.0.0.1 1 2\r\n"},
		{"v1 mixed is tcp6", V1, ap("10.1.2.3:1"), ap("[::1]:2"), "PROXY TCP6 ::ffff:10.1.2.3 ::1 1 2\r\n"},
		{"v1 longest", V1, ap("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe]:65535"), ap("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe]:65535"),
			"PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe 65535 65535\r\n"},
		{"v1 zone dropped", V1, ap("[fe80::1%eth0]:1"), ap("[fe80::2%eth0]:2"), "PROXY TCP6 fe80::1 fe80::2 1 2\r\n"},
		{"v1 unknown", V1, netip.AddrPort{}, ap("127.0.0.1:6033"), "PROXY UNKNOWN\r\n"},
		{"v2 tcp4", V2, ap("127.0.0.2:50000"), ap("127.0.0.1:6033"),
			sig + "\x21\x11\x00\x0c" + "\x7f\x00\x00\x02" + "\x7f\x00\x00\x01" + "\xc3\x50" + "\x17\x91"},
		{"v2 tcp6", V2, ap("[2001:db8::1]:258"), ap("[::1]:3306"),
			sig + "\x21\x21\x00\x24" +
				"\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01" +
				"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01" +
				"\x01\x02" + "\x0c\xea"},
		{"v2 mixed is tcp6", V2, ap("10.1.2.3:1"), ap("[::1]:2"),
			sig + "\x21\x21\x00\x24" +
				"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x0a\x01\x02\x03" +
				"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01" +
				"\x00\x01" + "\x00\x02"},
		{"v2 unknown is local", V2, netip.AddrPort{}, netip.AddrPort{}, sig + "\x20\x00\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("x")
			got := Append(prefix, tc.v, tc.src, tc.dst)
			if !bytes.Equal(got, []byte("x"+tc.want)) {
				t.Errorf("Append = %q\nwant      %q", got, "x"+tc.want)
			}
			if tc.v == V2 && len(got) > 1 {
				// The length field counts what follows the 16 fixed bytes.
				body := got[1:]
				if n := int(body[14])<<8 | int(body[15]); n != len(body)-16 {
					t.Errorf("v2 length field %d, %d bytes follow", n, len(body)-16)
				}
			}
			if tc.v == V1 && len(got) > 1 && len(got)-1 > 107 {
				t.Errorf("v1 header of %d bytes: the protocol allows 107", len(got)-1)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for s, want := range map[string]Version{"off": Off, "v1": V1, "v2": V2} {
		v, err := ParseVersion(s)
		if err != nil || v != want || v.String() != s {
			t.Errorf("ParseVersion(%q) = %v (%s), %v", s, v, v, err)
		}
	}
	if _, err := ParseVersion("v3"); err == nil {
		t.Error("ParseVersion(v3): no error")
	}
}
