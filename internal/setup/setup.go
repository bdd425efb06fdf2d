// Package setup brings a new installation to its first administrator
// without a database client (issue 22). While no super admin exists, every
// start of the server issues a one-time setup link, /setup?token=…, which it
// prints and logs; the setup page (internal/web/signin) creates the first
// super admin with an email address and a password through CreateFirst.
// From the shell, hmid admin create calls CreateOrPromote, which creates a
// super admin or makes an existing user one. HMID_ADMIN_EMAIL and
// HMID_ADMIN_PASSWORD keep working through EnsureFromEnv, which also says
// when the variable's password no longer signs in.
//
// A setup token carries 256 random bits and is stored only as its SHA-256
// hash, like every token of hmid. It works until it is used or until a
// super admin exists, however that admin came to be.
package setup

import (
	"context"
	"database/sql"
	"errors"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"hmid/internal/access"
	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/oauth"
	"hmid/internal/password"
	"hmid/internal/sessions"
	"hmid/internal/token"
	"hmid/internal/users"
)

// TokenPrefix is the prefix of setup tokens.
const TokenPrefix = "hm_su_"

// Path is the setup page the link points to, with ?token=….
const Path = "/setup"

// maxEmail is the longest address accepted (RFC 5321 §4.5.3.1.3).
const maxEmail = 254

// Service issues setup links and creates administrators.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Audit *audit.Writer
	// CheckPassword applies the rule of new passwords (the login
	// service's, so the first administrator meets the same policy as
	// everyone); nil means at least 8 characters.
	CheckPassword func(ctx context.Context, pw string) error
	// HashPassword hashes a password; nil means password.Hash.
	HashPassword func(string) (string, error)
	// Epoch is bumped when sessions end (a password set for an existing
	// user), so every instance stops honouring them at once; nil: none.
	Epoch authn.Epoch
}

// errBadToken is the one answer for an unknown or used token, or one that
// no longer works because an administrator exists.
var errBadToken = apperr.Bad("this setup link is invalid or was used already; an administrator exists, sign in instead")

// HasAdmin reports whether an active super admin exists.
func (s *Service) HasAdmin(ctx context.Context) (bool, error) {
	return hasAdmin(ctx, s.DB)
}

func hasAdmin(ctx context.Context, q db.Querier) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE is_super_admin AND deleted_at IS NULL`).Scan(&n)
	return n > 0, err
}

// Link returns a new setup link on publicURL while no super admin exists,
// and "" once one does (then the tokens left over are deleted).
func (s *Service) Link(ctx context.Context, publicURL string) (string, error) {
	has, err := s.HasAdmin(ctx)
	if err != nil {
		return "", err
	}
	if has {
		_, err := s.DB.ExecContext(ctx, `DELETE FROM setup_tokens`)
		return "", err
	}
	tok := token.New(TokenPrefix)
	if _, err := s.DB.ExecContext(ctx, `INSERT INTO setup_tokens (id, token_hash, created_at) VALUES ($1, $2, $3)`,
		uuid.NewString(), token.Hash(tok), db.TS(s.Clock.Now())); err != nil {
		return "", err
	}
	return strings.TrimRight(publicURL, "/") + Path + "?token=" + url.QueryEscape(tok), nil
}

// Check reports whether tok is a setup token that works now. It changes
// nothing. Errors: BadRequest.
func (s *Service) Check(ctx context.Context, tok string) error {
	if !token.HasShape(tok, TokenPrefix) {
		return errBadToken
	}
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM setup_tokens WHERE token_hash = $1 AND used_at IS NULL
		AND NOT EXISTS (SELECT 1 FROM users WHERE is_super_admin AND deleted_at IS NULL)`, token.Hash(tok)).Scan(&n)
	if err != nil {
		return err
	}
	if n == 0 {
		return errBadToken
	}
	return nil
}

// Admin is an administrator created or promoted.
type Admin struct {
	UserID   string
	Username string
	Email    string
	// Created: a new user; else an existing one was made super admin.
	Created bool
}

