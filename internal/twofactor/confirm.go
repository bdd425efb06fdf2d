package twofactor

import (
	"context"

	"hmid/internal/db"
)

// ConfirmCode checks a TOTP or backup code with which a user confirms an
// action of their own that needs more than a session (operation names it in
// the audit log, e.g. account_deletion). Like the login step the code is
// single use and throttled with the user's allowance; success is audited as
// 2fa_verified, a wrong code as a failed 2fa_verified. Errors: 400 when
// two-factor authentication is off or the code is wrong, 429 when throttled.
func (s *Service) ConfirmCode(ctx context.Context, userID, code, operation string, c Client) error {
	return s.verifyCode(ctx, &attempt{userID: userID, client: c, operation: operation, allowBackup: true}, code, "to confirm "+operation)
}

// checkEnabled checks code for the attempt at against its user's enabled
// two-factor setup (loadEnabled, then check): how every operation that
// needs a code of an enabled setup starts.
func (s *Service) checkEnabled(ctx context.Context, at *attempt, code string) (*state, proof, error) {
	st, err := s.loadEnabled(ctx, at.userID)
	if err != nil {
		return nil, proof{}, err
	}
	pr, err := s.check(ctx, st, code, at)
	return st, pr, err
}

// verifyCode checks code for the attempt at on a user with two-factor
// authentication on, spends it and records it as verified ("… verified "
// and why), then settles the attempt's allowance: the one path of
// ConfirmCode and VerifyLogin.
func (s *Service) verifyCode(ctx context.Context, at *attempt, code, why string) error {
	_, pr, err := s.checkEnabled(ctx, at, code)
	if err != nil {
		return err
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := spend(ctx, tx, at.userID, pr, s.Clock.Now()); err != nil {
			return err
		}
		return s.record(ctx, tx, at, event{verifiedType(pr.method), methodWords(pr.method) + " verified " + why,
			map[string]any{"operation": at.operation, "method": pr.method}})
	})
	return s.settle(ctx, at, pr.method, err)
}
