package users

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

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
	var b oauthBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	b.Name = strings.TrimSpace(b.Name)
	b.OAuthProvider = strings.ToLower(strings.TrimSpace(b.OAuthProvider))
	b.OAuthProviderID = strings.TrimSpace(b.OAuthProviderID)
	if b.Name == "" || b.OAuthProvider == "" || b.OAuthProviderID == "" {
		httpx.Error(w, r, apperr.Invalid("name, oauthProvider and oauthProviderId are required"))
		return
	}
	if len(b.Name) > 200 || len(b.OAuthProviderID) > 255 {
		httpx.Error(w, r, apperr.Invalid("name (200) or oauthProviderId (255) is too long"))
		return
	}
	email := ""
	if b.Email != nil {
		email = strings.ToLower(strings.TrimSpace(*b.Email))
		if email != "" && !validEmail(email) {
			httpx.Error(w, r, apperr.Invalid("email is not a valid address"))
			return
		}
	}
	image := ""
	if b.Image != nil && strings.TrimSpace(*b.Image) != "" {
		image = strings.TrimSpace(*b.Image)
		if !validURL(image) {
			httpx.Error(w, r, apperr.Invalid("image must be an absolute http or https URL"))
			return
		}
	}
	source := r.Header.Get("X-Source-Service")
	var (
		userID  string
		created bool
		lu      LoginUser
	)
	upsert := func(tx *db.Tx) error {
		created = false
		var (
			platformID, platformName string
			enabled, registration    bool
		)
		err := tx.QueryRowContext(ctx, `SELECT id, name, enabled, registration_enabled FROM platforms WHERE slug = $1`, b.OAuthProvider).
			Scan(&platformID, &platformName, &enabled, &registration)
		if errors.Is(err, sql.ErrNoRows) {
			return apperr.Invalid("oauthProvider %q is not a known platform", b.OAuthProvider)
		}
		if err != nil {
			return err
		}
		if !enabled {
			return apperr.Forbiddenf("sign-in with %s is disabled", platformName)
		}
		now := h.S.Clock.Now()
		ts := db.TS(now)
		var accountID string
		err = tx.QueryRowContext(ctx, `SELECT id, user_id FROM platform_accounts WHERE platform_id = $1 AND platform_user_id = $2`,
			platformID, b.OAuthProviderID).Scan(&accountID, &userID)
		event := audit.Event{EventType: audit.Login, ResourceType: "user", SourceService: knownSource(source),
			Metadata: map[string]any{"provider": b.OAuthProvider}}
		switch {
		case err == nil:
			u, err := h.S.Get(ctx, tx, userID)
			if err != nil {
				return err
			}
			if u.DeletedAt != nil {
				return apperr.Forbiddenf("this account is scheduled for deletion")
			}
			if _, err := tx.ExecContext(ctx, `UPDATE platform_accounts SET username = $1, email = COALESCE($2, email), avatar_url = $3, updated_at = $4 WHERE id = $5`,
				b.Name, nullable(email), nullable(avatarIf(u.AvatarsEnabled, image)), ts, accountID); err != nil {
				return err
			}
			if u.PrimaryPlatformAccountID != nil && *u.PrimaryPlatformAccountID == accountID && u.AvatarsEnabled && image != "" {
				if _, err := tx.ExecContext(ctx, `UPDATE users SET avatar_url = $1 WHERE id = $2`, image, userID); err != nil {
					return err
				}
			}
		case errors.Is(err, sql.ErrNoRows):
			linked := ""
			if email != "" {
				err := tx.QueryRowContext(ctx, `SELECT u.id FROM users u WHERE LOWER(u.email) = $1 AND u.deleted_at IS NULL
					AND EXISTS (SELECT 1 FROM platform_accounts pa WHERE pa.user_id = u.id AND LOWER(pa.email) = $1 AND pa.email_verified)
					ORDER BY u.created_at, u.id LIMIT 1`, email).Scan(&linked)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
			}
			if linked != "" {
				u, err := h.S.Get(ctx, tx, linked)
				if err != nil {
					return err
				}
				userID, accountID = linked, uuid.NewString()
				if _, err := tx.ExecContext(ctx, `INSERT INTO platform_accounts (id, user_id, platform_id, platform_user_id, username, email, avatar_url, email_verified, is_primary, created_at, updated_at)
					VALUES ($1, $2, $3, $4, $5, $6, $7, TRUE, FALSE, $8, $8)`,
					accountID, userID, platformID, b.OAuthProviderID, b.Name, email, nullable(avatarIf(u.AvatarsEnabled, image)), ts); err != nil {
					return err
				}
				if _, err := h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
					UserID: userID, EventType: audit.AccountLinked, ResourceType: "platform_account", ResourceID: accountID, SourceService: knownSource(source),
					Description: platformName + " account linked by email", Metadata: map[string]any{"provider": b.OAuthProvider},
				})); err != nil {
					return err
				}
				break
			}
			if !registration {
				return apperr.Forbiddenf("registration with %s is closed", platformName)
			}
			userID, accountID, err = Create(ctx, tx, ts, NewAccount{
				PlatformSlug: b.OAuthProvider, PlatformUserID: b.OAuthProviderID, Username: b.Name, Name: b.Name,
				Email: email, AvatarURL: image, EmailVerified: email != "",
			})
			if err != nil {
				return err
			}
			created = true
			if _, err := h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
				UserID: userID, EventType: audit.UserCreated, ResourceType: "user", ResourceID: userID, SourceService: knownSource(source),
				Description: "user created by " + platformName + " sign-in", Metadata: map[string]any{"provider": b.OAuthProvider},
			})); err != nil {
				return err
			}
		default:
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET last_login_at = $1, last_login_provider = $2, updated_at = $1 WHERE id = $3`,
			ts, b.OAuthProvider, userID); err != nil {
			return err
		}
		event.UserID, event.ResourceID = userID, userID
		event.Description = "signed in with " + platformName
		if _, err := h.S.Audit.Record(ctx, tx, audit.FromRequest(r, event)); err != nil {
			return err
		}
		lu, err = h.S.loginUser(ctx, tx, userID)
		return err
	}
	// A concurrent first sign-in of the same account fails on the platform
	// account's unique index; running again then finds the account the other
	// request created. (A username taken in between is settled inside Create.)
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = h.S.DB.Tx(ctx, upsert); !db.IsUniqueViolation(err) {
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
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpx.WriteResourceAt(w, r, status, lu, "/v1/users/"+userID)
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
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, lu)
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
