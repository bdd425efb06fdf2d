package oauth

import (
	"context"
	"slices"

	"github.com/golang-jwt/jwt/v5"
)

// MaxIDTokenHint bounds the id_token_hint parameter; hmid's ID tokens are a
// few kilobytes at most (many roles and permissions).
const MaxIDTokenHint = 16 << 10

// verifyIDTokenHint checks an id_token_hint (OpenID Connect Core §3.1.2.1)
// and returns the user it names. The hint must be an ID token hmid issued to
// this client: issuer and audience are checked, and the signature wherever
// hmid holds the key: RS256 and ES256 with any key the JWKS lists, HS256 of
// a public client with its server-side key. An HS256 hint of a confidential client is keyed
// with the client secret, of which hmid keeps only a hash, so its signature
// cannot be checked and its claims are taken as they are. That is safe
// because a hint never authenticates anyone: a forged one can only make the
// endpoint ask the user to log in (or answer login_required), which the
// client could ask for anyway with prompt=login. Expiry is not checked:
// an expired ID token is a valid hint.
//
// A hint that does not decode, or fails these checks, is invalid_request.
func (s *Service) verifyIDTokenHint(ctx context.Context, c Client, raw string) (string, *Error) {
	bad := func(why string) (string, *Error) {
		return "", oerr(ErrInvalidRequest, "id_token_hint "+why)
	}
	if len(raw) > MaxIDTokenHint {
		return bad("is too long")
	}
	claims := jwt.MapClaims{}
	tok, _, err := jwt.NewParser().ParseUnverified(raw, claims)
	if err != nil {
		return bad("is not a JWT")
	}
	if iss, _ := claims.GetIssuer(); iss != s.Issuer {
		return bad("was not issued by this server")
	}
	if aud, _ := claims.GetAudience(); !slices.Contains(aud, c.ID) {
		return bad("was not issued to this client")
	}
	sub, _ := claims.GetSubject()
	if sub == "" {
		return bad("has no sub")
	}
	switch alg := tok.Method.Alg(); {
	case alg == AlgHS256 && c.ClientType != Public:
		return sub, nil
	case alg == AlgHS256, alg == AlgRS256, alg == AlgES256:
		// Any key the JWKS still lists, so a hint outlives a rotation.
		if _, err := s.VerifyIDToken(ctx, raw, true); err != nil {
			return bad("has an invalid signature or an unknown key")
		}
	default:
		return bad("uses an algorithm this server does not sign with")
	}
	return sub, nil
}
