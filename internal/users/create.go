package users

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"

	"hmid/internal/access"
	"hmid/internal/apperr"
	"hmid/internal/db"
)

// NewAccount describes a user to create together with their first platform account.
type NewAccount struct {
	PlatformSlug   string // email, discord, …
	PlatformUserID string // provider's user id; for email, the lower-cased address
	Username       string // wanted username; made valid and unique
	Name           string // display name
	Email          string // the user's address
	// AccountEmail is the address on the platform account when it differs
	// from Email: an unverified address another user holds stays off the
	// user (SignIn). "" means Email.
	AccountEmail  string
	AvatarURL     string
	PasswordHash  string // email platform only
	EmailVerified bool
	SuperAdmin    bool
}

// Create inserts a user, their primary platform account and the default
// User role inside q (a transaction), at time now (Unix microseconds). It
// returns the user and account ids. A taken platform account gives a unique
// violation (check with db.IsUniqueViolation).
func Create(ctx context.Context, q db.Querier, now int64, a NewAccount) (userID, accountID string, err error) {
	userID, accountID = uuid.NewString(), uuid.NewString()
	base := a.Username
	if base == "" {
		base = a.Name
	}
	if base == "" {
		base = a.Email
	}
	base = UsernameFrom(base)
	username, err := FreeUsername(ctx, q, base)
	if err != nil {
		return "", "", err
	}
	name := strings.TrimSpace(a.Name)
	if name == "" {
		name = username
	}
	for attempt := 0; ; attempt++ {
		inserted, err := insertUser(ctx, q, userID, username, name, accountID, now, a)
		if err != nil {
			return "", "", err
		}
		if inserted {
			break
		}
		// A concurrent sign-up took the name between FreeUsername and the
		// INSERT (both saw it free). Every racer derives the same next
		// numbered name, so try random suffixes instead.
		if attempt == maxUsernameAttempts {
			return "", "", apperr.Conflictf("no free username could be derived from %q; retry", base)
		}
		username = randomSuffixed(base)
		if strings.TrimSpace(a.Name) == "" {
			name = username
		}
	}
	accountEmail := a.AccountEmail
	if accountEmail == "" {
		accountEmail = a.Email
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO platform_accounts (id, user_id, platform_id, platform_user_id, username, email, avatar_url, password_hash, email_verified, is_primary, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, TRUE, $10, $10)`,
		accountID, userID, PlatformID(a.PlatformSlug), a.PlatformUserID, username, nullable(strings.ToLower(accountEmail)), nullable(a.AvatarURL), nullable(a.PasswordHash), a.EmailVerified, now); err != nil {
		return "", "", err
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, $2, $3)`, userID, access.DefaultUserRole, now); err != nil {
		return "", "", err
	}
	return userID, accountID, nil
}

// maxUsernameAttempts bounds the random-suffix retries of Create; with four
// random digits even many concurrent sign-ups of one name end in a few.
const maxUsernameAttempts = 8

// insertUser inserts the user row unless its username is taken, which
// ON CONFLICT DO NOTHING reports as no row instead of failing the
// transaction (on PostgreSQL a failed statement aborts the whole
// transaction; waiting on a concurrent insert of the same name ends the same
// way once that one commits).
func insertUser(ctx context.Context, q db.Querier, userID, username, name, accountID string, now int64, a NewAccount) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO users (id, username, email, name, avatar_url, is_super_admin, primary_platform_account_id, last_login_provider, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT DO NOTHING`,
		userID, username, nullable(strings.ToLower(a.Email)), name, nullable(a.AvatarURL), a.SuperAdmin, accountID, a.PlatformSlug, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// randomSuffixed is base (at most 24 characters) with four random digits:
// still within the 30 characters of a username.
func randomSuffixed(base string) string {
	if len(base) > 24 {
		base = base[:24]
	}
	return fmt.Sprintf("%s%04d", base, rand.IntN(10000))
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
