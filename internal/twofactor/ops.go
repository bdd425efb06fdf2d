package twofactor

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"image/png"
	"strings"
	"time"

	"github.com/pquerna/otp/totp"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/mail"
)

// qrSize is the width and height in pixels of the QR code image.
const qrSize = 256

// secretSize is the TOTP key length: 160 bits, the length RFC 4226 §4
// recommends for the shared secret (R6).
const secretSize = 20

// actorOf returns who acted when it is not the user themself, for the
// audit log's actor_id: the acting user, else the API key.
func actorOf(p *authn.Principal, userID string) string {
	if p == nil || p.UserID == userID {
		return ""
	}
	return p.Actor()
}

// platform is a login platform as two-factor setup needs it.
type platform struct {
	ID, Slug, Name     string
	Enabled, Supported bool
}

// findPlatform looks a platform up by id or slug; unknown is a 404.
func (s *Service) findPlatform(ctx context.Context, idOrSlug string) (platform, error) {
	var pl platform
	err := s.DB.QueryRowContext(ctx, `SELECT id, slug, name, enabled, two_factor_supported FROM platforms WHERE id = $1 OR slug = LOWER($1)`, idOrSlug).
		Scan(&pl.ID, &pl.Slug, &pl.Name, &pl.Enabled, &pl.Supported)
	return pl, db.NotFoundOr(err, "platform")
}

// user is what notifications and the otpauth account name need of a user.
type user struct {
	Username, Email, Locale, LoginProvider string
}

func (s *Service) user(ctx context.Context, userID string) (user, error) {
	var u user
	var email, locale, provider sql.NullString
	err := s.DB.QueryRowContext(ctx, `SELECT u.username,
		COALESCE(u.email, (SELECT pa.email FROM platform_accounts pa WHERE pa.user_id = u.id AND pa.email IS NOT NULL ORDER BY pa.is_primary DESC, pa.created_at LIMIT 1)),
		u.preferred_locale, u.last_login_provider
		FROM users u WHERE u.id = $1`, userID).Scan(&u.Username, &email, &locale, &provider)
	if errors.Is(err, sql.ErrNoRows) {
		return u, apperr.NotFoundf("user not found")
	}
	u.Email, u.Locale, u.LoginProvider = email.String, locale.String, provider.String
	return u, err
}

// SetupInput is the body of a setup: the platform (id or slug; default the
// email platform) and the user acted on ("" for the caller).
type SetupInput struct {
	PlatformID string `json:"platform_id"`
	UserID     string `json:"user_id"`
}

// Setup starts (or restarts) a setup: a new secret, sealed at rest, valid for
// SetupLifetime. Errors: 404 unknown platform, 400 platform without
// two-factor support or already enabled; see Authorize for 400/403/404.
func (s *Service) Setup(ctx context.Context, p *authn.Principal, in SetupInput) (SetupResult, error) {
	uid, err := s.Authorize(ctx, p, in.UserID, Write)
	if err != nil {
		return SetupResult{}, err
	}
	ref := strings.TrimSpace(in.PlatformID)
	if ref == "" {
		ref = "email"
	}
	pl, err := s.findPlatform(ctx, ref)
	if err != nil {
		return SetupResult{}, err
	}
	if !pl.Supported {
		return SetupResult{}, apperr.Invalid("platform %s does not support two-factor authentication", pl.Slug)
	}
	if !pl.Enabled {
		return SetupResult{}, apperr.Invalid("platform %s is disabled", pl.Slug)
	}
	u, err := s.user(ctx, uid)
	if err != nil {
		return SetupResult{}, err
	}
	account := u.Username
	if account == "" {
		account = u.Email
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: Issuer, AccountName: account, SecretSize: secretSize, Digits: digits})
	if err != nil {
		return SetupResult{}, err
	}
	img, err := key.Image(qrSize, qrSize)
	if err != nil {
		return SetupResult{}, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return SetupResult{}, err
	}
	sealed, err := s.Box.Seal([]byte(key.Secret()), []byte(uid))
	if err != nil {
		return SetupResult{}, err
	}
	now := s.Clock.Now()
	exp := now.Add(SetupLifetime)
	// One statement that cannot overwrite an enabled row: a setup racing
	// with a verify either lands before it (and the verify fails because
	// the secret changed) or finds the row enabled.
	res, err := s.DB.ExecContext(ctx, `INSERT INTO two_factor (user_id, status, secret_sealed, platform_id, setup_expires_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (user_id) DO UPDATE SET secret_sealed = excluded.secret_sealed, platform_id = excluded.platform_id,
			setup_expires_at = excluded.setup_expires_at, last_totp_step = NULL, updated_at = excluded.updated_at
		WHERE two_factor.status = $2`,
		uid, statePending, sealed, pl.ID, db.TS(exp), db.TS(now))
	if err != nil {
		return SetupResult{}, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return SetupResult{}, apperr.Invalid("two-factor authentication is already enabled")
	}
	return SetupResult{
		Secret:       key.Secret(),
		QRCodeURL:    key.URL(),
		QRCodeImage:  "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()),
		ExpiresAt:    exp,
		PlatformSlug: pl.Slug,
	}, nil
}

