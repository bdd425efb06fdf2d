package users

import (
	"context"
	"database/sql"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
)

// DeletionGrace is how long a soft-deleted account waits before it is purged
// (spec 2, Limits: account deletion grace period).
const DeletionGrace = 7 * 24 * time.Hour

// SupportedLocales are the locales a user may choose (spec 2, User:
// preferred_locale; the system setting email.supported_locales defaults to
// en and de). This is the one list the service checks against.
var SupportedLocales = []string{"en", "de"}

// Service holds the dependencies of the users area.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Epoch authn.Epoch // bumped after deletions and role changes
	Audit *audit.Writer
	Mail  Mailer       // mails users whose unverified address was released (NotifyReleased)
	Log   *slog.Logger // logs mails that could not be sent

	// Locales returns the supported locales (the system setting
	// email.supported_locales once the settings area provides it); nil means
	// SupportedLocales.
	Locales func(ctx context.Context) ([]string, error)

	// rows keeps user rows read outside transactions on SQLite (db.RowCache).
	rows db.RowCache[User]
}

// SupportedLocales returns the locales users may choose now: the ones
// SetLocale accepts, which the account console offers.
func (s *Service) SupportedLocales(ctx context.Context) ([]string, error) {
	if s.Locales == nil {
		return SupportedLocales, nil
	}
	return s.Locales(ctx)
}

// User is the user resource (spec 2, User).
type User struct {
	ID                       string     `json:"id"`
	Username                 string     `json:"username"`
	Email                    *string    `json:"email"`
	Name                     string     `json:"name"`
	AvatarURL                *string    `json:"avatar_url"`
	PrimaryPlatformAccountID *string    `json:"primary_platform_account_id"`
	CreatedAt                time.Time  `json:"created_at"`
	UpdatedAt                time.Time  `json:"updated_at"`
	LastLoginAt              *time.Time `json:"last_login_at"`
	DeletedAt                *time.Time `json:"deleted_at"`
	ScheduledDeletionAt      *time.Time `json:"scheduled_deletion_at"`
	PrivacyMode              bool       `json:"privacy_mode"`
	PreferredLocale          *string    `json:"preferred_locale"`
	AvatarsEnabled           bool       `json:"avatars_enabled"`
	IsSuperAdmin             bool       `json:"is_super_admin"`

	lastLoginProvider string
}

// Clone returns u with its pointed-to values copied, so a cached row and the
// copies handed out share nothing a caller could change.
func (u User) Clone() User {
	u.Email, u.AvatarURL, u.PrimaryPlatformAccountID, u.PreferredLocale = db.ClonePtr(u.Email), db.ClonePtr(u.AvatarURL), db.ClonePtr(u.PrimaryPlatformAccountID), db.ClonePtr(u.PreferredLocale)
	u.LastLoginAt, u.DeletedAt, u.ScheduledDeletionAt = db.ClonePtr(u.LastLoginAt), db.ClonePtr(u.DeletedAt), db.ClonePtr(u.ScheduledDeletionAt)
	return u
}

const userCols = `id, username, email, name, avatar_url, primary_platform_account_id, created_at, updated_at,
	last_login_at, deleted_at, scheduled_deletion_at, privacy_mode, preferred_locale, avatars_enabled, is_super_admin, last_login_provider`

func scanUser(row db.Scanner) (User, error) {
	var (
		u                            User
		email, avatar, primary, loc  sql.NullString
		provider                     sql.NullString
		c, up                        int64
		lastLogin, deleted, schedule db.NullTime
	)
	err := row.Scan(&u.ID, &u.Username, &email, &u.Name, &avatar, &primary, &c, &up,
		&lastLogin, &deleted, &schedule, &u.PrivacyMode, &loc, &u.AvatarsEnabled, &u.IsSuperAdmin, &provider)
	u.Email, u.AvatarURL, u.PrimaryPlatformAccountID, u.PreferredLocale = db.StringPtr(email), db.StringPtr(avatar), db.StringPtr(primary), db.StringPtr(loc)
	u.CreatedAt, u.UpdatedAt = db.FromTS(c), db.FromTS(up)
	u.LastLoginAt, u.DeletedAt, u.ScheduledDeletionAt = lastLogin.Ptr(), deleted.Ptr(), schedule.Ptr()
	u.lastLoginProvider = provider.String
	return u, err
}

