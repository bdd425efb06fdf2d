// Package auth implements sign-in with the email platform: login (with the
// two-factor second step), registration with verification of the address,
// logout, password reset and password change. The spec
// leaves login and password reset open (spec 1, Authentication 9); hmid offers
// them as JSON extension endpoints under /v1/auth (Handler) and the same
// Service backs the built-in HTML pages (package web): one service, two front
// ends.
package auth

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/http"
	"net/mail"
	"slices"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/password"
	"hmid/internal/policy"
	"hmid/internal/secretbox"
	"hmid/internal/sessions"
	"hmid/internal/users"
)

// CookieName is the cookie holding the session token in a browser. The OAuth
// authorize endpoint reads the same cookie (DECISIONS.md, OAuth and OIDC).
const CookieName = authn.SessionCookie

// Platform is the slug of the credential-based platform this package serves.
const Platform = "email"

// Password length bounds. The lower bound is the spec's (spec 2, Limits:
// "Email-link password at least 8 characters") and the default of the
// policy password.min_length, which may raise it; the upper bound keeps a
// single Argon2id call cheap to refuse.
const (
	MinPassword = 8
	MaxPassword = password.MaxBytes
)

// MaxEmail is the longest email address accepted anywhere (RFC 5321 §4.5.3.1.3:
// a path is at most 256 octets including the angle brackets). Login refuses
// a longer one before it becomes a throttle key.
const MaxEmail = 254

// Service holds the dependencies of login, registration, logout and reset.
type Service struct {
	DB      *db.DB
	Clock   clock.Clock
	Audit   *audit.Writer
	Limiter cache.Limiter
	Epoch   authn.Epoch
	// Resolver turns a session token (bearer or cookie) into a principal.
	Resolver *authn.Resolver
	// SecondFactor returns the two-factor service at request time; it is
	// set by another area after this one is built, and nil means two-factor
	// authentication is not available (treated as not enabled).
	SecondFactor func() authflow.SecondFactor
	// Mailer sends the password-reset and email-verification mails.
	Mailer Mailer
	// Log records mails that could not be sent; nil means slog.Default().
	Log *slog.Logger
	// PublicURL is the base of links in mails (HMID_PUBLIC_URL).
	PublicURL string
	// HashPassword hashes a new password; nil means password.Hash (tests
	// may use cheaper parameters).
	HashPassword func(string) (string, error)
	// Users applies the linking rule to provider sign-ins (ProviderLogin).
	Users *users.Service
	// Box keys the device cookies (see throttle.go); nil issues none and
	// honours none.
	Box *secretbox.Box
	// Policy gives the session lifetime, the password rules and the login
	// throttle's numbers in force (nil: the defaults).
	Policy *policy.Store
}

// Meta is who is asking: for audit records, sessions and throttling.
type Meta struct {
	IP        string
	UserAgent string
	// Source is the audit source_service: "api" for the JSON endpoints, "id"
	// for the built-in pages (the identity web app).
	Source string
	// RateLimit, when set, is told the state of the throttle that applies
	// (the JSON endpoints turn it into RateLimit-* headers).
	RateLimit func(cache.Decision)
	// Device is the request's device cookie (DeviceCookieName), if any.
	Device string
}

func (m Meta) reportDecision(d cache.Decision) {
	if m.RateLimit != nil {
		m.RateLimit(d)
	}
}

// MetaFrom returns the Meta of a request.
func MetaFrom(r *http.Request, source string) Meta {
	e := audit.FromRequest(r, audit.Event{})
	m := Meta{IP: e.IPAddress, UserAgent: e.UserAgent, Source: source}
	if c, err := r.Cookie(DeviceCookieName); err == nil {
		m.Device = c.Value
	}
	return m
}

// UserSummary is the user part of a login answer.
type UserSummary struct {
	ID       string  `json:"id"`
	Username string  `json:"username"`
	Email    *string `json:"email"`
}

