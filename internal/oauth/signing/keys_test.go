package signing

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// benchClaims are the claims of a typical ID token (openid profile email).
func benchClaims() map[string]any {
	now := time.Now()
	return map[string]any{
		"sub": "0b9f1c7e-7d2a-4c36-9a51-4a1f5e0d2c11", "name": "Ada Lovelace", "email": "ada@example.org", "email_verified": true,
		"iss": "https://id.example.org", "aud": "6c1d0a7e-2f43-4e8a-9d1b-0f5e3c2a7b19",
		"iat": now.Unix(), "exp": now.Add(IDTokenTTL).Unix(), "auth_time": now.Unix(), "nonce": "n-0S6_WzA2Mj",
	}
}

// BenchmarkIDTokenSign measures signing one ID token per algorithm, the part
// of a token response that depends on the client's
// id_token_signed_response_alg: HS256 with the client secret, RS256 and
// ES256 with the cached, parsed server keys.
func BenchmarkIDTokenSign(b *testing.B) {
	claims := benchClaims()
	b.Run("HS256", func(b *testing.B) {
		key := []byte("hm_sec_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG")
		for b.Loop() {
			if _, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(claims)).SignedString(key); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, alg := range Algs {
		b.Run(alg, func(b *testing.B) {
			_, k := testKey(b, alg)
			for b.Loop() {
				if _, err := k.Sign(claims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// testKey is a new signing key of alg and its kid.
func testKey(tb testing.TB, alg string) (string, *Key) {
	tb.Helper()
	kid, priv, err := generateKey(alg)
	if err != nil {
		tb.Fatal(err)
	}
	k, err := newSigningKey(kid, alg, priv)
	if err != nil {
		tb.Fatal(err)
	}
	return kid, k
}

// TestSignedTokensVerify checks that Sign's hand-assembled JWS is a token
// golang-jwt verifies with the public key, with kid and typ in its header.
func TestSignedTokensVerify(t *testing.T) {
	for _, alg := range Algs {
		kid, k := testKey(t, alg)
		raw, err := k.Sign(benchClaims())
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return k.Public(), nil }, jwt.WithValidMethods([]string{alg}))
		if err != nil || tok.Header["kid"] != kid || tok.Header["typ"] != "JWT" || k.jwk.thumbprint() != kid {
			t.Fatalf("%s: %v, header %v", alg, err, tok.Header)
		}
	}
}
