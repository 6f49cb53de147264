package mysql

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

var (
	hsNonce1 = []byte("4.aR`_n{")     // first 8 bytes of the nonce
	hsNonce2 = []byte(">x|?S;9cU*Pk") // last 12
	hsNonce  = append(append([]byte(nil), hsNonce1...), hsNonce2...)
)

// mariaDB1011Handshake is a HandshakeV10 as MariaDB 10.11 on Debian 12 sends it, written out
// field by field: CLIENT_MYSQL (bit 0) cleared and the MariaDB extended capabilities in the last
// four of the ten reserved bytes.
func mariaDB1011Handshake() []byte {
	p := []byte{10}
	p = append(p, "5.5.5-10.11.19-MariaDB-0+deb12u1-log"...)
	p = append(p, 0)
	p = append(p, 0x2a, 0x00, 0x00, 0x00) // connection id 42
	p = append(p, hsNonce1...)
	p = append(p, 0x00)       // filler
	p = append(p, 0xfe, 0xf7) // capabilities, low half: 0xf7fe (CLIENT_MYSQL cleared)
	p = append(p, 45)         // utf8mb4_general_ci
	p = append(p, 0x02, 0x00) // status: autocommit
	p = append(p, 0xff, 0x81) // capabilities, high half: 0x81ff
	p = append(p, 21)         // auth plugin data length
	p = append(p, 0, 0, 0, 0, 0, 0)
	p = append(p, 0x1d, 0x00, 0x00, 0x00) // MariaDB extended capabilities
	p = append(p, hsNonce2...)
	p = append(p, 0)
	p = append(p, "mysql_native_password"...)
	return append(p, 0)
}

// mysql8Handshake is a HandshakeV10 as MySQL 8.0 sends it: caching_sha2_password, CLIENT_MYSQL
// set. reserved fills the ten reserved bytes (MySQL sends zeros).
func mysql8Handshake(reserved [10]byte) []byte {
	p := []byte{10}
	p = append(p, "8.0.36"...)
	p = append(p, 0)
	p = append(p, 0x0f, 0x27, 0x00, 0x00) // connection id 9999
	p = append(p, hsNonce1...)
	p = append(p, 0x00)
	p = append(p, 0xff, 0xff) // capabilities, low half
	p = append(p, 255)        // utf8mb4_0900_ai_ci
	p = append(p, 0x02, 0x00)
	p = append(p, 0xff, 0xdf) // capabilities, high half: 0xdfff
	p = append(p, 21)
	p = append(p, reserved[:]...)
	p = append(p, hsNonce2...)
	p = append(p, 0)
	p = append(p, "caching_sha2_password"...)
	return append(p, 0)
}

func TestParseHandshakeMariaDB(t *testing.T) {
	h, err := ParseHandshake(mariaDB1011Handshake())
	if err != nil {
		t.Fatal(err)
	}
	want := &Handshake{
		ServerVersion:       "5.5.5-10.11.19-MariaDB-0+deb12u1-log",
		ConnectionID:        42,
		Nonce:               hsNonce,
		Capabilities:        0x81fff7fe,
		Charset:             45,
		Status:              StatusAutocommit,
		AuthPlugin:          AuthNativePassword,
		MariaDBCapabilities: 0x1d,
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("ParseHandshake = %+v\nwant             %+v", h, want)
	}
	if h.Capabilities&ClientLongPassword != 0 {
		t.Fatal("CLIENT_MYSQL set")
	}
}

func TestParseHandshakeMySQL8(t *testing.T) {
	want := &Handshake{
		ServerVersion: "8.0.36",
		ConnectionID:  9999,
		Nonce:         hsNonce,
		Capabilities:  0xdfffffff,
		Charset:       255,
		Status:        StatusAutocommit,
		AuthPlugin:    AuthCachingSHA2,
	}
	h, err := ParseHandshake(mysql8Handshake([10]byte{}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("ParseHandshake = %+v\nwant             %+v", h, want)
	}
	// With CLIENT_MYSQL set the reserved bytes are not MariaDB capabilities, whatever they hold.
	h, err = ParseHandshake(mysql8Handshake([10]byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9}))
	if err != nil || h.MariaDBCapabilities != 0 {
		t.Fatalf("MariaDBCapabilities = %#x, %v; want 0", h.MariaDBCapabilities, err)
	}
}

