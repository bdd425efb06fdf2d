package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"hmid/internal/apperr"
)

// JWTBearerAssertionType is the client_assertion_type of a JWT client
// assertion (RFC 7523 §2.2).
const JWTBearerAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Bounds of a client assertion's times (docs/decisions.md, "private_key_jwt").
const (
	// MaxAssertionLifetime is how far ahead of now an assertion's exp may
	// lie: an assertion is made for one request, and its jti is remembered
	// until exp, so a far exp would only lengthen what must be kept.
	MaxAssertionLifetime = 5 * time.Minute
	// assertionLeeway absorbs clock skew between the client and hmid.
	assertionLeeway = 30 * time.Second
	// maxAssertionBytes bounds the compact JWS read from the form.
	maxAssertionBytes = 8 << 10
)

// assertionAlgs are AssertionAlgs as go-jose takes them.
var assertionAlgs = []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA}

// usesAssertion reports whether a request authenticates with a client
// assertion (RFC 7521 §4.2): either parameter is enough to mean it.
func usesAssertion(form url.Values) bool {
	return form.Has("client_assertion") || form.Has("client_assertion_type")
}

// authenticateAssertion authenticates a private_key_jwt client (RFC 7523
// §2.2 and §3, OpenID Connect Core §9): the assertion is a JWS by one of the
// client's registered keys, with iss and sub its client_id, aud hmid's token
// endpoint or issuer, exp in the near future, and a jti not seen before.
// The jti is remembered in the shared cache until exp, so a replay is
// refused on every instance. Every failure is invalid_client and leaves no
// trace but a used jti of an assertion that verified.
func (s *Service) authenticateAssertion(ctx context.Context, r *http.Request, form url.Values) (Client, *Error) {
	fail := func(desc string) *Error { return oerr(ErrInvalidClient, desc) }
	if _, _, basic := r.BasicAuth(); basic || form.Has("client_secret") {
		return Client{}, oerr(ErrInvalidRequest, "use one client authentication method, not a client assertion and a secret together")
	}
	if form.Get("client_assertion_type") != JWTBearerAssertionType {
		return Client{}, fail("client_assertion_type must be " + JWTBearerAssertionType)
	}
	raw := form.Get("client_assertion")
	if raw == "" || len(raw) > maxAssertionBytes {
		return Client{}, fail("client_assertion is required and at most 8 KiB")
	}
	tok, err := jwt.ParseSigned(raw, assertionAlgs)
	if err != nil || len(tok.Headers) != 1 {
		return Client{}, fail("client_assertion is not a JWS signed with ES256, RS256 or EdDSA")
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Subject == "" {
		return Client{}, fail("client_assertion has no readable sub")
	}
	if id := form.Get("client_id"); id != "" && id != unverified.Subject {
		return Client{}, fail("client_id differs from the assertion's sub")
	}
	c, err := s.loadClient(ctx, s.DB, unverified.Subject)
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return Client{}, asOAuthErr(err)
	}
	if err != nil || !c.IsActive || c.TokenEndpointAuthMethod != AuthPrivateKeyJWT {
		return Client{}, fail("unknown or inactive client, or one not registered for private_key_jwt")
	}
	claims, oe := s.verifyAssertion(ctx, c, tok)
	if oe != nil {
		return Client{}, oe
	}
	if oe := s.checkAssertionClaims(c, claims); oe != nil {
		return Client{}, oe
	}
	return c, s.spendJTI(ctx, c, claims)
}

// verifyAssertion checks the signature with the client's keys, fetching its
// jwks_uri again once when no cached key fits (the client rotated).
func (s *Service) verifyAssertion(ctx context.Context, c Client, tok *jwt.JSONWebToken) (jwt.Claims, *Error) {
	h := tok.Headers[0]
	for _, refresh := range []bool{false, true} {
		set, err := s.clientKeys(ctx, c, refresh)
		if err != nil {
			return jwt.Claims{}, oerr(ErrInvalidClient, "the client's keys could not be loaded: "+err.Error())
		}
		for _, k := range candidateKeys(set, h.KeyID, h.Algorithm) {
			var claims jwt.Claims
			if tok.Claims(k.Key, &claims) == nil {
				return claims, nil
			}
		}
		if c.JWKSURI == nil {
			break
		}
	}
	return jwt.Claims{}, oerr(ErrInvalidClient, "the client_assertion's signature does not verify with the client's registered keys")
}

// checkAssertionClaims checks iss, sub, aud, exp, nbf, iat and jti (RFC 7523 §3).
func (s *Service) checkAssertionClaims(c Client, cl jwt.Claims) *Error {
	now := s.Clock.Now()
	fail := func(desc string) *Error { return oerr(ErrInvalidClient, desc) }
	switch {
	case cl.Issuer != c.ID || cl.Subject != c.ID:
		return fail("the assertion's iss and sub must both be the client_id")
	case !s.assertionAudience(cl.Audience):
		return fail("the assertion's aud must be the token endpoint " + s.Issuer + "/v1/oauth/token or the issuer " + s.Issuer)
	case cl.Expiry == nil:
		return fail("the assertion needs exp")
	case !now.Before(cl.Expiry.Time().Add(assertionLeeway)):
		return fail("the assertion has expired")
	case cl.Expiry.Time().After(now.Add(MaxAssertionLifetime + assertionLeeway)):
		return fail("the assertion's exp may be at most 5 minutes ahead")
	case cl.NotBefore != nil && cl.NotBefore.Time().After(now.Add(assertionLeeway)):
		return fail("the assertion is not valid yet (nbf)")
	case cl.IssuedAt != nil && cl.IssuedAt.Time().After(now.Add(assertionLeeway)):
		return fail("the assertion was issued in the future (iat)")
	case cl.ID == "" || len(cl.ID) > 256:
		return fail("the assertion needs a jti of at most 256 characters")
	}
	return nil
}

// assertionAudience accepts the token endpoint's URL or the issuer (RFC 7523
// §3 item 3; OpenID Connect Core §9 names the token endpoint, RFC 7523's
// successor the issuer). The same assertion serves the revocation and
// introspection endpoints: they authenticate the client like the token endpoint.
func (s *Service) assertionAudience(aud jwt.Audience) bool {
	return slices.ContainsFunc(aud, func(a string) bool {
		return a == s.Issuer || a == s.Issuer+"/v1/oauth/token"
	})
}

// spendJTI marks the assertion's jti as used until its exp, in the shared
// cache (Redis with several instances): of two presentations, on whatever
// instances, only the first succeeds (RFC 7523 §3 item 7).
func (s *Service) spendJTI(ctx context.Context, c Client, cl jwt.Claims) *Error {
	sum := sha256.Sum256([]byte(cl.ID))
	key := "oauth:jti:" + c.ID + ":" + hex.EncodeToString(sum[:])
	ttl := cl.Expiry.Time().Add(assertionLeeway).Sub(s.Clock.Now())
	fresh, err := s.Cache.SetNX(ctx, key, []byte{1}, ttl)
	if err != nil {
		return asOAuthErr(err)
	}
	if !fresh {
		return oerr(ErrInvalidClient, "the assertion's jti was used before: an assertion is good for one request")
	}
	return nil
}
