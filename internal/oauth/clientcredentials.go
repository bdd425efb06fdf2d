package oauth

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// The client credentials grant (RFC 6749 §4.4). A confidential client
// registered for client_credentials gets an access token that acts for no
// user: a service principal (authn.KindClient) holding exactly the
// permission strings ("devices:read", "gps:write") the token was granted.
// Those permission scopes sit in the client's allowed_scopes beside the
// OpenID Connect scopes; they are checked when registered against the
// registrar's own permissions, like the scopes of an API key (spec 1,
// Authentication 7), and are never granted through the authorization
// endpoint, which knows only the OpenID Connect scopes.

// clientTokenMark follows the hm_at_ prefix in a client credentials token,
// which is one character longer than a user's access token: the length
// tells which table holds it, so resolving either kind is one lookup and
// the hot paths of user tokens (UserInfo, refresh) are not touched.
const clientTokenMark = "c"

// clientTokenLen is the length of a client credentials token.
var clientTokenLen = len(token.New(token.PrefixAccessToken + clientTokenMark))

// isClientToken reports whether tok has the shape of a client credentials
// access token.
func isClientToken(tok string) bool {
	return len(tok) == clientTokenLen && token.HasShape(tok, token.PrefixAccessToken+clientTokenMark)
}

// permScope matches a permission string resource:action, the shape of the
// permissions table (and of API key scopes).
var permScope = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,62}:(\*|[a-z][a-z0-9_.]{0,62})$`)

// IsPermissionScope reports whether a client scope is a permission string
// rather than an OpenID Connect scope.
func IsPermissionScope(scope string) bool {
	_, oidc := knownScope(scope)
	return !oidc && permScope.MatchString(scope)
}

// validClientScope reports whether scope may stand in a client's
// allowed_scopes: an OpenID Connect scope or a permission string (which
// checkPermissionScopes then checks against the permissions table).
func validClientScope(scope string) bool {
	_, ok := knownScope(scope)
	return ok || IsPermissionScope(scope)
}

// PermissionScopes returns the permission strings among scopes.
func PermissionScopes(scopes []string) []string {
	var out []string
	for _, sc := range scopes {
		if IsPermissionScope(sc) {
			out = append(out, sc)
		}
	}
	return out
}

// checkPermissionScopes checks the permission scopes c gained over before
// (all of them on registration): each must be a known permission, and one
// the registrar holds, unless they are a super admin or a system key (spec
// 1, Authentication 7: no scope escalation). Scopes the client had already
// stay, so an owner can still edit a client an administrator gave more.
func (s *Service) checkPermissionScopes(ctx context.Context, p *authn.Principal, c Client, before []string) error {
	for _, sc := range PermissionScopes(c.AllowedScopes) {
		if slices.Contains(before, sc) {
			continue
		}
		res, act, _ := strings.Cut(sc, ":")
		var n int
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM permissions WHERE resource = $1 AND action = $2`, res, act).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return apperr.OnField("allowed_scopes", apperr.Invalid("scope %q is neither an OpenID Connect scope nor a known permission", sc))
		}
		if !p.IsAdmin() && !p.Can(sc) {
			return apperr.OnField("allowed_scopes", apperr.Forbiddenf("scope %s is outside your own permissions", sc))
		}
	}
	return nil
}

// resolveClientToken turns a client credentials token into its service
// principal: no user, the client as OAuthClientID (the audit actor), and
// exactly the token's permission strings.
func (s *Service) resolveClientToken(ctx context.Context, tok string) (*authn.Principal, error) {
	row, err := s.Store.ClientToken(ctx, token.Hash(tok))
	if errors.Is(err, store.ErrNotFound) {
		return nil, authn.ErrInvalidToken
	}
	if err != nil {
		return nil, apperr.Unavailable(err, "database unavailable")
	}
	if !row.Live(GrantClientCredentials, s.Clock.Now()) {
		return nil, authn.ErrInvalidToken
	}
	return authn.NewPrincipal(authn.Principal{
		Kind: authn.KindClient, OAuthClientID: row.ClientID, OAuthScopes: row.Scopes, OAuthTokenID: row.ID, OAuthAudience: row.Audience,
		ExpiresAt: row.Expires, AuthTime: row.Created,
	}, authn.NewPermSet(row.Scopes...)), nil
}

// introspectClientToken is introspect for a client credentials token
// (RFC 7662 §2.2): no sub or username, as the token acts for no user.
func (s *Service) introspectClientToken(ctx context.Context, tok, clientID string) (Introspection, error) {
	row, err := s.Store.ClientToken(ctx, token.Hash(tok))
	if errors.Is(err, store.ErrNotFound) {
		return Introspection{}, nil
	}
	if err != nil {
		return Introspection{}, err
	}
	if (clientID != "" && row.ClientID != clientID) || !row.Live(GrantClientCredentials, s.Clock.Now()) {
		return Introspection{}, nil
	}
	return Introspection{
		Active: true, Scope: strings.Join(row.Scopes, " "), ClientID: row.ClientID, TokenType: "Bearer",
		Exp: row.Expires.Unix(), Iat: row.Created.Unix(), Aud: audienceClaim(row.Audience, row.ClientID), Iss: s.Issuer, JTI: row.ID,
	}, nil
}
