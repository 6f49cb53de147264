package mysql

// Authentication crypto for the two password plugins sluice speaks on both
// sides of the proxy: as a server (verifying what clients send) and as a
// client (answering a backend's challenge).
//
// Nonce convention used by every function in this file and in rsa.go: the
// nonce is the 20-byte scramble from the handshake (auth-plugin-data part 1
// and part 2 concatenated, without the NUL the server writes after part 2).
// Some code paths naturally end up holding 21 bytes, i.e. the scramble with
// that NUL still attached (an AuthSwitchRequest carries it, for example). A
// NUL is never part of the hashed or XORed scramble, so a single trailing 0
// byte beyond the 20th is dropped; anything else is used exactly as given.
// Callers should still pass exactly 20 bytes.
//
// Empty passwords: MySQL clients answer with an empty auth response when the
// password is empty, and servers accept that only for accounts without a
// password. Neither NativeHash("") nor any hash of an empty password is ever
// used for that decision: the caller treats an account with no password as
// "accept iff len(response) == 0" and never calls VerifyNative for it.

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
)

// authScramble applies the nonce convention described at the top of this
// file: it drops the terminating NUL of a 21-byte scramble so that callers
// that kept it still hash and XOR the right bytes.
func authScramble(nonce []byte) []byte {
	if n := len(nonce); n > 20 && nonce[n-1] == 0 {
		return nonce[:n-1]
	}
	return nonce
}

// NativeHash returns SHA1(SHA1(password)), the "stage2" hash that MySQL and
// MariaDB store for mysql_native_password accounts (shown as "*" + upper-case
// hex by SHOW GRANTS / mysql.user). It is all a server needs to verify a
// client, and it cannot be used to log in anywhere by itself.
func NativeHash(password string) [20]byte {
	stage1 := sha1.Sum([]byte(password))
	return sha1.Sum(stage1[:])
}

// ParseNativeHash parses the textual form of a stage2 hash: "*" followed by
// exactly 40 hex digits in either case, as produced by PASSWORD() or stored in
// mysql.user.authentication_string. The empty string (an account without a
// password) is rejected here: the caller represents "no password" separately,
// see the note on empty passwords at the top of this file.
func ParseNativeHash(s string) ([20]byte, error) {
	var h [20]byte
	if len(s) != 1+2*len(h) || s[0] != '*' {
		return h, errors.New("mysql: native password hash must be \"*\" followed by 40 hex digits")
	}
	// hex.Decode writes into h only up to the first invalid digit; reset it
	// so that a failed parse never returns a partially filled hash.
	if _, err := hex.Decode(h[:], []byte(s[1:])); err != nil {
		return [20]byte{}, fmt.Errorf("mysql: native password hash: %w", err)
	}
	return h, nil
}

// NativeScramble computes the mysql_native_password auth response a client
// sends: SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))). An empty password yields
// a nil (empty) response, which is what clients put on the wire for it.
func NativeScramble(password string, nonce []byte) []byte {
	if password == "" {
		return nil
	}
	return NativeScrambleFromStage1(sha1.Sum([]byte(password)), nonce)
}

// NativeScrambleFromStage1 is NativeScramble for callers that only know
// stage1 = SHA1(pw), e.g. the proxy after VerifyNative recovered it from a
// client's response: the formula only ever uses the password through stage1,
// so this is enough to log in to a backend as the same user. It always
// returns 20 bytes; empty passwords are the caller's business (see the top of
// this file).
func NativeScrambleFromStage1(stage1 [20]byte, nonce []byte) []byte {
	stage2 := sha1.Sum(stage1[:])
	h := sha1.New()
	h.Write(authScramble(nonce))
	h.Write(stage2[:])
	out := h.Sum(nil)
	subtle.XORBytes(out, out, stage1[:])
	return out
}

// VerifyNative checks a client's mysql_native_password response against the
// stored stage2 hash. Because response = stage1 XOR SHA1(nonce + stage2), the
// server can undo the XOR to obtain a candidate stage1 and accept iff
// SHA1(candidate) == stage2. On success the recovered stage1 = SHA1(pw) is
// returned, which lets the proxy authenticate to backends as this user
// (NativeScrambleFromStage1) without ever learning the plaintext. On failure
// stage1 is the zero value.
//
// A response that is not exactly 20 bytes is rejected; in particular the
// empty response of an empty password never verifies here (the caller checks
// len(response) == 0 for accounts without a password).
func VerifyNative(stage2 [20]byte, nonce, response []byte) (stage1 [20]byte, ok bool) {
	if len(response) != len(stage1) {
		return [20]byte{}, false
	}
	h := sha1.New()
	h.Write(authScramble(nonce))
	h.Write(stage2[:])
	mask := h.Sum(nil)
	subtle.XORBytes(stage1[:], response, mask)
	check := sha1.Sum(stage1[:])
	if subtle.ConstantTimeCompare(check[:], stage2[:]) != 1 {
		return [20]byte{}, false
	}
	return stage1, true
}

// CachingSHA2Scramble computes the caching_sha2_password "fast path" response:
// XOR(SHA256(pw), SHA256(SHA256(SHA256(pw)) + nonce)). Note the order: unlike
// mysql_native_password the nonce comes after the digest. An empty password
// yields a nil (empty) response, as clients send.
func CachingSHA2Scramble(password string, nonce []byte) []byte {
	if password == "" {
		return nil
	}
	d1 := sha256.Sum256([]byte(password))
	d2 := sha256.Sum256(d1[:])
	h := sha256.New()
	h.Write(d2[:])
	h.Write(authScramble(nonce))
	out := h.Sum(nil)
	subtle.XORBytes(out, out, d1[:])
	return out
}

// VerifyCachingSHA2 reports whether response is the caching_sha2_password
// fast-path answer for password and nonce. The proxy, unlike a MySQL server,
// knows the plaintext of its own users (or learns it once through full
// authentication), so it simply recomputes the expected response and compares
// in constant time. For an empty password the expected response is empty, so
// this returns true exactly when response is empty too.
func VerifyCachingSHA2(password string, nonce, response []byte) bool {
	want := CachingSHA2Scramble(password, nonce)
	return subtle.ConstantTimeCompare(want, response) == 1
}
