package auth

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/cache"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/oauth"
	"hmid/internal/sessions"
	"hmid/internal/token"
	"hmid/internal/users"
)

// PrefixPasswordReset is the prefix of password-reset tokens. Like every
// token of hmid it carries 256 random bits and is stored only as a hash.
const PrefixPasswordReset = "hm_pr_"

// ResetTTL is how long a password-reset token works.
const ResetTTL = time.Hour

// Throttling of reset requests: per address of the requester (answered 429)
// and per account (answered as usual but without a new mail, so the answer
// still does not tell whether the account exists).
const (
	ResetPerIP      = 10
	ResetPerAccount = 3
	ResetWindow     = time.Hour
)

// ResetRequestedMessage is the one answer to every reset request.
const ResetRequestedMessage = "If an account with this email address exists, a link to choose a new password has been sent to it."

// Mailer sends a mail (mail.Sender).
type Mailer interface {
	Send(ctx context.Context, m mail.Message) error
}

// RequestReset sends a reset link to the account of email, if there is one.
// The caller answers the same whether or not it exists (no account
// enumeration); errors are only for throttling and internal failures.
func (s *Service) RequestReset(ctx context.Context, email string, m Meta) error {
	email = NormalizeEmail(email)
	if !validEmail(email) {
		return apperr.Invalid("email must be a valid email address")
	}
	d, err := cache.Allow(ctx, s.Limiter, "reset:ip:"+m.IP, cache.PerPeriod(ResetPerIP, ResetWindow))
	if err != nil {
		return apperr.Unavailablef("the password-reset throttle is unavailable; try again later")
	}
	m.reportDecision(d)
	if !d.Allowed {
		return apperr.RateLimited(d.RetryAfter, "too many password-reset requests; try again later")
	}
	var (
		userID, name string
		locale       sql.NullString
		enabled      bool
	)
	// An email login whose address another user owns (verified it, for
	// example with a provider sign-in after this login was registered and
	// never verified) gets no reset mail: the mail would go to that owner
	// and lead them into an account someone else made under their address
	// (account pre-hijacking; docs/decisions.md, "One linking rule").
	err = s.DB.QueryRowContext(ctx, `SELECT u.id, u.name, u.preferred_locale, p.enabled
		FROM platform_accounts pa JOIN users u ON u.id = pa.user_id JOIN platforms p ON p.id = pa.platform_id
		WHERE pa.platform_id = $1 AND pa.platform_user_id = $2 AND u.deleted_at IS NULL
			AND (pa.email_verified OR NOT EXISTS (SELECT 1 FROM platform_accounts o
				WHERE o.user_id <> pa.user_id AND LOWER(o.email) = $2 AND o.email_verified))`,
		users.PlatformID(Platform), email).Scan(&userID, &name, &locale, &enabled)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !enabled) {
		return nil
	}
	if err != nil {
		return err
	}
	d, err = cache.Allow(ctx, s.Limiter, "reset:acct:"+userID, cache.PerPeriod(ResetPerAccount, ResetWindow))
	if err != nil {
		return apperr.Unavailablef("the password-reset throttle is unavailable; try again later")
	}
	if !d.Allowed {
		return nil
	}
	now := s.now()
	tok := token.New(PrefixPasswordReset)
	expires := now.Add(ResetTTL)
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		// A new link replaces the older ones: only the newest mail works.
		if _, err := tx.ExecContext(ctx, `UPDATE password_reset_tokens SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`, db.TS(now), userID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO password_reset_tokens (id, user_id, token_hash, ip_address, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			uuid.NewString(), userID, token.Hash(tok), m.IP, db.TS(now), db.TS(expires)); err != nil {
			return err
		}
		_, err := s.Audit.Record(ctx, tx, audit.Event{
			UserID: userID, EventType: audit.PasswordResetRequested, ResourceType: "user", ResourceID: userID,
			IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source, Description: "Password reset requested",
		})
		return err
	})
	if err != nil {
		return err
	}
	msg, err := mail.Render(mail.KindPasswordReset, locale.String, mail.Data{
		Name: name, Link: s.PublicURL + "/reset-password?token=" + url.QueryEscape(tok), Token: tok, ExpiresAt: expires,
	})
	if err != nil {
		return err
	}
	msg.To = email
	return s.Mailer.Send(ctx, msg)
}

// ConfirmReset sets a new password with a reset token (single use), revokes
// every session of the user and audits password_changed. The reset link went
// to the account's address, so the address counts as verified from now on
// (unless another user owns it; see verify.go).
func (s *Service) ConfirmReset(ctx context.Context, tok, newPassword string, m Meta) error {
	if tok == "" {
		return apperr.Invalid("token is required")
	}
	if err := s.checkPassword(newPassword); err != nil {
		return err
	}
	invalid := apperr.Bad("the password-reset token is invalid, expired or already used")
	if !token.HasShape(tok, PrefixPasswordReset) {
		return invalid
	}
	hash, err := s.hash(newPassword)
	if err != nil {
		return err
	}
	now := s.now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		var userID string
		// The conditional UPDATE makes the token single use even when two
		// requests race: only one of them gets the row back.
		err := tx.QueryRowContext(ctx, `UPDATE password_reset_tokens SET used_at = $1
			WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING user_id`, db.TS(now), token.Hash(tok)).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return invalid
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET password_hash = $1, updated_at = $2
			WHERE user_id = $3 AND platform_id = $4 AND user_id IN (SELECT id FROM users WHERE deleted_at IS NULL)`,
			hash, db.TS(now), userID, users.PlatformID(Platform))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return invalid
		}
		if _, err := sessions.EndAll(ctx, tx, s.Epoch, userID, "", now); err != nil {
			return err
		}
		// Every OAuth grant of the user ends, offline ones too.
		if err := oauth.EndUserTokens(ctx, tx, userID, now); err != nil {
			return err
		}
		if err := s.resetProvesEmail(ctx, tx, userID, now, m); err != nil {
			return err
		}
		_, err = s.Audit.Record(ctx, tx, audit.Event{
			UserID: userID, EventType: audit.PasswordChanged, ResourceType: "user", ResourceID: userID,
			IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source,
			Description: "Password changed with a reset link; every session was signed out",
			Metadata:    map[string]any{"method": "password_reset"},
		})
		return err
	})
}
