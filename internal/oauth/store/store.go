// Package store owns hmid's OAuth tables, every oauth_* table, behind named
// methods with typed arguments: the provider's rules about codes, tokens,
// consents, clients, device authorizations, initial access tokens and
// signing keys are kept by the statements here, and package oauth decides
// with their answers.
//
// Where a rule must hold between racing requests (on one instance or many)
// it is one statement: a conditional UPDATE spends a code, a refresh token,
// a device authorization or an initial access token, so of racing requests
// exactly one gets the row (RFC 9700 §4.3.1 single-use codes, §4.14.2
// refresh rotation). The SQL is written once in PostgreSQL's dialect with $1
// placeholders and runs on SQLite too; rotation alone has two forms,
// because SQLite has no writing CTEs.
//
// Methods that take a db.Querier run in the caller's transaction (or on the
// database), so the service composes them with its audit records
// atomically; the others run on their own. A row that does not exist is
// ErrNotFound; every other error is the database's own, which
// apperr.IsUnavailable recognises when the database cannot answer.
package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"hmid/internal/db"
)

// Store reads and writes the OAuth tables of one database.
type Store struct {
	db *db.DB
}

// New returns the store of d.
func New(d *db.DB) *Store { return &Store{db: d} }

// ErrNotFound is the answer of a method whose row does not exist (or is
// not in the state the method needs). It is sql.ErrNoRows, so a caller may
// test for either.
var ErrNotFound = sql.ErrNoRows

// usableSQL is the condition, over users u, that the user may still authorize
// clients: not deleted and not banned at the time bound to $2.
const usableSQL = `(u.deleted_at IS NULL AND NOT ` + db.UserBannedSQL + `)`

// UserUsable reports whether a user exists, is not deleted and not banned
// at now, through q. A user who does not exist is not usable; only the
// database's errors are errors.
func (s *Store) UserUsable(ctx context.Context, q db.Querier, userID string, now time.Time) (bool, error) {
	var usable bool
	err := q.QueryRowContext(ctx, `SELECT `+usableSQL+` FROM users u WHERE u.id = $1`, userID, db.TS(now)).Scan(&usable)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return usable, err
}

// Owner reads the standing of a client's owner at now: whether they are a
// super admin and whether they may still authorize clients (usable). An
// owner who does not exist is ErrNotFound.
func (s *Store) Owner(ctx context.Context, userID string, now time.Time) (superAdmin, usable bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT u.is_super_admin, `+usableSQL+` FROM users u WHERE u.id = $1`, userID, db.TS(now)).Scan(&superAdmin, &usable)
	return superAdmin, usable, err
}

// nullStr is a TEXT value for the database: NULL for "".
func nullStr(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// nullPtr is a TEXT value for the database: NULL for nil or "".
func nullPtr(p *string) any {
	if p == nil {
		return nil
	}
	return nullStr(*p)
}
