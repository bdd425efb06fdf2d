package passkey

import (
	"context"

	"hmid/internal/authflow"
)

// SecondFactor is the login's second step (authflow.SecondFactor) with
// passkeys beside TOTP: a user with a passkey that counts (see Counts) has
// two-factor authentication on, so a password sign-in goes on to the
// second step, where the passkey or a TOTP code finishes it; and a role
// that requires two-factor authentication is satisfied by it.
type SecondFactor struct {
	TOTP authflow.SecondFactor
	S    *Service
}

var _ authflow.SecondFactor = SecondFactor{}

// Counts reports whether userID holds a passkey that serves as their
// second factor under the policy: none while passkeys are off; with
// RefuseSynced, for a user of whom two-factor authentication is required,
// only a device-bound one.
func (s *Service) Counts(ctx context.Context, userID string) (bool, error) {
	if s.rp == nil {
		return false, nil
	}
	p, err := s.Policy(ctx)
	if err != nil || !p.Enabled {
		return false, err
	}
	all, synced, err := Count(ctx, s.DB, userID)
	if err != nil || all == 0 {
		return false, err
	}
	refuse, err := s.refusesSynced(ctx, p, userID)
	if err != nil {
		return false, err
	}
	return countsAsSecondFactor(all, synced, refuse), nil
}

// Enabled reports whether the user has TOTP on or a passkey that counts.
func (f SecondFactor) Enabled(ctx context.Context, userID string) (bool, error) {
	if on, err := f.TOTP.Enabled(ctx, userID); err != nil || on {
		return on, err
	}
	return f.S.Counts(ctx, userID)
}

// AcceptsCode reports whether a TOTP or backup code finishes the second
// step: only TOTP's, since a passkey is verified by its own ceremony.
func (f SecondFactor) AcceptsCode(ctx context.Context, userID string) (bool, error) {
	return f.TOTP.AcceptsCode(ctx, userID)
}

// VerifyLogin checks a TOTP or backup code; a passkey is verified by its
// own ceremony (Service.FinishLogin), not here.
func (f SecondFactor) VerifyLogin(ctx context.Context, userID, code, ip, userAgent string) error {
	return f.TOTP.VerifyLogin(ctx, userID, code, ip, userAgent)
}

// SetupRequired reports whether the user must still set up a second
// factor: not when a passkey that counts is there.
func (f SecondFactor) SetupRequired(ctx context.Context, userID, platformSlug string) (bool, error) {
	req, err := f.TOTP.SetupRequired(ctx, userID, platformSlug)
	if err != nil || !req {
		return req, err
	}
	has, err := f.S.Counts(ctx, userID)
	return !has, err
}
