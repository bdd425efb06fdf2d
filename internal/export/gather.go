package export

import (
	"context"
	"database/sql"
	"time"

	"hmid/internal/db"
	"hmid/internal/export/archive"
)

// Gather collects the export of userID as of now, and the locale its report
// is written in (the user's preferred_locale, "en" when unset). Each part is
// one indexed query on the user's rows, so the cost does not grow with the
// size of the audit log or of other users' data.
func (h *Handler) Gather(ctx context.Context, userID string, now time.Time) (archive.Data, string, error) {
	d := archive.Data{ExportInfo: archive.ExportInfo{ExportedAt: now}}
	var (
		locale             sql.NullString
		created            int64
		lastLogin, deleted db.NullTime
		scheduled          db.NullTime
	)
	err := h.DB.QueryRowContext(ctx, `SELECT id, username, privacy_mode, avatars_enabled, created_at, last_login_at,
		preferred_locale, deleted_at, scheduled_deletion_at FROM users WHERE id = $1`, userID).
		Scan(&d.User.ID, &d.User.Username, &d.User.PrivacyMode, &d.User.AvatarsEnabled, &created, &lastLogin,
			&locale, &deleted, &scheduled)
	if err != nil {
		return d, "", isNoRows(err)
	}
	d.User.CreatedAt, d.User.LastLoginAt = db.FromTS(created), lastLogin.Ptr()
	d.DeletionStatus = archive.DeletionStatus{
		IsScheduledForDeletion: scheduled.Valid, ScheduledDeletionAt: scheduled.Ptr(),
		IsDeleted: deleted.Valid, DeletedAt: deleted.Ptr(),
	}
	lang := locale.String
	if lang == "" {
		lang = "en"
	}

	steps := []func() error{
		func() (err error) { d.PlatformAccounts, err = h.platformAccounts(ctx, userID); return },
		func() (err error) { d.Sessions, err = h.sessions(ctx, userID, now); return },
		func() (err error) { d.APIKeys, err = h.apiKeys(ctx, userID); return },
		func() (err error) { d.Roles, err = h.roles(ctx, userID); return },
		func() (err error) { d.ExportLogs, err = h.exportLogs(ctx, userID); return },
		func() (err error) { d.Passkeys, err = h.passkeys(ctx, userID); return },
	}
	if h.Apps != nil {
		steps = append(steps,
			func() (err error) { d.ConnectedApps, err = h.Apps.ConnectedApps(ctx, userID); return },
			func() (err error) { d.OwnedApps, err = h.Apps.OwnedApps(ctx, userID); return },
		)
	}
	if h.TwoFactor != nil {
		steps = append(steps, func() (err error) { d.TwoFactorAuth, err = h.TwoFactor.TwoFactorState(ctx, userID); return })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return d, "", err
		}
	}
	return d, lang, nil
}

func (h *Handler) platformAccounts(ctx context.Context, userID string) ([]archive.PlatformAccount, error) {
	return db.All(ctx, h.DB,
		func(row db.Scanner) (archive.PlatformAccount, error) {
			var a archive.PlatformAccount
			var user, email sql.NullString
			var created int64
			err := row.Scan(&a.Platform, &user, &email, &a.IsPrimary, &created)
			a.Username, a.Email, a.ConnectedAt = user.String, email.String, db.FromTS(created)
			return a, err
		},
		`SELECT p.name, pa.username, pa.email, pa.is_primary, pa.created_at
		FROM platform_accounts pa JOIN platforms p ON p.id = pa.platform_id
		WHERE pa.user_id = $1 ORDER BY pa.is_primary DESC, pa.created_at, pa.id`, userID)
}

// sessions lists the user's active sessions (not revoked, not expired); the
// archive masks their IP addresses.
func (h *Handler) sessions(ctx context.Context, userID string, now time.Time) ([]archive.Session, error) {
	return db.All(ctx, h.DB,
		func(row db.Scanner) (archive.Session, error) {
			var s archive.Session
			var ip string
			var created, expires, active int64
			err := row.Scan(&s.ID, &ip, &s.DeviceType, &s.BrowserName, &s.OSName, &s.Provider, &s.ProviderName, &created, &expires, &active)
			s.IPAddress = archive.IPAddress(ip)
			s.CreatedAt, s.ExpiresAt, s.LastActivityAt = db.FromTS(created), db.FromTS(expires), db.FromTS(active)
			return s, err
		},
		`SELECT s.id, s.ip_address, s.device_type, s.browser_name, s.os_name, s.provider,
		COALESCE(p.name, s.provider), s.created_at, s.expires_at, s.last_activity_at
		FROM sessions s LEFT JOIN platforms p ON p.slug = s.provider
		WHERE s.user_id = $1 AND s.revoked_at IS NULL AND s.expires_at > $2
		ORDER BY s.created_at DESC, s.id`, userID, db.TS(now))
}

// apiKeys describes the user's API keys by name and prefix; the key itself is
// stored only as a hash and so cannot appear.
func (h *Handler) apiKeys(ctx context.Context, userID string) ([]archive.APIKey, error) {
	return db.All(ctx, h.DB,
		func(row db.Scanner) (archive.APIKey, error) {
			var k archive.APIKey
			var scopes db.Strings
			var exp, used db.NullTime
			var created int64
			err := row.Scan(&k.Name, &k.KeyPrefix, &scopes, &k.IsActive, &exp, &used, &created)
			k.Scopes, k.ExpiresAt, k.LastUsedAt, k.CreatedAt = scopes, exp.Ptr(), used.Ptr(), db.FromTS(created)
			return k, err
		},
		`SELECT name, key_prefix, scopes, is_active, expires_at, last_used_at, created_at
		FROM api_keys WHERE user_id = $1 ORDER BY created_at, id`, userID)
}

func (h *Handler) roles(ctx context.Context, userID string) ([]string, error) {
	return db.All(ctx, h.DB, db.ScanString,
		`SELECT r.name FROM user_roles ur JOIN roles r ON r.id = ur.role_id WHERE ur.user_id = $1 ORDER BY r.name`, userID)
}

func (h *Handler) exportLogs(ctx context.Context, userID string) ([]archive.ExportLog, error) {
	return db.All(ctx, h.DB,
		func(row db.Scanner) (archive.ExportLog, error) {
			var l archive.ExportLog
			var at int64
			err := row.Scan(&at, &l.Format)
			l.ExportedAt = db.FromTS(at)
			return l, err
		},
		`SELECT exported_at, export_format FROM export_logs WHERE user_id = $1 ORDER BY exported_at DESC, id DESC`, userID)
}

// passkeys lists the user's passkeys by name and dates (issue 20); the
// credential id and public key stay out of the export.
func (h *Handler) passkeys(ctx context.Context, userID string) ([]archive.Passkey, error) {
	return db.All(ctx, h.DB,
		func(row db.Scanner) (archive.Passkey, error) {
			var p archive.Passkey
			var created int64
			var used db.NullTime
			err := row.Scan(&p.Name, &p.Synced, &created, &used)
			p.CreatedAt, p.LastUsedAt = db.FromTS(created), used.Ptr()
			return p, err
		},
		`SELECT name, backup_eligible, created_at, last_used_at FROM passkeys WHERE user_id = $1 ORDER BY created_at, id`, userID)
}
