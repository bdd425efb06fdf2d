package users

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Handler serves the users endpoints (spec 2, Users).
type Handler struct {
	S *Service
}

// List serves GET /v1/users: a paginated list, newest first unless
// sort_field and sort_direction say otherwise. Soft-deleted users are left
// out unless include_deleted=true; search matches the exact id, or part of
// the username, name or email; status, two_factor and role_id filter
// (Service.List).
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	lq := ParseListQuery(r.URL.Query())
	if err := lq.Check(r.URL.Query()); err != nil {
		httpx.Error(w, r, err)
		return
	}
	// Another user's two-factor state is two_factor:manage's to read (spec
	// 2, Two-factor), so filtering by it is too.
	if lq.TwoFactor != "" && !authn.From(r.Context()).Can("two_factor:manage") {
		httpx.Error(w, r, apperr.Forbiddenf("the two_factor filter needs the permission two_factor:manage"))
		return
	}
	out, total, err := h.S.List(r.Context(), lq)
	httpx.RespondList(w, r, out, lq.Page, total, err)
}

// Get serves GET /v1/users/{id}. Holders of users:read also see soft-deleted
// users (with deleted_at set), so administrators can follow a pending deletion.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) {
	u, err := h.S.Get(r.Context(), h.S.DB, chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, u, err)
}

// Me serves GET /v1/users/me: the caller's own user (also for OAuth access
// tokens, limited to their scopes).
func (h *Handler) Me(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	if p.UserID == "" {
		httpx.Error(w, r, apperr.NotFoundf("this credential does not belong to a user"))
		return
	}
	u, err := h.S.active(r.Context(), h.S.DB, p.UserID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if p.Kind == authn.KindOAuth {
		// An OAuth client sees only what its scopes grant, as in UserInfo
		// (spec 1, UserInfo claims): no email without "email", no avatar
		// without "profile".
		if !p.HasOAuthScope("email") {
			u.Email = nil
		}
		if !p.HasOAuthScope("profile") {
			u.AvatarURL = nil
		}
	}
	httpx.WriteResource(w, r, http.StatusOK, u)
}

// Profile is the public profile shape of a user (spec 2, User).
type Profile struct {
	Name            string     `json:"name"`         // the username
	DisplayName     string     `json:"display_name"` // the display name
	Picture         *string    `json:"picture"`
	Provider        *string    `json:"provider"`         // platform slug of the last login
	PrimaryProvider *string    `json:"primary_provider"` // platform slug of the primary account
	LastLoginAt     *time.Time `json:"last_login_at"`
	CreatedAt       time.Time  `json:"created_at"`
	PrivacyMode     bool       `json:"privacy_mode"`
	AvatarsEnabled  bool       `json:"avatars_enabled"`
}

// GetProfile serves GET /v1/users/{id}/profile.
func (h *Handler) GetProfile(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u, err := h.S.active(ctx, h.S.DB, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	p := Profile{Name: u.Username, DisplayName: u.Name, Picture: u.AvatarURL, LastLoginAt: u.LastLoginAt,
		CreatedAt: u.CreatedAt, PrivacyMode: u.PrivacyMode, AvatarsEnabled: u.AvatarsEnabled}
	if u.lastLoginProvider != "" {
		p.Provider = &u.lastLoginProvider
	}
	if u.PrimaryPlatformAccountID != nil {
		var slug string
		err := h.S.DB.QueryRowContext(ctx, `SELECT p.slug FROM platform_accounts pa JOIN platforms p ON p.id = pa.platform_id WHERE pa.id = $1`,
			*u.PrimaryPlatformAccountID).Scan(&slug)
		if err == nil {
			p.PrimaryProvider = &slug
		} else if err != sql.ErrNoRows {
			httpx.Error(w, r, err)
			return
		}
	}
	httpx.WriteResource(w, r, http.StatusOK, p)
}

// Update serves PATCH /v1/users/{id}: only the fields sent change (see
// Service.Update).
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) {
	var c Changes
	if !httpx.Bind(w, r, &c) {
		return
	}
	id := chi.URLParam(r, "id")
	err := h.S.Update(r.Context(), authn.From(r.Context()), id, c, audit.FromRequest(r, audit.Event{}))
	h.respondUser(w, r, id, err)
}

// respondUser answers a change of user id: err when it failed, else the
// user as it is now.
func (h *Handler) respondUser(w http.ResponseWriter, r *http.Request, id string, err error) {
	var u User
	if err == nil {
		u, err = h.S.Get(r.Context(), h.S.DB, id)
	}
	httpx.RespondAt(w, r, http.StatusOK, u, "/v1/users/"+id, err)
}

// UpdateLocale serves PATCH /v1/users/{id}/locale with {locale: string or null};
// null clears the preference (mails then use the default, en).
func (h *Handler) UpdateLocale(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Locale httpx.Opt[string] `json:"locale"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	if !b.Locale.Set {
		httpx.Error(w, r, apperr.Invalid("locale is required (a string, or null to clear it)"))
		return
	}
	id := chi.URLParam(r, "id")
	err := h.S.SetLocale(r.Context(), authn.From(r.Context()), id, b.Locale.Ptr(), audit.FromRequest(r, audit.Event{}))
	h.respondUser(w, r, id, err)
}

// UpdateUsername serves PATCH /v1/users/{id}/username: 400 invalid, 404
// unknown user, 409 taken (compared case-insensitively).
func (h *Handler) UpdateUsername(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Username string `json:"username"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	id := chi.URLParam(r, "id")
	err := h.S.SetUsername(r.Context(), authn.From(r.Context()), id, b.Username, audit.FromRequest(r, audit.Event{}))
	h.respondUser(w, r, id, err)
}

// Delete serves DELETE /v1/users/{id}: a soft delete (Service.Delete).
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.Delete(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), audit.FromRequest(r, audit.Event{})))
}