// Verify finishes a setup with a TOTP code within SetupLifetime: two-factor
// authentication is on, BackupCodeCount backup codes are returned this once,
// and the user gets a confirmation mail. Errors: 400 no setup, already
// enabled, setup expired, invalid code; 429 too many wrong codes.
func (s *Service) Verify(ctx context.Context, p *authn.Principal, userID, code string, c Client) (CodesResult, error) {
	uid, err := s.Authorize(ctx, p, userID, Write)
	if err != nil {
		return CodesResult{}, err
	}
	st, err := load(ctx, s.DB, uid)
	if err != nil {
		return CodesResult{}, err
	}
	switch {
	case st == nil:
		return CodesResult{}, apperr.Invalid("no two-factor setup in progress; start one with POST /v1/users/me/2fa/setup")
	case st.Status == stateEnabled:
		return CodesResult{}, apperr.Invalid("two-factor authentication is already enabled")
	case !s.Clock.Now().Before(st.SetupExpiresAt):
		return CodesResult{}, apperr.Invalid("the two-factor setup expired; start it again")
	}
	at := &attempt{userID: uid, actorID: actorOf(p, uid), client: c, operation: opVerify}
	pr, err := s.check(ctx, st, code, at)
	if err != nil {
		return CodesResult{}, err
	}
	now := s.Clock.Now()
	codes, rows, err := s.newBackupCodes(uid)
	if err != nil {
		return CodesResult{}, s.settle(ctx, at, pr.method, err)
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		// Conditional on the very setup that was checked: a parallel verify
		// (which enabled it first) or a new setup (another secret) wins.
		res, err := tx.ExecContext(ctx, `UPDATE two_factor SET status = $1, enabled_at = $2, last_totp_step = $3, updated_at = $2
			WHERE user_id = $4 AND status = $5 AND secret_sealed = $6 AND setup_expires_at > $2`,
			stateEnabled, db.TS(now), pr.step, uid, statePending, st.Sealed)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return apperr.Invalid("two-factor authentication is already enabled or the setup was restarted")
		}
		if err := replaceBackupCodes(ctx, tx, uid, rows, now); err != nil {
			return err
		}
		return s.record(ctx, tx, at,
			event{audit.TwoFAVerified, "Two-factor code verified", map[string]any{"operation": opVerify, "method": methodTOTP}},
			event{audit.TwoFAEnabled, "Two-factor authentication enabled on " + st.PlatformName, map[string]any{"platform": st.PlatformSlug}})
	})
	if err := s.settle(ctx, at, pr.method, err); err != nil {
		return CodesResult{}, err
	}
	s.notify(ctx, uid, mail.KindTwoFactorEnabled, st.PlatformName, now)
	return CodesResult{
		Success:      true,
		BackupCodes:  codes,
		Message:      "Two-factor authentication is enabled. Store these backup codes in a safe place; they are shown only once.",
		PlatformSlug: st.PlatformSlug,
	}, nil
}

