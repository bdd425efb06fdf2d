package access

import (
	"context"
	"database/sql"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/token"
)

// APIKey is an API key as listed; Key is set only at creation and regeneration.
type APIKey struct {
	ID          string     `json:"id"`
	Key         string     `json:"key,omitempty"`
	KeyPrefix   string     `json:"key_prefix"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Scopes      []string   `json:"scopes"`
	IsActive    bool       `json:"is_active"`
	IsSystem    bool       `json:"is_system"`
	UserID      *string    `json:"user_id"`
	ExpiresAt   *time.Time `json:"expires_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

const keyCols = `id, key_prefix, name, description, scopes, is_active, is_system, user_id, expires_at, last_used_at, created_at, updated_at`

func scanKey(row db.Scanner) (APIKey, error) {
	var k APIKey
	var scopes db.Strings
	var owner sql.NullString
	var exp, used db.NullTime
	var c, u int64
	err := row.Scan(&k.ID, &k.KeyPrefix, &k.Name, &k.Description, &scopes, &k.IsActive, &k.IsSystem, &owner, &exp, &used, &c, &u)
	k.Scopes = scopes
	if owner.Valid {
		k.UserID = &owner.String
	}
	k.ExpiresAt, k.LastUsedAt = exp.Ptr(), used.Ptr()
	k.CreatedAt, k.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return k, err
}

// visibleKey loads a key the caller may manage: their own, or any for super
// admins and system keys. Other users' keys are reported as not found so their
// ids cannot be probed.
func (s *Service) visibleKey(ctx context.Context, p *authn.Principal, id string) (APIKey, error) {
	k, err := scanKey(s.DB.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id = $1`, id))
	if err != nil {
		return k, db.NotFoundOr(err, "API key")
	}
	if !p.IsAdmin() && (k.UserID == nil || *k.UserID != p.UserID || p.UserID == "") {
		return APIKey{}, apperr.NotFoundf("API key not found")
	}
	return k, nil
}

// maxKeyScopes bounds the scopes array of an API key body, repeats counted
// (docs/decisions.md, "Input bounds"); there are fewer permissions than that.
const maxKeyScopes = 200

// cleanScopes enforces Authentication 7: every scope must be a known
// permission string the caller holds. It returns the scopes without
// repeats, in their first order, as OAuth clients store theirs; nil is [].
func (s *Service) cleanScopes(ctx context.Context, p *authn.Principal, in []string) ([]string, error) {
	if err := httpx.CheckItems("scopes", len(in), maxKeyScopes); err != nil {
		return nil, err
	}
	scopes := []string{}
	for _, sc := range in {
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	return scopes, s.checkScopes(ctx, p, scopes)
}

// checkScopes checks each scope of a key: a resource:action string, a known
// permission, and one the caller holds.
func (s *Service) checkScopes(ctx context.Context, p *authn.Principal, scopes []string) error {
	for _, sc := range scopes {
		res, act, ok := strings.Cut(sc, ":")
		if !ok || !permPart.MatchString(res) || !permPart.MatchString(act) {
			return apperr.Invalid("scope %q is not a resource:action permission string", sc)
		}
		var n int
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM permissions WHERE resource = $1 AND action = $2`, res, act).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return apperr.Invalid("scope %q is not a known permission", sc)
		}
		if !p.IsAdmin() && !p.Can(sc) {
			return apperr.Forbiddenf("scope %s is outside your own permissions", sc)
		}
	}
	return nil
}

