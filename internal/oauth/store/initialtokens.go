package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"hmid/internal/db"
)

// InitialAccessToken is an initial access token (RFC 7591 §3) as listed:
// Token is set only in the answer of its creation.
type InitialAccessToken struct {
	ID                string     `json:"id"`
	Name              string     `json:"name"`
	Token             string     `json:"token,omitempty"`
	MaxClients        int        `json:"max_clients"`
	ClientsRegistered int        `json:"clients_registered"`
	AllowedScopes     []string   `json:"allowed_scopes"`
	CreatedBy         *string    `json:"created_by"`
	CreatedAt         time.Time  `json:"created_at"`
	ExpiresAt         *time.Time `json:"expires_at"`
	RevokedAt         *time.Time `json:"revoked_at"`
}

// CreateInitialToken stores t with the hash of its token.
func (s *Store) CreateInitialToken(ctx context.Context, t InitialAccessToken, hash string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO oauth_initial_access_tokens (id, token_hash, name, max_clients, allowed_scopes, created_by, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, t.ID, hash, t.Name, t.MaxClients, db.JSON(t.AllowedScopes), nullPtr(t.CreatedBy), db.TS(t.CreatedAt), db.NullTS(t.ExpiresAt))
	return err
}

const initialTokenCols = `id, name, max_clients, clients_registered, allowed_scopes, created_by, created_at, expires_at, revoked_at`

func scanInitialToken(row db.Scanner) (InitialAccessToken, error) {
	var t InitialAccessToken
	var scopes db.Strings
	var by sql.NullString
	var created int64
	var expires, revoked db.NullTime
	err := row.Scan(&t.ID, &t.Name, &t.MaxClients, &t.ClientsRegistered, &scopes, &by, &created, &expires, &revoked)
	t.AllowedScopes, t.CreatedBy, t.CreatedAt = scopes, db.StringPtr(by), db.FromTS(created)
	if t.AllowedScopes == nil {
		t.AllowedScopes = []string{}
	}
	t.ExpiresAt, t.RevokedAt = expires.Ptr(), revoked.Ptr()
	return t, err
}

// InitialTokens returns a page of the initial access tokens, newest first,
// and how many there are in all.
func (s *Store) InitialTokens(ctx context.Context, limit, offset int) ([]InitialAccessToken, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_initial_access_tokens`).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := db.All(ctx, s.db, scanInitialToken, `SELECT `+initialTokenCols+` FROM oauth_initial_access_tokens
		ORDER BY created_at DESC, id LIMIT $1 OFFSET $2`, limit, offset)
	return out, total, err
}

// RevokeInitialToken stops the initial access token id from registering
// more clients; those it registered stay. Revoking it again changes
// nothing; one that does not exist is ErrNotFound.
func (s *Store) RevokeInitialToken(ctx context.Context, id string, now time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE oauth_initial_access_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, db.TS(now), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var one int
		if err := s.db.QueryRowContext(ctx, `SELECT 1 FROM oauth_initial_access_tokens WHERE id = $1`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
	}
	return nil
}

// SpendInitialToken counts a registration against the initial access token
// whose hash is hash, in tx, with one conditional UPDATE: of racing
// registrations no more than max_clients succeed, on any instance. It
// returns the token's id and the scopes it allows (empty: any); a token
// unknown, revoked, expired at now or used up is ErrNotFound.
func (s *Store) SpendInitialToken(ctx context.Context, tx db.Querier, hash string, now time.Time) (id string, allowed []string, err error) {
	var scopes db.Strings
	err = tx.QueryRowContext(ctx, `UPDATE oauth_initial_access_tokens SET clients_registered = clients_registered + 1
		WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2) AND clients_registered < max_clients
		RETURNING id, allowed_scopes`, hash, db.TS(now)).Scan(&id, &scopes)
	return id, scopes, err
}

// InitialTokenScopes returns the scopes the initial access token id allows
// (empty: any); ErrNotFound when it is gone.
func (s *Store) InitialTokenScopes(ctx context.Context, id string) ([]string, error) {
	var allowed db.Strings
	err := s.db.QueryRowContext(ctx, `SELECT allowed_scopes FROM oauth_initial_access_tokens WHERE id = $1`, id).Scan(&allowed)
	return allowed, err
}
