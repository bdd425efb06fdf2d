// Package accounts implements a user's login accounts (spec 2, Platform
// accounts; Email change and link): listing the linked platform accounts,
// choosing the primary one, unlinking, changing the address of an email
// account, and linking an email account (address and password) to a user
// who signed up through an external provider.
//
// Email changes and links are confirmed by a single-use token mailed to the
// new address; only its SHA-256 hash is stored, with a 24-hour lifetime. The
// caller who verifies must be the user the request belongs to (or hold
// users:write), so a leaked token alone cannot change someone's account.
package accounts

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	hmail "hmid/internal/mail"
	"hmid/internal/policy"
	"hmid/internal/users"
)

// TokenTTL is the lifetime of an email change or link token (spec 2, Limits).
const TokenTTL = 24 * time.Hour

// MinPassword and MaxPassword bound the password of an email link (at least
// 8 characters by the spec, the default of the policy password.min_length,
// which may raise it; the upper bound keeps Argon2id input sane).
const (
	MinPassword = 8
	MaxPassword = 1024
)

// mailLimit is how many verification mails one user may cause per hour; it
// keeps the endpoints from being used to flood someone's mailbox.
const (
	mailLimit  = 5
	mailWindow = time.Hour
)

// Service holds the dependencies of the accounts area.
type Service struct {
	DB      *db.DB
	Clock   clock.Clock
	Audit   *audit.Writer
	Mail    hmail.Sender
	Limiter cache.Limiter
	Log     *slog.Logger
	// PublicURL is the base of the links in verification mails.
	PublicURL string
	// HashPassword hashes an email-link password (password.Hash in production).
	HashPassword func(string) (string, error)
	// Policy gives the password rules in force (nil: the defaults).
	Policy *policy.Store
}

// Paths of the pages that verification mails link to, with ?token=… added.
// The page posts the token to the verify endpoint with the user's session.
const (
	EmailChangePage = "/account/email/verify"
	EmailLinkPage   = "/account/email-link/verify"
)

var emailPlatformID = users.PlatformID("email")

// user is what this package needs of a user row.
type user struct {
	ID       string
	Username string
	Name     string
	Email    string
	Locale   string
}

// loadUser returns a user that exists and is not deleted, or NotFound.
func loadUser(ctx context.Context, q db.Querier, id string) (user, error) {
	var u user
	var email, locale sql.NullString
	err := q.QueryRowContext(ctx, `SELECT id, username, name, email, preferred_locale FROM users WHERE id = $1 AND deleted_at IS NULL`, id).
		Scan(&u.ID, &u.Username, &u.Name, &email, &locale)
	if errors.Is(err, sql.ErrNoRows) {
		return u, apperr.NotFoundf("user not found")
	}
	u.Email, u.Locale = email.String, locale.String
	if u.Name == "" {
		u.Name = u.Username
	}
	return u, err
}

// emailAccount returns the address of the user's email platform account, or
// "" when the user has none.
func emailAccount(ctx context.Context, q db.Querier, userID string) (string, error) {
	var addr string
	err := q.QueryRowContext(ctx, `SELECT platform_user_id FROM platform_accounts WHERE user_id = $1 AND platform_id = $2`, userID, emailPlatformID).Scan(&addr)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return addr, err
}

// normalizeEmail checks that s is a plain address (no display name) of at
// most 254 characters (RFC 5321 §4.5.3.1.3) and returns it lower-cased.
func normalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", apperr.Invalid("email is required")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "", apperr.Invalid("email %q is not a valid email address", s)
	}
	at := strings.LastIndexByte(s, '@')
	if at < 1 || !strings.Contains(s[at+1:], ".") || strings.HasSuffix(s, ".") {
		return "", apperr.Invalid("email %q is not a valid email address", s)
	}
	return strings.ToLower(s), nil
}

// emailInUse reports whether another user than userID holds addr: as their
// user email, as the address of any of their platform accounts, or as the
// login of an email platform account.
func emailInUse(ctx context.Context, q db.Querier, addr, userID string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM users WHERE LOWER(email) = $1 AND id <> $2) +
		(SELECT COUNT(*) FROM platform_accounts WHERE user_id <> $2 AND (LOWER(email) = $1 OR (platform_id = $3 AND platform_user_id = $1)))`,
		addr, userID, emailPlatformID).Scan(&n)
	return n > 0, err
}

// errEmailInUse refuses an address another user holds.
var errEmailInUse = apperr.Conflictf("email address is already in use")

// checkEmailFree refuses addr when another user than userID holds it.
func checkEmailFree(ctx context.Context, q db.Querier, addr, userID string) error {
	used, err := emailInUse(ctx, q, addr, userID)
	if err == nil && used {
		err = errEmailInUse
	}
	return err
}

// limitMail counts one verification mail for userID and refuses beyond the limit.
func (s *Service) limitMail(ctx context.Context, userID string) error {
	d, err := cache.Allow(ctx, s.Limiter, "accounts:mail:"+userID, cache.PerPeriod(mailLimit, mailWindow))
	if err != nil {
		return apperr.Unavailablef("rate limiter unavailable")
	}
	if !d.Allowed {
		return apperr.RateLimited(d.RetryAfter, "too many verification mails; try again later")
	}
	return nil
}

// send renders kind in the user's locale and sends it to addr.
func (s *Service) send(ctx context.Context, kind, addr, locale string, data hmail.Data) error {
	m, err := hmail.Render(kind, locale, data)
	if err != nil {
		return err
	}
	m.To = addr
	if err := s.Mail.Send(ctx, m); err != nil {
		s.Log.ErrorContext(ctx, "send verification mail", slog.String("kind", kind), slog.String("error", err.Error()))
		return apperr.Unavailablef("the verification mail could not be sent; try again later")
	}
	return nil
}

// mayVerify reports whether the caller may use a token of userID: the user
// themself, or a caller holding users:write.
func mayVerify(p *authn.Principal, userID string) bool {
	return p.IsSelf(userID) || p.Can("users:write")
}

// errBadToken is the one answer for an unknown, expired, used or foreign
// token: telling them apart would help someone guessing.
var errBadToken = apperr.Invalid("invalid or expired token")