// Disable turns two-factor authentication off with a TOTP or backup code:
// the secret and all backup codes are removed and the user gets an alert
// mail. Errors: 400 not enabled, invalid code; 429 too many wrong codes.
func (s *Service) Disable(ctx context.Context, p *authn.Principal, userID, code string, c Client) (DisableResult, error) {
	uid, err := s.Authorize(ctx, p, userID, Write)
	if err != nil {
		return DisableResult{}, err
	}
	at := &attempt{userID: uid, actorID: actorOf(p, uid), client: c, operation: opDisable, allowBackup: true}
	st, pr, err := s.checkEnabled(ctx, at, code)
	if err != nil {
		return DisableResult{}, err
	}
	now := s.Clock.Now()
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := spend(ctx, tx, uid, pr, now); err != nil {
			return err
		}
		if err := removeEnabled(ctx, tx, uid); err != nil {
			return err
		}
		return s.record(ctx, tx, at, event{audit.TwoFADisabled, "Two-factor authentication disabled", map[string]any{"platform": st.PlatformSlug, "method": pr.method}})
	})
	if err := s.settle(ctx, at, pr.method, err); err != nil {
		return DisableResult{}, err
	}
	s.notify(ctx, uid, mail.KindTwoFactorDisabled, st.PlatformName, now)
	return DisableResult{Success: true, Message: "Two-factor authentication is disabled."}, nil
}

// RegenerateBackupCodes replaces every backup code with BackupCodeCount new
// ones after a TOTP code (a backup code is refused: it must not be able to
// mint more of its kind). Errors: 400 not enabled, invalid or backup code;
// 429 too many wrong codes.
func (s *Service) RegenerateBackupCodes(ctx context.Context, p *authn.Principal, userID, code string, c Client) (CodesResult, error) {
	uid, err := s.Authorize(ctx, p, userID, Write)
	if err != nil {
		return CodesResult{}, err
	}
	at := &attempt{userID: uid, actorID: actorOf(p, uid), client: c, operation: opRegenerate}
	st, pr, err := s.checkEnabled(ctx, at, code)
	if err != nil {
		return CodesResult{}, err
	}
	codes, rows, err := s.newBackupCodes(uid)
	if err != nil {
		return CodesResult{}, s.settle(ctx, at, pr.method, err)
	}
	now := s.Clock.Now()
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := spend(ctx, tx, uid, pr, now); err != nil {
			return err
		}
		if err := replaceBackupCodes(ctx, tx, uid, rows, now); err != nil {
			return err
		}
		return s.record(ctx, tx, at, event{audit.TwoFABackupRegenerated, "Two-factor backup codes regenerated", map[string]any{"count": BackupCodeCount}})
	})
	if err := s.settle(ctx, at, pr.method, err); err != nil {
		return CodesResult{}, err
	}
	s.notify(ctx, uid, mail.KindBackupCodesRegenerated, st.PlatformName, now)
	return CodesResult{
		Success:      true,
		BackupCodes:  codes,
		Message:      "New backup codes generated; the previous codes no longer work. They are shown only once.",
		PlatformSlug: st.PlatformSlug,
	}, nil
}

// event is one successful audit event of an operation.
type event struct {
	typ, description string
	meta             map[string]any
}

// record writes the successful audit events of one operation inside tx.
func (s *Service) record(ctx context.Context, tx *db.Tx, at *attempt, events ...event) error {
	for _, e := range events {
		if _, err := s.Audit.Record(ctx, tx, audit.Event{
			UserID: at.userID, ActorID: at.actorID, EventType: e.typ, ResourceType: "two_factor", ResourceID: at.userID,
			IPAddress: at.client.IPAddress, UserAgent: at.client.UserAgent, SourceService: at.client.SourceService,
			Description: e.description, Metadata: e.meta,
		}); err != nil {
			return err
		}
	}
	return nil
}

// notify sends a two-factor notification mail in the user's language. The
// change it reports is committed already, so a mail that cannot be sent is
// logged, not returned as an error.
func (s *Service) notify(ctx context.Context, userID, kind, platformName string, at time.Time) {
	u, err := s.user(ctx, userID)
	if err != nil || u.Email == "" {
		if err != nil {
			s.Log.ErrorContext(ctx, "two-factor mail: load user", "user_id", userID, "kind", kind, "error", err)
		}
		return
	}
	msg, err := mail.Render(kind, u.Locale, mail.Data{Name: u.Username, PlatformName: platformName, Time: at})
	if err == nil {
		msg.To = u.Email
		err = s.Mail.Send(ctx, msg)
	}
	if err != nil {
		s.Log.ErrorContext(ctx, "two-factor mail not sent", "user_id", userID, "kind", kind, "error", err)
	}
}

