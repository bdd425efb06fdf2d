package auth

// Verification of the address a user registered with.
//
// hmid links accounts by one rule, the defence against account pre-hijacking
// (an attacker registering a victim's address before the victim signs in with
// a provider that vouches for it): an address is owned by a user only when it
// is verified on one of their platform accounts (platform_accounts.email is
// the address and email_verified is set), and by at most one user. A provider
// sign-in links to the user who owns the verified address. An email
// registration therefore proves nothing by itself: it sends a mail with a
// single-use token, and only following its link (or completing a password
// reset, whose mail went to the same address) marks the email-platform
// account verified, unless another user owns the address by then.

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/mail"
	"hmid/internal/token"
	"hmid/internal/users"
)

// PrefixEmailVerify is the prefix of email-verification tokens. Like every
// token of hmid it carries 256 random bits and is stored only as a hash.
const PrefixEmailVerify = "hm_ev_"

// VerifyTTL is how long a verification link works: 24 hours, like the
// links of an email change (spec 2, Limits).
const VerifyTTL = 24 * time.Hour

// VerifyPage is the page the verification mail links to, with ?token=….
const VerifyPage = "/verify-email"

// Throttling of verification mails asked for again: per user, as many as
// the email-change and email-link mails allow, so the endpoint cannot flood
// a mailbox.
const (
	VerifyMailLimit  = 5
	VerifyMailWindow = time.Hour
)

// EmailVerifiedMessage confirms a verification.
const EmailVerifiedMessage = "Your email address has been verified."

// VerifyMailSentMessage confirms that a new verification mail was sent.
const VerifyMailSentMessage = "A new verification mail was sent; its link works for 24 hours and replaces the earlier ones."

// errBadVerifyToken is the one answer for an unknown, expired, used or
// superseded token, or one whose address is no longer the account's.
var errBadVerifyToken = apperr.Bad("the verification token is invalid, expired or already used")

// errMailNotSent answers when the verification mail could not be handed to
// the mail server or the outbox (the cause is logged).
var errMailNotSent = apperr.Unavailablef("the verification mail could not be sent; try again later")

// errOwnedElsewhere refuses to verify an address another user owns: an
// address belongs to at most one user.
var errOwnedElsewhere = apperr.Conflictf("this email address is already verified on another user's account")

// logger is Log, or the default logger for a Service built without one.
func (s *Service) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// ownedByOther reports whether a user other than userID owns addr
// (users.EmailOwner: verified on one of their platform accounts; a
// soft-deleted owner keeps it through the grace period). In a transaction
// that may verify addr it takes the address lock first.
func ownedByOther(ctx context.Context, q db.Querier, addr, userID string) (bool, error) {
	if tx, ok := q.(*db.Tx); ok {
		if err := users.LockAddress(ctx, tx, addr); err != nil {
			return false, err
		}
	}
	owner, _, err := users.EmailOwner(ctx, q, addr)
	return owner != "" && owner != userID, err
}