// Result is the outcome of a login or registration.
type Result struct {
	// TwoFactorRequired means the password was right but a second factor
	// must be sent; no session was created.
	TwoFactorRequired bool
	// PasskeyRequired (with TwoFactorRequired) means the user's only second
	// factor is a passkey: no code can finish, only a browser can (the
	// pages offer the passkey; POST /v1/auth/login answers PasskeyRequired).
	PasskeyRequired bool
	// Locale is the user's preferred locale ("" for none), for an answer
	// in their language.
	Locale string
	// SetupRequired means the user is logged in but must set up two-factor
	// authentication before a role or platform lets them act.
	SetupRequired bool
	User          UserSummary
	Session       sessions.Created
	// Device is a new device cookie for the browser (SetDeviceCookie),
	// issued when a password sign-in created a session; "" for none.
	Device string
}

// account is the email-platform account a login looks at.
type account struct {
	userID   string
	username string
	email    sql.NullString
	hash     sql.NullString
	deleted  bool
	locale   sql.NullString // preferred_locale
	provider string         // platform slug the login is with
}

// errBadCredentials is the single answer for an unknown email, a wrong
// password, a deleted account or an account without a password: telling them
// apart would let anyone test which addresses have accounts.
var errBadCredentials = apperr.Unauthorizedf("invalid email or password")

func (s *Service) now() time.Time { return s.Clock.Now() }

func (s *Service) secondFactor() authflow.SecondFactor {
	if s.SecondFactor == nil {
		return nil
	}
	return s.SecondFactor()
}

func (s *Service) hash(p string) (string, error) {
	if s.HashPassword != nil {
		return s.HashPassword(p)
	}
	return password.Hash(p)
}

// NormalizeEmail trims and lower-cases an address; the email platform's
// platform_user_id is the lower-cased address.
func NormalizeEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

// validEmail accepts a bare address (no display name) of sane length.
func validEmail(e string) bool {
	if e == "" || len(e) > MaxEmail {
		return false
	}
	a, err := mail.ParseAddress(e)
	return err == nil && strings.EqualFold(a.Address, e)
}

// checkPassword applies the password rules in force (password.* policies:
// minimum length, the common-password list) to a new password.
func (s *Service) checkPassword(p string) error {
	return s.Policy.Current().Password.Check(p)
}

// PasswordRules are the password rules in force, for the forms' hints.
func (s *Service) PasswordRules() password.Rules { return s.Policy.Current().Password }

// platformState reports whether the email platform is enabled and open for
// registration.
func (s *Service) platformState(ctx context.Context) (enabled, registration bool, err error) {
	err = s.DB.QueryRowContext(ctx, `SELECT enabled, registration_enabled FROM platforms WHERE slug = $1`, Platform).Scan(&enabled, &registration)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	return enabled, registration, err
}

func (s *Service) requireEnabled(ctx context.Context) error {
	enabled, _, err := s.platformState(ctx)
	if err != nil {
		return err
	}
	if !enabled {
		return apperr.Forbiddenf("login with email and password is disabled on this server")
	}
	return nil
}

const accountSQL = `SELECT u.id, u.username, u.email, pa.password_hash, u.deleted_at IS NOT NULL, u.preferred_locale
	FROM platform_accounts pa JOIN users u ON u.id = pa.user_id
	WHERE pa.platform_id = $1 AND `

func scanAccount(row db.Scanner) (account, error) {
	var a account
	err := row.Scan(&a.userID, &a.username, &a.email, &a.hash, &a.deleted, &a.locale)
	a.provider = Platform
	return a, err
}

func (s *Service) accountByEmail(ctx context.Context, email string) (account, bool, error) {
	a, err := scanAccount(s.DB.QueryRowContext(ctx, accountSQL+`pa.platform_user_id = $2`, users.PlatformID(Platform), email))
	if errors.Is(err, sql.ErrNoRows) {
		return account{}, false, nil
	}
	return a, err == nil, err
}

