package oauth

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
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

// ClientTokenResponse is the answer of the client credentials grant: an
// access token only (RFC 6749 §4.4.3: a refresh token should not be
// included).
type ClientTokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
}

// clientCredentials serves grant_type=client_credentials (RFC 6749 §4.4.2).
// The client is already authenticated and registered for the grant.
func (s *Service) clientCredentials(ctx context.Context, c Client, form url.Values) (ClientTokenResponse, *Error) {
	if c.ClientType != Confidential { // RFC 6749 §4.4: confidential clients only
		return ClientTokenResponse{}, oerr(ErrUnauthorizedClient, "the client credentials grant is for confidential clients only")
	}
	now := s.Clock.Now()
	scopes, oe := s.clientGrantScopes(ctx, c, form, now)
	if oe != nil {
		return ClientTokenResponse{}, oe
	}
	tok := token.New(token.PrefixAccessToken + clientTokenMark)
	ttl, _ := s.lifetimes(c)
	_, err := s.DB.ExecContext(ctx, `INSERT INTO oauth_client_tokens (id, token_hash, client_id, scopes, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, db.NewID(), token.Hash(tok), c.ID, db.JSON(scopes), db.TS(now), db.TS(now.Add(ttl)))
	if err != nil {
		return ClientTokenResponse{}, asOAuthErr(err)
	}
	return ClientTokenResponse{AccessToken: tok, TokenType: "Bearer", ExpiresIn: int(ttl / time.Second), Scope: strings.Join(scopes, " ")}, nil
}

// clientGrantScopes decides the scopes of a client credentials token. A
// scope parameter must name permission scopes of the client (openid and the
// other OpenID Connect scopes need a user: invalid_scope); without one the
// token gets every permission scope of the client (RFC 6749 §3.3 lets the
// server pick a default). The token never holds more than the client's
// owner holds at issue, as a user's API key never holds more than its
// owner: a permission the owner lost is refused when asked for and left
// out of the default.
func (s *Service) clientGrantScopes(ctx context.Context, c Client, form url.Values, now time.Time) ([]string, *Error) {
	asked := form.Has("scope")
	scopes := parseScope(form.Get("scope"))
	if !asked {
		scopes = PermissionScopes(c.AllowedScopes)
		slices.Sort(scopes)
	}
	for _, sc := range scopes {
		if _, oidc := knownScope(sc); oidc {
			return nil, oerr(ErrInvalidScope, "scope "+sc+" needs a user; the client credentials grant acts for the client itself")
		}
		if !IsPermissionScope(sc) || !slices.Contains(c.AllowedScopes, sc) {
			return nil, oerr(ErrInvalidScope, "the client may not request scope "+sc)
		}
	}
	ceiling, oe := s.ownerCeiling(ctx, c, now)
	if oe != nil {
		return nil, oe
	}
	held := scopes[:0:0]
	for _, sc := range scopes {
		switch {
		case ceiling == nil || ceiling.Can(sc):
			held = append(held, sc)
		case asked:
			return nil, oerr(ErrInvalidScope, "the client's owner no longer holds "+sc)
		}
	}
	if len(held) == 0 {
		return nil, oerr(ErrInvalidScope, "no scope to grant: register permission scopes (resource:action) in the client's allowed_scopes")
	}
	return held, nil
}

// ownerCeiling returns the permissions the client's owner holds now, or nil
// for no limit (an ownerless client, registered by a system key, or a super
// admin's). An owner who is deleted or banned makes the client unusable.
func (s *Service) ownerCeiling(ctx context.Context, c Client, now time.Time) (authn.PermSet, *Error) {
	if c.OwnerID == nil {
		return nil, nil
	}
	var superAdmin, usable bool
	err := s.DB.QueryRowContext(ctx, `SELECT u.is_super_admin, `+usableSQL+` FROM users u WHERE u.id = $1`, *c.OwnerID, db.TS(now)).Scan(&superAdmin, &usable)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && !usable):
		return nil, oerr(ErrUnauthorizedClient, "the client's owner can no longer authorize it")
	case err != nil:
		return nil, asOAuthErr(err)
	case superAdmin:
		return nil, nil
	}
	perms, err := authn.UserPermissions(ctx, s.DB, *c.OwnerID)
	if err != nil {
		return nil, asOAuthErr(err)
	}
	return perms, nil
}

// clientTokenRow is a stored client credentials token with its client's
// state: whether it is active, and its registration now, which the token
// follows at once (a grant or a permission scope taken from the client ends
// with it, not an hour later).
type clientTokenRow struct {
	id, clientID          string
	scopes                db.Strings
	created, expires      int64
	revoked               db.NullTime
	active                bool
	grants, allowedScopes db.Strings
}

// lookupClientToken reads a client credentials token by its hash.
func (s *Service) lookupClientToken(ctx context.Context, tok string) (clientTokenRow, error) {
	var row clientTokenRow
	err := s.DB.QueryRowContext(ctx, `SELECT t.id, t.client_id, t.scopes, t.created_at, t.expires_at, t.revoked_at, c.is_active, c.grant_types, c.allowed_scopes
		FROM oauth_client_tokens t JOIN oauth_clients c ON c.id = t.client_id WHERE t.token_hash = $1`, token.Hash(tok)).
		Scan(&row.id, &row.clientID, &row.scopes, &row.created, &row.expires, &row.revoked, &row.active, &row.grants, &row.allowedScopes)
	if err == nil {
		row.scopes = slices.DeleteFunc(row.scopes, func(sc string) bool { return !slices.Contains(row.allowedScopes, sc) })
	}
	return row, err
}

// live reports whether the token may be used at now.
func (row clientTokenRow) live(now time.Time) bool {
	return !row.revoked.Valid && row.active && slices.Contains(row.grants, GrantClientCredentials) && now.Before(db.FromTS(row.expires))
}

// resolveClientToken turns a client credentials token into its service
// principal: no user, the client as OAuthClientID (the audit actor), and
// exactly the token's permission strings.
func (s *Service) resolveClientToken(ctx context.Context, tok string) (*authn.Principal, error) {
	row, err := s.lookupClientToken(ctx, tok)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, authn.ErrInvalidToken
	}
	if err != nil {
		return nil, apperr.Unavailable(err, "database unavailable")
	}
	now := s.Clock.Now()
	if !row.live(now) {
		return nil, authn.ErrInvalidToken
	}
	return authn.NewPrincipal(authn.Principal{
		Kind: authn.KindClient, OAuthClientID: row.clientID, OAuthScopes: row.scopes, OAuthTokenID: row.id,
		ExpiresAt: db.FromTS(row.expires), AuthTime: db.FromTS(row.created),
	}, authn.NewPermSet(row.scopes...)), nil
}

// introspectClientToken is introspect for a client credentials token
// (RFC 7662 §2.2): no sub or username, as the token acts for no user.
func (s *Service) introspectClientToken(ctx context.Context, tok, clientID string) (Introspection, error) {
	row, err := s.lookupClientToken(ctx, tok)
	if errors.Is(err, sql.ErrNoRows) {
		return Introspection{}, nil
	}
	if err != nil {
		return Introspection{}, err
	}
	if (clientID != "" && row.clientID != clientID) || !row.live(s.Clock.Now()) {
		return Introspection{}, nil
	}
	return Introspection{
		Active: true, Scope: strings.Join(row.scopes, " "), ClientID: row.clientID, TokenType: "Bearer",
		Exp: db.FromTS(row.expires).Unix(), Iat: db.FromTS(row.created).Unix(), Aud: row.clientID, Iss: s.Issuer, JTI: row.id,
	}, nil
}

// revokeClientToken revokes a client credentials token of client clientID
// (RFC 7009 §2.1: a token of another client is left alone, silently).
func (s *Service) revokeClientToken(ctx context.Context, tok, clientID string) error {
	_, err := s.DB.ExecContext(ctx, `UPDATE oauth_client_tokens SET revoked_at = $1 WHERE token_hash = $2 AND client_id = $3 AND revoked_at IS NULL`,
		db.TS(s.Clock.Now()), token.Hash(tok), clientID)
	return err
}

// purgeClientTokens deletes client credentials tokens once expired or
// revoked: either is refused whether or not its row exists.
func (s *Service) purgeClientTokens(ctx context.Context, now time.Time) error {
	return s.purgeBatches(ctx, `DELETE FROM oauth_client_tokens WHERE id IN (SELECT id FROM oauth_client_tokens
		WHERE expires_at <= $1 OR revoked_at IS NOT NULL LIMIT `+strconv.Itoa(PurgeBatch)+`)`, db.TS(now))
}
