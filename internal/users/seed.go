package users

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"hmid/internal/access"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/password"
)

// DefaultPlatforms are the login platforms seeded at first start.
var DefaultPlatforms = []struct {
	Slug, Name  string
	IsOAuth     bool
	TwoFactorOK bool
}{
	{"email", "Email", false, true},
	{"discord", "Discord", true, false},
	{"twitch", "Twitch", true, false},
	{"github", "GitHub", true, false},
	{"google", "Google", true, false},
}

var platformNamespace = uuid.MustParse("0d4f8c1e-2b7a-4c55-8e0b-6a1f3c9d2e47")

// PlatformID returns the deterministic id of a seeded platform, the same on
// every database so concurrent first starts agree.
func PlatformID(slug string) string {
	return uuid.NewSHA1(platformNamespace, []byte("platform:"+slug)).String()
}

// SeedPlatforms ensures the default platforms exist (idempotent; later edits
// of a platform's flags are kept).
func SeedPlatforms(ctx context.Context, d *db.DB, c clock.Clock) error {
	now := db.TS(c.Now())
	for _, p := range DefaultPlatforms {
		if _, err := d.ExecContext(ctx, `INSERT INTO platforms (id, name, slug, is_oauth, enabled, two_factor_supported, two_factor_required, registration_enabled, created_at, updated_at)
			VALUES ($1, $2, $3, $4, TRUE, $5, FALSE, TRUE, $6, $6) ON CONFLICT DO NOTHING`,
			PlatformID(p.Slug), p.Name, p.Slug, p.IsOAuth, p.TwoFactorOK, now); err != nil {
			return fmt.Errorf("seed platform %s: %w", p.Slug, err)
		}
	}
	return nil
}

// EnsurePlatform makes sure a platform row exists for a generic sign-in
// provider (HMID_LOGIN_PROVIDERS): an OAuth platform named name, enabled and
// open for registration at first. An existing row, and an operator's later
// edits of it, are kept.
func EnsurePlatform(ctx context.Context, d *db.DB, c clock.Clock, slug, name string) error {
	now := db.TS(c.Now())
	if _, err := d.ExecContext(ctx, `INSERT INTO platforms (id, name, slug, is_oauth, enabled, two_factor_supported, two_factor_required, registration_enabled, created_at, updated_at)
		VALUES ($1, $2, $3, TRUE, TRUE, FALSE, FALSE, TRUE, $4, $4) ON CONFLICT DO NOTHING`,
		PlatformID(slug), name, slug, now); err != nil {
		return fmt.Errorf("add platform %s: %w", slug, err)
	}
	return nil
}

// EnsureAdmin makes sure a super-admin user with an email-platform account
// for email exists (HMID_ADMIN_EMAIL / HMID_ADMIN_PASSWORD). An existing
// account keeps its password; the user is made super admin and Admin.
func EnsureAdmin(ctx context.Context, d *db.DB, c clock.Clock, email, pass string) error {
	email = strings.ToLower(strings.TrimSpace(email))
	now := db.TS(c.Now())
	var userID string
	err := d.QueryRowContext(ctx, `SELECT user_id FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2`, PlatformID("email"), email).Scan(&userID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	hash := ""
	if userID == "" {
		if hash, err = password.Hash(pass); err != nil {
			return err
		}
	}
	return d.Tx(ctx, func(tx *db.Tx) error {
		if userID == "" {
			var err error
			userID, _, err = Create(ctx, tx, now, NewAccount{
				PlatformSlug: "email", PlatformUserID: email, Email: email,
				PasswordHash: hash, EmailVerified: true, SuperAdmin: true,
			})
			if err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET is_super_admin = TRUE, deleted_at = NULL, scheduled_deletion_at = NULL WHERE id = $1`, userID); err != nil {
			return err
		}
		for _, role := range []string{"role_admin", access.DefaultUserRole} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, userID, role, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// UsernameFrom derives a valid username candidate from a name or email:
// letters, digits and underscores, 3 to 30 characters.
func UsernameFrom(s string) string {
	if at := strings.IndexByte(s, '@'); at > 0 {
		s = s[:at]
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '.' || r == '-' || r == ' ':
			b.WriteByte('_')
		}
		if b.Len() >= 24 {
			break
		}
	}
	out := b.String()
	for len(out) < 3 {
		out += "_"
	}
	return out
}

// FreeUsername returns base, or base with a numeric suffix, that no user has
// yet (compared case-insensitively).
func FreeUsername(ctx context.Context, q db.Querier, base string) (string, error) {
	if len(base) > 24 {
		base = base[:24]
	}
	cand := base
	for i := 2; i < 10000; i++ {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE LOWER(username) = LOWER($1)`, cand).Scan(&n); err != nil {
			return "", err
		}
		if n == 0 {
			return cand, nil
		}
		cand = fmt.Sprintf("%s%d", base, i)
	}
	return "", errors.New("no free username")
}