// Get returns a user, soft-deleted ones included. Errors: NotFound.
// Outside a transaction on SQLite the row may come from the row cache.
func (s *Service) Get(ctx context.Context, q db.Querier, id string) (User, error) {
	cached := q == db.Querier(s.DB) && s.DB.Flavor == db.SQLite
	var version uint64
	if cached {
		version = s.DB.Version("users")
		if u, ok := s.rows.Get(id, version); ok {
			return u, nil
		}
	}
	u, err := scanUser(q.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id))
	if err != nil {
		return u, db.NotFoundOr(err, "user")
	}
	if cached {
		s.rows.Put(id, u, version)
	}
	return u, nil
}

// active returns a user that is not soft-deleted. A deleted account is
// reported as not found: it can only be restored or purged (accounts area).
func (s *Service) active(ctx context.Context, q db.Querier, id string) (User, error) {
	u, err := s.Get(ctx, q, id)
	if err == nil && u.DeletedAt != nil {
		return User{}, apperr.NotFoundf("user not found (the account is scheduled for deletion)")
	}
	return u, err
}

// mayManage enforces that only super admins (and system keys) change a
// super-admin account other than their own: holding users:write or
// users:delete must not be enough to take over or remove an administrator.
func mayManage(p *authn.Principal, target User) error {
	if target.IsSuperAdmin && !p.IsAdmin() && !p.IsSelf(target.ID) {
		return apperr.Forbiddenf("only a super admin may change another super admin")
	}
	return nil
}

// manageActive runs fn in a transaction on user id once the user is known
// to be active and p may manage them (mayManage): the frame of every change
// a manager makes to a live account.
func (s *Service) manageActive(ctx context.Context, p *authn.Principal, id string, fn func(tx *db.Tx, u User) error) error {
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := s.Manageable(ctx, tx, p, id)
		if err != nil {
			return err
		}
		return fn(tx, u)
	})
}

// Manageable reads the active user id that p may change (mayManage), for
// the changes made for others here and in the admin console. Errors:
// NotFound (also for an account scheduled for deletion), Forbidden
// (another super admin).
func (s *Service) Manageable(ctx context.Context, q db.Querier, p *authn.Principal, id string) (User, error) {
	u, err := s.active(ctx, q, id)
	if err != nil {
		return u, err
	}
	if err := mayManage(p, u); err != nil {
		return User{}, err
	}
	return u, nil
}

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_]{3,30}$`)

// ValidUsername checks the username rule of spec 2 (User, Limits): 3 to 30
// letters, digits or underscores. Errors: ValidationError.
func ValidUsername(name string) error {
	if !usernameRE.MatchString(name) {
		return apperr.Invalid("username must be 3 to 30 characters: letters, digits and underscores")
	}
	return nil
}

// emailTaken reports whether another user already uses email (case-insensitively).
func emailTaken(ctx context.Context, q db.Querier, email, exceptUserID string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE LOWER(email) = LOWER($1) AND id <> $2`, email, exceptUserID).Scan(&n)
	return n > 0, err
}

// actorIfOther is the audit actor when someone other than the user acted.
func actorIfOther(p *authn.Principal, userID string) string {
	if p == nil || p.UserID == userID {
		return ""
	}
	return p.Actor()
}

// validEmail is a deliberately loose check (one @, something on each side,
// no spaces); the address is proven by the mails sent to it, not by syntax.
func validEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	return ok && local != "" && domain != "" && !strings.ContainsAny(s, " \t\r\n") && !strings.Contains(domain, "@") && len(s) <= 254
}

// validURL accepts absolute http(s) URLs up to 2048 bytes.
func validURL(s string) bool {
	return len(s) <= 2048 && (strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) && !strings.ContainsAny(s, " \t\r\n")
}
