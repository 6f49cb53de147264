package mysql

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// Published vectors. The native_password one and the caching_sha2 ones come
// from go-sql-driver/mysql's own test suite (auth_test.go); "*2470C0C0..." is
// the PASSWORD('password') value shown in the MySQL manual. They were also
// recomputed with Python's hashlib, an implementation independent of Go's.
var (
	authTestNativeNonce = []byte{70, 114, 92, 94, 1, 38, 11, 116, 63, 114, 23, 101, 126,
		103, 26, 95, 81, 17, 24, 21}
	authTestNativeSecretResp = []byte{53, 177, 140, 159, 251, 189, 127, 53, 109, 252,
		172, 50, 211, 192, 240, 164, 26, 48, 207, 45}
	authTestSHA2Nonce = []byte{10, 47, 74, 111, 75, 73, 34, 48, 88, 76, 114, 74, 37, 13, 3,
		80, 82, 2, 23, 21}
)

func authTestHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func authTestRandNonce() []byte {
	n := make([]byte, 20)
	rand.Read(n) // never fails: crypto/rand crashes the program instead
	// Like MySQL's generate_user_salt: 7-bit, never NUL, so the nonce can be
	// embedded in the NUL-terminated handshake field.
	for i := range n {
		n[i] &= 0x7f
		if n[i] == 0 {
			n[i] = 1
		}
	}
	return n
}

func TestNativeHashKnownAnswers(t *testing.T) {
	for _, tc := range []struct{ pw, want string }{
		{"password", "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"},
		{"secret", "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7"},
		{"été päss", "*2B708160C693CAEC17A14F99657A0DE6A4E02ED7"}, // hashed as UTF-8 bytes
	} {
		h := NativeHash(tc.pw)
		if got := "*" + strings.ToUpper(hex.EncodeToString(h[:])); got != tc.want {
			t.Errorf("NativeHash(%q) = %s, want %s", tc.pw, got, tc.want)
		}
		parsed, err := ParseNativeHash(tc.want)
		if err != nil || parsed != h {
			t.Errorf("ParseNativeHash(%s) = %x, %v; want %x", tc.want, parsed, err, h)
		}
	}
}

func TestParseNativeHash(t *testing.T) {
	want := NativeHash("password")
	for _, s := range []string{
		"*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19",
		"*2470c0c06dee42fd1618bb99005adca2ec9d1e19",
		"*2470c0C06DeE42fd1618BB99005adca2EC9D1E19",
	} {
		got, err := ParseNativeHash(s)
		if err != nil || got != want {
			t.Errorf("ParseNativeHash(%q) = %x, %v; want %x", s, got, err, want)
		}
	}
	for _, s := range []string{
		"",
		"*",
		"2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19",      // missing '*'
		"*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1",      // 39 digits
		"*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E199",    // 41 digits
		"*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1G",     // non-hex
		"*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1 ",     // trailing space
		" *2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1",     // leading space
		"#2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19",     // wrong marker
		"*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E\u00e9", // multi-byte rune, right byte length
	} {
		got, err := ParseNativeHash(s)
		if err == nil {
			t.Errorf("ParseNativeHash(%q) succeeded, want error", s)
		}
		if got != ([20]byte{}) {
			t.Errorf("ParseNativeHash(%q) returned partial hash %x on error", s, got)
		}
	}
}

func TestNativeScrambleKnownAnswer(t *testing.T) {
	if got := NativeScramble("secret", authTestNativeNonce); !bytes.Equal(got, authTestNativeSecretResp) {
		t.Errorf("NativeScramble(secret) = %v, want %v", got, authTestNativeSecretResp)
	}

	// The same value derived step by step from the formula in the protocol
	// documentation, for a password longer than the nonce.
	pw := "a rather long password, longer than twenty bytes"
	nonce := []byte("0123456789abcdefghij")
	stage1 := sha1.Sum([]byte(pw))
	stage2 := sha1.Sum(stage1[:])
	mask := sha1.Sum(append(append([]byte{}, nonce...), stage2[:]...))
	want := make([]byte, 20)
	for i := range want {
		want[i] = stage1[i] ^ mask[i]
	}
	if got := NativeScramble(pw, nonce); !bytes.Equal(got, want) {
		t.Errorf("NativeScramble = %x, want %x", got, want)
	}
}

