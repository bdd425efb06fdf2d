package store

import (
	"context"
	"slices"
	"time"

	"hmid/internal/db"
)

// ClientToken is an access token of the client credentials grant (RFC 6749
// §4.4), which acts for no user: its client and the permission scopes it
// holds.
type ClientToken struct {
	ID       string
	Hash     string
	ClientID string
	Scopes   []string
	// Audience are the resources (RFC 8707) the token was issued for; nil:
	// none named, the client is the audience.
	Audience []string
	Created  time.Time
	Expires  time.Time
}

// StoreClientToken stores t, hashed.
func (s *Store) StoreClientToken(ctx context.Context, t ClientToken) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO oauth_client_tokens (id, token_hash, client_id, scopes, audience, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, t.ID, t.Hash, t.ClientID, db.JSON(t.Scopes), resourcesColumn(t.Audience), db.TS(t.Created), db.TS(t.Expires))
	return err
}

// ClientTokenState is a stored client credentials token with its client's
// state: whether it is active and registered for the grant now, which the
// token follows at once (a grant or a permission scope taken from the
// client ends with it, not an hour later).
type ClientTokenState struct {
	ClientToken
	Revoked     db.NullTime
	Active      bool // the client is active
	GrantTypes  []string
	ClientScope []string // the client's allowed_scopes now
}

// Live reports whether the token may be used at now: neither revoked nor
// expired, its client active and still registered for grant.
func (t ClientTokenState) Live(grant string, now time.Time) bool {
	return !t.Revoked.Valid && t.Active && slices.Contains(t.GrantTypes, grant) && now.Before(t.Expires)
}

// ClientToken reads the client credentials token whose hash is hash, its
// scopes cut to those its client still may hold; ErrNotFound when there is
// none.
func (s *Store) ClientToken(ctx context.Context, hash string) (ClientTokenState, error) {
	var t ClientTokenState
	var scopes, grants, allowed db.Strings
	var created, expires int64
	var audience *string
	err := s.db.QueryRowContext(ctx, `SELECT t.id, t.client_id, t.scopes, t.audience, t.created_at, t.expires_at, t.revoked_at, c.is_active, c.grant_types, c.allowed_scopes
		FROM oauth_client_tokens t JOIN oauth_clients c ON c.id = t.client_id WHERE t.token_hash = $1`, hash).
		Scan(&t.ID, &t.ClientID, &scopes, &audience, &created, &expires, &t.Revoked, &t.Active, &grants, &allowed)
	if err != nil {
		return t, err
	}
	t.Audience = DecodeResources(audience)
	t.Hash, t.Created, t.Expires, t.GrantTypes, t.ClientScope = hash, db.FromTS(created), db.FromTS(expires), grants, allowed
	t.Scopes = slices.DeleteFunc(scopes, func(sc string) bool { return !slices.Contains(allowed, sc) })
	return t, nil
}

// RevokeClientToken revokes the client credentials token whose hash is
// hash when it is clientID's (RFC 7009 §2.1: a token of another client is
// left alone, silently).
func (s *Store) RevokeClientToken(ctx context.Context, hash, clientID string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE oauth_client_tokens SET revoked_at = $1 WHERE token_hash = $2 AND client_id = $3 AND revoked_at IS NULL`,
		db.TS(now), hash, clientID)
	return err
}
