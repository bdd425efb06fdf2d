package auth

import (
	"context"
	"database/sql"
	"errors"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/users"
)

// errBanned carries a ban found inside the sign-in transaction out of it, so
// the transaction rolls back and login_failed is recorded after it.
type errBanned struct{ answer error }

func (e errBanned) Error() string { return e.answer.Error() }

// ProviderLogin signs in with an identity a provider vouched for (the pages'
// GET /login/{slug}/callback). The linking rule (users.SignIn) finds, links
// or creates the user; then bans and two-factor authentication apply exactly
// as for a password login: a banned user gets 403 and nothing the sign-in
// would have changed is kept, a user with two-factor authentication gets
// TwoFactorRequired (finish with LoginWithCode), and a role's or the
// platform's two_factor_required shows as SetupRequired.
//
// Refusals of the platform (disabled, registration closed) and bans are
// audited as login_failed with the provider.
func (s *Service) ProviderLogin(ctx context.Context, c users.Claim, m Meta) (Result, error) {
	var (
		a   account
		out users.Outcome
	)
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.Users.SignIn(ctx, tx, c, audit.Event{IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source})
		if err != nil {
			return err
		}
		a, err = userAccount(ctx, tx, out.UserID, c.Platform)
		if err != nil {
			return err
		}
		banned, reason, until, err := s.activeBan(ctx, tx, a.userID)
		if err != nil {
			return err
		}
		if banned {
			return errBanned{banError(reason, until)}
		}
		return nil
	})
	var ban errBanned
	switch {
	case errors.As(err, &ban):
		return Result{}, s.failedWith(ctx, a.userID, c.Platform, m, "account banned", ban.answer)
	case apperr.KindOf(err) == apperr.Forbidden:
		return Result{}, s.failedWith(ctx, a.userID, c.Platform, m, err.Error(), err)
	case err != nil:
		return Result{}, err
	}
	s.Users.NotifyReleased(ctx, out)
	return s.secondStep(ctx, a, "", m)
}

// providerCode is LoginWithCode after a provider sign-in: the platform must
// still be enabled and the user still have an account on it.
func (s *Service) providerCode(ctx context.Context, userID, provider, code string, m Meta) (Result, error) {
	var enabled bool
	err := s.DB.QueryRowContext(ctx, `SELECT enabled FROM platforms WHERE slug = $1`, provider).Scan(&enabled)
	if err != nil {
		return Result{}, db.NotFoundOr(err, "platform")
	}
	if !enabled {
		return Result{}, apperr.Forbiddenf("sign-in with %s is disabled", provider)
	}
	a, err := userAccount(ctx, s.DB, userID, provider)
	if err != nil {
		return Result{}, err
	}
	if err := s.refuseBanned(ctx, a.userID); err != nil {
		return Result{}, err
	}
	return s.secondStep(ctx, a, code, m)
}

// userAccount is the login view of userID signing in with provider; a
// soft-deleted user or one without an account on provider is refused like
// a wrong password.
func userAccount(ctx context.Context, q db.Querier, userID, provider string) (account, error) {
	a := account{userID: userID, provider: provider}
	err := q.QueryRowContext(ctx, `SELECT u.username, u.email, u.deleted_at IS NOT NULL, u.preferred_locale FROM users u
		WHERE u.id = $1 AND EXISTS (SELECT 1 FROM platform_accounts pa WHERE pa.user_id = u.id AND pa.platform_id = $2)`,
		userID, users.PlatformID(provider)).Scan(&a.username, &a.email, &a.deleted, &a.locale)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && a.deleted) {
		return account{}, errBadCredentials
	}
	return a, err
}

// Connect adds a provider's identity to the signed-in user p (the pages'
// "connect another account"; users.Connect has the rule).
func (s *Service) Connect(ctx context.Context, p *authn.Principal, c users.Claim, m Meta) (users.Outcome, error) {
	var out users.Outcome
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.Users.Connect(ctx, tx, p.UserID, c, audit.Event{IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source})
		return err
	})
	return out, err
}

// EnabledPlatforms returns the slugs of the enabled platforms: the login
// page offers a provider only when it is configured and its platform is on.
func (s *Service) EnabledPlatforms(ctx context.Context) (map[string]bool, error) {
	return s.slugs(ctx, `SELECT slug FROM platforms WHERE enabled`)
}

// ProviderFailed audits a provider sign-in that failed before anyone was
// identified (consent denied, the provider's error or unusable answer) as
// login_failed with the provider. The record is best effort: the person is
// shown the failure whether or not it could be written.
func (s *Service) ProviderFailed(ctx context.Context, provider, reason string, m Meta) {
	_ = s.failedWith(ctx, "", provider, m, reason, nil)
}

// LinkedPlatforms returns the slugs of the platforms userID has an account on.
func (s *Service) LinkedPlatforms(ctx context.Context, userID string) (map[string]bool, error) {
	return s.slugs(ctx, `SELECT DISTINCT p.slug FROM platform_accounts a
		JOIN platforms p ON p.id = a.platform_id WHERE a.user_id = $1`, userID)
}

// slugs returns the platform slugs a query selects, as a set.
func (s *Service) slugs(ctx context.Context, query string, args ...any) (map[string]bool, error) {
	list, err := db.All(ctx, s.DB, db.ScanString, query, args...)
	out := make(map[string]bool, len(list))
	for _, slug := range list {
		out[slug] = true
	}
	return out, err
}
