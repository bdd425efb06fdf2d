package oauth

import (
	"context"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/oauth/claims"
)

// idToken signs the OpenID Connect ID token of a grant (OpenID Connect Core
// §2; spec 1, ID token claims). The key depends on the client: clients
// registered with id_token_signed_response_alg RS256 or ES256 get a token
// signed with that algorithm's current key, named by kid and published at
// the JWKS; otherwise HS256 keyed with the client secret presented in the
// token request (confidential clients, Core §10.1) or with a server key
// derived per client (public clients, which should rely on UserInfo). The
// asymmetric keys are cached parsed, so signing reads no key from the
// database. sid names the browser session the grant came from ("" for
// none; Back-Channel Logout 1.0 §2.1), so logout requests and logout tokens
// can name it; ac adds acr, amr and the claims the claims request parameter
// asked for in the ID token. row holds the user's claim columns when the
// caller read them already (nil: read them).
func (s *Service) idToken(ctx context.Context, c Client, secret, userID string, row *claims.Row, scopes []string, authTime time.Time, nonce, sid string, ac authContext, now time.Time) (string, error) {
	var set claims.Set
	if err := s.releasedClaims(ctx, userID, row, scopes, ac, false, &set); err != nil {
		return "", err
	}
	m := set.ToMap()
	ac.addAuthClaims(m)
	m["iss"] = s.Issuer
	m["aud"] = c.ID
	m["iat"] = now.Unix()
	m["exp"] = now.Add(IDTokenTTL).Unix()
	m["auth_time"] = authTime.Unix()
	if nonce != "" {
		m["nonce"] = nonce
	}
	if sid != "" {
		m["sid"] = sid
	}
	switch c.IDTokenSignedResponseAlg {
	case AlgRS256, AlgES256:
		k, err := s.signer(ctx, c.IDTokenSignedResponseAlg)
		if err != nil {
			return "", err
		}
		return k.sign(m)
	}
	key := []byte(secret)
	if c.ClientType == Public || secret == "" {
		key = s.PublicClientKey(c.ID)
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(m)).SignedString(key)
}

// PublicClientKey is the HS256 key of a public client's ID tokens: a MAC of
// the client id under the server key, so it never leaves the server.
func (s *Service) PublicClientKey(clientID string) []byte {
	return s.Box.MAC([]byte("hmid oidc id_token hs256"), []byte(clientID))
}

// releasedClaims sets in out the user claims of one answer (the ID token,
// or UserInfo when userInfo is set): those the granted scopes release
// there, plus those the claims parameter asks for in that member, when
// consent covered their scope. row holds the user's claim columns when the
// caller read them already (nil: read them).
func (s *Service) releasedClaims(ctx context.Context, userID string, row *claims.Row, scopes []string, ac authContext, userInfo bool, out *claims.Set) error {
	asked := ac.Claims.Member(userInfo)
	all := scopes
	if len(asked) > 0 {
		all = union(scopes, ac.ClaimScopes)
	}
	var err error
	if row != nil {
		err = claims.Fill(ctx, s.DB, userID, row, all, userInfo || len(asked) > 0, out)
	} else {
		err = claims.FillUser(ctx, s.DB, userID, all, userInfo || len(asked) > 0, out)
	}
	if err != nil || len(asked) == 0 {
		return err
	}
	out.Filter(scopes, asked, userInfo)
	return nil
}
