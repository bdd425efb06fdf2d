package oauth

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/oauth/store"
)

// ConsentInfo is one client a user has consented to (spec 1, consent record).
type ConsentInfo = store.ConsentInfo

// TokenInfo is one active token of a user (spec 1, token record).
type TokenInfo = store.TokenInfo

func auditEvent(userID, typ string, c Client, desc string, meta map[string]any) audit.Event {
	return audit.Event{UserID: userID, EventType: typ, ResourceType: "oauth_client", ResourceID: c.ID, Description: desc, Metadata: meta}
}

// ListUserConsents returns the clients the user has consented to, newest first.
func (s *Service) ListUserConsents(ctx context.Context, userID string) ([]ConsentInfo, error) {
	return s.Store.UserConsents(ctx, userID)
}

// ListUserTokens returns the user's access and refresh tokens that are
// neither expired nor revoked, newest first.
func (s *Service) ListUserTokens(ctx context.Context, userID string) ([]TokenInfo, error) {
	return s.Store.UserTokens(ctx, userID, s.Clock.Now())
}

// RevokeConsent deletes the user's consent to a client and revokes every
// token the client holds for the user (spec 1, states: consent deleted).
// It is audited as consent_revoked; without a consent it is NotFound.
func (s *Service) RevokeConsent(ctx context.Context, userID, clientID string, m Meta) error {
	if _, err := uuid.Parse(clientID); err != nil {
		return apperr.NotFoundf("no consent for that client")
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		err := s.Store.RevokeConsent(ctx, tx, userID, clientID, s.Clock.Now())
		if errors.Is(err, store.ErrNotFound) {
			return apperr.NotFoundf("no consent for that client")
		}
		if err != nil {
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
		t, err := s.Store.UserToken(ctx, tx, tokenID, userID)
		if errors.Is(err, store.ErrNotFound) {
			return apperr.NotFoundf("token not found")
		}
		if err != nil {
			return err
		}
		return s.Store.RevokeWithKin(ctx, tx, t, s.Clock.Now())
	})
}

// RevokeUserTokens revokes every OAuth token of a user, with their open
// authorization codes and pending authorizations (bans, account deletion).
func (s *Service) RevokeUserTokens(ctx context.Context, userID string) error {
	return s.DB.Tx(ctx, func(tx *db.Tx) error { return EndUserTokens(ctx, tx, userID, s.Clock.Now()) })
}

// EndUserTokens revokes, inside the caller's transaction q, every OAuth
// token of a user, offline ones included, with their open authorization
// codes and pending authorizations, and denies the device authorizations
// they approved. It is what a password change or reset, a second-factor
// reset, a ban and a deletion do beside ending sessions (docs/decisions.md
// "Session end and tokens"): the credential the tokens were granted on is
// no longer trusted, so no grant made with it is either. Tokens ending with
// a single session are the migration 0860 trigger's. It returns the
// database's errors.
func EndUserTokens(ctx context.Context, q db.Querier, userID string, at time.Time) error {
	return store.EndUserTokens(ctx, q, userID, at)
}