func TestHandshakeRoundTrip(t *testing.T) {
	for _, h := range []*Handshake{
		{
			ServerVersion: "8.0.36-sluice",
			ConnectionID:  0xdeadbeef,
			Nonce:         hsNonce,
			Capabilities: ClientLongPassword | ClientProtocol41 | ClientSecureConnection | ClientTransactions |
				ClientPluginAuth | ClientConnectAttrs | ClientPluginAuthLenencClientData | ClientSessionTrack | ClientDeprecateEOF,
			Charset:    255,
			Status:     StatusAutocommit | StatusInTrans,
			AuthPlugin: AuthCachingSHA2,
		},
		{
			ServerVersion: "5.5.5-10.11.0-MariaDB-sluice",
			ConnectionID:  1,
			Nonce:         []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 0x7f},
			Capabilities:  0xffffffff,
			Charset:       45,
			Status:        0xffff,
			AuthPlugin:    AuthNativePassword,
		},
	} {
		p := AppendHandshake(nil, h)
		got, err := ParseHandshake(p)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("round trip = %+v\nwant         %+v", got, h)
		}
		// Layout: auth data length 21, ten zero reserved bytes, NUL after the nonce's second part.
		off := 1 + len(h.ServerVersion) + 1 + 4 + 8 + 1 + 2 + 1 + 2 + 2
		if p[off] != 21 {
			t.Errorf("auth plugin data length = %d, want 21", p[off])
		}
		if !bytes.Equal(p[off+1:off+11], make([]byte, 10)) {
			t.Errorf("reserved bytes = % x", p[off+1:off+11])
		}
		if p[off+11+12] != 0 {
			t.Errorf("no NUL after the nonce")
		}
	}
}

func TestAppendHandshakeWithoutPluginAuth(t *testing.T) {
	h := &Handshake{
		ServerVersion: "5.7.44",
		ConnectionID:  7,
		Nonce:         hsNonce,
		Capabilities:  ClientProtocol41 | ClientSecureConnection,
		Charset:       33,
		AuthPlugin:    AuthCachingSHA2, // not sent without PLUGIN_AUTH
	}
	p := AppendHandshake(nil, h)
	got, err := ParseHandshake(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Nonce, hsNonce) || got.AuthPlugin != AuthNativePassword {
		t.Fatalf("nonce %q, plugin %q", got.Nonce, got.AuthPlugin)
	}
	if p[len(p)-1] != 0 || !bytes.HasSuffix(p[:len(p)-1], hsNonce2) {
		t.Fatalf("packet does not end with the nonce: % x", p)
	}
}

func TestParseHandshakeVariants(t *testing.T) {
	full := mysql8Handshake([10]byte{})

	// Plugin name without its final NUL.
	h, err := ParseHandshake(full[:len(full)-1])
	if err != nil || h.AuthPlugin != AuthCachingSHA2 {
		t.Fatalf("plugin without NUL: %+v, %v", h, err)
	}

	// An old server: no second part at all. The nonce is the first 8 bytes and the plugin is
	// the default.
	short := full[:1+len("8.0.36")+1+4+8+1+2]
	h, err = ParseHandshake(short)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Nonce, hsNonce1) || h.Capabilities != 0xffff || h.AuthPlugin != AuthNativePassword || h.Charset != 0 {
		t.Fatalf("short handshake = %+v", h)
	}

	// Auth data length 0 with SECURE_CONNECTION: 13 bytes are still read.
	p := append([]byte(nil), full...)
	lenOff := 1 + len("8.0.36") + 1 + 4 + 8 + 1 + 2 + 1 + 2 + 2
	p[lenOff] = 0
	if h, err = ParseHandshake(p); err != nil || !bytes.Equal(h.Nonce, hsNonce) || h.AuthPlugin != AuthCachingSHA2 {
		t.Fatalf("auth length 0: %+v, %v", h, err)
	}

	// Without PLUGIN_AUTH the plugin name is not read.
	p = append([]byte(nil), full...)
	p[lenOff-2] &^= byte(ClientPluginAuth >> 16) // high half, first byte: bits 16..23
	if h, err = ParseHandshake(p); err != nil || h.AuthPlugin != AuthNativePassword {
		t.Fatalf("no PLUGIN_AUTH: %+v, %v", h, err)
	}

	// The second part cut short: what is there is taken.
	p = full[:lenOff+11+5]
	if h, err = ParseHandshake(p); err != nil || !bytes.Equal(h.Nonce, append(append([]byte(nil), hsNonce1...), hsNonce2[:5]...)) {
		t.Fatalf("short second part: %+v, %v", h, err)
	}
}

