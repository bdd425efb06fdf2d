package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"hmid/internal/db"
)

// Code is an authorization code as IssueCode stores it, and as far as the
// token request needs it back (RFC 6749 §4.1.2: bound to its client,
// redirect URI and PKCE challenge).
type Code struct {
	Hash        string // SHA-256 of the code; the code itself is never stored
	FamilyID    string // the token family the code's tokens will join
	ClientID    string
	UserID      string
	RedirectURI string
	Scopes      []string
	Nonce       string
	Challenge   string // the S256 code_challenge, "" without PKCE
	AuthTime    time.Time
	Created     time.Time
	Expires     time.Time
	SessionID   string // the browser session that granted it, "" for none
	Context     string // the authentication context, as JSON
}

// IssueCode stores a new authorization code through q. The authentication
// context rides on the code row, so it is stored with the code, atomically,
// and read back when the code is redeemed.
func (s *Store) IssueCode(ctx context.Context, q db.Querier, c Code) error {
	_, err := q.ExecContext(ctx, `INSERT INTO oauth_codes (code_hash, family_id, client_id, user_id, redirect_uri, scopes, nonce, code_challenge, auth_time, created_at, expires_at, session_id, auth_context)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		c.Hash, c.FamilyID, c.ClientID, c.UserID, c.RedirectURI, db.JSON(c.Scopes), c.Nonce, c.Challenge,
		db.TS(c.AuthTime), db.TS(c.Created), db.TS(c.Expires), nullStr(c.SessionID), c.Context)
	return err
}

// RedeemedCode is a code RedeemCode burnt, with the standing of its user.
type RedeemedCode struct {
	Code
	// Usable: the user may still authorize clients (not deleted, not banned).
	Usable bool
}

// redeemCodeSQL burns an unused code and returns it with the state of its
// user, in one statement: of racing redemptions exactly one gets the row.
// $1 is the code hash, $2 now (db.UserBannedSQL reads it as $2).
const redeemCodeSQL = `UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL
	RETURNING family_id, client_id, user_id, redirect_uri, scopes, nonce, code_challenge, auth_time, expires_at, session_id, auth_context,
	(SELECT ` + usableSQL + ` FROM users u WHERE u.id = oauth_codes.user_id)`

// ErrCodeReplayed is RedeemCode's answer to a code that was redeemed before.
var ErrCodeReplayed = errors.New("store: the authorization code was used before")

// RedeemCode burns the code whose hash is hash, in tx, whatever the request
// then makes of it: a code is good for one attempt (RFC 6749 §4.1.2). Of
// racing redemptions exactly one gets the code. An unknown code is
// ErrNotFound. A code used before is ErrCodeReplayed, and every token
// issued from it is revoked first (RFC 9700 §4.3.1: whoever holds it, the
// tokens it bought are no longer trustworthy), so the caller commits tx.
func (s *Store) RedeemCode(ctx context.Context, tx db.Querier, hash string, now time.Time) (RedeemedCode, error) {
	var (
		c                 RedeemedCode
		scopes            db.Strings
		authTime, expires int64
		session           sql.NullString
		usable            sql.NullBool // NULL: the user is gone
	)
	err := tx.QueryRowContext(ctx, redeemCodeSQL, hash, db.TS(now)).
		Scan(&c.FamilyID, &c.ClientID, &c.UserID, &c.RedirectURI, &scopes, &c.Nonce, &c.Challenge, &authTime, &expires,
			&session, &c.Context, &usable)
	if errors.Is(err, sql.ErrNoRows) {
		return c, s.replayed(ctx, tx, hash, now)
	}
	c.Hash, c.Scopes, c.AuthTime, c.Expires, c.SessionID, c.Usable = hash, scopes, db.FromTS(authTime), db.FromTS(expires), session.String, usable.Bool
	return c, err
}

// replayed tells an unknown code (ErrNotFound) from one used before, whose
// family it revokes (ErrCodeReplayed).
func (s *Store) replayed(ctx context.Context, tx db.Querier, hash string, now time.Time) error {
	var family string
	err := tx.QueryRowContext(ctx, `SELECT family_id FROM oauth_codes WHERE code_hash = $1`, hash).Scan(&family)
	if err != nil {
		return err // ErrNotFound for an unknown code
	}
	if _, err := s.RevokeFamily(ctx, tx, family, now); err != nil {
		return err
	}
	return ErrCodeReplayed
}
