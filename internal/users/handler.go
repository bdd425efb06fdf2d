package users

import (
	"context"
	"database/sql"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/access"
	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/sessions"
)

// Handler serves the users endpoints (spec 2, Users).
type Handler struct {
	S *Service
}

// List serves GET /v1/users: a paginated list, newest first. Soft-deleted
// users are left out unless include_deleted=true; search matches username,
// name or email.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pg := httpx.ParsePage(r, 20)
	q := r.URL.Query()
	where, args := []string{"TRUE"}, []any{}
	if inc, _ := strconv.ParseBool(q.Get("include_deleted")); !inc {
		where = append(where, "deleted_at IS NULL")
	}
	if s := strings.TrimSpace(q.Get("search")); s != "" {
		args = append(args, "%"+db.Like(strings.ToLower(s))+"%")
		n := "$" + strconv.Itoa(len(args))
		where = append(where, `(LOWER(username) LIKE `+n+` ESCAPE '\' OR LOWER(name) LIKE `+n+` ESCAPE '\' OR LOWER(COALESCE(email, '')) LIKE `+n+` ESCAPE '\')`)
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := h.S.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE `+cond, args...).Scan(&total); err != nil {
		httpx.Error(w, r, err)
		return
	}
	n := len(args)
	rows, err := h.S.DB.QueryContext(ctx, `SELECT `+userCols+` FROM users WHERE `+cond+
		` ORDER BY created_at DESC, id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, pg.Limit, pg.Offset())...)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	defer rows.Close()
	out := []User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteList(w, r, out, pg, total)
}

// Get serves GET /v1/users/{id}. Holders of users:read also see soft-deleted
// users (with deleted_at set), so administrators can follow a pending deletion.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) {
	u, err := h.S.Get(r.Context(), h.S.DB, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, u)
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

type updateBody struct {
	Username       httpx.Opt[string] `json:"username"`
	Email          httpx.Opt[string] `json:"email"`
	AvatarURL      httpx.Opt[string] `json:"avatar_url"`
	PrivacyMode    httpx.Opt[bool]   `json:"privacy_mode"`
	AvatarsEnabled httpx.Opt[bool]   `json:"avatars_enabled"`
}