func TestParseHandshakeErrors(t *testing.T) {
	full := mysql8Handshake([10]byte{})
	for _, tc := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"protocol 9", append([]byte{9}, full[1:]...)},
		{"version without NUL", []byte("\x0a8.0.36")},
		{"ends after the version", []byte("\x0a8.0.36\x00")},
		{"ends inside the first part", full[:1+7+10]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h, err := ParseHandshake(tc.p); err == nil {
				t.Fatalf("ParseHandshake = %+v, want an error", h)
			}
		})
	}
}

func TestParseHandshakeERR(t *testing.T) {
	for _, tc := range []struct {
		p    []byte
		want SQLError
	}{
		// Before the handshake a server does not know the client speaks 4.1: no SQLSTATE.
		{append([]byte{0xff, 0x10, 0x04}, "Too many connections"...),
			SQLError{Code: 1040, State: "HY000", Message: "Too many connections"}},
		{append([]byte{0xff, 0x69, 0x04, '#', 'H', 'Y', '0', '0', '0'}, "Host '127.0.0.5' is blocked"...),
			SQLError{Code: 1129, State: "HY000", Message: "Host '127.0.0.5' is blocked"}},
	} {
		h, err := ParseHandshake(tc.p)
		var se *SQLError
		if h != nil || !errors.As(err, &se) {
			t.Fatalf("ParseHandshake(ERR) = %v, %v (%T); want a *SQLError", h, err, err)
		}
		if *se != tc.want {
			t.Fatalf("SQLError = %+v, want %+v", se, tc.want)
		}
	}
}

var testAttrs = AttrsSet(AttrsSet(AttrsSet(nil,
	"_client_name", "libmariadb"),
	"_os", "Linux"),
	"program_name", "mysql")