func TestNativeScrambleEmptyPassword(t *testing.T) {
	if got := NativeScramble("", authTestNativeNonce); got != nil {
		t.Errorf("NativeScramble(\"\") = %v, want nil", got)
	}
	// The empty response never verifies: accounts without a password are the
	// caller's business (len(response) == 0).
	if _, ok := VerifyNative(NativeHash(""), authTestNativeNonce, nil); ok {
		t.Error("VerifyNative accepted an empty response")
	}
}

func TestNativeRoundTrip(t *testing.T) {
	for _, pw := range []string{"x", "secret", "p@ss wörd\x00with nul", strings.Repeat("long", 100)} {
		nonce := authTestRandNonce()
		resp := NativeScramble(pw, nonce)
		if len(resp) != 20 {
			t.Fatalf("response length %d", len(resp))
		}
		stage1, ok := VerifyNative(NativeHash(pw), nonce, resp)
		if !ok {
			t.Fatalf("VerifyNative rejected the right password %q", pw)
		}
		if want := sha1.Sum([]byte(pw)); stage1 != want {
			t.Fatalf("recovered stage1 %x, want SHA1(pw) %x", stage1, want)
		}

		// The proxy logs in to a backend with a different nonce using only
		// the recovered stage1.
		nonce2 := authTestRandNonce()
		if got, want := NativeScrambleFromStage1(stage1, nonce2), NativeScramble(pw, nonce2); !bytes.Equal(got, want) {
			t.Fatalf("NativeScrambleFromStage1 = %x, want %x", got, want)
		}
		if _, ok := VerifyNative(NativeHash(pw), nonce2, NativeScrambleFromStage1(stage1, nonce2)); !ok {
			t.Fatal("backend would reject the response built from stage1")
		}
	}
}

func TestVerifyNativeRejects(t *testing.T) {
	stage2 := NativeHash("secret")
	nonce := authTestNativeNonce
	good := NativeScramble("secret", nonce)

	check := func(name string, stage2 [20]byte, nonce, resp []byte) {
		t.Helper()
		stage1, ok := VerifyNative(stage2, nonce, resp)
		if ok {
			t.Errorf("%s: accepted", name)
		}
		if stage1 != ([20]byte{}) {
			t.Errorf("%s: returned non-zero stage1 on failure", name)
		}
	}
	check("wrong password", stage2, nonce, NativeScramble("Secret", nonce))
	check("wrong nonce", stage2, authTestRandNonce(), good)
	check("wrong stored hash", NativeHash("other"), nonce, good)
	check("short", stage2, nonce, good[:19])
	check("long", stage2, nonce, append(append([]byte{}, good...), 0))
	check("nil", stage2, nonce, nil)
	for i := range good {
		flipped := append([]byte{}, good...)
		flipped[i] ^= 0x01
		check(fmt.Sprintf("bit flip at %d", i), stage2, nonce, flipped)
	}
	// Replaying the stored hash itself (or stage1) as the response must fail.
	s1 := sha1.Sum([]byte("secret"))
	check("stage2 as response", stage2, nonce, stage2[:])
	check("stage1 as response", stage2, nonce, s1[:])
}

func TestAuthNonceTrailingNUL(t *testing.T) {
	nonce := authTestRandNonce()
	nonce21 := append(append([]byte{}, nonce...), 0)
	if !bytes.Equal(NativeScramble("pw", nonce), NativeScramble("pw", nonce21)) {
		t.Error("NativeScramble: 21-byte nonce with NUL differs from 20-byte nonce")
	}
	if _, ok := VerifyNative(NativeHash("pw"), nonce21, NativeScramble("pw", nonce)); !ok {
		t.Error("VerifyNative: 21-byte nonce with NUL not equivalent")
	}
	if !bytes.Equal(CachingSHA2Scramble("pw", nonce), CachingSHA2Scramble("pw", nonce21)) {
		t.Error("CachingSHA2Scramble: 21-byte nonce with NUL differs from 20-byte nonce")
	}
	// A 21st byte that is not NUL is data, not a terminator.
	other := append(append([]byte{}, nonce...), 'x')
	if bytes.Equal(NativeScramble("pw", nonce), NativeScramble("pw", other)) {
		t.Error("non-NUL 21st byte was dropped")
	}
	// Only the terminator beyond 20 bytes is special: a 20-byte nonce ending
	// in 0 is used as is.
	z := append([]byte{}, nonce...)
	z[19] = 0
	if bytes.Equal(NativeScramble("pw", z), NativeScramble("pw", z[:19])) {
		t.Error("trailing 0 of a 20-byte nonce was dropped")
	}
}