// Requirement reports whether the user must use two-factor authentication:
// a role of theirs has requires_two_factor, or the platform they last logged
// in with has two_factor_required (see Authorize; two_factor:read for API keys).
func (s *Service) Requirement(ctx context.Context, p *authn.Principal, userID string) (Requirement, error) {
	uid, err := s.Authorize(ctx, p, userID, Read)
	if err != nil {
		return Requirement{}, err
	}
	return s.requirement(ctx, uid, "")
}

// requirement computes the requirement of userID; platformSlug names the
// login platform ("" for the user's last one).
func (s *Service) requirement(ctx context.Context, userID, platformSlug string) (Requirement, error) {
	names, err := db.All(ctx, s.DB, db.ScanString, `SELECT r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id
		WHERE ur.user_id = $1 AND r.requires_two_factor ORDER BY r.name`, userID)
	if err != nil {
		return Requirement{RequiredByRoles: []string{}}, err
	}
	out := Requirement{RequiredByRoles: names}
	if platformSlug == "" {
		u, err := s.user(ctx, userID)
		if err != nil {
			return out, err
		}
		platformSlug = u.LoginProvider
	}
	var platformName string
	if platformSlug != "" {
		err := s.DB.QueryRowContext(ctx, `SELECT name FROM platforms WHERE slug = $1 AND two_factor_required`, platformSlug).Scan(&platformName)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return out, err
		}
	}
	if out.Enabled, err = s.Enabled(ctx, userID); err != nil {
		return out, err
	}
	totp := out.Enabled
	if !out.Enabled && s.Others != nil {
		if out.Enabled, err = s.Others(ctx, userID); err != nil {
			return out, err
		}
	}
	var supported int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM platforms WHERE enabled AND two_factor_supported`).Scan(&supported); err != nil {
		return out, err
	}
	out.CanEnable = !totp && supported > 0
	var reasons []string
	if len(out.RequiredByRoles) > 0 {
		reasons = append(reasons, "required by role "+strings.Join(out.RequiredByRoles, ", "))
	}
	if platformName != "" {
		out.RequiredByPlatform = platformName
		reasons = append(reasons, "required by login platform "+platformName)
	}
	if len(reasons) > 0 {
		out.Required = true
		r := strings.Join(reasons, "; ")
		out.Reason = &r
	}
	return out, nil
}

// SetupRequired reports whether the user must set up two-factor
// authentication before a login completes: it is required (by a role, or by
// platformSlug, "" meaning the user's last login platform) and not on yet
// (authflow.SecondFactor).
func (s *Service) SetupRequired(ctx context.Context, userID, platformSlug string) (bool, error) {
	r, err := s.requirement(ctx, userID, platformSlug)
	if err != nil {
		return false, err
	}
	return r.Required && !r.Enabled, nil
}

// VerifyLogin checks the second factor of a login: a TOTP or backup code,
// single use, throttled with the same per-user counter as the REST
// operations. Success is audited as 2fa_verified, a wrong code as
// login_failed (the login area records the login itself). Errors: 400 when
// two-factor authentication is off or the code is wrong, 429 when throttled
// (authflow.SecondFactor).
func (s *Service) VerifyLogin(ctx context.Context, userID, code, ip, userAgent string) error {
	at := &attempt{userID: userID, client: Client{IPAddress: ip, UserAgent: userAgent}, operation: opLogin, allowBackup: true}
	return s.verifyCode(ctx, at, code, "at login")
}

// removeEnabled deletes uid's enabled two-factor setup and backup codes in
// tx. It is conditional on the setup still being on, so of two racing
// removals (a disable and an admin reset, say) only one succeeds; the other
// gets a validation error.
func removeEnabled(ctx context.Context, tx *db.Tx, uid string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM two_factor WHERE user_id = $1 AND status = $2`, uid, stateEnabled)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return apperr.Invalid("two-factor authentication is not enabled")
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM two_factor_backup_codes WHERE user_id = $1`, uid)
	return err
}
