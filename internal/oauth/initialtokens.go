package oauth

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/token"
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

// InitialTokenInput is the body of an initial access token's creation.
type InitialTokenInput struct {
	Name          string   `json:"name"`
	MaxClients    int      `json:"max_clients"`
	AllowedScopes []string `json:"allowed_scopes"`
	// ExpiresInHours bounds its life (0: it does not expire).
	ExpiresInHours int `json:"expires_in_hours"`
}

// Bounds of an initial access token.
const (
	maxInitialTokenClients = 10000
	maxInitialTokenHours   = 24 * 366
)

// CreateInitialToken makes an initial access token (the route admits super
// admins and system keys only). It may register up to MaxClients clients
// (default 1) with scopes within AllowedScopes (empty: any of the catalogue).
func (s *Service) CreateInitialToken(ctx context.Context, p *authn.Principal, in InitialTokenInput) (InitialAccessToken, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 100 {
		return InitialAccessToken{}, apperr.OnField("name", apperr.Invalid("name is required and at most 100 characters"))
	}
	if in.MaxClients == 0 {
		in.MaxClients = 1
	}
	if in.MaxClients < 1 || in.MaxClients > maxInitialTokenClients {
		return InitialAccessToken{}, apperr.OnField("max_clients", apperr.Invalid("max_clients must be 1 to %d", maxInitialTokenClients))
	}
	if in.ExpiresInHours < 0 || in.ExpiresInHours > maxInitialTokenHours {
		return InitialAccessToken{}, apperr.OnField("expires_in_hours", apperr.Invalid("expires_in_hours must be 0 (no expiry) to %d", maxInitialTokenHours))
	}
	scopes := []string{}
	for _, sc := range in.AllowedScopes {
		if _, ok := knownScope(sc); !ok {
			return InitialAccessToken{}, apperr.OnField("allowed_scopes", apperr.Invalid("scope %q is not known; known scopes are %s", sc, strings.Join(ScopeNames(), ", ")))
		}
		scopes = union(scopes, []string{sc})
	}
	now := s.Clock.Now()
	t := InitialAccessToken{ID: uuid.NewString(), Name: name, Token: token.New(PrefixInitialAccessToken), MaxClients: in.MaxClients,
		AllowedScopes: scopes, CreatedAt: now}
	var expires any
	if in.ExpiresInHours > 0 {
		e := now.Add(time.Duration(in.ExpiresInHours) * time.Hour)
		t.ExpiresAt, expires = &e, db.TS(e)
	}
	if by := cmpOr(p.UserID, p.APIKeyID); by != "" {
		t.CreatedBy = &by
	}
	_, err := s.DB.ExecContext(ctx, `INSERT INTO oauth_initial_access_tokens (id, token_hash, name, max_clients, allowed_scopes, created_by, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, t.ID, token.Hash(t.Token), t.Name, t.MaxClients, db.JSON(t.AllowedScopes), nullStr(t.CreatedBy), db.TS(now), expires)
	t.CreatedAt = db.FromTS(db.TS(now))
	return t, err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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
	if expires.Valid {
		t.ExpiresAt = &expires.Time
	}
	if revoked.Valid {
		t.RevokedAt = &revoked.Time
	}
	return t, err
}

// ListInitialTokens returns a page of the initial access tokens, newest first.
func (s *Service) ListInitialTokens(ctx context.Context, pg httpx.Page) ([]InitialAccessToken, int, error) {
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_initial_access_tokens`).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := db.All(ctx, s.DB, scanInitialToken, `SELECT `+initialTokenCols+` FROM oauth_initial_access_tokens
		ORDER BY created_at DESC, id LIMIT $1 OFFSET $2`, pg.Limit, pg.Offset())
	if out == nil {
		out = []InitialAccessToken{}
	}
	return out, total, err
}

// RevokeInitialToken stops an initial access token from registering more
// clients; those it registered stay.
func (s *Service) RevokeInitialToken(ctx context.Context, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return apperr.NotFoundf("initial access token not found")
	}
	res, err := s.DB.ExecContext(ctx, `UPDATE oauth_initial_access_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, db.TS(s.Clock.Now()), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var one int
		if err := s.DB.QueryRowContext(ctx, `SELECT 1 FROM oauth_initial_access_tokens WHERE id = $1`, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return apperr.NotFoundf("initial access token not found")
		}
	}
	return nil
}

// spendInitialToken counts a registration against the initial access token
// iat, in tx, with one conditional UPDATE (so of racing registrations no
// more than max_clients succeed, on any instance), and checks c's scopes
// against it. A missing, unknown, revoked, expired or used-up token is
// invalid_token (RFC 6750 §3.1, 401).
func (s *Service) spendInitialToken(ctx context.Context, tx *db.Tx, iat string, c *Client, now time.Time) *Error {
	bad := &Error{Code: ErrInvalidToken, Description: "an initial access token with room for another client is required (Authorization: Bearer)", Status: 401}
	if !token.HasShape(iat, PrefixInitialAccessToken) {
		return bad
	}
	var id string
	var allowed db.Strings
	err := tx.QueryRowContext(ctx, `UPDATE oauth_initial_access_tokens SET clients_registered = clients_registered + 1
		WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2) AND clients_registered < max_clients
		RETURNING id, allowed_scopes`, token.Hash(iat), db.TS(now)).Scan(&id, &allowed)
	if errors.Is(err, sql.ErrNoRows) {
		return bad
	}
	if err != nil {
		return asOAuthErr(err)
	}
	if oe := scopesWithin(c.AllowedScopes, allowed); oe != nil {
		return oe
	}
	c.initialTokenID = id
	return nil
}
