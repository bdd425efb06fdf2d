package store

import (
	"context"
	"database/sql"
	"time"

	"hmid/internal/db"
	"hmid/internal/oauth/claims"
)

// resolveSQL reads a usable access token: not revoked, of an active
// client, of a user neither deleted nor banned. Those conditions sit in the
// WHERE clause, so an unusable token reads as no row (the answer is the same
// invalid_token either way) and the row carries six columns, not ten: every
// column is work for the driver on each request. Expiry is checked by the
// caller, against the same clock, since the principal needs the time anyway.
// The audience, NULL for most tokens, lets hmid's own API refuse a token
// issued for another resource (RFC 8707). resolveClaimsSQL adds the token's authentication context and the user's
// claim columns, so UserInfo needs one query.
const (
	resolveCols = `t.id, t.user_id, t.client_id, t.scopes, t.expires_at, t.auth_time, t.audience`
	resolveFrom = ` FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND t.kind = 'access' AND t.revoked_at IS NULL AND c.is_active
		AND u.deleted_at IS NULL AND NOT ` + db.UserBannedSQL
	resolveSQL       = `SELECT ` + resolveCols + resolveFrom
	resolveClaimsSQL = `SELECT ` + resolveCols + `, t.auth_context, ` + claims.Cols + resolveFrom
)

// AccessToken is a usable access token as ResolveAccess reads it. Its
// fields are scanned in place, so one allocation holds them all (separate
// locals would each escape to the heap through Scan's arguments).
type AccessToken struct {
	ID, UserID, ClientID string
	Scopes               db.Strings
	Expires, AuthTime    int64   // as stored (db.FromTS)
	Audience             *string // the resources it was issued for, as JSON (DecodeResources); nil: none
	Context              string  // the authentication context, as JSON; read only with claims
	dest                 [7]any
}

// ResolveAccess reads the usable access token whose hash is hash (see
// resolveSQL; now decides bans), and with cr set the user's claim columns
// into it and the token's authentication context, in the same statement.
// A token that is unknown, revoked, of an inactive client or of a user who
// may no longer authorize is ErrNotFound; its expiry is the caller's to
// check.
func (s *Store) ResolveAccess(ctx context.Context, hash string, now time.Time, cr *claims.Row) (*AccessToken, error) {
	row := &AccessToken{}
	row.dest = [7]any{&row.ID, &row.UserID, &row.ClientID, &row.Scopes, &row.Expires, &row.AuthTime, &row.Audience}
	query, dest := resolveSQL, row.dest[:]
	if cr != nil {
		cd := cr.Dest()
		dest = append(append(append(make([]any, 0, len(row.dest)+1+len(cd)), dest...), &row.Context), cd...)
		query = resolveClaimsSQL
	}
	return row, s.db.QueryRowContext(ctx, query, hash, db.TS(now)).Scan(dest...)
}

// introspectSQL reads a token with what decides whether it is active: its
// own state, its client's, and its user's (the same rules as resolveSQL).
const introspectSQL = `SELECT t.id, t.kind, t.client_id, t.user_id, t.scopes, t.created_at, t.expires_at, t.revoked_at, t.rotated_at,
	c.is_active, u.username, u.deleted_at IS NOT NULL, ` + db.UserBannedSQL + `, t.audience
	FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id
	WHERE t.token_hash = $1`

// IntrospectedToken is a token with the state of its client and user, as
// introspection (RFC 7662) judges it.
type IntrospectedToken struct {
	ID, Kind, ClientID, UserID, Username string
	Scopes                               []string
	Created, Expires                     time.Time
	Revoked, Rotated                     db.NullTime
	ClientActive, UserDeleted, Banned    bool // banned at the time introspection asks about
	Audience                             *string
}

// Introspect reads the token whose hash is hash, whatever its state, with
// its client's and user's; ErrNotFound when there is none.
func (s *Store) Introspect(ctx context.Context, hash string, now time.Time) (IntrospectedToken, error) {
	var (
		t                IntrospectedToken
		scopes           db.Strings
		created, expires int64
		audience         sql.NullString
	)
	err := s.db.QueryRowContext(ctx, introspectSQL, hash, db.TS(now)).
		Scan(&t.ID, &t.Kind, &t.ClientID, &t.UserID, &scopes, &created, &expires, &t.Revoked, &t.Rotated, &t.ClientActive, &t.Username, &t.UserDeleted, &t.Banned, &audience)
	t.Scopes, t.Created, t.Expires, t.Audience = scopes, db.FromTS(created), db.FromTS(expires), db.StringPtr(audience)
	return t, err
}