func (s *Service) accountByUser(ctx context.Context, userID string) (account, bool, error) {
	a, err := scanAccount(s.DB.QueryRowContext(ctx, accountSQL+`pa.user_id = $2`, users.PlatformID(Platform), userID))
	if errors.Is(err, sql.ErrNoRows) {
		return account{}, false, nil
	}
	return a, err == nil, err
}

// activeBan returns the reason and end of the user's active ban, if any.
// It reads through q (the database, or a transaction that must see its own writes).
func (s *Service) activeBan(ctx context.Context, q db.Querier, userID string) (banned bool, reason string, until *time.Time, err error) {
	var r sql.NullString
	var exp db.NullTime
	err = q.QueryRowContext(ctx, `SELECT reason, expires_at FROM bans
		WHERE user_id = $1 AND `+db.ActiveBanSQL+`
		ORDER BY banned_at DESC LIMIT 1`, userID, db.TS(s.now())).Scan(&r, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", nil, nil
	}
	if err != nil {
		return false, "", nil, err
	}
	return true, r.String, exp.Ptr(), nil
}

// refuseBanned is the ban error (banError) when userID is banned, nil when
// not, or the error of reading the bans.
func (s *Service) refuseBanned(ctx context.Context, userID string) error {
	banned, reason, until, err := s.activeBan(ctx, s.DB, userID)
	if err != nil || !banned {
		return err
	}
	return banError(reason, until)
}

// Ban is the cause of a refusal because the account is banned, so the
// pages can tell the person in their own language until when and why: the
// reason the operator gave is shown to the person (the ban form says so).
// The REST answer keeps its English message.
type Ban struct {
	Reason string
	Until  *time.Time // nil: permanent
}

func (b *Ban) Error() string { return "auth: the account is banned" }

func banError(reason string, until *time.Time) error {
	msg := "this account is banned"
	if until != nil {
		msg += " until " + until.UTC().Format(time.RFC3339)
	} else {
		msg += " permanently"
	}
	if reason != "" {
		msg += ": " + reason
	}
	return &apperr.Error{Kind: apperr.Forbidden, Message: msg, Err: &Ban{Reason: reason, Until: until}}
}

// reserveLogin takes one attempt from the account's and the address's
// allowance before the password is checked. Counting only after the check
// let every one of many concurrent guesses be checked; with the reservation
// taken first (atomically, in the shared limiter), no more attempts are
// checked than the allowance holds, however many arrive at once. The others
// are answered 429 with Retry-After, unchecked. Without the limiter's store
// there is no login (503): letting attempts through unthrottled would open
// the door to guessing while Redis is down.
func (s *Service) reserveLogin(ctx context.Context, email string, m Meta) (*cache.Reservation, error) {
	return s.reserve(ctx, m, loginQuotas(email, m.IP, s.Policy.Current().Login))
}

// reserve takes one attempt from every quota (see reserveLogin).
func (s *Service) reserve(ctx context.Context, m Meta, quotas []cache.Quota) (*cache.Reservation, error) {
	rsv, d, err := cache.Reserve(ctx, s.Limiter, quotas...)
	if err != nil {
		return nil, apperr.Unavailablef("the login throttle is unavailable; try again later")
	}
	m.reportDecision(d)
	if rsv == nil {
		return nil, apperr.RateLimited(d.RetryAfter, "too many failed login attempts; try again later")
	}
	return rsv, nil
}

// releaseLogin gives a reserved attempt back: only failures stay counted,
// so a user who types the right password is never throttled by successes.
// If the store fails now the attempt stays counted, the safe side.
func (s *Service) releaseLogin(ctx context.Context, rsv *cache.Reservation, m Meta) {
	if d, err := rsv.Release(ctx); err == nil {
		m.reportDecision(d)
	}
}