func TestCachingSHA2KnownAnswers(t *testing.T) {
	for _, tc := range []struct{ pw, want string }{
		{"secret", "f490e76f66d9d86665ce54d98c78d0acfe2fb0b08b423da807144873d30b312c"},
		{"secret2", "abc3934a012cf342e876071c8ee202de51785b430258a7a0138bc79c4d800bc6"},
	} {
		want := authTestHex(t, tc.want)
		if got := CachingSHA2Scramble(tc.pw, authTestSHA2Nonce); !bytes.Equal(got, want) {
			t.Errorf("CachingSHA2Scramble(%q) = %x, want %x", tc.pw, got, want)
		}
	}

	// Step by step from the formula; note the nonce goes after the digest.
	pw := "another password that is longer than the nonce"
	nonce := []byte("abcdefghij0123456789")
	d1 := sha256.Sum256([]byte(pw))
	d2 := sha256.Sum256(d1[:])
	d3 := sha256.Sum256(append(append([]byte{}, d2[:]...), nonce...))
	want := make([]byte, 32)
	for i := range want {
		want[i] = d1[i] ^ d3[i]
	}
	if got := CachingSHA2Scramble(pw, nonce); !bytes.Equal(got, want) {
		t.Errorf("CachingSHA2Scramble = %x, want %x", got, want)
	}
}

func TestCachingSHA2Verify(t *testing.T) {
	nonce := authTestRandNonce()
	resp := CachingSHA2Scramble("secret", nonce)
	if !VerifyCachingSHA2("secret", nonce, resp) {
		t.Error("right password rejected")
	}
	if VerifyCachingSHA2("Secret", nonce, resp) {
		t.Error("wrong password accepted")
	}
	if VerifyCachingSHA2("secret", authTestRandNonce(), resp) {
		t.Error("wrong nonce accepted")
	}
	if VerifyCachingSHA2("secret", nonce, resp[:31]) {
		t.Error("truncated response accepted")
	}
	if VerifyCachingSHA2("secret", nonce, nil) {
		t.Error("empty response accepted for a non-empty password")
	}
	if VerifyCachingSHA2("", nonce, resp) {
		t.Error("non-empty response accepted for an empty password")
	}
	if CachingSHA2Scramble("", nonce) != nil {
		t.Error("empty password must give a nil response")
	}
	if !VerifyCachingSHA2("", nonce, nil) || !VerifyCachingSHA2("", nonce, []byte{}) {
		t.Error("empty password with empty response rejected")
	}
}

var (
	authTestKeyOnce sync.Once
	authTestKeyVal  *rsa.PrivateKey
	authTestKeyErr  error
)

// authTestKey shares one generated key between tests: 2048-bit generation
// takes long enough to matter when repeated.
func authTestKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	authTestKeyOnce.Do(func() { authTestKeyVal, authTestKeyErr = GenerateRSAKey() })
	if authTestKeyErr != nil {
		t.Fatal(authTestKeyErr)
	}
	return authTestKeyVal
}

