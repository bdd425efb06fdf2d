// Package password hashes and verifies passwords and backup codes with Argon2id
// at the OWASP parameters (19 MiB, 2 iterations, 1 lane), in the PHC string form
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>.
//
// Argon2id is for low-entropy secrets typed by people. High-entropy tokens
// (API keys, session and OAuth tokens) are hashed with SHA-256 instead (see
// package token): a slow KDF adds nothing to 256 random bits but latency.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are Argon2id cost parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
	KeyLen  uint32
	SaltLen int
}

// OWASP is the OWASP Password Storage Cheat Sheet's Argon2id configuration.
var OWASP = Params{Memory: 19 * 1024, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}

// ErrMalformed is returned for a stored hash that is not a supported PHC string.
var ErrMalformed = errors.New("password: malformed hash")

var b64 = base64.RawStdEncoding

// slots bounds how many Argon2id computations run at once to the number of
// cores. Each one takes 19 MiB and a core for tens of milliseconds; letting
// every waiting request start its own only adds memory churn and garbage
// collection, so a burst of logins is served faster in a queue.
var slots = make(chan struct{}, runtime.GOMAXPROCS(0))

func idKey(secret, salt []byte, p Params, keyLen uint32) []byte {
	slots <- struct{}{}
	defer func() { <-slots }()
	return argon2.IDKey(secret, salt, p.Time, p.Memory, p.Threads, keyLen)
}

// Hash returns the PHC string of secret with fresh random salt.
func Hash(secret string) (string, error) { return HashWith(OWASP, secret) }

// HashWith hashes with explicit parameters (tests use cheaper ones).
func HashWith(p Params, secret string) (string, error) {
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := idKey([]byte(secret), salt, p, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether secret matches the PHC string, comparing in constant time.
func Verify(secret, phc string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, ErrMalformed
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, ErrMalformed
	}
	var p Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return false, ErrMalformed
	}
	if p.Memory == 0 || p.Memory > 1<<20 || p.Time == 0 || p.Time > 16 || p.Threads == 0 {
		return false, ErrMalformed
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, ErrMalformed
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 128 {
		return false, ErrMalformed
	}
	got := idKey([]byte(secret), salt, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// dummy is a valid hash of a random value, verified against when the account
// does not exist so that a login for an unknown email costs the same time.
var dummy = func() string {
	h, err := Hash("hmid-dummy-password-for-timing")
	if err != nil {
		panic(err)
	}
	return h
}()

// VerifyDummy spends the time of one verification and always fails.
func VerifyDummy(secret string) {
	_, _ = Verify(secret, dummy)
}