// failedWith audits a failed attempt with provider (login_failed), whose
// reservation stays counted, and returns answer (or the audit's error).
func (s *Service) failedWith(ctx context.Context, userID, provider string, m Meta, reason string, answer error) error {
	_, err := s.Audit.Record(ctx, s.DB, audit.Event{
		UserID: userID, EventType: audit.LoginFailed, ResourceType: "user", ResourceID: userID,
		IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source,
		Description: "Failed login with " + provider, Failed: true, ErrorMessage: reason,
		Metadata: map[string]any{"provider": provider},
	})
	if err != nil {
		return err
	}
	return answer
}

// LoginInput is a login attempt.
type LoginInput struct {
	Email    string
	Password string
	Code     string // TOTP or backup code, for the second step
}

// Login checks email and password and, when the user has two-factor
// authentication, the code; then it creates a session. Without a code for a
// two-factor user it answers TwoFactorRequired and creates nothing. The
// attempt is reserved in the throttle before the password is checked (see
// reserveLogin) and given back unless it failed.
func (s *Service) Login(ctx context.Context, in LoginInput, m Meta) (Result, error) {
	email := NormalizeEmail(in.Email)
	if email == "" || in.Password == "" {
		return Result{}, apperr.Invalid("email and password are required")
	}
	if len(email) > MaxEmail {
		return Result{}, apperr.Invalid("email must be at most %d characters", MaxEmail)
	}
	if err := s.requireEnabled(ctx); err != nil {
		return Result{}, err
	}
	// A browser with a valid device cookie of this very account is
	// counted on its own allowance (see throttle.go); the account is read
	// first only then, so a cookie of another user, a forged one or none
	// costs nothing more and falls under the usual quotas.
	throttle := s.Policy.Current().Login
	quotas := loginQuotas(email, m.IP, throttle)
	var pre *account
	if dev, ok := openDevice(s.Box, m.Device, s.now()); ok {
		a, found, err := s.accountByEmail(ctx, email)
		if err != nil {
			return Result{}, err
		}
		if found && a.userID == dev.userID {
			quotas = deviceQuotas(dev.nonce, throttle)
		}
		if !found {
			a = account{}
		}
		pre = &a
	}
	rsv, err := s.reserve(ctx, m, quotas)
	if err != nil {
		return Result{}, err
	}
	res, counted, err := s.login(ctx, email, in, m, pre)
	if !counted {
		s.releaseLogin(ctx, rsv, m)
	}
	return res, err
}

// login is Login after the reservation; counted reports a failed attempt,
// whose reservation must stay. pre is the account when Login already read
// it (a zero account: none found).
func (s *Service) login(ctx context.Context, email string, in LoginInput, m Meta, pre *account) (res Result, counted bool, err error) {
	var a account
	found := false
	if pre != nil {
		a, found = *pre, pre.userID != ""
	} else if a, found, err = s.accountByEmail(ctx, email); err != nil {
		return Result{}, false, err
	}
	if !found || a.deleted || !a.hash.Valid || len(in.Password) > MaxPassword {
		password.VerifyDummy(in.Password)
		return Result{}, true, s.failedWith(ctx, a.userID, Platform, m, "invalid credentials", errBadCredentials)
	}
	ok, err := password.Verify(in.Password, a.hash.String)
	if err != nil && !errors.Is(err, password.ErrMalformed) {
		return Result{}, false, err
	}
	if !ok {
		return Result{}, true, s.failedWith(ctx, a.userID, Platform, m, "invalid credentials", errBadCredentials)
	}
	// The ban is told only to someone who knows the password, so it does
	// not reveal which accounts exist or are banned.
	if banned, reason, until, err := s.activeBan(ctx, s.DB, a.userID); err != nil {
		return Result{}, false, err
	} else if banned {
		return Result{}, true, s.failedWith(ctx, a.userID, Platform, m, "account banned", banError(reason, until))
	}
	res, err = s.secondStep(ctx, a, in.Code, m)
	return res, false, err
}