func TestRSAKeyAndPEM(t *testing.T) {
	k := authTestKey(t)
	if k.N.BitLen() != 2048 {
		t.Errorf("key size %d, want 2048", k.N.BitLen())
	}
	p := PublicKeyPEM(k)
	if !bytes.HasPrefix(p, []byte("-----BEGIN PUBLIC KEY-----\n")) ||
		!bytes.HasSuffix(p, []byte("-----END PUBLIC KEY-----\n")) {
		t.Fatalf("unexpected PEM framing:\n%s", p)
	}
	// Decode it the way clients do (go-sql-driver: pem.Decode +
	// x509.ParsePKIXPublicKey + type assertion).
	block, rest := pem.Decode(p)
	if block == nil || len(rest) != 0 {
		t.Fatal("PEM does not decode cleanly")
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if rp, ok := pub.(*rsa.PublicKey); !ok || !rp.Equal(&k.PublicKey) {
		t.Fatal("PEM does not hold the key's public half")
	}
}

func TestRSAPasswordRoundTrip(t *testing.T) {
	k := authTestKey(t)
	pubPEM := PublicKeyPEM(k)
	for _, pw := range []string{
		"x",
		"secret",
		"exactly twenty bytes",            // plaintext with NUL is 21: the nonce wraps by one byte
		strings.Repeat("päss", 20),        // non-ASCII, several nonce cycles
		strings.Repeat("a", 256-2*20-2-1), // longest that fits a 2048-bit key with SHA-1 OAEP
		"",
	} {
		nonce := authTestRandNonce()
		ct, err := EncryptPassword(pubPEM, pw, nonce)
		if err != nil {
			t.Fatalf("EncryptPassword(len %d): %v", len(pw), err)
		}
		if len(ct) != 256 {
			t.Fatalf("ciphertext length %d, want 256", len(ct))
		}
		got, err := DecryptPassword(k, ct, nonce)
		if err != nil || got != pw {
			t.Fatalf("DecryptPassword = %q, %v; want %q", got, err, pw)
		}
		// The 21-byte form of the nonce is equivalent on either side.
		got, err = DecryptPassword(k, ct, append(append([]byte{}, nonce...), 0))
		if err != nil || got != pw {
			t.Fatalf("DecryptPassword with 21-byte nonce = %q, %v; want %q", got, err, pw)
		}
	}

	if _, err := EncryptPassword(pubPEM, strings.Repeat("a", 256-2*20-2), authTestRandNonce()); err == nil {
		t.Error("EncryptPassword accepted a password too long for the key")
	}
}

// TestRSAPasswordWireFormat checks both directions against the format spelled
// out with the standard library directly: OAEP/SHA-1 over
// (pw + NUL) XOR nonce repeated.
func TestRSAPasswordWireFormat(t *testing.T) {
	k := authTestKey(t)
	pw := "a password longer than the twenty-byte nonce"
	nonce := authTestRandNonce()
	want := []byte(pw + "\x00")
	for i := range want {
		want[i] ^= nonce[i%len(nonce)]
	}

	ct, err := EncryptPassword(PublicKeyPEM(k), pw, nonce)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), nil, k, ct, nil)
	if err != nil {
		t.Fatalf("not OAEP/SHA-1: %v", err)
	}
	if !bytes.Equal(plain, want) {
		t.Fatalf("plaintext %x, want %x", plain, want)
	}

	ct, err = rsa.EncryptOAEP(sha1.New(), rand.Reader, &k.PublicKey, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecryptPassword(k, ct, nonce); err != nil || got != pw {
		t.Fatalf("DecryptPassword = %q, %v; want %q", got, err, pw)
	}

	// MySQL reads the result as a C string: whatever follows the first NUL
	// is ignored.
	extra := append(append([]byte{}, want...), []byte("junk")...)
	for i := len(want); i < len(extra); i++ {
		extra[i] ^= nonce[i%len(nonce)]
	}
	ct, err = rsa.EncryptOAEP(sha1.New(), rand.Reader, &k.PublicKey, extra, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecryptPassword(k, ct, nonce); err != nil || got != pw {
		t.Fatalf("DecryptPassword with trailing bytes = %q, %v; want %q", got, err, pw)
	}
}

func TestRSAPasswordErrors(t *testing.T) {
	k := authTestKey(t)
	pubPEM := PublicKeyPEM(k)
	nonce := authTestRandNonce()

	// Missing terminator.
	noNUL := []byte("secret")
	for i := range noNUL {
		noNUL[i] ^= nonce[i]
	}
	ct, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, &k.PublicKey, noNUL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecryptPassword(k, ct, nonce); err == nil {
		t.Error("plaintext without NUL accepted")
	}

	// OAEP with another hash is a different scheme and must not decrypt.
	withNUL := append(append([]byte{}, noNUL...), nonce[len(noNUL)])
	ct, err = rsa.EncryptOAEP(sha256.New(), rand.Reader, &k.PublicKey, withNUL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecryptPassword(k, ct, nonce); err == nil {
		t.Error("OAEP/SHA-256 ciphertext accepted")
	}

	good, err := EncryptPassword(pubPEM, "secret", nonce)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 1024) // small: only needs to differ
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecryptPassword(other, good, nonce); err == nil {
		t.Error("decrypted with the wrong key")
	}
	if _, err := DecryptPassword(k, good[:255], nonce); err == nil {
		t.Error("truncated ciphertext accepted")
	}
	if _, err := DecryptPassword(k, nil, nonce); err == nil {
		t.Error("empty ciphertext accepted")
	}
	if _, err := DecryptPassword(k, good, nil); err == nil {
		t.Error("empty nonce accepted")
	}
	// A wrong nonce either breaks the terminator or yields another string,
	// never the password.
	if got, err := DecryptPassword(k, good, authTestRandNonce()); err == nil && got == "secret" {
		t.Error("wrong nonce decrypted to the password")
	}

	if _, err := EncryptPassword(pubPEM, "secret", nil); err == nil {
		t.Error("EncryptPassword accepted an empty nonce")
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][]byte{
		"empty":       nil,
		"not PEM":     []byte("hello"),
		"wrong type":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}),
		"garbage DER": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}),
		"bad PKCS#1":  pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: []byte{1, 2, 3}}),
		"EC key":      pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER}),
	} {
		if _, err := EncryptPassword(p, "secret", nonce); err == nil {
			t.Errorf("EncryptPassword accepted public key %s", name)
		}
	}
}

