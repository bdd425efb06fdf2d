package auth

import (
	"context"
	"database/sql"
	"errors"

	"hmid/internal/apperr"
	"hmid/internal/password"
	"hmid/internal/users"
)

// ErrWrongConfirmation answers a confirmation with a password that is not
// the user's. The caller is signed in already, so saying which field is
// wrong reveals nothing.
var ErrWrongConfirmation = apperr.Invalid("the password is not correct")

// passwordOf returns the email login of the user and its password hash
// (invalid when there is none or no email login at all).
func (s *Service) passwordOf(ctx context.Context, userID string) (login string, hash sql.NullString, err error) {
	err = s.DB.QueryRowContext(ctx, `SELECT platform_user_id, password_hash FROM platform_accounts WHERE user_id = $1 AND platform_id = $2`,
		userID, users.PlatformID(Platform)).Scan(&login, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", sql.NullString{}, nil
	}
	return login, hash, err
}

// ConfirmPassword checks the password with which a signed-in user confirms
// an action of their own that needs more than a session (deleting the
// account). has is false, and nothing is checked, when the user has no
// password (they sign in only with providers). A missing or wrong password
// is a validation error. Attempts are reserved in the same allowance as
// failed logins of the account and from ip (see reserveLogin), so a stolen
// session gives no more guesses than the login page; only failures stay
// counted.
func (s *Service) ConfirmPassword(ctx context.Context, userID, pw, ip string) (has bool, err error) {
	login, hash, err := s.passwordOf(ctx, userID)
	if err != nil || !hash.Valid {
		return false, err
	}
	if pw == "" {
		return true, apperr.Invalid("password is required")
	}
	m := Meta{IP: ip}
	rsv, err := s.reserveLogin(ctx, NormalizeEmail(login), m)
	if err != nil {
		return true, err
	}
	if len(pw) > MaxPassword {
		password.VerifyDummy(pw)
		return true, ErrWrongConfirmation
	}
	ok, err := password.Verify(pw, hash.String)
	if err != nil && !errors.Is(err, password.ErrMalformed) {
		s.releaseLogin(ctx, rsv, m)
		return true, err
	}
	if !ok {
		return true, ErrWrongConfirmation
	}
	s.releaseLogin(ctx, rsv, m)
	return true, nil
}
