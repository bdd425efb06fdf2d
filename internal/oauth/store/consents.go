package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"hmid/internal/db"
)

// PendingAuthorization is an authorization request waiting for the user's
// consent (spec 1, pending authorization): what its code will bind once
// approved.
type PendingAuthorization struct {
	ID          string
	UserID      string
	ClientID    string
	RedirectURI string
	Scopes      []string
	State       string
	Nonce       string
	Challenge   string
	AuthTime    time.Time
	Created     time.Time
	Expires     time.Time
	Context     string // the authentication context, as JSON
	SessionID   string // the browser session asking, "" for none
}

// CreatePending stores a pending authorization.
func (s *Store) CreatePending(ctx context.Context, p PendingAuthorization) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO oauth_pending_authorizations (id, user_id, client_id, redirect_uri, scopes, state, nonce, code_challenge, auth_time, created_at, expires_at, auth_context, session_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		p.ID, p.UserID, p.ClientID, p.RedirectURI, db.JSON(p.Scopes), p.State, p.Nonce, p.Challenge, db.TS(p.AuthTime), db.TS(p.Created), db.TS(p.Expires), p.Context, nullStr(p.SessionID))
	return err
}

// PendingView is a pending authorization as the consent page shows it.
type PendingView struct {
	ID, ClientID, ClientName, LogoURL string
	Scopes                            []string
	Expires                           time.Time
	Context                           string // the authentication context, as JSON
}

// Pending returns the pending authorization id of userID, undecided and
// unexpired at now; ErrNotFound otherwise.
func (s *Store) Pending(ctx context.Context, id, userID string, now time.Time) (PendingView, error) {
	var p PendingView
	var scopes db.Strings
	var logo sql.NullString
	var expires int64
	err := s.db.QueryRowContext(ctx, `SELECT p.id, p.client_id, c.name, c.logo_url, p.scopes, p.expires_at, p.auth_context
		FROM oauth_pending_authorizations p JOIN oauth_clients c ON c.id = p.client_id
		WHERE p.id = $1 AND p.user_id = $2 AND p.decided_at IS NULL AND p.expires_at > $3`, id, userID, db.TS(now)).
		Scan(&p.ID, &p.ClientID, &p.ClientName, &logo, &scopes, &expires, &p.Context)
	p.LogoURL, p.Scopes, p.Expires = logo.String, scopes, db.FromTS(expires)
	return p, err
}

// DecidePending marks the pending authorization id of userID decided, in
// tx, once: of racing decisions exactly one gets it. It returns what the
// authorization binds; one decided, expired or of another user is
// ErrNotFound.
func (s *Store) DecidePending(ctx context.Context, tx db.Querier, id, userID string, now time.Time) (PendingAuthorization, error) {
	p := PendingAuthorization{ID: id, UserID: userID}
	res, err := tx.ExecContext(ctx, `UPDATE oauth_pending_authorizations SET decided_at = $1
			WHERE id = $2 AND user_id = $3 AND decided_at IS NULL AND expires_at > $1`, db.TS(now), id, userID)
	if err != nil {
		return p, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return p, ErrNotFound
	}
	var scopes db.Strings
	var authTime int64
	var sessionID sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT client_id, redirect_uri, scopes, state, nonce, code_challenge, auth_time, auth_context, session_id
			FROM oauth_pending_authorizations WHERE id = $1`, id).
		Scan(&p.ClientID, &p.RedirectURI, &scopes, &p.State, &p.Nonce, &p.Challenge, &authTime, &p.Context, &sessionID)
	p.Scopes, p.AuthTime, p.SessionID = scopes, db.FromTS(authTime), sessionID.String
	return p, err
}

// ConsentInfo is one client a user has consented to (spec 1, consent record).
type ConsentInfo struct {
	ClientID     string    `json:"client_id"`
	ClientName   string    `json:"client_name"`
	LogoURL      *string   `json:"logo_url"`
	Scopes       []string  `json:"scopes"`
	IsFirstParty bool      `json:"is_first_party"`
	GrantedAt    time.Time `json:"granted_at"`
}

// UserConsents returns the clients the user has consented to, newest first.
func (s *Store) UserConsents(ctx context.Context, userID string) ([]ConsentInfo, error) {
	return db.All(ctx, s.db, scanConsentInfo, `SELECT c.id, c.name, c.logo_url, k.scopes, c.is_first_party, k.updated_at
		FROM oauth_consents k JOIN oauth_clients c ON c.id = k.client_id WHERE k.user_id = $1 ORDER BY k.updated_at DESC, c.id`, userID)
}

func scanConsentInfo(row db.Scanner) (ConsentInfo, error) {
	var ci ConsentInfo
	var scopes db.Strings
	var logo sql.NullString
	var at int64
	if err := row.Scan(&ci.ClientID, &ci.ClientName, &logo, &scopes, &ci.IsFirstParty, &at); err != nil {
		return ci, err
	}
	ci.LogoURL, ci.Scopes, ci.GrantedAt = db.StringPtr(logo), scopes, db.FromTS(at)
	return ci, nil
}

// ConsentScopes returns, through q, the scopes the user has consented to
// for the client; without a consent it is ErrNotFound.
func (s *Store) ConsentScopes(ctx context.Context, q db.Querier, userID, clientID string) ([]string, error) {
	var granted db.Strings
	err := q.QueryRowContext(ctx, `SELECT scopes FROM oauth_consents WHERE user_id = $1 AND client_id = $2`, userID, clientID).Scan(&granted)
	return granted, err
}

// SaveConsent adds scopes to the user's consent for the client, in tx,
// creating it when there is none: a consent only grows (spec 1, consent
// record), until RevokeConsent deletes it.
func (s *Store) SaveConsent(ctx context.Context, tx db.Querier, userID, clientID string, scopes []string, now time.Time) error {
	prev, err := s.ConsentScopes(ctx, tx, userID, clientID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	all := slices.Clone(prev)
	for _, sc := range scopes {
		if !slices.Contains(all, sc) {
			all = append(all, sc)
		}
	}
	slices.Sort(all)
	_, err = tx.ExecContext(ctx, `INSERT INTO oauth_consents (user_id, client_id, scopes, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (user_id, client_id) DO UPDATE SET scopes = excluded.scopes, updated_at = excluded.updated_at`,
		userID, clientID, db.JSON(all), db.TS(now))
	return err
}

// RevokeConsent deletes the user's consent to the client and revokes every
// token the client holds for the user, in tx (spec 1, states: consent
// deleted). Without a consent it is ErrNotFound and revokes nothing.
func (s *Store) RevokeConsent(ctx context.Context, tx db.Querier, userID, clientID string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM oauth_consents WHERE user_id = $1 AND client_id = $2`, userID, clientID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	_, err = tx.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE user_id = $2 AND client_id = $3 AND revoked_at IS NULL`,
		db.TS(now), userID, clientID)
	return err
}