func TestHandshakeResponseRoundTrip(t *testing.T) {
	base := ClientLongPassword | ClientProtocol41 | ClientTransactions | ClientMultiResults
	rsaLike := testPattern(256, 0xf0) // an RSA-encrypted password: 256 bytes, NULs and all
	for _, tc := range []struct {
		name string
		r    HandshakeResponse
		// authAt is the encoded auth field (length prefix or terminator included).
		authAt []byte
	}{
		{
			name: "lenenc",
			r: HandshakeResponse{
				Capabilities:  base | ClientSecureConnection | ClientPluginAuth | ClientPluginAuthLenencClientData | ClientConnectWithDB | ClientConnectAttrs,
				MaxPacketSize: 1 << 24,
				Charset:       255,
				User:          "sbtest",
				AuthResponse:  rsaLike,
				Database:      "sbtest",
				AuthPlugin:    AuthCachingSHA2,
				Attrs:         testAttrs,
			},
			authAt: AppendLenEncString(nil, rsaLike),
		},
		{
			name: "secure connection",
			r: HandshakeResponse{
				Capabilities:  base | ClientSecureConnection | ClientPluginAuth,
				MaxPacketSize: 0x40000000,
				Charset:       33,
				User:          "root",
				AuthResponse:  []byte{0, 1, 2, 0xfb, 0xfc, 0xff, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0},
				AuthPlugin:    AuthNativePassword,
			},
			authAt: []byte{20, 0, 1, 2, 0xfb},
		},
		{
			name: "NUL-terminated",
			r: HandshakeResponse{
				Capabilities: base | ClientConnectWithDB,
				Charset:      8,
				User:         "old",
				AuthResponse: []byte("scrambled"),
				Database:     "test",
			},
			authAt: []byte("scrambled\x00test\x00"),
		},
		{
			name: "empty auth, lenenc",
			r: HandshakeResponse{
				Capabilities: base | ClientSecureConnection | ClientPluginAuth | ClientPluginAuthLenencClientData,
				User:         "nopw",
				AuthPlugin:   AuthNativePassword,
			},
			authAt: []byte("\x00mysql_native_password\x00"),
		},
		{
			name: "empty auth, secure connection",
			r: HandshakeResponse{
				Capabilities: base | ClientSecureConnection,
				User:         "nopw",
			},
			authAt: []byte("nopw\x00\x00"),
		},
		{
			name: "empty auth, NUL-terminated",
			r: HandshakeResponse{
				Capabilities: base,
				User:         "nopw",
			},
			authAt: []byte("nopw\x00\x00"),
		},
		{
			name: "MariaDB client",
			r: HandshakeResponse{
				Capabilities:        (base | ClientSecureConnection | ClientPluginAuth | ClientPluginAuthLenencClientData | ClientConnectAttrs) &^ ClientLongPassword,
				MaxPacketSize:       1 << 24,
				Charset:             45,
				User:                "app",
				AuthResponse:        hsNonce,
				AuthPlugin:          AuthNativePassword,
				Attrs:               testAttrs,
				MariaDBCapabilities: 0x1d,
			},
			authAt: append([]byte{20}, hsNonce...),
		},
		{
			name: "empty database and attributes",
			r: HandshakeResponse{
				Capabilities: base | ClientSecureConnection | ClientConnectWithDB | ClientConnectAttrs,
				User:         "u",
				AuthResponse: []byte{1},
			},
			authAt: []byte{1, 1, 0, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := AppendHandshakeResponse(nil, &tc.r)
			if !bytes.Contains(p[32:], tc.authAt) {
				t.Fatalf("auth field % x not found in % x", tc.authAt, p[32:])
			}
			got, err := ParseHandshakeResponse(p)
			if err != nil {
				t.Fatal(err)
			}
			if !respEqual(got, &tc.r) {
				t.Fatalf("round trip = %+v\nwant         %+v", got, &tc.r)
			}
			// The result does not alias the packet.
			for i := range p {
				p[i] = 0xee
			}
			if !respEqual(got, &tc.r) {
				t.Fatal("the parsed response changed with the packet buffer")
			}
		})
	}
}

// respEqual compares HandshakeResponses, treating nil and empty slices alike.
func respEqual(a, b *HandshakeResponse) bool {
	x, y := *a, *b
	if !bytes.Equal(x.AuthResponse, y.AuthResponse) || !bytes.Equal(x.Attrs, y.Attrs) {
		return false
	}
	x.AuthResponse, y.AuthResponse, x.Attrs, y.Attrs = nil, nil, nil, nil
	return reflect.DeepEqual(x, y)
}

func TestHandshakeResponseAttrs(t *testing.T) {
	r := &HandshakeResponse{
		Capabilities: ClientProtocol41 | ClientSecureConnection | ClientConnectAttrs,
		User:         "u",
		Attrs:        testAttrs,
	}
	got, err := ParseHandshakeResponse(AppendHandshakeResponse(nil, r))
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for rest := got.Attrs; len(rest) > 0; {
		s, n, err := ReadLenEncString(rest)
		if err != nil {
			t.Fatal(err)
		}
		pairs, rest = append(pairs, string(s)), rest[n:]
	}
	want := []string{"_client_name", "libmariadb", "_os", "Linux", "program_name", "mysql"}
	if !reflect.DeepEqual(pairs, want) {
		t.Fatalf("attrs = %q, want %q", pairs, want)
	}
}