// CreateFirst uses up tok and creates the first super admin with an
// email-platform account for email and the password pw (the address counts
// as verified: the holder of the setup link vouches for it). ev carries the
// request's address and source. Errors: BadRequest (the token), Validation
// (email, password), Conflict (the address belongs to a user already; such
// a user is made administrator with hmid admin create instead).
func (s *Service) CreateFirst(ctx context.Context, tok, email, pw string, ev audit.Event) (Admin, error) {
	if err := s.Check(ctx, tok); err != nil {
		return Admin{}, err
	}
	email, hash, err := s.credentials(ctx, email, pw)
	if err != nil {
		return Admin{}, err
	}
	var a Admin
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		now := s.Clock.Now()
		// Every open token is used up in one statement, so of two setups
		// racing (with two links) only the first finds its token open.
		used, err := db.All(ctx, tx, db.ScanString, `UPDATE setup_tokens SET used_at = $1 WHERE used_at IS NULL RETURNING token_hash`, db.TS(now))
		if err != nil {
			return err
		}
		if has, err := hasAdmin(ctx, tx); err != nil || has || !slices.Contains(used, token.Hash(tok)) {
			if err == nil {
				err = errBadToken
			}
			return err
		}
		if owner, err := userByEmail(ctx, tx, email); err != nil || owner != "" {
			if err == nil {
				err = apperr.OnField("email", apperr.Conflictf("this email address belongs to a user already; make that user an administrator with: hmid admin create --email %s", email))
			}
			return err
		}
		a, err = s.create(ctx, tx, email, hash, now, ev, "First administrator created with the setup link")
		return err
	})
	return a, err
}

// credentials checks an address and a password and returns the address
// lower-cased and the password's hash.
func (s *Service) credentials(ctx context.Context, email, pw string) (string, string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if !validEmail(email) {
		return "", "", apperr.OnField("email", apperr.Invalid("email must be a valid email address"))
	}
	if err := s.checkPassword(ctx, pw); err != nil {
		return "", "", apperr.OnField("password", err)
	}
	hash, err := s.hash(pw)
	return email, hash, err
}

// create inserts a super admin with an email-platform account, the Admin
// and the default roles, and the user_created event.
func (s *Service) create(ctx context.Context, tx *db.Tx, email, hash string, now time.Time, ev audit.Event, why string) (Admin, error) {
	id, _, err := users.Create(ctx, tx, db.TS(now), users.NewAccount{
		PlatformSlug: "email", PlatformUserID: email, Email: email,
		PasswordHash: hash, EmailVerified: true, SuperAdmin: true,
	})
	if err != nil {
		return Admin{}, err
	}
	if err := grantAdmin(ctx, tx, id, now); err != nil {
		return Admin{}, err
	}
	a := Admin{UserID: id, Email: email, Created: true}
	if err := tx.QueryRowContext(ctx, `SELECT username FROM users WHERE id = $1`, id).Scan(&a.Username); err != nil {
		return Admin{}, err
	}
	ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID, ev.Description = id, audit.UserCreated, "user", id, why
	ev.Metadata = map[string]any{"provider": "email", "super_admin": true}
	_, err = s.Audit.Record(ctx, tx, ev)
	return a, err
}

// grantAdmin makes user id a super admin holding the Admin and the default
// User roles.
func grantAdmin(ctx context.Context, tx *db.Tx, id string, now time.Time) error {
	if err := users.MarkSuperAdmin(ctx, tx, id, now); err != nil {
		return err
	}
	for _, role := range []string{"role_admin", access.DefaultUserRole} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, id, role, db.TS(now)); err != nil {
			return err
		}
	}
	return nil
}

// userByEmail is the active user whose email-platform login or whose
// address is email, "" for none.
func userByEmail(ctx context.Context, q db.Querier, email string) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, `SELECT id FROM users WHERE deleted_at IS NULL AND (id IN
		(SELECT user_id FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2) OR LOWER(email) = $2)
		ORDER BY created_at LIMIT 1`, users.PlatformID("email"), email).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// CreateOrPromote is hmid admin create: the user with the address email
// (as email sign-in or as their address) becomes super admin; without one,
// a super admin is created, which needs the password pw. A password given
// for an existing user becomes their email sign-in password, and then
// every session and token of theirs ends, as after any password change.
// Errors: Validation (email, a missing or refused password).
func (s *Service) CreateOrPromote(ctx context.Context, email, pw string, ev audit.Event) (Admin, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if !validEmail(email) {
		return Admin{}, apperr.Invalid("--email must be a valid email address, got %q", email)
	}
	hash := ""
	if pw != "" {
		var err error
		if _, hash, err = s.credentials(ctx, email, pw); err != nil {
			return Admin{}, err
		}
	}
	var a Admin
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		now := s.Clock.Now()
		id, err := userByEmail(ctx, tx, email)
		if err != nil {
			return err
		}
		if id == "" {
			if hash == "" {
				return apperr.Invalid("no user has the address %s; a new administrator needs a password (give it on standard input with --password-stdin)", email)
			}
			a, err = s.create(ctx, tx, email, hash, now, ev, "Administrator created with hmid admin create")
			return err
		}
		a, err = s.promote(ctx, tx, id, email, hash, now, ev)
		return err
	})
	return a, err
}

