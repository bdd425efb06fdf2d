package oauth

import (
	"context"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/oauth/claims"
)

// idTokenFor is what an ID token is signed for (OpenID Connect Core §2;
// spec 1, ID token claims).
type idTokenFor struct {
	client Client
	// secret is the client secret presented in the token request: the
	// HS256 key of a confidential client's ID tokens (Core §10.1).
	secret   string
	userID   string
	scopes   []string
	authTime time.Time
	nonce    string
	// sid names the browser session the grant came from ("" for none;
	// Back-Channel Logout 1.0 §2.1), so logout requests and logout tokens
	// can name it.
	sid string
	// ac adds acr, amr and the claims the claims request parameter asked
	// for in the ID token.
	ac  authContext
	now time.Time
	// claims are the user's claim columns when the caller read them
	// already (nil: read them).
	claims *claims.Row
}

// idToken signs the OpenID Connect ID token of a grant. The key depends on
// the client: clients registered with id_token_signed_response_alg RS256 or
// ES256 get a token signed with that algorithm's current key, named by kid
// and published at the JWKS; otherwise HS256 keyed with the client secret
// (confidential clients) or with a server key derived per client (public
// clients, which should rely on UserInfo). The asymmetric keys are cached
// parsed, so signing reads no key from the database.
func (s *Service) idToken(ctx context.Context, f idTokenFor) (string, error) {
	var set claims.Set
	if err := s.releasedClaims(ctx, f.userID, f.claims, f.scopes, f.ac, false, &set); err != nil {
		return "", err
	}
	m := set.ToMap()
	f.ac.addAuthClaims(m)
	m["iss"] = s.Issuer
	m["aud"] = f.client.ID
	m["iat"] = f.now.Unix()
	m["exp"] = f.now.Add(IDTokenTTL).Unix()
	m["auth_time"] = f.authTime.Unix()
	if f.nonce != "" {
		m["nonce"] = f.nonce
	}
	if f.sid != "" {
		m["sid"] = f.sid
	}
	switch f.client.IDTokenSignedResponseAlg {
	case AlgRS256, AlgES256:
		k, err := s.Keys.Signer(ctx, f.client.IDTokenSignedResponseAlg)
		if err != nil {
			return "", err
		}
		return k.Sign(m)
	}
	key := []byte(f.secret)
	if f.client.ClientType == Public || f.secret == "" {
		key = s.PublicClientKey(f.client.ID)
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
