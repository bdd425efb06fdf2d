package oauth

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/authn"
	"hmid/internal/db"
)

// IDToken signs the OpenID Connect ID token of a grant (OpenID Connect Core
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
// asked for in the ID token.
func (s *Service) IDToken(ctx context.Context, c Client, secret, userID string, scopes []string, authTime time.Time, nonce, sid string, ac authContext, now time.Time) (string, error) {
	return s.idToken(ctx, c, secret, userID, nil, scopes, authTime, nonce, sid, ac, now)
}

// idToken is IDToken with the user's claim columns already read (row; nil:
// read them).
func (s *Service) idToken(ctx context.Context, c Client, secret, userID string, row *claimRow, scopes []string, authTime time.Time, nonce, sid string, ac authContext, now time.Time) (string, error) {
	var set claimSet
	if err := s.releasedClaims(ctx, userID, row, scopes, ac, false, &set); err != nil {
		return "", err
	}
	claims := set.toMap()
	ac.addAuthClaims(claims)
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
	switch c.IDTokenSignedResponseAlg {
	case AlgRS256, AlgES256:
		k, err := s.signer(ctx, c.IDTokenSignedResponseAlg)
		if err != nil {
			return "", err
		}
		return k.sign(claims)
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
	EXISTS (SELECT 1 FROM platform_accounts pa WHERE pa.user_id = u.id AND pa.email_verified AND LOWER(pa.email) = LOWER(u.email)),
	u.updated_at`

// claimRow holds claimCols of one user.
type claimRow struct {
	username, name               string
	avatar, email, locale, prov  sql.NullString
	avatarsOn, superAdmin, verif bool
	updatedAt                    int64
	context                      string // the token's authContext as JSON (UserInfo only; not a claim column)
}

// dest returns the scan destinations of claimCols, in order.
func (c *claimRow) dest() []any {
	return []any{&c.username, &c.name, &c.avatar, &c.avatarsOn, &c.email, &c.locale, &c.prov, &c.superAdmin, &c.verif, &c.updatedAt}
}

// userClaims reads the user's claims for scopes into out, live (spec 1, ID token and
// UserInfo claims). userInfo adds the fields only UserInfo carries
// (provider, preferred_locale, is_super_admin, role_ids).
func (s *Service) userClaims(ctx context.Context, userID string, scopes []string, userInfo bool, out *claimSet) error {
	var row claimRow
	if err := s.DB.QueryRowContext(ctx, `SELECT `+claimCols+` FROM users u WHERE u.id = $1`, userID).Scan(row.dest()...); err != nil {
		return err
	}
	return s.claims(ctx, userID, &row, scopes, userInfo, out)
}

// claims sets in out the claims of userID for scopes from its claim
// columns, reading roles and permissions when those scopes ask for them.
func (s *Service) claims(ctx context.Context, userID string, row *claimRow, scopes []string, userInfo bool, out *claimSet) error {
	out.setString(claimSub, userID)
	if slices.Contains(scopes, "profile") {
		name := row.name
		if name == "" {
			name = row.username
		}
		out.setString(claimName, name)
		if row.avatarsOn && row.avatar.String != "" {
			out.setString(claimPicture, row.avatar.String)
		}
		// The standard profile claims of OpenID Connect Core §5.1 that hmid
		// has, beside the spec's own: the username, the preferred locale
		// (BCP47) and when the profile last changed, in unix seconds.
		out.setString(claimPreferredUsername, row.username)
		if row.locale.String != "" {
			out.setString(claimLocale, row.locale.String)
		}
		out.setInt(claimUpdatedAt, db.FromTS(row.updatedAt).Unix())
		if userInfo {
			if row.prov.String != "" {
				out.setString(claimProvider, row.prov.String)
			}
			if row.locale.String != "" {
				out.setString(claimPreferredLocale, row.locale.String)
			}
			out.setBool(claimIsSuperAdmin, row.superAdmin)
		}
	}
	if slices.Contains(scopes, "email") && row.email.String != "" {
		out.setString(claimEmail, row.email.String)
		out.setBool(claimEmailVerified, row.verif)
	}
	if slices.Contains(scopes, "roles") {
		rows, err := s.DB.QueryContext(ctx, `SELECT r.id, r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id WHERE ur.user_id = $1 ORDER BY r.name, r.id`, userID)
		if err != nil {
			return err
		}
		names, ids := []string{}, []string{}
		for rows.Next() {
			var id, n string
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return err
			}
			names, ids = append(names, n), append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		out.setList(claimRoles, names)
		if userInfo {
			out.setList(claimRoleIDs, ids)
		}
	}
	if slices.Contains(scopes, "permissions") {
		perms, err := authn.UserPermissions(ctx, s.DB, userID)
		if err != nil {
			return err
		}
		if row.superAdmin {
			perms["*:*"] = struct{}{}
		}
		out.setList(claimPermissions, perms.List())
	}
	return nil
}