// LoginWithCode finishes a login whose first step (the password, or a
// provider sign-in) already succeeded for userID with provider (the pages
// keep that step's outcome in a short-lived server-side state): it re-checks
// the account and verifies the two-factor code.
func (s *Service) LoginWithCode(ctx context.Context, userID, provider, code string, m Meta) (Result, error) {
	if strings.TrimSpace(code) == "" {
		return Result{}, apperr.Invalid("code is required")
	}
	if provider != Platform {
		return s.providerCode(ctx, userID, provider, code, m)
	}
	a, err := s.platformAccount(ctx, userID)
	if err != nil {
		return Result{}, err
	}
	if err := s.refuseBanned(ctx, a.userID); err != nil {
		return Result{}, err
	}
	return s.secondStep(ctx, a, code, m)
}

// platformAccount is the login view of userID's email-platform account
// for a login whose first step is behind it. It fails while the platform is
// disabled, and a deleted user is refused like a wrong password.
func (s *Service) platformAccount(ctx context.Context, userID string) (account, error) {
	if err := s.requireEnabled(ctx); err != nil {
		return account{}, err
	}
	a, found, err := s.accountByUser(ctx, userID)
	if err != nil {
		return account{}, err
	}
	if !found || a.deleted {
		return account{}, errBadCredentials
	}
	return a, nil
}

// secondStep applies two-factor authentication and creates the session.
// A user whose only second factor is a passkey gets PasskeyRequired without
// a code and a *PasskeyRequiredError with one: a code can never finish their
// sign-in, so none is asked for or checked.
func (s *Service) secondStep(ctx context.Context, a account, code string, m Meta) (Result, error) {
	res := Result{User: summary(a), Locale: a.locale.String}
	mfa := false
	if sf := s.secondFactor(); sf != nil {
		on, err := sf.Enabled(ctx, a.userID)
		if err != nil {
			return Result{}, err
		}
		if on {
			codes, err := sf.AcceptsCode(ctx, a.userID)
			if err != nil {
				return Result{}, err
			}
			if !codes {
				if strings.TrimSpace(code) != "" {
					return Result{}, &PasskeyRequiredError{Locale: res.Locale}
				}
				res.TwoFactorRequired, res.PasskeyRequired = true, true
				return res, nil
			}
			if strings.TrimSpace(code) == "" {
				res.TwoFactorRequired = true
				return res, nil
			}
			// VerifyLogin throttles and audits wrong codes itself.
			if err := sf.VerifyLogin(ctx, a.userID, strings.TrimSpace(code), m.IP, m.UserAgent); err != nil {
				return Result{}, err
			}
			mfa = true
		} else if res.SetupRequired, err = sf.SetupRequired(ctx, a.userID, a.provider); err != nil {
			return Result{}, err
		}
	}
	return s.openSession(ctx, res, a, sessions.AMR(a.provider == Platform, mfa), m)
}

// openSession creates a's session with amr (startSessionAMR) and returns
// res with it.
func (s *Service) openSession(ctx context.Context, res Result, a account, amr []string, m Meta) (Result, error) {
	now := s.now()
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		res.Session, err = s.startSessionAMR(ctx, tx, a.userID, a.provider, amr, now, m)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	if a.provider == Platform {
		// The browser that signed in with the password is known from now
		// on (see throttle.go).
		res.Device = newDevice(s.Box, a.userID, now)
	}
	return res, nil
}

// startSession creates the session with provider, records the login on the
// user and audits login and session_created, inside tx. mfa tells that a
// second factor was verified in this login.
func (s *Service) startSession(ctx context.Context, tx *db.Tx, userID, provider string, mfa bool, now time.Time, m Meta) (sessions.Created, error) {
	return s.startSessionAMR(ctx, tx, userID, provider, sessions.AMR(provider == Platform, mfa), now, m)
}