// promote makes user id a super admin and, with a password hash, sets the
// password of their email sign-in (adding one for address email when they
// have none).
func (s *Service) promote(ctx context.Context, tx *db.Tx, id, email, hash string, now time.Time, ev audit.Event) (Admin, error) {
	a := Admin{UserID: id, Email: email}
	if err := tx.QueryRowContext(ctx, `SELECT username FROM users WHERE id = $1`, id).Scan(&a.Username); err != nil {
		return Admin{}, err
	}
	if err := grantAdmin(ctx, tx, id, now); err != nil {
		return Admin{}, err
	}
	md := map[string]any{"field": "is_super_admin", "super_admin": true}
	if hash != "" {
		if err := setPassword(ctx, tx, s.Epoch, id, email, hash, now); err != nil {
			return Admin{}, err
		}
		md["password_set"] = true
	}
	ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = id, audit.UserUpdated, "user", id
	ev.Description, ev.Metadata = "Made super admin with hmid admin create", md
	_, err := s.Audit.Record(ctx, tx, ev)
	return a, err
}

// setPassword sets the password of user id's email sign-in, adding one for
// email when they have none, and ends their sessions and tokens.
func setPassword(ctx context.Context, tx *db.Tx, ep authn.Epoch, id, email, hash string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET password_hash = $1, updated_at = $2 WHERE user_id = $3 AND platform_id = $4`,
		hash, db.TS(now), id, users.PlatformID("email"))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform_accounts (id, user_id, platform_id, platform_user_id, username, email, password_hash, email_verified, is_primary, created_at, updated_at)
			SELECT $1, id, $2, $3, username, $3, $4, TRUE, FALSE, $5, $5 FROM users WHERE id = $6`,
			uuid.NewString(), users.PlatformID("email"), email, hash, db.TS(now), id); err != nil {
			if db.IsUniqueViolation(err) {
				return apperr.Conflictf("the address %s is the email sign-in of another user", email)
			}
			return err
		}
	}
	if _, err := sessions.EndAll(ctx, tx, ep, id, "", now); err != nil {
		return err
	}
	return oauth.EndUserTokens(ctx, tx, id, now)
}

// EnvCheck is what EnsureFromEnv found.
type EnvCheck struct {
	// Stale: the administrator existed and HMID_ADMIN_PASSWORD is not
	// their password (the variable is used only at creation).
	Stale bool
}

// EnsureFromEnv ensures the super admin of HMID_ADMIN_EMAIL and
// HMID_ADMIN_PASSWORD (users.EnsureAdmin) and reports whether the password
// of an administrator that existed already differs from the variable.
func (s *Service) EnsureFromEnv(ctx context.Context, email, pw string) (EnvCheck, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	var hash sql.NullString
	err := s.DB.QueryRowContext(ctx, `SELECT password_hash FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2`,
		users.PlatformID("email"), email).Scan(&hash)
	existed := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return EnvCheck{}, err
	}
	if err := users.EnsureAdmin(ctx, s.DB, s.Clock, email, pw); err != nil {
		return EnvCheck{}, err
	}
	if !existed {
		return EnvCheck{}, nil
	}
	ok := false
	if hash.Valid {
		if ok, err = password.Verify(pw, hash.String); err != nil {
			return EnvCheck{}, err
		}
	}
	return EnvCheck{Stale: !ok}, nil
}

func (s *Service) checkPassword(ctx context.Context, pw string) error {
	if s.CheckPassword != nil {
		return s.CheckPassword(ctx, pw)
	}
	if utf8.RuneCountInString(pw) < 8 {
		return apperr.Invalid("password must be at least 8 characters")
	}
	return nil
}

func (s *Service) hash(pw string) (string, error) {
	if s.HashPassword != nil {
		return s.HashPassword(pw)
	}
	return password.Hash(pw)
}

// validEmail accepts a bare address (no display name) of sane length.
func validEmail(e string) bool {
	if e == "" || len(e) > maxEmail {
		return false
	}
	a, err := mail.ParseAddress(e)
	return err == nil && strings.EqualFold(a.Address, e)
}