func TestRSAPasswordPKCS1PublicKey(t *testing.T) {
	k := authTestKey(t)
	p := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.PublicKey)})
	// Trailing bytes after the block (e.g. a NUL some servers append) are ignored.
	p = append(p, 0)
	nonce := authTestRandNonce()
	ct, err := EncryptPassword(p, "secret", nonce)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecryptPassword(k, ct, nonce); err != nil || got != "secret" {
		t.Fatalf("DecryptPassword = %q, %v", got, err)
	}
}

func FuzzParseNativeHash(f *testing.F) {
	f.Add("*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19")
	f.Add("*2470c0c06dee42fd1618bb99005adca2ec9d1e19")
	f.Add("")
	f.Add("*")
	f.Add("*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1G")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseNativeHash(s)
		if err != nil {
			if h != ([20]byte{}) {
				t.Fatalf("partial hash %x returned with error", h)
			}
			return
		}
		// Anything accepted must be the canonical form up to hex case.
		if got := "*" + hex.EncodeToString(h[:]); !strings.EqualFold(got, s) {
			t.Fatalf("ParseNativeHash(%q) = %s", s, got)
		}
	})
}

// ---------------------------------------------------------------------------
// Cross-check against a real client: go-sql-driver/mysql keeps its scramble
// functions unexported, so the test plays a minimal MySQL 8 server on
// loopback and lets the driver log in to it. The server side uses only the
// functions under test (VerifyNative, VerifyCachingSHA2, PublicKeyPEM,
// DecryptPassword) and deliberately hand-rolls its packets so that it does not
// depend on the package's packet code.

// authTestWire is a bare MySQL packet reader/writer for the fake server.
type authTestWire struct {
	c   net.Conn
	r   *bufio.Reader
	seq byte
}

func (w *authTestWire) read() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(w.r, hdr[:]); err != nil {
		return nil, err
	}
	if hdr[3] != w.seq {
		return nil, fmt.Errorf("packet sequence %d, want %d", hdr[3], w.seq)
	}
	w.seq++
	p := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
	_, err := io.ReadFull(w.r, p)
	return p, err
}

func (w *authTestWire) write(payload []byte) error {
	n := len(payload)
	p := append([]byte{byte(n), byte(n >> 8), byte(n >> 16), w.seq}, payload...)
	w.seq++
	_, err := w.c.Write(p)
	return err
}

func (w *authTestWire) ok() error {
	// OK: header, affected rows 0, last insert id 0, status autocommit, 0 warnings.
	return w.write([]byte{0x00, 0, 0, 2, 0, 0, 0})
}

func (w *authTestWire) accessDenied() error {
	p := []byte{0xff}
	p = binary.LittleEndian.AppendUint16(p, 1045)
	p = append(p, "#28000Access denied"...)
	return w.write(p)
}

// authTestLogin is what the fake server does after it has read the
// HandshakeResponse41: it finishes the exchange and reports whether the
// client proved the right password.
type authTestLogin func(w *authTestWire, nonce, resp []byte) (bool, error)

