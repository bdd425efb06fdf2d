package claims

import (
	"context"
	"database/sql"
	"slices"

	"hmid/internal/authn"
	"hmid/internal/db"
)

// Cols are the columns, over users u, that a user's claims come from; the
// statements that answer a refresh and UserInfo read them beside the
// token, so each needs one round trip.
const Cols = `u.username, u.name, u.avatar_url, u.avatars_enabled, u.email, u.preferred_locale, u.last_login_provider, u.is_super_admin,
	EXISTS (SELECT 1 FROM platform_accounts pa WHERE pa.user_id = u.id AND pa.email_verified AND LOWER(pa.email) = LOWER(u.email)),
	u.updated_at`

// Row holds Cols of one user.
type Row struct {
	username, name               string
	avatar, email, locale, prov  sql.NullString
	avatarsOn, superAdmin, verif bool
	updatedAt                    int64
}

// Dest returns the scan destinations of Cols, in order.
func (c *Row) Dest() []any {
	return []any{&c.username, &c.name, &c.avatar, &c.avatarsOn, &c.email, &c.locale, &c.prov, &c.superAdmin, &c.verif, &c.updatedAt}
}

// FillUser reads the user's claim columns through q and fills out from
// them as Fill does, live (spec 1, ID token and UserInfo claims). A user
// who is gone is sql.ErrNoRows; the database's errors come as they are.
func FillUser(ctx context.Context, q db.Querier, userID string, scopes []string, userInfo bool, out *Set) error {
	var row Row
	if err := q.QueryRowContext(ctx, `SELECT `+Cols+` FROM users u WHERE u.id = $1`, userID).Scan(row.Dest()...); err != nil {
		return err
	}
	return Fill(ctx, q, userID, &row, scopes, userInfo, out)
}

// Fill sets in out the claims of userID that scopes release, from its
// claim columns, reading roles and permissions through q when those scopes
// ask for them. userInfo adds the fields only UserInfo carries (provider,
// preferred_locale, is_super_admin, role_ids). It returns the database's
// errors as they come.
func Fill(ctx context.Context, q db.Querier, userID string, row *Row, scopes []string, userInfo bool, out *Set) error {
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
		rows, err := q.QueryContext(ctx, `SELECT r.id, r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id WHERE ur.user_id = $1 ORDER BY r.name, r.id`, userID)
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
		perms, err := authn.UserPermissions(ctx, q, userID)
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

// Member returns the claims cr asks for in one answer: its userinfo member
// for UserInfo, its id_token member for the ID token; nil when cr is.
func (cr *Request) Member(userInfo bool) map[string]*Spec {
	switch {
	case cr == nil:
		return nil
	case userInfo:
		return cr.UserInfo
	}
	return cr.IDToken
}

// Filter clears from s the claims of one answer (UserInfo when userInfo is
// set, else the ID token) that neither the granted scopes release there
// nor asked, the claims parameter's member, names; sub always stays. Fill
// has read them for the scopes the claims parameter added (Core §5.5).
func (s *Set) Filter(scopes []string, asked map[string]*Spec, userInfo bool) {
	for c := range s {
		k := claimNames[c]
		byScope := slices.Contains(scopes, scopeOf(k)) && (userInfo || !slices.Contains(userInfoOnly, k))
		_, requested := asked[k]
		if claim(c) != claimSub && !byScope && !requested {
			s[c] = claimValue{}
		}
	}
}
