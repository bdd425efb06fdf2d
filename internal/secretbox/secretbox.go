// Package secretbox protects secrets at rest and signs server-side values with
// the service's 32-byte secret key (HMID_SECRET_KEY).
//
// Sealing uses AES-256-GCM with a fresh random 96-bit nonce per call. The
// sealed form is text so it fits in any database column:
//
//	v1.<key id>.<base64url(nonce | ciphertext | tag)>
//
// The version prefix leaves room for a later algorithm without guessing. The
// key id is a short value derived from the key (not the key itself); it lets
// Open tell "sealed under a different key" apart from "tampered with", which
// is the difference between a misconfigured deployment and an attack.
//
// Associated data binds a ciphertext to its context, for example the id of the
// user row a TOTP secret belongs to: the same associated data must be passed
// to Open, so a sealed value copied to another row does not decrypt.
//
// MAC signs values the server hands out and later gets back (signed state
// parameters, for instance) with a subkey derived by HKDF, so the encryption
// key is never used directly for a second purpose.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"

	"golang.org/x/crypto/hkdf"
)

// KeySize is the length in bytes of a secret key: AES-256 needs 32 bytes.
const KeySize = 32

const (
	version   = "v1"
	nonceSize = 12 // the GCM standard nonce; random nonces of this size are safe for well over 2^32 seals per key
	keyIDSize = 4  // short on purpose: it only has to separate the handful of keys a deployment ever uses
)

// Errors returned by Open. Callers can tell them apart with errors.Is; the
// messages are meant to be read by an operator.
var (
	// ErrFormat means the input is not a sealed value this package produced:
	// wrong prefix, unknown version, bad encoding or too short.
	ErrFormat = errors.New("secretbox: malformed sealed value")
	// ErrWrongKey means the value was sealed under a different secret key,
	// typically because HMID_SECRET_KEY changed or secret.key was lost.
	ErrWrongKey = errors.New("secretbox: sealed under a different secret key")
	// ErrAuth means authentication failed: the ciphertext was modified or the
	// associated data does not match the one used when sealing.
	ErrAuth = errors.New("secretbox: authentication failed (tampered value or wrong associated data)")
)

// Box seals and opens secrets and computes MACs with one key. It is safe for
// concurrent use.
type Box struct {
	aead   cipher.AEAD
	keyID  string
	macKey []byte
	// macs holds keyed HMACs for reuse: Reset returns one to its keyed
	// state without hashing the key's two padded blocks again, a third of
	// the work of a short MAC (the sid of every ID token is one).
	macs sync.Pool
}

// New returns a Box for a 32-byte key, as returned by ParseKey or GenerateKey.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	macKey, err := derive(key, "hmid mac", sha256.Size)
	if err != nil {
		return nil, err
	}
	id, err := derive(key, "hmid key id", keyIDSize)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead, keyID: hex.EncodeToString(id), macKey: macKey}, nil
}

// derive expands key into n bytes bound to info, so each use of the master
// key (encryption, MAC, key id) gets an independent subkey.
func derive(key []byte, info string, n int) ([]byte, error) {
	out := make([]byte, n)
	if _, err := io.ReadFull(hkdf.New(sha256.New, key, nil, []byte(info)), out); err != nil {
		return nil, fmt.Errorf("secretbox: derive %q subkey: %w", info, err)
	}
	return out, nil
}

// Seal encrypts plaintext and returns its text form. associatedData is
// authenticated but not stored; the same bytes must be given to Open. Two
// seals of the same plaintext differ because each uses a fresh random nonce.
func (b *Box) Seal(plaintext, associatedData []byte) (string, error) {
	buf := make([]byte, nonceSize, nonceSize+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("secretbox: read nonce: %w", err)
	}
	buf = b.aead.Seal(buf, buf[:nonceSize], plaintext, associatedData)
	return version + "." + b.keyID + "." + base64.RawURLEncoding.EncodeToString(buf), nil
}

// Open decrypts a value produced by Seal with the same key and associated
// data. It returns an error wrapping ErrFormat, ErrWrongKey or ErrAuth.
func (b *Box) Open(sealed string, associatedData []byte) ([]byte, error) {
	ver, rest, ok := strings.Cut(sealed, ".")
	if !ok {
		return nil, fmt.Errorf("%w: no version prefix", ErrFormat)
	}
	if ver != version {
		return nil, fmt.Errorf("%w: unknown version %.10q", ErrFormat, ver)
	}
	id, payload, ok := strings.Cut(rest, ".")
	if !ok || len(id) != 2*keyIDSize {
		return nil, fmt.Errorf("%w: missing key id", ErrFormat)
	}
	// Strict decoding rejects non-canonical trailing bits, so each sealed
	// value has exactly one text form that opens.
	raw, err := base64.RawURLEncoding.Strict().DecodeString(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not base64url", ErrFormat)
	}
	if len(raw) < nonceSize+b.aead.Overhead() {
		return nil, fmt.Errorf("%w: payload too short", ErrFormat)
	}
	if !hmac.Equal([]byte(id), []byte(b.keyID)) {
		return nil, ErrWrongKey
	}
	plain, err := b.aead.Open(nil, raw[:nonceSize], raw[nonceSize:], associatedData)
	if err != nil {
		return nil, ErrAuth
	}
	return plain, nil
}

// MAC returns HMAC-SHA256 over data under a subkey derived from the secret key
// (HKDF-SHA256, info "hmid mac"). Each part is length-prefixed before hashing,
// so MAC([]byte("ab"), []byte("c")) differs from MAC([]byte("a"), []byte("bc"))
// and callers can pass fields without inventing a separator.
//
// Verify a received MAC by recomputing it and comparing with Equal (which is
// hmac.Equal); never with bytes.Equal or ==, which leak timing.
func (b *Box) MAC(data ...[]byte) []byte {
	m, ok := b.macs.Get().(hash.Hash)
	if ok {
		m.Reset()
	} else {
		m = hmac.New(sha256.New, b.macKey)
	}
	defer b.macs.Put(m)
	var n [8]byte
	for _, d := range data {
		binary.BigEndian.PutUint64(n[:], uint64(len(d)))
		m.Write(n[:])
		m.Write(d)
	}
	return m.Sum(nil)
}

// Equal reports whether two MACs are equal in time that does not depend on
// their contents. It is crypto/hmac.Equal, re-exported so callers of MAC have
// the right comparison at hand.
func Equal(a, b []byte) bool {
	return hmac.Equal(a, b)
}

// ParseKey decodes a secret key given as 64 hexadecimal characters or as
// base64 (standard or URL alphabet, with or without padding) of exactly 32
// bytes. Surrounding whitespace is ignored because keys are often read from
// files ending in a newline.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("secretbox: secret key is empty; want 32 bytes as base64 or 64 hex characters")
	}
	if len(s) == 2*KeySize {
		if key, err := hex.DecodeString(s); err == nil {
			return key, nil
		}
	}
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("secretbox: secret key decodes to %d bytes, want %d", len(key), KeySize)
		}
		return key, nil
	}
	return nil, fmt.Errorf("secretbox: secret key (%d characters) is neither base64 nor 64 hex characters", len(s))
}

// GenerateKey returns a new random 32-byte key, for example for the secret.key
// file created on first start with SQLite.
func GenerateKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secretbox: generate key: %w", err)
	}
	return key, nil
}

// EncodeKey returns key as padded standard base64, a form ParseKey accepts.
func EncodeKey(key []byte) string {
	return base64.StdEncoding.EncodeToString(key)
}