// authTestServe starts the fake server advertising plugin and returns its
// address. Each accepted connection runs login, then answers COM_PING until
// COM_QUIT or EOF. Results of the logins are sent on the returned channel.
func authTestServe(t *testing.T, plugin string, login authTestLogin) (string, <-chan bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan bool, 8)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if err := authTestServeConn(c, plugin, login, results); err != nil && !errors.Is(err, io.EOF) {
				t.Errorf("fake server: %v", err)
			}
			c.Close()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String(), results
}

func authTestServeConn(c net.Conn, plugin string, login authTestLogin, results chan<- bool) error {
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	w := &authTestWire{c: c, r: bufio.NewReader(c)}
	nonce := authTestRandNonce()

	// Protocol::HandshakeV10. Capabilities: LONG_PASSWORD (marks a MySQL,
	// not MariaDB, server), LONG_FLAG, PROTOCOL_41, TRANSACTIONS,
	// SECURE_CONNECTION, PLUGIN_AUTH, PLUGIN_AUTH_LENENC_CLIENT_DATA. No SSL,
	// so caching_sha2_password full authentication has to use RSA.
	const caps = 0x1 | 0x4 | 0x200 | 0x2000 | 0x8000 | 0x80000 | 0x200000
	p := []byte{10}
	p = append(p, "8.0.36-sluice-test\x00"...)
	p = binary.LittleEndian.AppendUint32(p, 7)
	p = append(p, nonce[:8]...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, caps&0xffff)
	p = append(p, 255) // utf8mb4_0900_ai_ci
	p = binary.LittleEndian.AppendUint16(p, 2)
	p = binary.LittleEndian.AppendUint16(p, caps>>16)
	p = append(p, 21)
	p = append(p, make([]byte, 10)...)
	p = append(p, nonce[8:]...)
	p = append(p, 0)
	p = append(p, plugin...)
	p = append(p, 0)
	if err := w.write(p); err != nil {
		return err
	}

	// HandshakeResponse41: caps(4) max packet(4) charset(1) filler(23),
	// user NUL-terminated, then the auth response (length-encoded; short
	// here, so a single length byte).
	p, err := w.read()
	if err != nil {
		return err
	}
	if len(p) < 32 {
		return errors.New("short handshake response")
	}
	rest := p[32:]
	end := bytes.IndexByte(rest, 0)
	if end < 0 || end+2 > len(rest) {
		return errors.New("malformed handshake response")
	}
	rest = rest[end+1:]
	n := int(rest[0])
	if n >= 0xfb || 1+n > len(rest) {
		return errors.New("malformed auth response length")
	}
	resp := rest[1 : 1+n]

	okLogin, err := login(w, nonce, resp)
	if err != nil {
		return err
	}
	results <- okLogin
	if !okLogin {
		return w.accessDenied()
	}
	if err := w.ok(); err != nil {
		return err
	}

	for {
		w.seq = 0
		p, err := w.read()
		if err != nil {
			return err
		}
		switch {
		case len(p) == 1 && p[0] == 0x0e: // COM_PING
			if err := w.ok(); err != nil {
				return err
			}
		case len(p) == 1 && p[0] == 0x01: // COM_QUIT
			return nil
		default:
			return fmt.Errorf("unexpected command %x", p)
		}
	}
}

// authTestDriverPing logs in with go-sql-driver and pings; it returns the
// driver's error.
func authTestDriverPing(t *testing.T, addr, password string) error {
	t.Helper()
	cfg := gomysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = addr
	cfg.User = "app"
	cfg.Passwd = password
	cfg.Timeout = 10 * time.Second
	cfg.ReadTimeout = 10 * time.Second
	cfg.WriteTimeout = 10 * time.Second
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func authTestExpect(t *testing.T, results <-chan bool, want bool) {
	t.Helper()
	select {
	case got := <-results:
		if got != want {
			t.Errorf("fake server login result %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fake server saw no login")
	}
}

func TestAuthGoSQLDriverNative(t *testing.T) {
	const pw = "s3cret-native"
	stage2 := NativeHash(pw)
	var mu sync.Mutex
	var lastStage1 [20]byte
	var lastEmpty bool
	addr, results := authTestServe(t, "mysql_native_password", func(w *authTestWire, nonce, resp []byte) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		lastEmpty = len(resp) == 0
		stage1, ok := VerifyNative(stage2, nonce, resp)
		lastStage1 = stage1
		return ok, nil
	})

	if err := authTestDriverPing(t, addr, pw); err != nil {
		t.Fatalf("driver login with right password: %v", err)
	}
	authTestExpect(t, results, true)
	mu.Lock()
	if want := sha1.Sum([]byte(pw)); lastStage1 != want {
		t.Errorf("recovered stage1 %x, want %x", lastStage1, want)
	}
	mu.Unlock()

	err := authTestDriverPing(t, addr, "wrong")
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("driver login with wrong password: %v, want error 1045", err)
	}
	authTestExpect(t, results, false)

	// An empty password travels as an empty response, as documented.
	if err := authTestDriverPing(t, addr, ""); err == nil {
		t.Fatal("empty password accepted for a password account")
	}
	authTestExpect(t, results, false)
	mu.Lock()
	if !lastEmpty {
		t.Error("driver did not send an empty response for an empty password")
	}
	mu.Unlock()
}

