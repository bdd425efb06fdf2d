package oauth

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/authn"
)

// IDToken signs the OpenID Connect ID token of a grant (OpenID Connect Core
// §2; spec 1, ID token claims). The key depends on the client: RS256 with the
// published RSA key for clients registered with id_token_signed_response_alg
// RS256; otherwise HS256 keyed with the client secret presented in the token
// request (confidential clients, Core §10.1) or with a server key derived per
// client (public clients, which should rely on UserInfo). sid names the
// browser session the grant came from ("" for none; Back-Channel Logout 1.0
// §2.1), so logout requests and logout tokens can name it.
func (s *Service) IDToken(ctx context.Context, c Client, secret, userID string, scopes []string, authTime time.Time, nonce, sid string, now time.Time) (string, error) {
	claims, err := s.userClaims(ctx, userID, scopes, false)
	if err != nil {
		return "", err
	}
	claims["iss"] = s.Issuer
	claims["aud"] = c.ID
	claims["iat"] = now.Unix()
	claims["exp"] = now.Add(IDTokenTTL).Unix()
	claims["auth_time"] = authTime.Unix()
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if sid != "" {
		claims["sid"] = sid
	}
	if c.IDTokenSignedResponseAlg == AlgRS256 {
		k, err := s.signingKey(ctx)
		if err != nil {
			return "", err
		}
		t := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims(claims))
		t.Header["kid"] = k.kid
		return t.SignedString(k.priv)
	}
	key := []byte(secret)
	if c.ClientType == Public || secret == "" {
		key = s.PublicClientKey(c.ID)
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(claims)).SignedString(key)
}

// PublicClientKey is the HS256 key of a public client's ID tokens: a MAC of
// the client id under the server key, so it never leaves the server.
func (s *Service) PublicClientKey(clientID string) []byte {
	return s.Box.MAC([]byte("hmid oidc id_token hs256"), []byte(clientID))
}

// claimCols are the columns, over users u, that a user's claims come from.
const claimCols = `u.username, u.name, u.avatar_url, u.avatars_enabled, u.email, u.preferred_locale, u.last_login_provider, u.is_super_admin,
	EXISTS (SELECT 1 FROM platform_accounts pa WHERE pa.user_id = u.id AND pa.email_verified AND LOWER(pa.email) = LOWER(u.email))`

// claimRow holds claimCols of one user.
type claimRow struct {
	username, name               string
	avatar, email, locale, prov  sql.NullString
	avatarsOn, superAdmin, verif bool
}

// dest returns the scan destinations of claimCols, in order.
func (c *claimRow) dest() []any {
	return []any{&c.username, &c.name, &c.avatar, &c.avatarsOn, &c.email, &c.locale, &c.prov, &c.superAdmin, &c.verif}
}

// userClaims reads the user's claims for scopes, live (spec 1, ID token and
// UserInfo claims). userInfo adds the fields only UserInfo carries
// (provider, preferred_locale, is_super_admin, role_ids).
func (s *Service) userClaims(ctx context.Context, userID string, scopes []string, userInfo bool) (map[string]any, error) {
	var row claimRow
	if err := s.DB.QueryRowContext(ctx, `SELECT `+claimCols+` FROM users u WHERE u.id = $1`, userID).Scan(row.dest()...); err != nil {
		return nil, err
	}
	return s.claims(ctx, userID, row, scopes, userInfo)
}

// claims builds the claims of userID for scopes from its claim columns,
// reading roles and permissions when those scopes ask for them.
func (s *Service) claims(ctx context.Context, userID string, row claimRow, scopes []string, userInfo bool) (map[string]any, error) {
	claims := map[string]any{"sub": userID}
	if slices.Contains(scopes, "profile") {
		name := row.name
		if name == "" {
			name = row.username
		}
		claims["name"] = name
		if row.avatarsOn && row.avatar.String != "" {
			claims["picture"] = row.avatar.String
		}
		if userInfo {
			if row.prov.String != "" {
				claims["provider"] = row.prov.String
			}
			if row.locale.String != "" {
				claims["preferred_locale"] = row.locale.String
			}
			claims["is_super_admin"] = row.superAdmin
		}
	}
	if slices.Contains(scopes, "email") && row.email.String != "" {
		claims["email"] = row.email.String
		claims["email_verified"] = row.verif
	}
	if slices.Contains(scopes, "roles") {
		rows, err := s.DB.QueryContext(ctx, `SELECT r.id, r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id WHERE ur.user_id = $1 ORDER BY r.name, r.id`, userID)
		if err != nil {
			return nil, err
		}
		names, ids := []string{}, []string{}
		for rows.Next() {
			var id, n string
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return nil, err
			}
			names, ids = append(names, n), append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		claims["roles"] = names
		if userInfo {
			claims["role_ids"] = ids
		}
	}
	if slices.Contains(scopes, "permissions") {
		perms, err := authn.UserPermissions(ctx, s.DB, userID)
		if err != nil {
			return nil, err
		}
		if row.superAdmin {
			perms["*:*"] = struct{}{}
		}
		claims["permissions"] = perms.List()
	}
	return claims, nil
}
