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
	st, err := s.loadEnabled(ctx, userID)
	if err != nil {
		return err
	}
	at := &attempt{userID: userID, client: c, operation: operation, allowBackup: true}
	pr, err := s.check(ctx, st, code, at)
	if err != nil {
		return err
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := spend(ctx, tx, userID, pr, s.Clock.Now()); err != nil {
			return err
		}
		return s.record(ctx, tx, at, event{verifiedType(pr.method), methodWords(pr.method) + " verified to confirm " + operation,
			map[string]any{"operation": operation, "method": pr.method}})
	})
	return s.settle(ctx, at, pr.method, err)
}
