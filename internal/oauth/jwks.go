package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/httpx"
)

// JWKS serves GET /v1/oauth/jwks: the public keys of RS256 and ES256 ID
// tokens, each with its kid: the signing key of each algorithm and the
// retired keys whose tokens may still be unexpired (KeyGrace). It reads the
// keys afresh, so a rotation on another instance shows at once, and creates
// each algorithm's first key, so clients can fetch keys before any token.
// Verifiers should fetch the set again when they meet an unknown kid (as
// go-oidc does); the set may be cached for five minutes.
func (h *Handler) JWKS(w http.ResponseWriter, r *http.Request) {
	keys, err := h.S.Keys.JWKS(r.Context())
	if err != nil {
		writeOAuthError(w, asOAuth(r, err))
		return
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
		k, err := s.Keys.Published(ctx, kid)
		if err != nil {
			return nil, err
		}
		if k.Alg() != t.Method.Alg() {
			return nil, fmt.Errorf("kid %s is a %s key", kid, k.Alg())
		}
		return k.Public(), nil
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