// Update serves PATCH /v1/users/{id}: only the fields sent change. An email
// set here is the user's contact address; it is not verified, so the sign-in
// upsert never links accounts by it (only by verified platform-account
// emails), and an address another user has answers 409.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	id := chi.URLParam(r, "id")
	b, err := decodeUpdate(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := h.S.active(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := mayManage(p, u); err != nil {
			return err
		}
		if err := b.checkAvatar(u); err != nil {
			return err
		}
		fields, err := b.store(ctx, &userUpdate{tx: tx, id: id, now: db.TS(h.S.Clock.Now())}, u)
		if err != nil {
			return err
		}
		return h.recordUpdate(ctx, tx, r, p, id, fields)
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.writeUser(w, r, id)
}

// decodeUpdate reads the PATCH body and checks each field on its own; the
// email comes back trimmed and lower-cased.
func decodeUpdate(r *http.Request) (updateBody, error) {
	var b updateBody
	if err := httpx.Decode(r, &b); err != nil {
		return b, err
	}
	if !b.Username.Set && !b.Email.Set && !b.AvatarURL.Set && !b.PrivacyMode.Set && !b.AvatarsEnabled.Set {
		return b, apperr.Invalid("give at least one of username, email, avatar_url, privacy_mode, avatars_enabled")
	}
	if b.Username.Set {
		if b.Username.Null {
			return b, apperr.Invalid("username cannot be null")
		}
		if err := ValidUsername(b.Username.Value); err != nil {
			return b, err
		}
	}
	if (b.PrivacyMode.Set && b.PrivacyMode.Null) || (b.AvatarsEnabled.Set && b.AvatarsEnabled.Null) {
		return b, apperr.Invalid("privacy_mode and avatars_enabled must be booleans")
	}
	b.Email.Value = strings.ToLower(strings.TrimSpace(b.Email.Value))
	if b.Email.Set && !b.Email.Null && !validEmail(b.Email.Value) {
		return b, apperr.Invalid("email is not a valid address")
	}
	if b.AvatarURL.Set && !b.AvatarURL.Null && !validURL(b.AvatarURL.Value) {
		return b, apperr.Invalid("avatar_url must be an absolute http or https URL of at most 2048 characters")
	}
	return b, nil
}

// checkAvatar refuses an avatar URL for a user whose avatars are off, after
// this same request's avatars_enabled is applied.
func (b *updateBody) checkAvatar(u User) error {
	avatars := u.AvatarsEnabled
	if b.AvatarsEnabled.Set {
		avatars = b.AvatarsEnabled.Value
	}
	if b.AvatarURL.Set && !b.AvatarURL.Null && !avatars {
		return apperr.Invalid("avatars are disabled for this user; enable avatars_enabled before setting avatar_url")
	}
	return nil
}

// userUpdate writes the columns of one user, one statement each, and
// remembers their names for the audit event.
type userUpdate struct {
	tx     *db.Tx
	id     string
	now    int64 // updated_at, in db.TS form
	fields []string
}

func (x *userUpdate) set(ctx context.Context, col string, v any) error {
	_, err := x.tx.ExecContext(ctx, `UPDATE users SET `+col+` = $1, updated_at = $2 WHERE id = $3`, v, x.now, x.id)
	x.fields = append(x.fields, col)
	return err
}

// store writes the fields of b to the user u through x and returns the
// names of the columns written. A username equal to the current one is not
// written; a taken username or email is a 409.
func (b *updateBody) store(ctx context.Context, x *userUpdate, u User) ([]string, error) {
	if b.Username.Set && b.Username.Value != u.Username {
		if err := x.set(ctx, "username", b.Username.Value); err != nil {
			if db.IsUniqueViolation(err) {
				return nil, apperr.Conflictf("username %q is taken", b.Username.Value)
			}
			return nil, err
		}
	}
	if b.Email.Set {
		if err := x.setEmail(ctx, b.Email); err != nil {
			return nil, err
		}
	}
	if b.AvatarURL.Set {
		if err := x.set(ctx, "avatar_url", nullable(b.AvatarURL.Value)); err != nil {
			return nil, err
		}
	}
	if b.PrivacyMode.Set {
		if err := x.set(ctx, "privacy_mode", b.PrivacyMode.Value); err != nil {
			return nil, err
		}
	}
	if b.AvatarsEnabled.Set {
		if err := x.setAvatars(ctx, b.AvatarsEnabled.Value); err != nil {
			return nil, err
		}
	}
	return x.fields, nil
}

// setEmail writes the contact address (null clears it); an address another
// user has is a 409.
func (x *userUpdate) setEmail(ctx context.Context, email httpx.Opt[string]) error {
	var v any
	if !email.Null {
		taken, err := emailTaken(ctx, x.tx, email.Value, x.id)
		if err != nil {
			return err
		}
		if taken {
			return apperr.Conflictf("email address is in use by another user")
		}
		v = email.Value
	}
	return x.set(ctx, "email", v)
}

// setAvatars writes avatars_enabled; turning avatars off removes the stored
// avatar URLs of the user and of its platform accounts (spec 2, User).
func (x *userUpdate) setAvatars(ctx context.Context, on bool) error {
	if err := x.set(ctx, "avatars_enabled", on); err != nil {
		return err
	}
	if on {
		return nil
	}
	if _, err := x.tx.ExecContext(ctx, `UPDATE users SET avatar_url = NULL WHERE id = $1`, x.id); err != nil {
		return err
	}
	_, err := x.tx.ExecContext(ctx, `UPDATE platform_accounts SET avatar_url = NULL, updated_at = $1 WHERE user_id = $2 AND avatar_url IS NOT NULL`, x.now, x.id)
	return err
}

func (h *Handler) recordUpdate(ctx context.Context, tx *db.Tx, r *http.Request, p *authn.Principal, id string, fields []string) error {
	if fields == nil {
		fields = []string{}
	}
	_, err := h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
		UserID: id, ActorID: actorIfOther(p, id), EventType: audit.UserUpdated, ResourceType: "user", ResourceID: id,
		Description: "user updated", Metadata: map[string]any{"fields": fields},
	}))
	return err
}

func (h *Handler) writeUser(w http.ResponseWriter, r *http.Request, id string) {
	u, err := h.S.Get(r.Context(), h.S.DB, id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusOK, u, "/v1/users/"+id)
}

// UpdateLocale serves PATCH /v1/users/{id}/locale with {locale: string or null};
// null clears the preference (mails then use the default, en).
func (h *Handler) UpdateLocale(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	id := chi.URLParam(r, "id")
	var b struct {
		Locale httpx.Opt[string] `json:"locale"`
	}
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !b.Locale.Set {
		httpx.Error(w, r, apperr.Invalid("locale is required (a string, or null to clear it)"))
		return
	}
	var v any
	if !b.Locale.Null {
		supported, err := h.S.supportedLocales(ctx)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		loc := strings.ToLower(strings.TrimSpace(b.Locale.Value))
		if !slices.Contains(supported, loc) {
			httpx.Error(w, r, apperr.Invalid("locale must be one of %s", strings.Join(supported, ", ")))
			return
		}
		v = loc
	}
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := h.S.active(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := mayManage(p, u); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET preferred_locale = $1, updated_at = $2 WHERE id = $3`, v, db.TS(h.S.Clock.Now()), id); err != nil {
			return err
		}
		return h.recordUpdate(ctx, tx, r, p, id, []string{"preferred_locale"})
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.writeUser(w, r, id)
}

// UpdateUsername serves PATCH /v1/users/{id}/username: 400 invalid, 404
// unknown user, 409 taken (compared case-insensitively).
func (h *Handler) UpdateUsername(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	id := chi.URLParam(r, "id")
	var b struct {
		Username string `json:"username"`
	}
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := ValidUsername(b.Username); err != nil {
		httpx.Error(w, r, err)
		return
	}
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := h.S.active(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := mayManage(p, u); err != nil {
			return err
		}
		if u.Username == b.Username {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE users SET username = $1, updated_at = $2 WHERE id = $3`, b.Username, db.TS(h.S.Clock.Now()), id)
		if db.IsUniqueViolation(err) {
			return apperr.Conflictf("username %q is taken", b.Username)
		}
		if err != nil {
			return err
		}
		return h.recordUpdate(ctx, tx, r, p, id, []string{"username"})
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.writeUser(w, r, id)
}

