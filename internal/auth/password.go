package auth

// Changing the password of a signed-in user (an extension: the spec has
// password reset by mail only). Knowing the current password is the proof,
// so a stolen session cannot lock the owner out; the attempt is throttled
// together with the logins of the account, so the form cannot be used to
// guess the password either.

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/oauth"
	"hmid/internal/password"
	"hmid/internal/sessions"
	"hmid/internal/users"
)

// The refusals of ChangePassword that the pages show at a form field.
var (
	// ErrNoPassword: the user signs in only with providers; a password
	// comes with an email link (spec 2, Email link).
	ErrNoPassword = apperr.Invalid("this account has no email and password sign-in to change; link an email address and a password first (POST /v1/users/{id}/email-link/request)")
	// ErrCurrentRequired: current_password is empty.
	ErrCurrentRequired = apperr.Invalid("current_password is required")
	// ErrWrongPassword: current_password is not the account's password.
	ErrWrongPassword = apperr.Invalid("current_password is wrong")
	// ErrSamePassword: the new password is the current one.
	ErrSamePassword = apperr.Invalid("new_password must differ from the current password")
	// ErrNewPassword is wrapped by the refusal of a new password that breaks
	// the password rules (MinPassword, MaxPassword); its message says which.
	ErrNewPassword = errors.New("the new password breaks the password rules")
)

// newPasswordError is a refusal of the password rules said of new_password,
// wrapping ErrNewPassword so that the pages show it at the new password.
func newPasswordError(err error) error {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return err
	}
	msg := e.Message
	if strings.HasPrefix(msg, "password ") {
		msg = "new_" + msg
	} else {
		msg = "new_password: " + msg
	}
	return &apperr.Error{Kind: apperr.Validation, Message: msg, Field: "new_password", Err: errors.Join(ErrNewPassword, err)}
}

// PasswordChange is a password change: the current password and the new one.
type PasswordChange struct {
	Current string
	New     string
}

// PasswordChanged is the outcome of a password change.
type PasswordChanged struct {
	// RevokedSessions is the number of the user's other sessions signed out.
	RevokedSessions int64
}

// passwordAccount is the email-platform account a password change works on.
type passwordAccount struct {
	id, login, name, locale string
	hash                    sql.NullString
}

// ChangePassword sets a new password for the user of the session p after
// checking the current one. The attempt is reserved in the login throttle of
// the account's address before the password is checked (reserveLogin), and
// given back unless the password was wrong: a wrong current password counts
// like a failed login. On success the user's other sessions are revoked
// (the current one stays), open password-reset links stop working, the
// change is audited as password_changed and the user is told by mail.
// Errors: 400 (ErrCurrentRequired, ErrNoPassword, ErrWrongPassword,
// ErrSamePassword, ErrNewPassword), 403 not a session, 409 a concurrent
// change, 429 throttled, 503 throttle unavailable.
func (s *Service) ChangePassword(ctx context.Context, p *authn.Principal, in PasswordChange, m Meta) (PasswordChanged, error) {
	if p == nil || p.UserID == "" {
		return PasswordChanged{}, apperr.Unauthorizedf("authentication required")
	}
	if p.Kind != authn.KindSession {
		return PasswordChanged{}, apperr.Forbiddenf("changing the password needs a user session token")
	}
	if in.Current == "" {
		return PasswordChanged{}, ErrCurrentRequired
	}
	if err := s.checkPassword(in.New); err != nil {
		return PasswordChanged{}, newPasswordError(err)
	}
	a, err := s.proveCurrent(ctx, p, in.Current, m)
	if err != nil {
		return PasswordChanged{}, err
	}
	if in.New == in.Current {
		return PasswordChanged{}, ErrSamePassword
	}
	hash, err := s.hash(in.New)
	if err != nil {
		return PasswordChanged{}, err
	}
	now := s.now()
	out, err := s.storeNewPassword(ctx, p, a, hash, now, m)
	if err != nil {
		return PasswordChanged{}, err
	}
	s.mailPasswordChanged(ctx, a, now)
	return out, nil
}

// proveCurrent loads the user's password account and checks current against
// it, inside a reservation of the login throttle that a wrong password keeps
// (it counts like a failed login) and a right one gives back.
func (s *Service) proveCurrent(ctx context.Context, p *authn.Principal, current string, m Meta) (passwordAccount, error) {
	a, err := s.passwordAccount(ctx, p.UserID)
	if err != nil {
		return a, err
	}
	rsv, err := s.reserveLogin(ctx, a.login, m)
	if err != nil {
		return a, err
	}
	// A current password longer than any password can be is wrong without
	// the cost of a hash.
	ok := false
	if len(current) <= MaxPassword {
		if ok, err = password.Verify(current, a.hash.String); err != nil && !errors.Is(err, password.ErrMalformed) {
			s.releaseLogin(ctx, rsv, m)
			return a, err
		}
	}
	if !ok {
		// The reservation stays: a wrong password is a failed attempt.
		return a, s.passwordFailed(ctx, p, m)
	}
	s.releaseLogin(ctx, rsv, m)
	return a, nil
}

