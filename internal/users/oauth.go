package users

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// LoginUser is the OAuth-login user shape (spec 2, User) answered to the
// front end's authentication layer.
type LoginUser struct {
	ID                       string     `json:"id"`
	PrimaryPlatformAccountID *string    `json:"primary_platform_account_id"`
	Username                 string     `json:"username"`
	Email                    *string    `json:"email"`
	AvatarURL                *string    `json:"avatar_url"`
	Platform                 *string    `json:"platform"` // slug of the last login's platform, else of the primary account
	CreatedAt                time.Time  `json:"created_at"`
	UpdatedAt                time.Time  `json:"updated_at"`
	LastLoginAt              *time.Time `json:"last_login_at"`
	PrivacyMode              bool       `json:"privacy_mode"`
	IsBanned                 bool       `json:"is_banned"`
}

// loginUser builds the OAuth-login shape of user id through q.
func (s *Service) loginUser(ctx context.Context, q db.Querier, id string) (LoginUser, error) {
	u, err := s.Get(ctx, q, id)
	if err != nil {
		return LoginUser{}, err
	}
	lu := LoginUser{ID: u.ID, PrimaryPlatformAccountID: u.PrimaryPlatformAccountID, Username: u.Username, Email: u.Email,
		AvatarURL: u.AvatarURL, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, LastLoginAt: u.LastLoginAt, PrivacyMode: u.PrivacyMode}
	slug := u.lastLoginProvider
	if slug == "" && u.PrimaryPlatformAccountID != nil {
		err := q.QueryRowContext(ctx, `SELECT p.slug FROM platform_accounts pa JOIN platforms p ON p.id = pa.platform_id WHERE pa.id = $1`,
			*u.PrimaryPlatformAccountID).Scan(&slug)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return LoginUser{}, err
		}
	}
	if slug != "" {
		lu.Platform = &slug
	}
	err = q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM bans WHERE user_id = $1 AND `+db.ActiveBanSQL+`)`,
		id, db.TS(s.Clock.Now())).Scan(&lu.IsBanned)
	return lu, err
}

type oauthBody struct {
	Email           *string `json:"email"`
	Name            string  `json:"name"`
	OAuthProvider   string  `json:"oauthProvider"`
	OAuthProviderID string  `json:"oauthProviderId"`
	Image           *string `json:"image"`
}

// OAuthLogin serves POST /v1/users/oauth (system key): the sign-in upsert of
// the web front end's authentication layer. The platform account
// (oauthProvider, oauthProviderId) is looked up; when it exists its details
// are refreshed (200); otherwise it is linked to the user with the same email
// (200, account_linked), or a new user is created (201, user_created).
// Linking needs the address to be verified on one of that user's platform
// accounts: a contact email typed into PATCH /v1/users/{id} must not let its
// owner capture someone else's first sign-in (account pre-hijacking). A
// disabled platform refuses every sign-in and a platform with registration
// turned off refuses new users (403); a soft-deleted account answers 403.
// Avatars are stored only while the user's avatars_enabled is on.
func (h *Handler) OAuthLogin(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	in, err := decodeOAuthLogin(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var res loginResult
	// A concurrent first sign-in of the same account fails on the platform
	// account's unique index; running again then finds the account the other
	// request created. (A username taken in between is settled inside Create.)
	for attempt := 0; attempt < 3; attempt++ {
		err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
			var err error
			res, err = h.upsertLogin(ctx, tx, r, in)
			return err
		})
		if !db.IsUniqueViolation(err) {
			break
		}
	}
	if db.IsUniqueViolation(err) {
		err = apperr.Conflictf("concurrent sign-ins of this account collided; retry")
	}
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.S.NotifyReleased(ctx, res.outcome)
	status := http.StatusOK
	if res.created {
		status = http.StatusCreated
	}
	httpx.WriteResourceAt(w, r, status, res.user, "/v1/users/"+res.userID)
}

// oauthLogin is a checked sign-in request: trimmed, the provider and email
// lower-cased, email and image "" when absent.
type oauthLogin struct {
	name, provider, providerID string
	email, image               string
	source                     string // source_service of the audit events
}

// decodeOAuthLogin reads and checks the body of POST /v1/users/oauth.
func decodeOAuthLogin(r *http.Request) (oauthLogin, error) {
	var b oauthBody
	if err := httpx.Decode(r, &b); err != nil {
		return oauthLogin{}, err
	}
	in := oauthLogin{name: strings.TrimSpace(b.Name), provider: strings.ToLower(strings.TrimSpace(b.OAuthProvider)),
		providerID: strings.TrimSpace(b.OAuthProviderID), source: knownSource(r.Header.Get("X-Source-Service"))}
	if in.name == "" || in.provider == "" || in.providerID == "" {
		return in, apperr.Invalid("name, oauthProvider and oauthProviderId are required")
	}
	if len(in.name) > 200 || len(in.providerID) > 255 {
		return in, apperr.Invalid("name (200) or oauthProviderId (255) is too long")
	}
	if b.Email != nil {
		in.email = strings.ToLower(strings.TrimSpace(*b.Email))
		if in.email != "" && !validEmail(in.email) {
			return in, apperr.Invalid("email is not a valid address")
		}
	}
	if b.Image != nil && strings.TrimSpace(*b.Image) != "" {
		in.image = strings.TrimSpace(*b.Image)
		if !validURL(in.image) {
			return in, apperr.Invalid("image must be an absolute http or https URL")
		}
	}
	return in, nil
}

// loginResult is what one sign-in attempt produced.
type loginResult struct {
	userID  string
	created bool
	user    LoginUser
	outcome Outcome // what SignIn decided, for NotifyReleased after commit
}

// loginPlatform is the platform a sign-in names.
type loginPlatform struct {
	id, name     string
	registration bool // new users may sign up through it
}

// platformForLogin loads the platform with the given slug: unknown is a
// 400, disabled a 403.
func platformForLogin(ctx context.Context, q db.Querier, slug string) (loginPlatform, error) {
	var pl loginPlatform
	var enabled bool
	err := q.QueryRowContext(ctx, `SELECT id, name, enabled, registration_enabled FROM platforms WHERE slug = $1`, slug).
		Scan(&pl.id, &pl.name, &enabled, &pl.registration)
	if errors.Is(err, sql.ErrNoRows) {
		return pl, apperr.Invalid("oauthProvider %q is not a known platform", slug)
	}
	if err != nil {
		return pl, err
	}
	if !enabled {
		return pl, apperr.Forbiddenf("sign-in with %s is disabled", pl.name)
	}
	return pl, nil
}

// upsertLogin is one attempt of the sign-in upsert inside tx: the linking
// rule (SignIn), then the login recorded on the user and in the audit log.
// The front end holds a system key and vouches for the address it sends:
// it is taken as verified by the provider.
func (h *Handler) upsertLogin(ctx context.Context, tx *db.Tx, r *http.Request, in oauthLogin) (loginResult, error) {
	ev := audit.FromRequest(r, audit.Event{SourceService: in.source})
	out, err := h.S.SignIn(ctx, tx, Claim{
		Platform: in.provider, PlatformUserID: in.providerID, Name: in.name,
		Email: in.email, EmailVerified: in.email != "", AvatarURL: in.image,
	}, ev)
	if err != nil {
		return loginResult{}, err
	}
	res := loginResult{userID: out.UserID, created: out.Created, outcome: out}
	ts := db.TS(h.S.Clock.Now())
	if _, err := tx.ExecContext(ctx, `UPDATE users SET last_login_at = $1, last_login_provider = $2, updated_at = $1 WHERE id = $3`,
		ts, in.provider, res.userID); err != nil {
		return res, err
	}
	e := ev
	e.UserID, e.EventType, e.ResourceType, e.ResourceID = res.userID, audit.Login, "user", res.userID
	e.Description, e.Metadata = "signed in with "+in.provider, map[string]any{"provider": in.provider}
	if _, err := h.S.Audit.Record(ctx, tx, e); err != nil {
		return res, err
	}
	res.user, err = h.S.loginUser(ctx, tx, res.userID)
	return res, err
}

func avatarIf(enabled bool, url string) string {
	if !enabled {
		return ""
	}
	return url
}

// sources are the source_service values of spec 2 (Events).
var sources = map[string]bool{"api": true, "id": true, "backend": true, "policies": true, "chat_platform_bot": true, "stream_platform_bot": true}

// knownSource returns s when it is a source_service value of the spec, else "api".
func knownSource(s string) string {
	if sources[s] {
		return s
	}
	return "api"
}

// ByEmail serves GET /v1/users/email/{email}: the OAuth-login shape of the
// active user with that email. A system key, a super admin or a holder of
// users:read may ask for any address (several users may share one, through
// registration and a provider sign-in; the oldest is answered). Anyone else
// may ask only for their own address (403) and always gets their own record,
// never another user's who shares it, whatever the linking rule.
func (h *Handler) ByEmail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	email := strings.ToLower(strings.TrimSpace(chi.URLParam(r, "email")))
	var id string
	if p.IsAdmin() || p.Can("users:read") {
		err := h.S.DB.QueryRowContext(ctx, `SELECT id FROM users WHERE LOWER(email) = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT 1`, email).Scan(&id)
		if err != nil {
			httpx.Error(w, r, db.NotFoundOr(err, "user"))
			return
		}
	} else {
		own, err := h.ownEmail(ctx, p.UserID)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		if own == "" || own != email {
			httpx.Error(w, r, apperr.Forbiddenf("you may only look up your own email address"))
			return
		}
		id = p.UserID
	}
	lu, err := h.S.loginUser(ctx, h.S.DB, id)
	httpx.Respond(w, r, http.StatusOK, lu, err)
}

// ownEmail returns the lower-cased email of the active user id, or "" when
// the caller acts for no user, the user has no email or is soft-deleted.
func (h *Handler) ownEmail(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	var e sql.NullString
	err := h.S.DB.QueryRowContext(ctx, `SELECT email FROM users WHERE id = $1 AND deleted_at IS NULL`, id).Scan(&e)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	return strings.ToLower(e.String), nil
}