func TestHandshakeResponseSSLRequest(t *testing.T) {
	r := &HandshakeResponse{
		Capabilities:  ClientLongPassword | ClientProtocol41 | ClientSecureConnection | ClientSSL | ClientPluginAuth,
		MaxPacketSize: 1 << 24,
		Charset:       45,
		SSLRequest:    true,
		User:          "not sent",
	}
	p := AppendHandshakeResponse(nil, r)
	if len(p) != 32 {
		t.Fatalf("SSL request is %d bytes, want 32", len(p))
	}
	want := []byte{0x01, 0x8a, 0x08, 0x00, 0x00, 0x00, 0x00, 0x01, 45}
	want = append(want, make([]byte, 23)...)
	if !bytes.Equal(p, want) {
		t.Fatalf("SSL request = % x\nwant          % x", p, want)
	}
	got, err := ParseHandshakeResponse(p)
	if err != nil {
		t.Fatal(err)
	}
	if !got.SSLRequest || got.Capabilities != r.Capabilities || got.MaxPacketSize != 1<<24 || got.Charset != 45 || got.User != "" {
		t.Fatalf("ParseHandshakeResponse(SSL request) = %+v", got)
	}

	// 32 bytes without CLIENT_SSL are a truncated response, not an SSL request.
	p[1] &^= byte(ClientSSL >> 8)
	if got, err := ParseHandshakeResponse(p); err == nil {
		t.Fatalf("32 bytes without CLIENT_SSL: %+v", got)
	}
}

func TestHandshakeResponseTolerances(t *testing.T) {
	caps := ClientProtocol41 | ClientSecureConnection | ClientPluginAuth | ClientConnectWithDB | ClientConnectAttrs
	head := AppendHandshakeResponse(nil, &HandshakeResponse{Capabilities: caps, SSLRequest: true})

	// Stops after the auth data: no database, plugin or attributes.
	p := append(append([]byte(nil), head...), "u\x00\x01x"...)
	got, err := ParseHandshakeResponse(p)
	if err != nil || got.User != "u" || string(got.AuthResponse) != "x" || got.Database != "" || got.AuthPlugin != "" || got.Attrs != nil {
		t.Fatalf("short response: %+v, %v", got, err)
	}

	// Plugin name without its NUL, at the very end.
	p = append(append([]byte(nil), head...), "u\x00\x01xdb\x00mysql_native_password"...)
	got, err = ParseHandshakeResponse(p)
	if err != nil || got.Database != "db" || got.AuthPlugin != AuthNativePassword {
		t.Fatalf("plugin without NUL: %+v, %v", got, err)
	}

	// MariaDB capabilities are only read with CLIENT_MYSQL cleared.
	r := &HandshakeResponse{Capabilities: ClientLongPassword | ClientProtocol41, User: "u", MariaDBCapabilities: 7}
	if got, err := ParseHandshakeResponse(AppendHandshakeResponse(nil, r)); err != nil || got.MariaDBCapabilities != 0 {
		t.Fatalf("CLIENT_MYSQL set: MariaDBCapabilities = %#x, %v", got.MariaDBCapabilities, err)
	}
}

func TestHandshakeResponseErrors(t *testing.T) {
	p41 := ClientProtocol41
	hdr := func(caps uint32) []byte {
		return AppendHandshakeResponse(nil, &HandshakeResponse{Capabilities: caps, SSLRequest: true})
	}
	with := func(caps uint32, tail string) []byte { return append(hdr(caps), tail...) }
	secure := p41 | ClientSecureConnection
	lenenc := secure | ClientPluginAuthLenencClientData
	attrs := secure | ClientConnectAttrs
	for _, tc := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"three bytes", []byte{0, 2, 0}},
		// HandshakeResponse320: 2-byte capabilities, 3-byte max packet, user, auth.
		{"no PROTOCOL_41", []byte{0x85, 0x24, 0x00, 0x00, 0x00, 'r', 'o', 'o', 't', 0, 'x', 0}},
		{"no PROTOCOL_41, 32 bytes", hdr(ClientLongPassword | ClientSSL)},
		{"shorter than the fixed part", hdr(p41)[:20]},
		{"fixed part only, no SSL", hdr(p41)},
		{"user without NUL", with(p41, "root")},
		{"lenenc auth truncated", with(lenenc, "u\x00\x05ab")},
		{"lenenc auth invalid", with(lenenc, "u\x00\xff")},
		{"lenenc auth missing", with(lenenc, "u\x00")},
		{"secure auth missing", with(secure, "u\x00")},
		{"secure auth truncated", with(secure, "u\x00\x14abc")},
		{"NUL auth without NUL", with(p41, "u\x00abc")},
		{"database without NUL", with(p41|ClientConnectWithDB, "u\x00\x00db")},
		{"attrs longer than the packet", with(attrs, "u\x00\x00\x10\x01a\x01b")},
		{"attrs invalid length", with(attrs, "u\x00\x00\xff")},
		{"attr key longer than the block", with(attrs, "u\x00\x00\x03\x05ab")},
		{"attr key without value", with(attrs, "u\x00\x00\x02\x01a")},
		{"attr value longer than the block", with(attrs, "u\x00\x00\x04\x01a\x05b")},
		{"attr with invalid length", with(attrs, "u\x00\x00\x02\xff\x00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r, err := ParseHandshakeResponse(tc.p); err == nil {
				t.Fatalf("ParseHandshakeResponse(% x) = %+v, want an error", tc.p, r)
			}
		})
	}
}