// ListKeys serves GET /v1/api-keys: the caller's own keys; super admins and
// system keys see every key (optionally filtered by user_id).
func (h *Handler) ListKeys(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	pg := httpx.ParsePage(r, 20)
	where, args := "user_id = $1", []any{p.UserID}
	if p.IsAdmin() {
		where, args = "TRUE", nil
		if u := r.URL.Query().Get("user_id"); u != "" {
			where, args = "user_id = $1", []any{u}
		}
	} else if p.UserID == "" {
		where = "FALSE"
		args = nil
	}
	var total int
	if err := h.S.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE `+where, args...).Scan(&total); err != nil {
		httpx.Error(w, r, err)
		return
	}
	n := len(args)
	out, err := db.All(ctx, h.S.DB, scanKey, `SELECT `+keyCols+` FROM api_keys WHERE `+where+` ORDER BY created_at DESC, id LIMIT $`+itoa(n+1)+` OFFSET $`+itoa(n+2),
		append(args, pg.Limit, pg.Offset())...)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteList(w, r, out, pg, total)
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// GetKey serves GET /v1/api-keys/{id}.
func (h *Handler) GetKey(w http.ResponseWriter, r *http.Request) {
	k, err := h.S.visibleKey(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, k)
}

type keyBody struct {
	Name        httpx.Opt[string]    `json:"name"`
	Description httpx.Opt[string]    `json:"description"`
	Scopes      httpx.Opt[[]string]  `json:"scopes"`
	ExpiresAt   httpx.Opt[time.Time] `json:"expires_at"`
	IsActive    httpx.Opt[bool]      `json:"is_active"`
}

// CreateKey serves POST /v1/api-keys. The answer is the key itself (not
// enveloped, as the spec shows it), with the full key value shown this once.
func (h *Handler) CreateKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	var b keyBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	name := strings.TrimSpace(b.Name.Value)
	if name == "" || len(name) > 100 {
		httpx.Error(w, r, apperr.Invalid("name is required and at most 100 characters"))
		return
	}
	if err := httpx.CheckLen("description", b.Description.Value, httpx.MaxText); err != nil {
		httpx.Error(w, r, err)
		return
	}
	scopes, err := h.S.cleanScopes(ctx, p, b.Scopes.Value)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	now := h.S.Clock.Now()
	if exp := b.ExpiresAt.Ptr(); exp != nil && !exp.After(now) {
		httpx.Error(w, r, apperr.Invalid("expires_at must be in the future"))
		return
	}
	key := token.New(token.PrefixAPIKey)
	id := uuid.NewString()
	var owner any
	if p.UserID != "" {
		owner = p.UserID
	}
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, name, description, key_hash, key_prefix, scopes, is_active, is_system, expires_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, TRUE, FALSE, $8, $9, $9)`,
			id, owner, name, b.Description.Value, token.Hash(key), token.KeyPrefix(key), db.JSON(scopes), db.NullTS(b.ExpiresAt.Ptr()), db.TS(now)); err != nil {
			return err
		}
		_, err := h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: p.UserID, EventType: audit.APIKeyCreated, ResourceType: "api_key", ResourceID: id,
			Description: "API key " + name + " created", Metadata: map[string]any{"name": name, "scopes": scopes},
		}))
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	k, err := h.S.visibleKey(ctx, p, id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	k.Key = key
	httpx.JSON(w, http.StatusCreated, k)
}

// UpdateKey serves PATCH /v1/api-keys/{id}: name, description, scopes,
// is_active, expires_at; scopes follow the same subset rule as creation.
func (h *Handler) UpdateKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	var b keyBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !b.Name.Set && !b.Description.Set && !b.Scopes.Set && !b.ExpiresAt.Set && !b.IsActive.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, description, scopes, is_active, expires_at"))
		return
	}
	k, err := h.S.visibleKey(ctx, p, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if k.IsSystem && !p.SuperAdmin {
		httpx.Error(w, r, apperr.Forbiddenf("system API keys can only be changed by super admins"))
		return
	}
	if b.Name.Set {
		name := strings.TrimSpace(b.Name.Value)
		if name == "" || len(name) > 100 {
			httpx.Error(w, r, apperr.Invalid("name must be 1 to 100 characters"))
			return
		}
		k.Name = name
	}
	if b.Description.Set {
		if err := httpx.CheckLen("description", b.Description.Value, httpx.MaxText); err != nil {
			httpx.Error(w, r, err)
			return
		}
		k.Description = b.Description.Value
	}
	if b.Scopes.Set {
		scopes, err := h.S.cleanScopes(ctx, p, b.Scopes.Value)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		k.Scopes = scopes
	}
	if b.IsActive.Set {
		k.IsActive = b.IsActive.Value
	}
	if b.ExpiresAt.Set {
		if exp := b.ExpiresAt.Ptr(); exp != nil && !exp.After(h.S.Clock.Now()) {
			httpx.Error(w, r, apperr.Invalid("expires_at must be in the future"))
			return
		}
		k.ExpiresAt = b.ExpiresAt.Ptr()
	}
	if _, err := h.S.DB.ExecContext(ctx, `UPDATE api_keys SET name = $1, description = $2, scopes = $3, is_active = $4, expires_at = $5, updated_at = $6 WHERE id = $7`,
		k.Name, k.Description, db.JSON(k.Scopes), k.IsActive, db.NullTS(k.ExpiresAt), db.TS(h.S.Clock.Now()), k.ID); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	k, err = h.S.visibleKey(ctx, p, k.ID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, k)
}

