package users

import (
	"context"
	"time"

	"hmid/internal/db"
)

// The users row changes only through this package. These are the column
// writes that other packages make inside transactions of their own (an email
// change confirmed, a sign-in, a login linked, an administrator created):
// each checks nothing but writes one thing, because the rule that allows the
// change belongs to the caller's operation and is checked there first.

// SetEmail makes addr ("" clears it) the contact address of user id.
func SetEmail(ctx context.Context, q db.Querier, id, addr string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE users SET email = $1, updated_at = $2 WHERE id = $3`, nullable(addr), db.TS(now), id)
	return err
}

// FillEmail makes addr the contact address of user id only when they have
// none: linking an email login keeps an address the user chose.
func FillEmail(ctx context.Context, q db.Querier, id, addr string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE users SET email = $1, updated_at = $2 WHERE id = $3 AND (email IS NULL OR email = '')`, addr, db.TS(now), id)
	return err
}

// SetUsername renames user id; the caller has checked that name is free
// (the unique index refuses a race).
func SetUsername(ctx context.Context, q db.Querier, id, name string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE users SET username = $1, updated_at = $2 WHERE id = $3`, name, db.TS(now), id)
	return err
}

// SetPreferredLocale sets user id's language ("" for none: the browser's).
func SetPreferredLocale(ctx context.Context, q db.Querier, id, locale string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE users SET preferred_locale = $1, updated_at = $2 WHERE id = $3`, nullable(locale), db.TS(now), id)
	return err
}

// SetPrimaryAccount records accountID as user id's primary platform account
// (the caller flags the account itself).
func SetPrimaryAccount(ctx context.Context, q db.Querier, id, accountID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE users SET primary_platform_account_id = $1, updated_at = $2 WHERE id = $3`, accountID, db.TS(now), id)
	return err
}

// RecordLogin records that user id signed in through provider (a platform
// slug) at now. It leaves updated_at alone: signing in changes no profile.
func RecordLogin(ctx context.Context, q db.Querier, id, provider string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE users SET last_login_at = $1, last_login_provider = $2 WHERE id = $3`, db.TS(now), provider, id)
	return err
}

// MarkSuperAdmin flags user id as a super admin (the first administrator,
// made on the command line or from the environment).
func MarkSuperAdmin(ctx context.Context, q db.Querier, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE users SET is_super_admin = TRUE, updated_at = $1 WHERE id = $2`, db.TS(now), id)
	return err
}

// LockActive locks the row of user id, who is not deleted, until tx ends,
// so operations that read a user's state and then change it (a ban)
// serialize on PostgreSQL as they do on SQLite's single writer. NotFound
// when there is no such user.
func LockActive(ctx context.Context, tx *db.Tx, id string) error {
	// A write that changes nothing takes the row lock on every engine.
	return db.ExecOne(ctx, tx, "user", `UPDATE users SET updated_at = updated_at WHERE id = $1 AND deleted_at IS NULL`, id)
}