// Delete serves DELETE /v1/users/{id}: a soft delete. deleted_at is set,
// the purge is scheduled DeletionGrace later, every session is revoked and
// every API key of the user deleted, all in one transaction; the epoch bump
// makes their tokens fail on every instance at once.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	id := chi.URLParam(r, "id")
	now := h.S.Clock.Now()
	var revoked, keys int64
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := h.S.active(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := mayManage(p, u); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE users SET deleted_at = $1, scheduled_deletion_at = $2, updated_at = $1 WHERE id = $3 AND deleted_at IS NULL`,
			db.TS(now), db.TS(now.Add(DeletionGrace)), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.NotFoundf("user not found")
		}
		if revoked, err = sessions.RevokeUser(ctx, tx, id, "", now); err != nil {
			return err
		}
		if res, err = tx.ExecContext(ctx, `DELETE FROM api_keys WHERE user_id = $1`, id); err != nil {
			return err
		}
		keys, _ = res.RowsAffected()
		_, err = h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: id, ActorID: actorIfOther(p, id), EventType: audit.UserDeleted, ResourceType: "user", ResourceID: id,
			Description: "user deleted; permanent deletion scheduled",
			Metadata:    map[string]any{"scheduled_deletion_at": now.Add(DeletionGrace), "sessions_revoked": revoked, "api_keys_deleted": keys},
		}))
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.Epoch.Bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.NoContent(w)
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
	rows, err := q.QueryContext(ctx, `SELECT r.id, r.name, r.description FROM user_roles ur JOIN roles r ON r.id = ur.role_id
		WHERE ur.user_id = $1 ORDER BY r.name`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []RoleRef{}
	for rows.Next() {
		var rr RoleRef
		if err := rows.Scan(&rr.ID, &rr.Name, &rr.Description); err != nil {
			return nil, err
		}
		out = append(out, rr)
	}
	return out, rows.Err()
}

// Roles serves GET /v1/users/{id}/roles: {roles: [{id, name, description}]}.
func (h *Handler) Roles(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u, err := h.S.Get(ctx, h.S.DB, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.writeRoles(w, r, u.ID, http.StatusOK)
}

func (h *Handler) writeRoles(w http.ResponseWriter, r *http.Request, userID string, status int) {
	roles, err := h.S.roles(r.Context(), h.S.DB, userID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, status, map[string]any{"roles": roles})
}

// AddRole serves POST /v1/users/{id}/roles with {role_id}. The caller must
// hold every permission of the role (spec 1, Authentication 7). It answers
// the user's roles: 201 when the role was newly assigned, 200 when the user
// already held it.
func (h *Handler) AddRole(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	id := chi.URLParam(r, "id")
	var b struct {
		RoleID string `json:"role_id"`
	}
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if strings.TrimSpace(b.RoleID) == "" {
		httpx.Error(w, r, apperr.Invalid("role_id is required"))
		return
	}
	added := false
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := h.S.active(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := mayManage(p, u); err != nil {
			return err
		}
		var name string
		if err := tx.QueryRowContext(ctx, `SELECT name FROM roles WHERE id = $1`, b.RoleID).Scan(&name); err != nil {
			return db.NotFoundOr(err, "role")
		}
		if err := access.CanGrantRole(ctx, tx, p, b.RoleID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			id, b.RoleID, db.TS(h.S.Clock.Now()))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		added = true
		_, err = h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: id, ActorID: actorIfOther(p, id), EventType: audit.UserUpdated, ResourceType: "user", ResourceID: id,
			Description: "role " + name + " assigned", Metadata: map[string]any{"role_id": b.RoleID, "change": "role_added"},
		}))
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
		if err := h.S.Epoch.Bump(ctx); err != nil {
			httpx.Error(w, r, err)
			return
		}
	}
	h.writeRoles(w, r, id, status)
}

// RemoveRole serves DELETE /v1/users/{id}/roles/{role_id}. Taking a role away
// needs the same standing as giving it, so a holder of users:write cannot
// strip a more powerful role from someone else.
func (h *Handler) RemoveRole(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	id, roleID := chi.URLParam(r, "id"), chi.URLParam(r, "role_id")
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := h.S.Get(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := mayManage(p, u); err != nil {
			return err
		}
		if err := access.CanGrantRole(ctx, tx, p, roleID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM user_roles WHERE user_id = $1 AND role_id = $2`, id, roleID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.NotFoundf("the user does not hold that role")
		}
		_, err = h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: id, ActorID: actorIfOther(p, id), EventType: audit.UserUpdated, ResourceType: "user", ResourceID: id,
			Description: "role removed", Metadata: map[string]any{"role_id": roleID, "change": "role_removed"},
		}))
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.Epoch.Bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.NoContent(w)
}
