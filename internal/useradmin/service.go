// Package useradmin is what an operator does to another user's account
// that the user would otherwise do themself (issue 22): create a user with
// a password or with an invitation mail that lets them choose one; change
// their username, sign-in address and language; set a new password or mail
// a reset link; mark the address verified or mail a new verification link;
// and sign them out everywhere. The REST routes under /v1/admin/users
// (Handler) and the admin console's pages (internal/web/admin) call the same
// Service, so the rules live here once; their permission is users:write,
// in internal/app/routes.go.
//
// Every change is audited with the acting operator as actor_id and the
// caller's source (the console records "backend"). A super admin's account
// is changed only by super admins (the users area's rule).
package useradmin

import (
	"context"
	"database/sql"
	"errors"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/auth"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	hmail "hmid/internal/mail"
	"hmid/internal/sessions"
	"hmid/internal/token"
	"hmid/internal/users"
)

// InviteTTL is how long an invitation link works: a week, as a new user
// may not read their mail the same hour (a reset link works an hour).
const InviteTTL = 7 * 24 * time.Hour

// maxEmail is the longest address accepted (RFC 5321 §4.5.3.1.3).
const maxEmail = 254

// Service carries out the operators' changes.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Audit *audit.Writer
	Epoch authn.Epoch
	Users *users.Service
	// Auth is the login service: its password rule and hashing, and the
	// verification mails.
	Auth     *auth.Service
	Sessions *sessions.Service
	Mailer   auth.Mailer
	// PublicURL is the base of the links in mails (HMID_PUBLIC_URL).
	PublicURL string
}

// emailPlatform is the id of the email platform.
func emailPlatform() string { return users.PlatformID(auth.Platform) }

// normalEmail trims and lower-cases an address and checks it: a bare
// address of sane length. Errors: Validation on the field email.
func normalEmail(e string) (string, error) {
	e = strings.ToLower(strings.TrimSpace(e))
	if e == "" || len(e) > maxEmail {
		return "", apperr.OnField("email", apperr.Invalid("email must be a valid email address"))
	}
	a, err := mail.ParseAddress(e)
	if err != nil || !strings.EqualFold(a.Address, e) {
		return "", apperr.OnField("email", apperr.Invalid("email must be a valid email address"))
	}
	return e, nil
}