// storeNewPassword writes the new hash of a (conditional on the one that was
// checked), signs out the user's other sessions and OAuth grants, spends
// open reset links and audits password_changed, in one transaction.
func (s *Service) storeNewPassword(ctx context.Context, p *authn.Principal, a passwordAccount, hash string, now time.Time, m Meta) (PasswordChanged, error) {
	var out PasswordChanged
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		// Conditional on the hash that was checked: of two changes racing,
		// the second finds the hash changed and changes nothing.
		res, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET password_hash = $1, updated_at = $2 WHERE id = $3 AND password_hash = $4`,
			hash, db.TS(now), a.id, a.hash.String)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return apperr.Conflictf("the password was changed by another request; sign in again if this was not you")
		}
		if out.RevokedSessions, err = sessions.EndAll(ctx, tx, s.Epoch, p.UserID, p.SessionID, now); err != nil {
			return err
		}
		// Every OAuth grant of the user ends, offline ones too.
		if err := oauth.EndUserTokens(ctx, tx, p.UserID, now); err != nil {
			return err
		}
		// A reset link mailed before the change must not undo it.
		if _, err := tx.ExecContext(ctx, `UPDATE password_reset_tokens SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`, db.TS(now), p.UserID); err != nil {
			return err
		}
		_, err = s.Audit.Record(ctx, tx, audit.Event{
			UserID: p.UserID, EventType: audit.PasswordChanged, ResourceType: "user", ResourceID: p.UserID,
			IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source,
			Description: "Password changed; every other session was signed out",
			Metadata:    map[string]any{"method": "password_change", "session_id": p.SessionID, "revoked_sessions": out.RevokedSessions},
		})
		return err
	})
	return out, err
}

// HasPassword reports whether the user signs in with an email address and a
// password, so has a password to change.
func (s *Service) HasPassword(ctx context.Context, userID string) (bool, error) {
	_, err := s.passwordAccount(ctx, userID)
	if errors.Is(err, ErrNoPassword) {
		return false, nil
	}
	return err == nil, err
}

// passwordAccount loads the user's email-platform account with a password,
// or answers ErrNoPassword.
func (s *Service) passwordAccount(ctx context.Context, userID string) (passwordAccount, error) {
	var (
		a      passwordAccount
		name   sql.NullString
		locale sql.NullString
	)
	err := s.DB.QueryRowContext(ctx, `SELECT pa.id, pa.platform_user_id, COALESCE(NULLIF(u.name, ''), u.username), u.preferred_locale, pa.password_hash
		FROM platform_accounts pa JOIN users u ON u.id = pa.user_id
		WHERE pa.user_id = $1 AND pa.platform_id = $2 AND u.deleted_at IS NULL`, userID, users.PlatformID(Platform)).
		Scan(&a.id, &a.login, &name, &locale, &a.hash)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !a.hash.Valid {
		return a, ErrNoPassword
	}
	a.name, a.locale = name.String, locale.String
	return a, err
}

// passwordFailed audits a password change refused for a wrong current
// password (the owner sees it in their activity) and returns ErrWrongPassword.
func (s *Service) passwordFailed(ctx context.Context, p *authn.Principal, m Meta) error {
	if _, err := s.Audit.Record(ctx, s.DB, audit.Event{
		UserID: p.UserID, EventType: audit.PasswordChanged, ResourceType: "user", ResourceID: p.UserID,
		IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source,
		Description: "Password change refused: the current password was wrong", Failed: true, ErrorMessage: "wrong current password",
		Metadata: map[string]any{"method": "password_change", "session_id": p.SessionID},
	}); err != nil {
		return err
	}
	return ErrWrongPassword
}

// mailPasswordChanged tells the user of the change at the address they sign
// in with. The change is committed already, so a mail that cannot be sent is
// logged, not returned.
func (s *Service) mailPasswordChanged(ctx context.Context, a passwordAccount, at time.Time) {
	msg, err := mail.Render(mail.KindPasswordChanged, a.locale, mail.Data{Name: a.name, Time: at, Link: s.PublicURL + "/forgot-password"})
	if err == nil {
		msg.To = a.login
		err = s.Mailer.Send(ctx, msg)
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "password changed: mail not sent", slog.String("error", err.Error()))
	}
}
