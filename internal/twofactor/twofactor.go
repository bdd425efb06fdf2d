// Package twofactor implements TOTP two-factor authentication (spec 2,
// Two-factor state and Two-factor authentication (REST)): setup with a sealed
// secret and a QR code, verification that enables it and hands out single-use
// backup codes, disabling, an administrator's reset for a user who lost
// their authenticator, regenerating backup codes, the requirement check
// (roles and login platforms that demand it), and the second step of a login
// (authflow.SecondFactor).
//
// Codes are RFC 6238 TOTP codes (HMAC-SHA1, 30-second steps, 6 digits) with
// one step of clock skew either way (RFC 6238 §5.2). Each accepted code's time
// step is stored and a code is accepted only for a later step than the last
// one, so a code cannot be replayed (RFC 6238 §5.2: "the verifier MUST NOT
// accept the second attempt of the OTP after the successful validation").
// Attempts are reserved per user in the shared rate limiter before a code is
// checked, so the limit holds across instances and parallel requests.
package twofactor

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/secretbox"
)

// Limits of spec 2 (Limits) and DECISIONS.md (Accounts).
const (
	// SetupLifetime is how long a setup can be verified (spec 2: 10 minutes).
	SetupLifetime = 10 * time.Minute
	// BackupCodeCount is the number of backup codes per generation (spec 2: 10).
	BackupCodeCount = 10
	// MaxFailures is the number of wrong codes a user may send per FailureWindow.
	MaxFailures = 5
	// FailureWindow is the window of MaxFailures.
	FailureWindow = 5 * time.Minute
	// Issuer names the service in authenticator apps (the otpauth URI issuer).
	Issuer = "hmid"
)

// Service holds the dependencies of two-factor authentication.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Box   *secretbox.Box // seals TOTP secrets at rest
	Audit *audit.Writer
	// Limiter holds each user's allowance of code checks (memory or Redis).
	Limiter cache.Limiter
	Mail    mail.Sender
	Log     *slog.Logger
	// Others reports whether the user holds another second factor that
	// counts (a passkey); nil: none. It makes Requirement's enabled true and
	// lifts SetupRequired.
	Others func(ctx context.Context, userID string) (bool, error)
	// ResetOthers removes the user's other second factors (their passkeys)
	// inside an administrator's reset; nil: none.
	ResetOthers func(ctx context.Context, q db.Querier, userID string) (int64, error)
}

var _ authflow.SecondFactor = (*Service)(nil)

// Client describes where a request came from, for the audit log.
type Client struct {
	IPAddress     string
	UserAgent     string
	SourceService string // "" means api
}

// Status is the two-factor state of a user (spec 2, Two-factor state). The
// setup platform appears under both names the spec uses (DECISIONS.md).
type Status struct {
	Enabled              bool       `json:"enabled"`
	EnabledAt            *time.Time `json:"enabled_at"`
	SetupPlatform        *string    `json:"setup_platform"`
	PlatformSlug         *string    `json:"platform_slug"`
	BackupCodesRemaining int        `json:"backup_codes_remaining"`
}

// Requirement tells whether a user must use two-factor authentication and
// whether they can turn it on now.
type Requirement struct {
	Required        bool     `json:"required"`
	RequiredByRoles []string `json:"required_by_roles"`
	Enabled         bool     `json:"enabled"`
	CanEnable       bool     `json:"can_enable"`
	Reason          *string  `json:"reason"`
	// RequiredByPlatform names the login platform that requires it ("" for
	// none), for pages that word the reason themselves; the REST answer
	// carries it in Reason.
	RequiredByPlatform string `json:"-"`
}

// SetupResult is the answer of Setup: the secret in the three forms an
// authenticator app can take it.
type SetupResult struct {
	Secret       string    `json:"secret"`        // base32 (RFC 4648), no padding
	QRCodeURL    string    `json:"qr_code_url"`   // otpauth://totp/… (Key URI Format)
	QRCodeImage  string    `json:"qr_code_image"` // data:image/png;base64,…
	ExpiresAt    time.Time `json:"expires_at"`
	PlatformSlug string    `json:"platform_slug"`
}