// emailInUse answers a Conflict on the field email when another user than
// except has the address as email sign-in or as their address.
func emailInUse(ctx context.Context, q db.Querier, email, except string) error {
	var n int
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2 AND user_id <> $3) +
		(SELECT COUNT(*) FROM users WHERE LOWER(email) = $2 AND id <> $3)`, emailPlatform(), email, except).Scan(&n)
	if err != nil {
		return err
	}
	if n > 0 {
		return apperr.OnField("email", apperr.Conflictf("the email address %s is in use by another user", email))
	}
	return nil
}

// actor is the audit actor of p: their user, else their API key.
func actor(p *authn.Principal) string {
	if p.UserID != "" {
		return p.UserID
	}
	return p.APIKeyID
}

// record writes ev about user id with p as actor.
func (s *Service) record(ctx context.Context, q db.Querier, p *authn.Principal, id string, ev audit.Event) error {
	ev.UserID, ev.ActorID, ev.ResourceType, ev.ResourceID = id, actor(p), "user", id
	if ev.ActorID == id {
		ev.ActorID = ""
	}
	_, err := s.Audit.Record(ctx, q, ev)
	return err
}

// loginAccount is the email sign-in of a user.
type loginAccount struct {
	addr     string
	verified bool
	hasPass  bool
}

// emailLogin reads user id's email sign-in. ok is false without one.
func emailLogin(ctx context.Context, q db.Querier, id string) (a loginAccount, ok bool, err error) {
	var hash sql.NullString
	err = q.QueryRowContext(ctx, `SELECT platform_user_id, email_verified, password_hash FROM platform_accounts WHERE user_id = $1 AND platform_id = $2`,
		id, emailPlatform()).Scan(&a.addr, &a.verified, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, nil
	}
	a.hasPass = hash.Valid && hash.String != ""
	return a, err == nil, err
}

// errNoEmailLogin refuses a mail or a password for a user without an
// email sign-in (they sign in with a provider only).
var errNoEmailLogin = apperr.Invalid("this user has no email sign-in: they sign in with a provider only")

// ---- creating users ----

// NewUser is a user an operator creates: the address, and either a
// password or an invitation mail with which the user chooses one.
type NewUser struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Invite   bool   `json:"invite"`
	Username string `json:"username"`
	Name     string `json:"name"`
	Locale   string `json:"locale"`
}

// check validates the fields of n on their own: the address normalized,
// the locale lower-cased.
func (s *Service) check(ctx context.Context, n *NewUser) error {
	var err error
	if n.Email, err = normalEmail(n.Email); err != nil {
		return err
	}
	switch {
	case n.Invite && n.Password != "":
		return apperr.OnField("password", apperr.Invalid("a password was typed but an invitation was chosen: choose to set the password, or empty the field to invite"))
	case !n.Invite && n.Password == "":
		return apperr.OnField("password", apperr.Invalid("give a password, or invite the user to choose one"))
	case n.Password != "":
		if err := s.Auth.CheckNewPassword(ctx, n.Password); err != nil {
			return apperr.OnField("password", err)
		}
	}
	n.Username = strings.TrimSpace(n.Username)
	if n.Username != "" {
		if err := users.ValidUsername(n.Username); err != nil {
			return apperr.OnField("username", err)
		}
	}
	if len(n.Name) > 100 {
		return apperr.OnField("name", apperr.Invalid("name must be at most 100 characters"))
	}
	n.Locale = strings.ToLower(strings.TrimSpace(n.Locale))
	return s.checkLocale(ctx, n.Locale)
}

// checkLocale refuses a locale users may not choose ("" is none).
func (s *Service) checkLocale(ctx context.Context, loc string) error {
	if loc == "" {
		return nil
	}
	supported, err := s.Users.SupportedLocales(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(supported, loc) {
		return apperr.OnField("locale", apperr.Invalid("locale must be one of %s", strings.Join(supported, ", ")))
	}
	return nil
}

// Create creates a user with an email sign-in for n.Email and the default
// role. With a password the user can sign in at once and is mailed a link
// that verifies the address, as after a registration; with Invite they are
// mailed a link (valid InviteTTL) to choose their password, which verifies
// the address too. Errors: Validation (a field), Conflict (the address or
// username is in use), ServiceUnavailable (the invitation could not be
// mailed; then nothing is created).
func (s *Service) Create(ctx context.Context, p *authn.Principal, n NewUser, ev audit.Event) (users.User, error) {
	if err := s.check(ctx, &n); err != nil {
		return users.User{}, err
	}
	hash := ""
	if n.Password != "" {
		var err error
		if hash, err = s.Auth.HashNewPassword(n.Password); err != nil {
			return users.User{}, err
		}
	}
	now := s.Clock.Now()
	var id, invite string
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := emailInUse(ctx, tx, n.Email, ""); err != nil {
			return err
		}
		if err := usernameFree(ctx, tx, n.Username, ""); err != nil {
			return err
		}
		var err error
		if id, _, err = users.Create(ctx, tx, db.TS(now), users.NewAccount{PlatformSlug: auth.Platform, PlatformUserID: n.Email,
			Username: n.Username, Name: n.Name, Email: n.Email, PasswordHash: hash}); err != nil {
			return err
		}
		if n.Locale != "" {
			if err := users.SetPreferredLocale(ctx, tx, id, n.Locale, now); err != nil {
				return err
			}
		}
		if n.Invite {
			if invite, err = storeResetToken(ctx, tx, id, ev.IPAddress, now, InviteTTL); err != nil {
				return err
			}
		}
		ev.EventType, ev.Description = audit.UserCreated, "User created by an administrator"
		ev.Metadata = map[string]any{"provider": auth.Platform, "invited": n.Invite}
		return s.record(ctx, tx, p, id, ev)
	})
	if db.IsUniqueViolation(err) {
		return users.User{}, apperr.OnField("email", apperr.Conflictf("the email address or username is in use"))
	}
	if err != nil {
		return users.User{}, err
	}
	if n.Invite {
		// The mail goes out after the commit (the outbox writes through
		// the database); an invitation that cannot be sent takes the new
		// account with it, as nobody could sign in to it.
		if err := s.mailLink(ctx, id, hmail.KindInvitation, invite, now.Add(InviteTTL)); err != nil {
			if _, derr := s.DB.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, id); derr != nil {
				return users.User{}, errors.Join(err, derr)
			}
			return users.User{}, err
		}
	} else {
		// The address is unverified until its owner follows the link; a
		// mail that fails is logged, and can be sent again.
		_, _ = s.Auth.ResendVerification(ctx, id, auth.Meta{IP: ev.IPAddress, UserAgent: ev.UserAgent, Source: ev.SourceService})
	}
	return s.Users.Get(ctx, s.DB, id)
}

// usernameFree answers a Conflict on the field username when another user
// than except has name (compared case-insensitively); "" is free.
func usernameFree(ctx context.Context, q db.Querier, name, except string) error {
	if name == "" {
		return nil
	}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE LOWER(username) = LOWER($1) AND id <> $2`, name, except).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return apperr.OnField("username", apperr.Conflictf("username %s is taken", name))
	}
	return nil
}