// startSessionAMR is startSession with the session's amr given.
func (s *Service) startSessionAMR(ctx context.Context, tx *db.Tx, userID, provider string, amr []string, now time.Time, m Meta) (sessions.Created, error) {
	c, err := sessions.Create(ctx, tx, now, sessions.New{UserID: userID, Provider: provider, IPAddress: m.IP, UserAgent: m.UserAgent,
		AMR: amr, ExpiresAt: now.Add(s.Policy.Current().SessionAbsolute)})
	if err != nil {
		return c, err
	}
	if err := users.RecordLogin(ctx, tx, userID, provider, now); err != nil {
		return c, err
	}
	how := "email and password"
	if provider != Platform {
		how = provider
	}
	if slices.Contains(amr, "hwk") || slices.Contains(amr, "swk") {
		how += " and a passkey"
		if provider == PasskeyProvider {
			how = "a passkey"
		}
	}
	for _, e := range []audit.Event{
		{EventType: audit.Login, Description: "Logged in with " + how},
		{EventType: audit.SessionCreated, ResourceType: "session", ResourceID: c.ID, Description: "Session created"},
	} {
		e.UserID, e.IPAddress, e.UserAgent, e.SourceService = userID, m.IP, m.UserAgent, m.Source
		e.Metadata = map[string]any{"provider": provider, "session_id": c.ID}
		if e.ResourceType == "" {
			e.ResourceType, e.ResourceID = "user", userID
		}
		if _, err := s.Audit.Record(ctx, tx, e); err != nil {
			return c, err
		}
	}
	return c, nil
}

func summary(a account) UserSummary {
	u := UserSummary{ID: a.userID, Username: a.username}
	if a.email.Valid {
		u.Email = &a.email.String
	}
	return u
}

// RegisterInput is a registration with the email platform.
type RegisterInput struct {
	Email    string
	Password string
	Username string // optional; derived from the email when empty
}

// Register creates a user with an email-platform account and logs them in.
// It mails a link that verifies the address (verify.go); until then the
// account's address is unverified.
func (s *Service) Register(ctx context.Context, in RegisterInput, m Meta) (Result, error) {
	email, username, err := s.checkRegistration(ctx, in, m)
	if err != nil {
		return Result{}, err
	}
	hash, err := s.hash(in.Password)
	if err != nil {
		return Result{}, err
	}
	now := s.now()
	var res Result
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		userID, _, err := users.Create(ctx, tx, db.TS(now), users.NewAccount{
			PlatformSlug: Platform, PlatformUserID: email, Username: username, Email: email, PasswordHash: hash,
		})
		if err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT username FROM users WHERE id = $1`, userID).Scan(&res.User.Username); err != nil {
			return err
		}
		res.User.ID, res.User.Email = userID, &email
		if _, err := s.Audit.Record(ctx, tx, audit.Event{
			UserID: userID, EventType: audit.UserCreated, ResourceType: "user", ResourceID: userID,
			IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source,
			Description: "Registered with email and password", Metadata: map[string]any{"provider": Platform},
		}); err != nil {
			return err
		}
		res.Session, err = s.startSession(ctx, tx, userID, Platform, false, now, m)
		return err
	})
	if db.IsUniqueViolation(err) {
		return Result{}, apperr.Conflictf("email address or username is already in use")
	}
	if err != nil {
		return Result{}, err
	}
	if sf := s.secondFactor(); sf != nil {
		if res.SetupRequired, err = sf.SetupRequired(ctx, res.User.ID, Platform); err != nil {
			return Result{}, err
		}
	}
	// The address stays unverified until the mailed link is followed (verify.go).
	s.mailAfterRegistration(ctx, res.User.ID)
	return res, nil
}

// checkRegistration checks a registration before anything is written: the
// platform is open, the address, password and username are valid, the
// address's registration allowance holds, and the address and username are
// free. It returns the normalized address and the trimmed username.
func (s *Service) checkRegistration(ctx context.Context, in RegisterInput, m Meta) (email, username string, err error) {
	enabled, open, err := s.platformState(ctx)
	if err != nil {
		return "", "", err
	}
	if !enabled || !open {
		return "", "", apperr.Forbiddenf("registration with email and password is disabled on this server")
	}
	email = NormalizeEmail(in.Email)
	if !validEmail(email) {
		return "", "", apperr.Invalid("email must be a valid email address")
	}
	if err := s.checkPassword(in.Password); err != nil {
		return "", "", err
	}
	username = strings.TrimSpace(in.Username)
	if username != "" && !ValidUsername(username) {
		return "", "", apperr.Invalid("username must be 3 to 30 characters: letters, digits and underscores")
	}
	d, err := cache.Allow(ctx, s.Limiter, "register:ip:"+m.IP, cache.PerPeriod(RegisterPerIP, time.Hour))
	if err != nil {
		return "", "", apperr.Unavailablef("the registration throttle is unavailable; try again later")
	}
	m.reportDecision(d)
	if !d.Allowed {
		return "", "", apperr.RateLimited(d.RetryAfter, "too many registrations from this address; try again later")
	}
	if err := s.emailFree(ctx, email); err != nil {
		return "", "", err
	}
	return email, username, s.usernameFree(ctx, username)
}

// usernameFree answers 409 when another user has the username (compared
// without regard to case); "" is free (one is generated).
func (s *Service) usernameFree(ctx context.Context, username string) error {
	if username == "" {
		return nil
	}
	var n int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE LOWER(username) = LOWER($1)`, username).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return apperr.Conflictf("username %s is taken", username)
	}
	return nil
}

