package mysql

// RSA password exchange of caching_sha2_password "full authentication" on a
// connection without TLS. Over TLS the client simply sends the password plus
// a NUL in clear; without TLS it must not, so it encrypts
//
//	(password + "\x00") XOR nonce-repeated-cyclically
//
// with the server's RSA public key using OAEP padding with SHA-1 (OpenSSL's
// RSA_PKCS1_OAEP_PADDING, which MySQL 8.0.5+ uses; the older sha256_password
// used PKCS#1 v1.5, which sluice does not support). The XOR binds the
// ciphertext to this connection's nonce so a captured ciphertext cannot be
// replayed on another connection. The nonce convention of auth.go applies.

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// GenerateRSAKey returns a fresh 2048-bit key, the size MySQL generates for
// its auto-created caching_sha2_password key pair. With SHA-1 OAEP it fits
// passwords of up to 213 bytes (256 - 2*20 - 2 = 214, minus the NUL).
func GenerateRSAKey() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, 2048)
}

// PublicKeyPEM encodes the public half of k the way a MySQL server sends it in
// reply to a public key request: a PKIX SubjectPublicKeyInfo in a
// "-----BEGIN PUBLIC KEY-----" PEM block (what OpenSSL's PEM_write_bio_PUBKEY
// writes). Clients such as go-sql-driver and libmysqlclient parse exactly
// this form.
func PublicKeyPEM(k *rsa.PrivateKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		// Only reachable for key types other than RSA or malformed keys,
		// which a *rsa.PrivateKey from GenerateRSAKey never is.
		panic("mysql: marshal RSA public key: " + err.Error())
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// EncryptPassword is the client side of the exchange: it encrypts password for
// the server whose public key is pubPEM (the payload of the server's
// public-key reply after its 0x01 marker byte; bytes after the PEM block are
// ignored). Besides MySQL's "PUBLIC KEY" form it also accepts a PKCS#1
// "RSA PUBLIC KEY" block, which some tools write for key files configured
// by hand.
func EncryptPassword(pubPEM []byte, password string, nonce []byte) ([]byte, error) {
	pub, err := parseRSAPublicKeyPEM(pubPEM)
	if err != nil {
		return nil, err
	}
	nonce = authScramble(nonce)
	if len(nonce) == 0 {
		return nil, errors.New("mysql: encrypt password: empty nonce")
	}
	plain := make([]byte, len(password)+1) // trailing NUL is the terminator the server looks for
	copy(plain, password)
	xorCyclic(plain, nonce)
	ct, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, plain, nil)
	// The XORed plaintext is as good as the password to anyone who saw the
	// nonce; do not leave it in memory longer than needed.
	clear(plain)
	if err != nil {
		return nil, fmt.Errorf("mysql: encrypt password: %w", err)
	}
	return ct, nil
}

// DecryptPassword is the server side: it undoes EncryptPassword with the
// private key and the nonce sent to this client, and returns the password.
//
// The password ends at the first NUL, as in MySQL, which reads the result as
// a C string (so bytes after it are ignored and a password can never contain
// NUL). A plaintext without any NUL is rejected: every client appends one,
// so its absence means a wrong nonce or a malformed client (MySQL would
// then read whatever its buffer holds up to a guard NUL). An empty password decrypts to "" with a
// nil error; MySQL refuses that for password-protected accounts, and so
// should the caller (an empty password is sent as an empty response, never
// through RSA).
func DecryptPassword(k *rsa.PrivateKey, ciphertext, nonce []byte) (string, error) {
	nonce = authScramble(nonce)
	if len(nonce) == 0 {
		return "", errors.New("mysql: decrypt password: empty nonce")
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), nil, k, ciphertext, nil)
	if err != nil {
		// Deliberately not wrapped: one uniform message for every decryption
		// failure, so that nothing built on top can leak why it failed
		// (the classic OAEP padding-oracle concern).
		return "", errors.New("mysql: decrypt password: invalid ciphertext")
	}
	defer clear(plain)
	xorCyclic(plain, nonce)
	for i, b := range plain {
		if b == 0 {
			return string(plain[:i]), nil
		}
	}
	return "", errors.New("mysql: decrypt password: missing NUL terminator (wrong nonce?)")
}

// parseRSAPublicKeyPEM decodes the first PEM block of data as an RSA public
// key in PKIX ("PUBLIC KEY") or PKCS#1 ("RSA PUBLIC KEY") form.
func parseRSAPublicKeyPEM(data []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("mysql: server public key: no PEM block found")
	}
	switch block.Type {
	case "PUBLIC KEY":
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("mysql: server public key: %w", err)
		}
		pub, ok := key.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("mysql: server public key: %T is not an RSA key", key)
		}
		return pub, nil
	case "RSA PUBLIC KEY":
		pub, err := x509.ParsePKCS1PublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("mysql: server public key: %w", err)
		}
		return pub, nil
	default:
		return nil, fmt.Errorf("mysql: server public key: unexpected PEM block %q", block.Type)
	}
}

// xorCyclic XORs buf in place with key repeated as often as needed; passwords
// are routinely longer than the 20-byte nonce. key must not be empty.
func xorCyclic(buf, key []byte) {
	for i := range buf {
		buf[i] ^= key[i%len(key)]
	}
}
