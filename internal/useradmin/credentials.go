package useradmin

import (
	"context"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/auth"
	"hmid/internal/authn"
	"hmid/internal/db"
	hmail "hmid/internal/mail"
	"hmid/internal/oauth"
	"hmid/internal/sessions"
	"hmid/internal/users"
)

// SetPassword sets the password of user id's email sign-in. Like every
// password change it ends each of their sessions and tokens (DECISIONS.md,
// "Session end and tokens"). Errors: Validation (the password rule, or no
// email sign-in), NotFound, Forbidden.
func (s *Service) SetPassword(ctx context.Context, p *authn.Principal, id, pw string, ev audit.Event) error {
	if err := s.Auth.CheckNewPassword(ctx, pw); err != nil {
		return apperr.OnField("password", err)
	}
	hash, err := s.Auth.HashNewPassword(pw)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := s.Users.Manageable(ctx, tx, p, id); err != nil {
			return err
		}
		now := s.Clock.Now()
		res, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET password_hash = $1, updated_at = $2 WHERE user_id = $3 AND platform_id = $4`,
			hash, db.TS(now), id, emailPlatform())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.OnField("password", errNoEmailLogin)
		}
		if err := s.endEverything(ctx, tx, id, now); err != nil {
			return err
		}
		ev.EventType, ev.Description = audit.PasswordChanged, "Password set by an administrator; every session was signed out"
		ev.Metadata = map[string]any{"method": "administrator"}
		return s.record(ctx, tx, p, id, ev)
	})
}

// endEverything ends every session and OAuth token of user id.
func (s *Service) endEverything(ctx context.Context, tx *db.Tx, id string, now time.Time) error {
	if _, err := sessions.EndAll(ctx, tx, s.Epoch, id, "", now); err != nil {
		return err
	}
	return oauth.EndUserTokens(ctx, tx, id, now)
}

// Sent is the answer to a mail sent: its message and when its link stops
// working.
type Sent struct {
	Message   string    `json:"message"`
	ExpiresAt time.Time `json:"expires_at"`
}

// SendReset mails user id a link to choose a new password: a reset link
// (valid auth.ResetTTL), or, to a user who has no password yet (invited),
// a new invitation (valid InviteTTL). Only the newest link works. Errors:
// Validation (no email sign-in), NotFound, Forbidden, ServiceUnavailable.
func (s *Service) SendReset(ctx context.Context, p *authn.Principal, id string, ev audit.Event) (Sent, error) {
	now := s.Clock.Now()
	var tok, kind string
	var ttl time.Duration
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := s.Users.Manageable(ctx, tx, p, id); err != nil {
			return err
		}
		a, ok, err := emailLogin(ctx, tx, id)
		if err != nil || !ok {
			if err == nil {
				err = errNoEmailLogin
			}
			return err
		}
		kind, ttl = hmail.KindPasswordReset, auth.ResetTTL
		if !a.hasPass {
			kind, ttl = hmail.KindInvitation, InviteTTL
		}
		if tok, err = storeResetToken(ctx, tx, id, ev.IPAddress, now, ttl); err != nil {
			return err
		}
		ev.EventType, ev.Description = audit.PasswordResetRequested, "Password reset mail sent by an administrator"
		ev.Metadata = map[string]any{"mail": kind}
		return s.record(ctx, tx, p, id, ev)
	})
	if err != nil {
		return Sent{}, err
	}
	if err := s.mailLink(ctx, id, kind, tok, now.Add(ttl)); err != nil {
		return Sent{}, err
	}
	return Sent{Message: "A link to choose a new password was mailed to the user; only the newest link works.", ExpiresAt: now.Add(ttl).UTC()}, nil
}

// MarkVerified marks the address of user id's email sign-in verified, as
// following the verification link would: the operator vouches for it (say,
// the owner proved it another way). Errors: Validation (no email sign-in,
// or verified already), NotFound, Forbidden, Conflict (another user owns
// the address: an address belongs to at most one user).
func (s *Service) MarkVerified(ctx context.Context, p *authn.Principal, id string, ev audit.Event) error {
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := s.Users.Manageable(ctx, tx, p, id); err != nil {
			return err
		}
		a, ok, err := emailLogin(ctx, tx, id)
		switch {
		case err != nil:
			return err
		case !ok:
			return errNoEmailLogin
		case a.verified:
			return apperr.Invalid("the email address of this user is verified already")
		}
		if err := users.LockAddress(ctx, tx, a.addr); err != nil {
			return err
		}
		if owner, _, err := users.EmailOwner(ctx, tx, a.addr); err != nil || (owner != "" && owner != id) {
			if err == nil {
				err = apperr.Conflictf("this email address is already verified on another user's account")
			}
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET email = $1, email_verified = TRUE, updated_at = $2 WHERE user_id = $3 AND platform_id = $4`,
			a.addr, db.TS(s.Clock.Now()), id, emailPlatform()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM email_verification_tokens WHERE user_id = $1`, id); err != nil {
			return err
		}
		ev.EventType, ev.Description = audit.UserUpdated, "Email address marked verified by an administrator"
		ev.Metadata = map[string]any{"field": "email_verified", "email": a.addr, "method": "administrator"}
		return s.record(ctx, tx, p, id, ev)
	})
}

// ResendVerification mails user id a new link that verifies their address
// (auth.Service.ResendVerification: the earlier links stop working; at
// most auth.VerifyMailLimit an hour). Errors: as that, and NotFound,
// Forbidden.
func (s *Service) ResendVerification(ctx context.Context, p *authn.Principal, id string, ev audit.Event) (Sent, error) {
	if _, err := s.Users.Manageable(ctx, s.DB, p, id); err != nil {
		return Sent{}, err
	}
	exp, err := s.Auth.ResendVerification(ctx, id, auth.Meta{IP: ev.IPAddress, UserAgent: ev.UserAgent, Source: ev.SourceService})
	if err != nil {
		return Sent{}, err
	}
	return Sent{Message: auth.VerifyMailSentMessage, ExpiresAt: exp.UTC()}, nil
}

// SignOut ends every session of user id (but p's own, when p looks at
// themself; sessions.Service.RevokeAllOf) and returns how many ended.
func (s *Service) SignOut(ctx context.Context, p *authn.Principal, id string, ev audit.Event) (int64, error) {
	if _, err := s.Users.Manageable(ctx, s.DB, p, id); err != nil {
		return 0, err
	}
	return s.Sessions.RevokeAllOf(ctx, p, id, ev)
}

// EmailSignIn is the state of a user's email sign-in as the admin console
// shows it.
type EmailSignIn struct {
	Address     string
	Verified    bool
	HasPassword bool
}

// EmailSignInOf reads user id's email sign-in; ok is false without one.
func (s *Service) EmailSignInOf(ctx context.Context, id string) (EmailSignIn, bool, error) {
	a, ok, err := emailLogin(ctx, s.DB, id)
	return EmailSignIn{Address: a.addr, Verified: a.verified, HasPassword: a.hasPass}, ok, err
}