func TestAuthGoSQLDriverResponsesMatch(t *testing.T) {
	// Byte-for-byte: what the driver sends equals NativeScramble and
	// CachingSHA2Scramble for the nonce the server chose.
	for _, plugin := range []string{"mysql_native_password", "caching_sha2_password"} {
		t.Run(plugin, func(t *testing.T) {
			const pw = "match me"
			addr, results := authTestServe(t, plugin, func(w *authTestWire, nonce, resp []byte) (bool, error) {
				var want []byte
				if plugin == "mysql_native_password" {
					want = NativeScramble(pw, nonce)
				} else {
					want = CachingSHA2Scramble(pw, nonce)
				}
				if !bytes.Equal(resp, want) {
					return false, nil
				}
				if plugin == "caching_sha2_password" {
					// Fast auth success, then the OK that follows.
					if err := w.write([]byte{0x01, 0x03}); err != nil {
						return false, err
					}
				}
				return true, nil
			})
			if err := authTestDriverPing(t, addr, pw); err != nil {
				t.Fatal(err)
			}
			authTestExpect(t, results, true)
		})
	}
}

func TestAuthGoSQLDriverCachingSHA2(t *testing.T) {
	const pw = "a caching_sha2 password that is well over twenty bytes, ünïcode too"
	k := authTestKey(t)
	// fast: whether the fake server has the user "in its cache" (fast path)
	// or asks for full authentication over RSA.
	var mu sync.Mutex
	fast := true
	var decrypted string
	addr, results := authTestServe(t, "caching_sha2_password", func(w *authTestWire, nonce, resp []byte) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if fast {
			if !VerifyCachingSHA2(pw, nonce, resp) {
				return false, nil
			}
			return true, w.write([]byte{0x01, 0x03}) // fast_auth_success
		}
		// Full authentication: ask for it, serve the public key on request,
		// decrypt the password.
		if err := w.write([]byte{0x01, 0x04}); err != nil { // perform_full_authentication
			return false, err
		}
		p, err := w.read()
		if err != nil {
			return false, err
		}
		if !bytes.Equal(p, []byte{0x02}) {
			return false, fmt.Errorf("expected public key request, got %x", p)
		}
		if err := w.write(append([]byte{0x01}, PublicKeyPEM(k)...)); err != nil {
			return false, err
		}
		ct, err := w.read()
		if err != nil {
			return false, err
		}
		got, err := DecryptPassword(k, ct, nonce)
		if err != nil {
			return false, fmt.Errorf("DecryptPassword: %v", err)
		}
		decrypted = got
		return got == pw, nil
	})

	if err := authTestDriverPing(t, addr, pw); err != nil {
		t.Fatalf("fast path: %v", err)
	}
	authTestExpect(t, results, true)
	if err := authTestDriverPing(t, addr, pw+"x"); err == nil {
		t.Fatal("fast path: wrong password accepted")
	}
	authTestExpect(t, results, false)

	mu.Lock()
	fast = false
	mu.Unlock()
	if err := authTestDriverPing(t, addr, pw); err != nil {
		t.Fatalf("full RSA path: %v", err)
	}
	authTestExpect(t, results, true)
	if err := authTestDriverPing(t, addr, "wrong"); err == nil {
		t.Fatal("full RSA path: wrong password accepted")
	}
	authTestExpect(t, results, false)
	mu.Lock()
	if decrypted != "wrong" {
		t.Errorf("decrypted %q, want %q", decrypted, "wrong")
	}
	mu.Unlock()
}