// RegenerateKey serves POST /v1/api-keys/{id}/regenerate: same id, new
// secret, the old one dead at once. System keys only by super admins.
func (h *Handler) RegenerateKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	k, err := h.S.visibleKey(ctx, p, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if k.IsSystem && !p.SuperAdmin {
		httpx.Error(w, r, apperr.Forbiddenf("system API keys can only be regenerated by super admins"))
		return
	}
	key := token.New(token.PrefixAPIKey)
	if _, err := h.S.DB.ExecContext(ctx, `UPDATE api_keys SET key_hash = $1, key_prefix = $2, updated_at = $3 WHERE id = $4`,
		token.Hash(key), token.KeyPrefix(key), db.TS(h.S.Clock.Now()), k.ID); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	k, err = h.S.visibleKey(ctx, p, k.ID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	k.Key = key
	httpx.JSON(w, http.StatusOK, k)
}

// DeleteKey serves DELETE /v1/api-keys/{id}; system keys answer 403.
func (h *Handler) DeleteKey(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	k, err := h.S.visibleKey(ctx, p, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if k.IsSystem {
		httpx.Error(w, r, apperr.Forbiddenf("system API keys cannot be deleted"))
		return
	}
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys WHERE id = $1`, k.ID); err != nil {
			return err
		}
		owner := ""
		if k.UserID != nil {
			owner = *k.UserID
		}
		_, err := h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: owner, ActorID: actorIfOther(p, owner), EventType: audit.APIKeyRevoked, ResourceType: "api_key", ResourceID: k.ID,
			Description: "API key " + k.Name + " deleted", Metadata: map[string]any{"name": k.Name},
		}))
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.NoContent(w)
}

func actorIfOther(p *authn.Principal, userID string) string {
	if p.UserID != userID {
		if p.UserID != "" {
			return p.UserID
		}
		return p.APIKeyID
	}
	return ""
}

func (s *Service) keyRoles(ctx context.Context, keyID string) ([]Role, error) {
	return s.listRoles(ctx, `SELECT r.id, r.name, r.description, r.is_system, r.requires_two_factor, r.created_at, r.updated_at
		FROM api_key_roles kr JOIN roles r ON r.id = kr.role_id WHERE kr.api_key_id = $1 ORDER BY r.name`, keyID)
}

// ListKeyRoles serves GET /v1/api-keys/{id}/roles: {data: [role], _links}.
func (h *Handler) ListKeyRoles(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	k, err := h.S.visibleKey(ctx, authn.From(ctx), chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	roles, err := h.S.keyRoles(ctx, k.ID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, roles)
}

// AddKeyRole serves POST /v1/api-keys/{id}/roles with {role_id}: the caller
// may assign only roles they hold themselves (super admins and system keys any).
func (h *Handler) AddKeyRole(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	var b struct {
		RoleID string `json:"role_id"`
	}
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if b.RoleID == "" {
		httpx.Error(w, r, apperr.Invalid("role_id is required"))
		return
	}
	k, err := h.S.visibleKey(ctx, p, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	role, err := h.S.GetRole(ctx, b.RoleID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !p.IsAdmin() {
		var n int
		if err := h.S.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM user_roles WHERE user_id = $1 AND role_id = $2`, p.UserID, role.ID).Scan(&n); err != nil {
			httpx.Error(w, r, err)
			return
		}
		if n == 0 || p.Kind != authn.KindSession && CanGrantRole(ctx, h.S.DB, p, role.ID) != nil {
			httpx.Error(w, r, apperr.Forbiddenf("you can only assign roles you hold yourself"))
			return
		}
	}
	if _, err := h.S.DB.ExecContext(ctx, `INSERT INTO api_key_roles (api_key_id, role_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		k.ID, role.ID, db.TS(h.S.Clock.Now())); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	roles, err := h.S.keyRoles(ctx, k.ID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusCreated, roles, "/v1/api-keys/"+k.ID+"/roles")
}

// RemoveKeyRole serves DELETE /v1/api-keys/{id}/roles/{role_id}.
func (h *Handler) RemoveKeyRole(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	k, err := h.S.visibleKey(ctx, authn.From(ctx), chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	res, err := h.S.DB.ExecContext(ctx, `DELETE FROM api_key_roles WHERE api_key_id = $1 AND role_id = $2`, k.ID, chi.URLParam(r, "role_id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		httpx.Error(w, r, apperr.NotFoundf("the API key does not hold that role"))
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.NoContent(w)
}
