package twofactor

import (
	"context"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/oauth"
)

// MaxResetReason is the longest reason of an administrator's reset, in bytes.
const MaxResetReason = 1000

// methodAdminReset is the audit method of a reset: no code was checked.
const methodAdminReset = "admin_reset"

// Reset turns two-factor authentication off for userID on behalf of an
// operator, for a user who lost their authenticator and backup codes; no
// code is asked (an extension: spec 2 knows only the user's own disable).
// The route needs two_factor:manage, and Authorize applies the same rule.
// The secret and every backup code are removed; the reset is audited as
// 2fa_disabled with the operator as actor, method admin_reset and reason,
// and the user gets a two_factor_reset mail. Errors: 400 no or too long a
// reason, the operator's own account (they disable theirs with a code), not
// enabled; 403 another super admin's, unless p is a super admin; 404
// unknown or deleted user.
func (s *Service) Reset(ctx context.Context, p *authn.Principal, userID, reason string, c Client) (DisableResult, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return DisableResult{}, apperr.OnField("reason", apperr.Invalid("reason is required: say why the second factor is reset (it is kept in the audit log)"))
	case len(reason) > MaxResetReason:
		return DisableResult{}, apperr.OnField("reason", apperr.Invalid("reason must be at most %d bytes", MaxResetReason))
	}
	uid, err := s.Authorize(ctx, p, userID, Write)
	if err != nil {
		return DisableResult{}, err
	}
	if p.IsSelf(uid) {
		return DisableResult{}, apperr.Invalid("you cannot reset your own two-factor authentication; disable it with a code (DELETE /v1/users/me/2fa)")
	}
	var super bool
	if err := s.DB.QueryRowContext(ctx, `SELECT is_super_admin FROM users WHERE id = $1`, uid).Scan(&super); err != nil {
		return DisableResult{}, err
	}
	if super && !p.IsAdmin() {
		return DisableResult{}, apperr.Forbiddenf("only a super admin can reset the two-factor authentication of a super admin")
	}
	st, err := s.resetTarget(ctx, uid)
	if err != nil {
		return DisableResult{}, err
	}
	at := &attempt{userID: uid, actorID: actorOf(p, uid), client: c, operation: methodAdminReset}
	now := s.Clock.Now()
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if st.Status == stateEnabled {
			if err := removeEnabled(ctx, tx, uid); err != nil {
				return err
			}
		}
		// The user's passkeys are second factors too: the reset removes them.
		var others int64
		if s.ResetOthers != nil {
			var err error
			if others, err = s.ResetOthers(ctx, tx, uid); err != nil {
				return err
			}
		}
		// Grants made while the second factor guarded the account end,
		// offline ones too: whoever reset it may not be its owner.
		if err := oauth.EndUserTokens(ctx, tx, uid, now); err != nil {
			return err
		}
		return s.record(ctx, tx, at, event{audit.TwoFADisabled, "Two-factor authentication reset by an administrator",
			map[string]any{"platform": st.PlatformSlug, "method": methodAdminReset, "reason": reason, "passkeys_removed": others}})
	})
	if err != nil {
		return DisableResult{}, err
	}
	s.notify(ctx, uid, mail.KindTwoFactorReset, st.PlatformName, now)
	return DisableResult{Success: true, Message: "Two-factor authentication is reset; the user signs in with their password and can set it up again."}, nil
}

// resetTarget is the two-factor row an administrator's reset removes: the
// enabled TOTP, or for a user whose only second factor is a passkey, a row
// naming the email platform (nothing of TOTP to remove). Errors: 400 when
// the user has no second factor at all.
func (s *Service) resetTarget(ctx context.Context, uid string) (*state, error) {
	st, err := s.loadEnabled(ctx, uid)
	if err == nil || s.Others == nil || !apperr.Is(err, apperr.Validation) {
		return st, err
	}
	on, oerr := s.Others(ctx, uid)
	if oerr != nil {
		return nil, oerr
	}
	if !on {
		return nil, err
	}
	var name string
	if err := s.DB.QueryRowContext(ctx, `SELECT name FROM platforms WHERE slug = 'email'`).Scan(&name); err != nil {
		return nil, err
	}
	return &state{UserID: uid, PlatformSlug: "email", PlatformName: name}, nil
}
