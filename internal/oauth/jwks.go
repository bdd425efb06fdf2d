package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net/http"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/httpx"
)

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// JWK is one public key of the JWK set (RFC 7517 §4): n and e for RSA keys
// (RFC 7518 §6.3.1), crv, x and y for elliptic-curve keys (§6.2.1).
type JWK struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// rsaJWK is the JWK of an RSA public key.
func rsaJWK(kid string, pub *rsa.PublicKey) JWK {
	return JWK{Kty: "RSA", Use: "sig", Alg: AlgRS256, Kid: kid, N: b64(pub.N.Bytes()), E: b64(big.NewInt(int64(pub.E)).Bytes())}
}

// ecJWK is the JWK of a P-256 public key; x and y are the 32-byte
// coordinates of the uncompressed point (RFC 7518 §6.2.1.2).
func ecJWK(kid string, pub *ecdsa.PublicKey) (JWK, error) {
	raw, err := pub.Bytes()
	if err != nil || len(raw) != 65 {
		return JWK{}, fmt.Errorf("encode P-256 public key: %v", err)
	}
	return JWK{Kty: "EC", Use: "sig", Alg: AlgES256, Kid: kid, Crv: "P-256", X: b64(raw[1:33]), Y: b64(raw[33:])}, nil
}

// thumbprint is the RFC 7638 JWK thumbprint, used as kid: SHA-256 of the
// required members in lexicographic order, without white space.
func (j JWK) thumbprint() string {
	var canon string
	if j.Kty == "EC" {
		canon = `{"crv":"` + j.Crv + `","kty":"EC","x":"` + j.X + `","y":"` + j.Y + `"}`
	} else {
		canon = `{"e":"` + j.E + `","kty":"RSA","n":"` + j.N + `"}`
	}
	sum := sha256.Sum256([]byte(canon))
	return b64(sum[:])
}

// JWKS serves GET /v1/oauth/jwks: the public keys of RS256 and ES256 ID
// tokens, each with its kid: the signing key of each algorithm and the
// retired keys whose tokens may still be unexpired (KeyGrace). It reads the
// keys afresh, so a rotation on another instance shows at once, and creates
// each algorithm's first key, so clients can fetch keys before any token.
// Verifiers should fetch the set again when they meet an unknown kid (as
// go-oidc does); the set may be cached for five minutes.
func (h *Handler) JWKS(w http.ResponseWriter, r *http.Request) {
	ring, err := h.S.reloadKeys(r.Context(), KeyAlgs...)
	if err != nil {
		writeOAuthError(w, asOAuth(r, err))
		return
	}
	now := h.S.Clock.Now()
	keys := []JWK{}
	for _, alg := range KeyAlgs {
		for _, k := range ring.keys {
			if k.alg == alg && k.published(now) {
				keys = append(keys, k.jwk)
			}
		}
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	httpx.JSON(w, http.StatusOK, map[string]any{"keys": keys})
}

// errIDToken is the reason VerifyIDToken refuses a token.
var errIDToken = errors.New("the ID token is not one this server issued")

// VerifyIDToken checks that raw is an ID token this server signed and
// returns its claims: for RS256 and ES256 by its kid, with any key the JWKS
// still lists; for HS256 only tokens of public clients (signed with the
// server-held key; a confidential client's are keyed with its secret, which
// is stored only as a hash). iss must be this issuer. Expiry is checked
// unless allowExpired: an id_token_hint may be expired (OpenID Connect Core
// §3.1.2.1). Tokens that fail any check are errIDToken-wrapped errors.
func (s *Service) VerifyIDToken(ctx context.Context, raw string, allowExpired bool) (jwt.MapClaims, error) {
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{AlgHS256, AlgRS256, AlgES256}), jwt.WithTimeFunc(s.Clock.Now), jwt.WithIssuer(s.Issuer)}
	if allowExpired {
		opts = []jwt.ParserOption{jwt.WithValidMethods([]string{AlgHS256, AlgRS256, AlgES256}), jwt.WithoutClaimsValidation()}
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() == AlgHS256 {
			return s.hs256VerifyKey(ctx, claims)
		}
		kid, _ := t.Header["kid"].(string)
		k, err := s.publishedKey(ctx, kid)
		if err != nil {
			return nil, err
		}
		if k.alg != t.Method.Alg() {
			return nil, fmt.Errorf("kid %s is a %s key", kid, k.alg)
		}
		return k.priv.Public(), nil
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errIDToken, err)
	}
	if allowExpired {
		if iss, _ := claims.GetIssuer(); iss != s.Issuer {
			return nil, fmt.Errorf("%w: issuer %q", errIDToken, iss)
		}
	}
	return claims, nil
}

// publishedKey returns the key of kid if the JWKS lists it now, reading the
// keys again once when the kid is not known (another instance may have just
// rotated).
func (s *Service) publishedKey(ctx context.Context, kid string) (*signingKey, error) {
	now := s.Clock.Now()
	r := s.ring.Load()
	if r == nil || r.byKid(kid) == nil {
		var err error
		if r, err = s.reloadKeys(ctx); err != nil {
			return nil, err
		}
	}
	k := r.byKid(kid)
	if k == nil || !k.published(now) {
		return nil, fmt.Errorf("kid %q is not in the JWKS", kid)
	}
	return k, nil
}

// hs256VerifyKey is the HS256 key of a public client's token, by its aud.
func (s *Service) hs256VerifyKey(ctx context.Context, claims jwt.MapClaims) (any, error) {
	aud, err := claims.GetAudience()
	if err != nil || len(aud) != 1 {
		return nil, errors.New("an HS256 ID token names one client in aud")
	}
	c, err := s.loadClient(ctx, s.DB, aud[0])
	if err != nil {
		return nil, err
	}
	if c.ClientType != Public {
		return nil, errors.New("HS256 ID tokens of confidential clients are keyed with the client secret, which the server does not keep")
	}
	return s.PublicClientKey(c.ID), nil
}