// CodesResult is the answer of Verify and RegenerateBackupCodes: the new
// backup codes, shown this once.
type CodesResult struct {
	Success      bool     `json:"success"`
	BackupCodes  []string `json:"backup_codes"`
	Message      string   `json:"message"`
	PlatformSlug string   `json:"platform_slug"`
}

// DisableResult is the answer of Disable.
type DisableResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// Row states.
const (
	statePending = "pending"
	stateEnabled = "enabled"
)

// state is a user's two_factor row.
type state struct {
	UserID         string
	Status         string
	Sealed         string
	PlatformID     string
	PlatformSlug   string
	PlatformName   string
	SetupExpiresAt time.Time
	EnabledAt      *time.Time
	LastStep       *int64
}

// load returns the user's two-factor row, or nil when there is none.
func load(ctx context.Context, q db.Querier, userID string) (*state, error) {
	var (
		st      state
		exp     int64
		enabled db.NullTime
		last    sql.NullInt64
	)
	err := q.QueryRowContext(ctx, `SELECT t.user_id, t.status, t.secret_sealed, t.platform_id, p.slug, p.name, t.setup_expires_at, t.enabled_at, t.last_totp_step
		FROM two_factor t JOIN platforms p ON p.id = t.platform_id WHERE t.user_id = $1`, userID).
		Scan(&st.UserID, &st.Status, &st.Sealed, &st.PlatformID, &st.PlatformSlug, &st.PlatformName, &exp, &enabled, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st.SetupExpiresAt = db.FromTS(exp)
	st.EnabledAt = enabled.Ptr()
	if last.Valid {
		st.LastStep = &last.Int64
	}
	return &st, nil
}

// loadEnabled returns the row of a user with two-factor authentication on,
// or a 400 when it is off (spec 2, Errors: "already disabled").
func (s *Service) loadEnabled(ctx context.Context, userID string) (*state, error) {
	st, err := load(ctx, s.DB, userID)
	if err != nil {
		return nil, err
	}
	if st == nil || st.Status != stateEnabled {
		return nil, apperr.Invalid("two-factor authentication is not enabled")
	}
	return st, nil
}

// secret opens the sealed TOTP secret; the user id is the associated data,
// so a sealed secret copied to another user's row does not open.
func (s *Service) secret(st *state) (string, error) {
	b, err := s.Box.Open(st.Sealed, []byte(st.UserID))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Status returns the two-factor state of the user the caller names (see
// Authorize; two_factor:read for API keys).
func (s *Service) Status(ctx context.Context, p *authn.Principal, userID string) (Status, error) {
	uid, err := s.Authorize(ctx, p, userID, Read)
	if err != nil {
		return Status{}, err
	}
	return StatusOf(ctx, s.DB, uid)
}

// StatusOf returns the two-factor state of userID without an access check,
// for areas that have done their own (the personal-data export, GraphQL).
func StatusOf(ctx context.Context, q db.Querier, userID string) (Status, error) {
	out := Status{}
	st, err := load(ctx, q, userID)
	if err != nil || st == nil || st.Status != stateEnabled {
		return out, err
	}
	out.Enabled = true
	out.EnabledAt = st.EnabledAt
	slug := st.PlatformSlug
	out.SetupPlatform, out.PlatformSlug = &slug, &slug
	err = q.QueryRowContext(ctx, `SELECT COUNT(*) FROM two_factor_backup_codes WHERE user_id = $1 AND used_at IS NULL`, userID).
		Scan(&out.BackupCodesRemaining)
	return out, err
}

// AcceptsCode reports whether a TOTP or backup code finishes the user's
// second step (authflow.SecondFactor): exactly when TOTP is on, since
// backup codes come with it.
func (s *Service) AcceptsCode(ctx context.Context, userID string) (bool, error) {
	return s.Enabled(ctx, userID)
}

// Enabled reports whether the user has two-factor authentication on
// (authflow.SecondFactor).
func (s *Service) Enabled(ctx context.Context, userID string) (bool, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM two_factor WHERE user_id = $1 AND status = $2`, userID, stateEnabled).Scan(&n)
	return n > 0, err
}