// proveEmail marks the user's email-platform account verified when its
// login is addr, and audits the change (method says how the address was
// proven). It reports whether that account exists; an account verified
// already is left as it is. The caller has checked ownedByOther in tx.
func (s *Service) proveEmail(ctx context.Context, tx *db.Tx, userID, addr, method string, now time.Time, m Meta) (bool, error) {
	var verified bool
	err := tx.QueryRowContext(ctx, `SELECT email_verified FROM platform_accounts WHERE user_id = $1 AND platform_id = $2 AND platform_user_id = $3`,
		userID, users.PlatformID(Platform), addr).Scan(&verified)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if verified {
		return true, nil
	}
	// email is set to the login as well: ownership is read from
	// platform_accounts.email, and the login is the address just proven.
	res, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET email = $1, email_verified = TRUE, updated_at = $2
		WHERE user_id = $3 AND platform_id = $4 AND platform_user_id = $1 AND NOT email_verified`,
		addr, db.TS(now), userID, users.PlatformID(Platform))
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		// A concurrent request verified it first and audited it.
		return true, nil
	}
	_, err = s.Audit.Record(ctx, tx, audit.Event{
		UserID: userID, EventType: audit.UserUpdated, ResourceType: "user", ResourceID: userID,
		IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source, Description: "Email address verified",
		Metadata: map[string]any{"field": "email_verified", "email": addr, "method": method},
	})
	return true, err
}

// verifyTarget is what a verification mail needs of a user.
type verifyTarget struct {
	userID, addr, name, locale string
	verified                   bool
}

// loadVerifyTarget reads the email-platform account of an active user.
// Errors: Invalid when the user has none.
func (s *Service) loadVerifyTarget(ctx context.Context, userID string) (verifyTarget, error) {
	t := verifyTarget{userID: userID}
	var locale sql.NullString
	err := s.DB.QueryRowContext(ctx, `SELECT pa.platform_user_id, pa.email_verified, u.name, u.preferred_locale
		FROM platform_accounts pa JOIN users u ON u.id = pa.user_id
		WHERE pa.user_id = $1 AND pa.platform_id = $2 AND u.deleted_at IS NULL`, userID, users.PlatformID(Platform)).
		Scan(&t.addr, &t.verified, &t.name, &locale)
	if errors.Is(err, sql.ErrNoRows) {
		return t, apperr.Invalid("this account has no email sign-in whose address could be verified")
	}
	t.locale = locale.String
	return t, err
}

// mailVerification stores a new token for the target's address, replacing
// any earlier one, and mails its link in the user's locale. It returns when
// the link expires. Errors: ServiceUnavailable when the mail cannot be sent
// (the token is then removed again).
func (s *Service) mailVerification(ctx context.Context, t verifyTarget) (time.Time, error) {
	now := s.now()
	exp := now.Add(VerifyTTL)
	tok := token.New(PrefixEmailVerify)
	id := uuid.NewString()
	// One token per user (user_id is unique): only the newest mail works.
	// One statement replaces the earlier token: a DELETE then INSERT lets
	// two concurrent requests both find nothing to delete and collide on
	// the index (a 500 on PostgreSQL), where the upsert makes the later win.
	_, err := s.DB.ExecContext(ctx, `INSERT INTO email_verification_tokens (id, user_id, email, token_hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_id) DO UPDATE SET id = excluded.id, email = excluded.email, token_hash = excluded.token_hash,
			created_at = excluded.created_at, expires_at = excluded.expires_at`, id, t.userID, t.addr, token.Hash(tok), db.TS(now), db.TS(exp))
	if err != nil {
		return time.Time{}, err
	}
	msg, err := mail.Render(mail.KindEmailVerify, t.locale, mail.Data{
		Name: t.name, Email: t.addr, Link: strings.TrimRight(s.PublicURL, "/") + VerifyPage + "?token=" + url.QueryEscape(tok), Token: tok, ExpiresAt: exp,
	})
	if err == nil {
		msg.To = t.addr
		err = s.Mailer.Send(ctx, msg)
	}
	if err != nil {
		s.logger().ErrorContext(ctx, "verification mail not sent", slog.String("user_id", t.userID), slog.String("error", err.Error()))
		_, _ = s.DB.ExecContext(ctx, `DELETE FROM email_verification_tokens WHERE id = $1`, id)
		return time.Time{}, errMailNotSent
	}
	return exp, nil
}

// mailAfterRegistration sends the verification mail of a new registration.
// The registration is committed and its session answered whatever happens
// here, so a failure is only logged (a mail that could not be sent is logged
// by mailVerification); the user can ask for another mail with
// ResendVerification.
func (s *Service) mailAfterRegistration(ctx context.Context, userID string) {
	t, err := s.loadVerifyTarget(ctx, userID)
	if err == nil {
		_, err = s.mailVerification(ctx, t)
	}
	if err != nil && !errors.Is(err, errMailNotSent) {
		s.logger().ErrorContext(ctx, "registration: verification mail", slog.String("user_id", userID), slog.String("error", err.Error()))
	}
}

// ResendVerification mails a new verification link for the address of the
// user's email-platform account; the earlier links stop working. It returns
// when the new link expires. Errors: Invalid (no email sign-in, or the
// address is verified already), Conflict (another user owns the address),
// TooManyRequests (VerifyMailLimit per VerifyMailWindow), ServiceUnavailable.
func (s *Service) ResendVerification(ctx context.Context, userID string, m Meta) (time.Time, error) {
	t, err := s.loadVerifyTarget(ctx, userID)
	if err != nil {
		return time.Time{}, err
	}
	if t.verified {
		return time.Time{}, apperr.Invalid("the email address of this account is already verified")
	}
	if owned, err := ownedByOther(ctx, s.DB, t.addr, userID); err != nil {
		return time.Time{}, err
	} else if owned {
		return time.Time{}, errOwnedElsewhere
	}
	d, err := cache.Allow(ctx, s.Limiter, "verify:mail:"+userID, cache.PerPeriod(VerifyMailLimit, VerifyMailWindow))
	if err != nil {
		return time.Time{}, apperr.Unavailablef("the verification-mail throttle is unavailable; try again later")
	}
	m.reportDecision(d)
	if !d.Allowed {
		return time.Time{}, apperr.RateLimited(d.RetryAfter, "too many verification mails; try again later")
	}
	return s.mailVerification(ctx, t)
}

// checkVerifyToken refuses an empty token (Invalid) or one that cannot be a
// verification token (BadRequest, without a lookup).
func checkVerifyToken(tok string) error {
	if tok == "" {
		return apperr.Invalid("token is required")
	}
	if !token.HasShape(tok, PrefixEmailVerify) {
		return errBadVerifyToken
	}
	return nil
}

// VerificationAddress returns the address a valid, unused token would
// verify; the page shows it before the person confirms. It changes nothing.
// Errors: Invalid (empty), BadRequest (invalid, expired or used token).
func (s *Service) VerificationAddress(ctx context.Context, tok string) (string, error) {
	tok = strings.TrimSpace(tok)
	if err := checkVerifyToken(tok); err != nil {
		return "", err
	}
	var addr string
	err := s.DB.QueryRowContext(ctx, `SELECT email FROM email_verification_tokens WHERE token_hash = $1 AND expires_at > $2`,
		token.Hash(tok), db.TS(s.now())).Scan(&addr)
	if errors.Is(err, sql.ErrNoRows) {
		return "", errBadVerifyToken
	}
	return addr, err
}

// VerifyEmail uses up tok and marks the email-platform account whose login
// is the token's address verified. The token is the credential: no session
// is needed. It returns the verified address. Errors: Invalid (empty),
// BadRequest (invalid, expired, used or superseded token, or the account's
// address changed since), Conflict (another user owns the address by now;
// then nothing changes and the token stays usable).
func (s *Service) VerifyEmail(ctx context.Context, tok string, m Meta) (string, error) {
	tok = strings.TrimSpace(tok)
	if err := checkVerifyToken(tok); err != nil {
		return "", err
	}
	now := s.now()
	var addr string
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var userID string
		// Single use: of two racing requests only one deletes the row. An
		// error below rolls the deletion back with everything else.
		err := tx.QueryRowContext(ctx, `DELETE FROM email_verification_tokens
			WHERE token_hash = $1 AND expires_at > $2 AND user_id IN (SELECT id FROM users WHERE deleted_at IS NULL)
			RETURNING user_id, email`, token.Hash(tok), db.TS(now)).Scan(&userID, &addr)
		if errors.Is(err, sql.ErrNoRows) {
			return errBadVerifyToken
		}
		if err != nil {
			return err
		}
		if owned, err := ownedByOther(ctx, tx, addr, userID); err != nil {
			return err
		} else if owned {
			return errOwnedElsewhere
		}
		found, err := s.proveEmail(ctx, tx, userID, addr, "verification_link", now, m)
		if err == nil && !found {
			return errBadVerifyToken
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return addr, nil
}

// resetProvesEmail is called by ConfirmReset inside its transaction: the
// reset link went to the login address of the email-platform account, so
// using it proves that address too. When another user owns the address, the
// account is simply not marked (the reset itself stands).
func (s *Service) resetProvesEmail(ctx context.Context, tx *db.Tx, userID string, now time.Time, m Meta) error {
	var addr string
	err := tx.QueryRowContext(ctx, `SELECT platform_user_id FROM platform_accounts WHERE user_id = $1 AND platform_id = $2`,
		userID, users.PlatformID(Platform)).Scan(&addr)
	if err != nil {
		return err
	}
	if owned, err := ownedByOther(ctx, tx, addr, userID); err != nil || owned {
		return err
	}
	_, err = s.proveEmail(ctx, tx, userID, addr, "password_reset", now, m)
	return err
}

// VerifyAnswer is the answer of a verification.
type VerifyAnswer struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// VerifyMailAnswer is the answer of a new verification mail.
type VerifyMailAnswer struct {
	Message   string    `json:"message"`
	ExpiresAt time.Time `json:"expires_at"`
}

// VerifyEmail is POST /v1/auth/verify-email with {token}.
func (h *Handler) VerifyEmail(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Token string `json:"token"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	if _, err := h.S.VerifyEmail(r.Context(), b.Token, h.meta(w, r)); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusOK, VerifyAnswer{Success: true, Message: EmailVerifiedMessage})
}

// ResendVerification is POST /v1/auth/verify-email/resend, for the user of
// the session (the route admits session tokens only).
func (h *Handler) ResendVerification(w http.ResponseWriter, r *http.Request) {
	exp, err := h.S.ResendVerification(r.Context(), authn.From(r.Context()).UserID, h.meta(w, r))
	httpx.RespondJSON(w, r, http.StatusOK, VerifyMailAnswer{Message: VerifyMailSentMessage, ExpiresAt: exp.UTC()}, err)
}
