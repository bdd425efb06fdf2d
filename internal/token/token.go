// Package token generates and hashes the high-entropy bearer secrets of hmid:
// API keys, session tokens, OAuth codes and tokens, client secrets.
//
// Every secret carries 256 bits of randomness in base62 after a fixed prefix
// (DECISIONS.md, Tokens and secrets) and is stored only as its SHA-256 hash.
// Lookups go by hash, so the comparison of a presented secret never touches
// the secret itself; where a secret is compared directly, Equal is constant time.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// The token prefixes fixed by DECISIONS.md.
const (
	PrefixAPIKey       = "hm_"
	PrefixSession      = "hm_st_"
	PrefixAuthCode     = "hm_ac_"
	PrefixAccessToken  = "hm_at_"
	PrefixRefreshToken = "hm_rt_"
	PrefixClientSecret = "hm_sec_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomLen is the number of base62 characters carrying at least 256 bits
// (62^43 > 2^256).
const randomLen = 43

// New returns prefix followed by 43 random base62 characters.
//
// The characters come from crypto/rand bytes by rejection sampling: a byte
// below 248 (4 × 62) gives the character at its value modulo 62, each of
// the 62 equally often, and a byte from 248 up is dropped. One read of 64
// bytes nearly always gives the 43 characters; it replaced a crypto/rand.Int
// per character, whose big integers were two thirds of a token refresh's
// allocations.
func New(prefix string) string {
	var sb strings.Builder
	sb.Grow(len(prefix) + randomLen)
	sb.WriteString(prefix)
	var buf [64]byte
	for n := 0; n < randomLen; {
		// crypto/rand.Read never fails: it fills buf or crashes the program
		// (continuing without randomness would be worse than stopping).
		_, _ = rand.Read(buf[:])
		for _, c := range buf {
			if int(c) >= 4*len(base62) {
				continue
			}
			sb.WriteByte(base62[int(c)%len(base62)])
			if n++; n == randomLen {
				break
			}
		}
	}
	return sb.String()
}

// Hash returns the hex SHA-256 of a token, the form stored at rest.
func Hash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// Equal compares two secrets in constant time.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// KeyPrefix is the displayed prefix of an API key: its first 10 characters and "…".
func KeyPrefix(key string) string {
	if len(key) <= 10 {
		return key + "…"
	}
	return key[:10] + "…"
}

// IsAPIKey reports whether tok has the shape of an API key: "hm_" followed by
// base62 only (the other hm_ prefixes contain a second underscore).
func IsAPIKey(tok string) bool {
	rest, ok := strings.CutPrefix(tok, PrefixAPIKey)
	if !ok || rest == "" {
		return false
	}
	return isBase62(rest)
}

// HasShape reports whether tok is prefix followed by base62 characters.
func HasShape(tok, prefix string) bool {
	rest, ok := strings.CutPrefix(tok, prefix)
	return ok && rest != "" && isBase62(rest)
}

func isBase62(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}