// emailFree answers 409 when an email-platform account or a user already has
// the address.
func (s *Service) emailFree(ctx context.Context, email string) error {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2) +
		(SELECT COUNT(*) FROM users WHERE LOWER(email) = $2)`, users.PlatformID(Platform), email).Scan(&n)
	if err != nil {
		return err
	}
	if n > 0 {
		return apperr.Conflictf("email address is already in use")
	}
	return nil
}

// ValidUsername reports whether u is 3 to 30 letters, digits or underscores
// (spec 2, User: username).
func ValidUsername(u string) bool {
	if len(u) < 3 || len(u) > 30 {
		return false
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Session resolves a session token (from a bearer header or the cookie) to
// its principal; API keys and OAuth tokens are refused.
func (s *Service) Session(ctx context.Context, tok string) (*authn.Principal, error) {
	p, err := s.Resolver.Resolve(ctx, tok)
	if err != nil {
		return nil, err
	}
	if p.Kind != authn.KindSession {
		return nil, apperr.Forbiddenf("this endpoint needs a user session token")
	}
	return p, nil
}

// Logout revokes the session and audits logout (reason user_initiated).
func (s *Service) Logout(ctx context.Context, p *authn.Principal, m Meta) error {
	now := s.now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		ended, err := sessions.End(ctx, tx, s.Epoch, p.UserID, p.SessionID, now)
		if err != nil || !ended {
			// Not ended: revoked by a concurrent request, which audited it.
			return err
		}
		_, err = s.Audit.Record(ctx, tx, audit.Event{
			UserID: p.UserID, EventType: audit.Logout, ResourceType: "session", ResourceID: p.SessionID,
			IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source, Description: "Logged out",
			Metadata: map[string]any{"reason": "user_initiated", "session_id": p.SessionID},
		})
		return err
	})
}

// RegistrationOpen reports whether the email platform accepts registrations.
func (s *Service) RegistrationOpen(ctx context.Context) (bool, error) {
	enabled, open, err := s.platformState(ctx)
	return enabled && open, err
}

// Username returns the username of a user, "" when it cannot be read (it
// is only shown on pages).
func (s *Service) Username(ctx context.Context, userID string) string {
	var u string
	_ = s.DB.QueryRowContext(ctx, `SELECT username FROM users WHERE id = $1`, userID).Scan(&u)
	return u
}
