package oauth

import (
	"context"
	"database/sql"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/db"
)

// ConsentInfo is one client a user has consented to (spec 1, consent record).
type ConsentInfo struct {
	ClientID     string    `json:"client_id"`
	ClientName   string    `json:"client_name"`
	LogoURL      *string   `json:"logo_url"`
	Scopes       []string  `json:"scopes"`
	IsFirstParty bool      `json:"is_first_party"`
	GrantedAt    time.Time `json:"granted_at"`
}

// TokenInfo is one active token of a user (spec 1, token record).
type TokenInfo struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"` // access or refresh
	ClientID   string    `json:"client_id"`
	ClientName string    `json:"client_name"`
	Scopes     []string  `json:"scopes"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

func auditEvent(userID, typ string, c Client, desc string, meta map[string]any) audit.Event {
	return audit.Event{UserID: userID, EventType: typ, ResourceType: "oauth_client", ResourceID: c.ID, Description: desc, Metadata: meta}
}

// ListUserConsents returns the clients the user has consented to, newest first.
func (s *Service) ListUserConsents(ctx context.Context, userID string) ([]ConsentInfo, error) {
	return db.All(ctx, s.DB, scanConsentInfo, `SELECT c.id, c.name, c.logo_url, k.scopes, c.is_first_party, k.updated_at
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

// ListUserTokens returns the user's access and refresh tokens that are
// neither expired nor revoked, newest first.
func (s *Service) ListUserTokens(ctx context.Context, userID string) ([]TokenInfo, error) {
	return db.All(ctx, s.DB, scanTokenInfo, `SELECT t.id, t.kind, c.id, c.name, t.scopes, t.created_at, t.expires_at
		FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id
		WHERE t.user_id = $1 AND t.revoked_at IS NULL AND t.expires_at > $2 ORDER BY t.created_at DESC, t.id`, userID, db.TS(s.Clock.Now()))
}

func scanTokenInfo(row db.Scanner) (TokenInfo, error) {
	var ti TokenInfo
	var scopes db.Strings
	var c, e int64
	if err := row.Scan(&ti.ID, &ti.Kind, &ti.ClientID, &ti.ClientName, &scopes, &c, &e); err != nil {
		return ti, err
	}
	ti.Scopes, ti.CreatedAt, ti.ExpiresAt = scopes, db.FromTS(c), db.FromTS(e)
	return ti, nil
}

// RevokeConsent deletes the user's consent to a client and revokes every
// token the client holds for the user (spec 1, states: consent deleted).
// It is audited as consent_revoked; without a consent it is NotFound.
func (s *Service) RevokeConsent(ctx context.Context, userID, clientID string, m Meta) error {
	if _, err := uuid.Parse(clientID); err != nil {
		return apperr.NotFoundf("no consent for that client")
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM oauth_consents WHERE user_id = $1 AND client_id = $2`, userID, clientID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.NotFoundf("no consent for that client")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE user_id = $2 AND client_id = $3 AND revoked_at IS NULL`,
			db.TS(s.Clock.Now()), userID, clientID); err != nil {
			return err
		}
		c, err := s.loadClient(ctx, tx, clientID)
		if err != nil {
			return err
		}
		_, err = s.Audit.Record(ctx, tx, m.event(auditEvent(userID, audit.ConsentRevoked, c, "consent to "+c.Name+" revoked",
			map[string]any{"client_name": c.Name})))
		return err
	})
}

// RevokeToken revokes one of the user's tokens by id, with the token issued
// alongside it; a refresh token takes its whole authorization with it. A
// token of another user is NotFound.
func (s *Service) RevokeToken(ctx context.Context, userID, tokenID string) error {
	if _, err := uuid.Parse(tokenID); err != nil {
		return apperr.NotFoundf("token not found")
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		var kind, family, pair string
		err := tx.QueryRowContext(ctx, `SELECT kind, family_id, pair_id FROM oauth_tokens WHERE id = $1 AND user_id = $2`, tokenID, userID).Scan(&kind, &family, &pair)
		if err == sql.ErrNoRows {
			return apperr.NotFoundf("token not found")
		}
		if err != nil {
			return err
		}
		now := db.TS(s.Clock.Now())
		if kind == "refresh" {
			_, err = tx.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL`, now, family)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE pair_id = $2 AND revoked_at IS NULL`, now, pair)
		}
		return err
	})
}

// RevokeUserTokens revokes every OAuth token of a user, with their open
// authorization codes and pending authorizations (bans, account deletion).
func (s *Service) RevokeUserTokens(ctx context.Context, userID string) error {
	return s.DB.Tx(ctx, func(tx *db.Tx) error { return s.RevokeUserTokensTx(ctx, tx, userID) })
}

// RevokeUserTokensTx is RevokeUserTokens inside the caller's transaction q.
func (s *Service) RevokeUserTokensTx(ctx context.Context, q db.Querier, userID string) error {
	return EndUserTokens(ctx, q, userID, s.Clock.Now())
}

// EndUserTokens revokes, inside the caller's transaction q, every OAuth
// token of a user, offline ones included, with their open authorization
// codes and pending authorizations. It is what a password change or reset,
// a second-factor reset, a ban and a deletion do beside ending sessions
// (docs/decisions.md "Session end and tokens"): the credential the tokens
// were granted on is no longer trusted, so no grant made with it is either.
// Tokens ending with a single session are the migration 0860 trigger's.
func EndUserTokens(ctx context.Context, q db.Querier, userID string, at time.Time) error {
	now := db.TS(at)
	if _, err := q.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL`, now, userID); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `UPDATE oauth_codes SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`, now, userID); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `UPDATE oauth_pending_authorizations SET decided_at = $1 WHERE user_id = $2 AND decided_at IS NULL`, now, userID); err != nil {
		return err
	}
	// A device authorization approved but not yet redeemed is a grant made
	// with the same credential (RFC 8628): its device gets access_denied.
	_, err := q.ExecContext(ctx, `UPDATE oauth_device_authorizations SET status = 'denied' WHERE user_id = $1 AND status = 'approved'`, userID)
	return err
}