func TestAuthSwitchRequest(t *testing.T) {
	for _, tc := range []struct {
		plugin string
		nonce  []byte
	}{
		{AuthNativePassword, hsNonce},
		{AuthCachingSHA2, hsNonce},
		{AuthClearPassword, nil},
		{"client_ed25519", []byte{0, 1, 2, 0}}, // data ending in NUL keeps it
	} {
		p := AppendAuthSwitchRequest([]byte{}, tc.plugin, tc.nonce)
		if p[0] != 0xfe || p[len(p)-1] != 0 {
			t.Fatalf("AppendAuthSwitchRequest = % x", p)
		}
		plugin, nonce, err := ParseAuthSwitchRequest(p)
		if err != nil || plugin != tc.plugin || !bytes.Equal(nonce, tc.nonce) {
			t.Fatalf("round trip = %q, % x, %v; want %q, % x", plugin, nonce, err, tc.plugin, tc.nonce)
		}
		// The nonce is a copy.
		if len(nonce) > 0 {
			p[len(p)-2] ^= 0xff
			if !bytes.Equal(nonce, tc.nonce) {
				t.Fatal("nonce aliases the packet")
			}
		}
	}
	want := append([]byte("\xfemysql_native_password\x00"), hsNonce...)
	want = append(want, 0)
	if got := AppendAuthSwitchRequest(nil, AuthNativePassword, hsNonce); !bytes.Equal(got, want) {
		t.Fatalf("AppendAuthSwitchRequest = % x\nwant                        % x", got, want)
	}

	// A MySQL server may send the nonce without the trailing NUL.
	plugin, nonce, err := ParseAuthSwitchRequest(append([]byte("\xfecaching_sha2_password\x00"), hsNonce...))
	if err != nil || plugin != AuthCachingSHA2 || !bytes.Equal(nonce, hsNonce) {
		t.Fatalf("without trailing NUL: %q, % x, %v", plugin, nonce, err)
	}
	// The old "switch to mysql_old_password" request is the bare header.
	if plugin, nonce, err := ParseAuthSwitchRequest([]byte{0xfe}); err != nil || plugin != "" || nonce != nil {
		t.Fatalf("bare 0xfe: %q, % x, %v", plugin, nonce, err)
	}
	// A name without NUL is taken whole.
	if plugin, nonce, err := ParseAuthSwitchRequest([]byte("\xfedialog")); err != nil || plugin != "dialog" || nonce != nil {
		t.Fatalf("name without NUL: %q, % x, %v", plugin, nonce, err)
	}
	for _, p := range [][]byte{nil, {0x01, 'x'}, {0x00}} {
		if _, _, err := ParseAuthSwitchRequest(p); err == nil {
			t.Errorf("ParseAuthSwitchRequest(% x): no error", p)
		}
	}
}

func TestAppendAuthMoreData(t *testing.T) {
	if got := AppendAuthMoreData(nil, CachingSHA2FastOK); !bytes.Equal(got, []byte{0x01, 0x03}) {
		t.Fatalf("fast auth OK = % x", got)
	}
	if got := AppendAuthMoreData([]byte{9}, []byte("PEM")...); !bytes.Equal(got, []byte{9, 0x01, 'P', 'E', 'M'}) {
		t.Fatalf("AppendAuthMoreData = % x", got)
	}
}