// storeResetToken stores a new password-reset token for user id, valid for
// ttl, replacing the earlier ones (only the newest link works), and returns
// it. The reset page sets the password with it (auth.ConfirmReset).
func storeResetToken(ctx context.Context, tx *db.Tx, id, ip string, now time.Time, ttl time.Duration) (string, error) {
	tok := token.New(auth.PrefixPasswordReset)
	if _, err := tx.ExecContext(ctx, `UPDATE password_reset_tokens SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`, db.TS(now), id); err != nil {
		return "", err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO password_reset_tokens (id, user_id, token_hash, ip_address, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		uuid.NewString(), id, token.Hash(tok), ip, db.TS(now), db.TS(now.Add(ttl)))
	return tok, err
}

// mailLink mails user id the link of a reset token of kind (a reset, an
// invitation) in their language. Errors: ServiceUnavailable.
func (s *Service) mailLink(ctx context.Context, id, kind, tok string, expires time.Time) error {
	var addr, name string
	var locale sql.NullString
	if err := s.DB.QueryRowContext(ctx, `SELECT pa.platform_user_id, u.name, u.preferred_locale FROM platform_accounts pa JOIN users u ON u.id = pa.user_id
		WHERE pa.user_id = $1 AND pa.platform_id = $2`, id, emailPlatform()).Scan(&addr, &name, &locale); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return errNoEmailLogin
		}
		return err
	}
	msg, err := hmail.Render(kind, locale.String, hmail.Data{Name: name, Email: addr, Token: tok, ExpiresAt: expires,
		Link: strings.TrimRight(s.PublicURL, "/") + "/reset-password?token=" + url.QueryEscape(tok)})
	if err != nil {
		return err
	}
	msg.To = addr
	if err := s.Mailer.Send(ctx, msg); err != nil {
		return apperr.Unavailablef("the mail could not be sent; try again later")
	}
	return nil
}

// ---- profile ----

// Profile is a change of a user's username, sign-in address or language;
// only the fields given change. Locale "" clears the language.
type Profile struct {
	Username *string `json:"username"`
	Email    *string `json:"email"`
	Locale   *string `json:"locale"`
}

// checkProfile validates the fields of c on their own.
func (s *Service) checkProfile(ctx context.Context, c *Profile) error {
	if c.Username == nil && c.Email == nil && c.Locale == nil {
		return apperr.Invalid("give at least one of username, email, locale")
	}
	if c.Username != nil {
		v := strings.TrimSpace(*c.Username)
		if err := users.ValidUsername(v); err != nil {
			return apperr.OnField("username", err)
		}
		c.Username = &v
	}
	if c.Email != nil {
		v, err := normalEmail(*c.Email)
		if err != nil {
			return err
		}
		c.Email = &v
	}
	if c.Locale != nil {
		v := strings.ToLower(strings.TrimSpace(*c.Locale))
		if err := s.checkLocale(ctx, v); err != nil {
			return err
		}
		c.Locale = &v
	}
	return nil
}

// SetProfile changes user id's username, address and language in one
// transaction with one user_updated event naming the fields that changed;
// a field equal to the current value is no change. A new address becomes
// the user's address and the login of their email sign-in, unverified
// (the earlier verification links stop working). Errors: Validation,
// NotFound, Forbidden, Conflict (username or address in use); on any of
// them nothing changes.
func (s *Service) SetProfile(ctx context.Context, p *authn.Principal, id string, c Profile, ev audit.Event) (users.User, error) {
	if err := s.checkProfile(ctx, &c); err != nil {
		return users.User{}, err
	}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := s.Users.Manageable(ctx, tx, p, id)
		if err != nil {
			return err
		}
		now := s.Clock.Now()
		var fields []string
		if c.Username != nil && *c.Username != u.Username {
			if err := usernameFree(ctx, tx, *c.Username, id); err != nil {
				return err
			}
			if err := users.SetUsername(ctx, tx, id, *c.Username, now); err != nil {
				return err
			}
			fields = append(fields, "username")
		}
		if c.Email != nil && (u.Email == nil || !strings.EqualFold(*u.Email, *c.Email)) {
			if err := s.setEmail(ctx, tx, id, *c.Email, now); err != nil {
				return err
			}
			fields = append(fields, "email")
		}
		if c.Locale != nil && *c.Locale != deref(u.PreferredLocale) {
			if err := users.SetPreferredLocale(ctx, tx, id, *c.Locale, now); err != nil {
				return err
			}
			fields = append(fields, "preferred_locale")
		}
		if len(fields) == 0 {
			return nil
		}
		ev.EventType, ev.Description = audit.UserUpdated, "Profile changed by an administrator: "+strings.Join(fields, ", ")
		ev.Metadata = map[string]any{"fields": fields}
		return s.record(ctx, tx, p, id, ev)
	})
	if db.IsUniqueViolation(err) {
		return users.User{}, apperr.Conflictf("the username or email address is in use")
	}
	if err != nil {
		return users.User{}, err
	}
	return s.Users.Get(ctx, s.DB, id)
}

// setEmail makes addr user id's address and the login of their email
// sign-in, unverified.
func (s *Service) setEmail(ctx context.Context, tx *db.Tx, id, addr string, now time.Time) error {
	if err := users.LockAddress(ctx, tx, addr); err != nil {
		return err
	}
	if err := emailInUse(ctx, tx, addr, id); err != nil {
		return err
	}
	if err := users.SetEmail(ctx, tx, id, addr, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET platform_user_id = $1, email = $1, email_verified = FALSE, updated_at = $2
		WHERE user_id = $3 AND platform_id = $4`, addr, db.TS(now), id, emailPlatform()); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM email_verification_tokens WHERE user_id = $1`, id)
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
