package auth

import (
	"context"

	"hmid/internal/db"
)

// PasskeyProvider is the session provider of a passwordless sign-in with
// a passkey (the sessions list names it so).
const PasskeyProvider = "passkey"

// LoginVerified creates the session of a login whose factors were verified
// by the caller: a passwordless sign-in with a passkey (provider
// PasskeyProvider), or a first step with provider (the password or an
// upstream provider, kept in the pages' server-side state) whose second
// factor was a passkey. amr is what the session's ID tokens will say (RFC
// 8176); mfa marks that two factors were verified. The account is checked
// again as in LoginWithCode: a deleted user, a banned one or a disabled
// platform is refused.
func (s *Service) LoginVerified(ctx context.Context, userID, provider string, amr []string, m Meta) (Result, error) {
	a, err := s.verifiedAccount(ctx, userID, provider)
	if err != nil {
		return Result{}, err
	}
	if err := s.refuseBanned(ctx, a.userID); err != nil {
		return Result{}, err
	}
	return s.openSession(ctx, Result{User: summary(a)}, a, amr, m)
}

// verifiedAccount is the login view of userID for LoginVerified.
func (s *Service) verifiedAccount(ctx context.Context, userID, provider string) (account, error) {
	switch provider {
	case PasskeyProvider:
		var a account
		err := s.DB.QueryRowContext(ctx, `SELECT username, email, deleted_at IS NOT NULL FROM users WHERE id = $1`, userID).
			Scan(&a.username, &a.email, &a.deleted)
		if err != nil || a.deleted {
			return account{}, errBadCredentials
		}
		a.userID, a.provider = userID, PasskeyProvider
		return a, nil
	case Platform:
		return s.platformAccount(ctx, userID)
	}
	var enabled bool
	if err := s.DB.QueryRowContext(ctx, `SELECT enabled FROM platforms WHERE slug = $1`, provider).Scan(&enabled); err != nil {
		return account{}, db.NotFoundOr(err, "platform")
	}
	if !enabled {
		return account{}, errBadCredentials
	}
	return userAccount(ctx, s.DB, userID, provider)
}