// Permissions serves GET /v1/users/{id}/permissions: {permissions: [...]},
// ["*:*"] for super admins.
func (h *Handler) Permissions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u, err := h.S.Get(ctx, h.S.DB, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	perms := []string{"*:*"}
	if !u.IsSuperAdmin {
		set, err := authn.UserPermissions(ctx, h.S.DB, u.ID)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		perms = set.List()
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"permissions": perms})
}

// RoleRef is a role as listed on a user.
type RoleRef struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

func (s *Service) roles(ctx context.Context, q db.Querier, userID string) ([]RoleRef, error) {
	scan := func(row db.Scanner) (RoleRef, error) {
		var rr RoleRef
		err := row.Scan(&rr.ID, &rr.Name, &rr.Description)
		return rr, err
	}
	return db.All(ctx, q, scan, `SELECT r.id, r.name, r.description FROM user_roles ur JOIN roles r ON r.id = ur.role_id
		WHERE ur.user_id = $1 ORDER BY r.name`, userID)
}

// Roles serves GET /v1/users/{id}/roles: {roles: [{id, name, description}]}.
func (h *Handler) Roles(w http.ResponseWriter, r *http.Request) {
	roles, err := h.S.Roles(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"roles": roles}, err)
}

func (h *Handler) writeRoles(w http.ResponseWriter, r *http.Request, userID string, status int) {
	roles, err := h.S.roles(r.Context(), h.S.DB, userID)
	httpx.RespondJSON(w, r, status, map[string]any{"roles": roles}, err)
}

// AddRole serves POST /v1/users/{id}/roles with {role_id} (Service.AddRole).
// It answers the user's roles: 201 when the role was newly assigned, 200
// when the user already held it.
func (h *Handler) AddRole(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	var b struct {
		RoleID string `json:"role_id"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	added, err := h.S.AddRole(r.Context(), authn.From(r.Context()), id, b.RoleID, audit.FromRequest(r, audit.Event{}))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
	}
	h.writeRoles(w, r, id, status)
}

// RemoveRole serves DELETE /v1/users/{id}/roles/{role_id} (Service.RemoveRole).
func (h *Handler) RemoveRole(w http.ResponseWriter, r *http.Request) {
	err := h.S.RemoveRole(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "role_id"), audit.FromRequest(r, audit.Event{}))
	httpx.RespondEmpty(w, r, err)
}
