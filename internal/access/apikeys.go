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
	k.UserID = db.StringPtr(owner)
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
		return nil, apperr.OnField("scopes", err)
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
			return apperr.OnField("scopes", apperr.Invalid("scope %q is not a resource:action permission string", sc))
		}
		var n int
		if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM permissions WHERE resource = $1 AND action = $2`, res, act).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return apperr.OnField("scopes", apperr.Invalid("scope %q is not a known permission", sc))
		}
		if !mayHoldScope(p, sc) {
			return apperr.OnField("scopes", apperr.Forbiddenf("scope %s is outside your own permissions", sc))
		}
	}
	return nil
}

// ListKeys returns a page of API keys and the total: the caller's own;
// super admins and system keys see every key, or only those of userID when
// it is not "". The callers require api_keys:read.
func (s *Service) ListKeys(ctx context.Context, p *authn.Principal, userID string, pg httpx.Page) ([]APIKey, int, error) {
	where, args := "user_id = $1", []any{p.UserID}
	if p.IsAdmin() {
		where, args = "TRUE", nil
		if userID != "" {
			where, args = "user_id = $1", []any{userID}
		}
	} else if p.UserID == "" {
		where = "FALSE"
		args = nil
	}
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := len(args)
	out, err := db.All(ctx, s.DB, scanKey, `SELECT `+keyCols+` FROM api_keys WHERE `+where+` ORDER BY created_at DESC, id LIMIT $`+itoa(n+1)+` OFFSET $`+itoa(n+2),
		append(args, pg.Limit, pg.Offset())...)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// ListKeys serves GET /v1/api-keys: the caller's own keys; super admins and
// system keys see every key (optionally filtered by user_id).
func (h *Handler) ListKeys(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 20)
	out, total, err := h.S.ListKeys(r.Context(), authn.From(r.Context()), r.URL.Query().Get("user_id"), pg)
	httpx.RespondList(w, r, out, pg, total, err)
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}

// GetKey returns a key the caller may manage (NotFound otherwise).
func (s *Service) GetKey(ctx context.Context, p *authn.Principal, id string) (APIKey, error) {
	return s.visibleKey(ctx, p, id)
}

// GetKey serves GET /v1/api-keys/{id}.
func (h *Handler) GetKey(w http.ResponseWriter, r *http.Request) {
	k, err := h.S.GetKey(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, k, err)
}

// KeyInput is the body of API key creation and update; on update only the
// fields that are Set change.
type KeyInput struct {
	Name        httpx.Opt[string]    `json:"name"`
	Description httpx.Opt[string]    `json:"description"`
	Scopes      httpx.Opt[[]string]  `json:"scopes"`
	ExpiresAt   httpx.Opt[time.Time] `json:"expires_at"`
	IsActive    httpx.Opt[bool]      `json:"is_active"`
	// IsSystem (extension, creation only) asks for a system key: one that
	// holds *:* and belongs to no user, like the key HMID_SYSTEM_API_KEY
	// ensures. Only super admins may create one.
	IsSystem httpx.Opt[bool] `json:"is_system"`
}

// systemScopes are the scopes of every system key (spec 1, API key: system
// keys have wildcard *:* permission).
var systemScopes = []string{"*:*"}

// MayCreateSystemKey reports whether p may create a system key: super
// admins only, as only super admins may regenerate or change one (spec 1,
// API keys). Forms use it to offer the choice; CreateKey checks it.
func MayCreateSystemKey(p *authn.Principal) bool { return p != nil && p.SuperAdmin }

// GrantableScopes lists the known permissions a key of p may hold: those p
// holds itself (Authentication 7), every one for super admins and system
// keys. It is the choice a form offers; CreateKey and UpdateKey check the
// same rule.
func (s *Service) GrantableScopes(ctx context.Context, p *authn.Principal) ([]Permission, error) {
	all, err := db.All(ctx, s.DB, scanPermission, `SELECT `+permCols+` FROM permissions ORDER BY resource, action`)
	if err != nil {
		return nil, err
	}
	out := []Permission{}
	for _, perm := range all {
		if mayHoldScope(p, perm.String()) {
			out = append(out, perm)
		}
	}
	return out, nil
}

// mayHoldScope is the scope-escalation rule of API keys (Authentication 7):
// a key holds only what its creator holds; super admins and system keys are
// exempt.
func mayHoldScope(p *authn.Principal, scope string) bool { return p.IsAdmin() || p.Can(scope) }

// CreateKey creates an API key owned by the caller, or a system key owned by
// no one (in.IsSystem, super admins only). The answer carries the key itself
// this once. ev carries the request's audit fields.
func (s *Service) CreateKey(ctx context.Context, p *authn.Principal, in KeyInput, ev audit.Event) (APIKey, error) {
	name := strings.TrimSpace(in.Name.Value)
	if name == "" || len(name) > 100 {
		return APIKey{}, apperr.OnField("name", apperr.Invalid("name is required and at most 100 characters"))
	}
	if err := httpx.CheckLen("description", in.Description.Value, httpx.MaxText); err != nil {
		return APIKey{}, apperr.OnField("description", err)
	}
	system := in.IsSystem.Value
	if system && !MayCreateSystemKey(p) {
		return APIKey{}, apperr.OnField("is_system", apperr.Forbiddenf("only super admins can create system API keys"))
	}
	if system && len(in.Scopes.Value) > 0 {
		return APIKey{}, apperr.OnField("scopes", apperr.Invalid("a system API key holds every permission (*:*); give it no scopes"))
	}
	scopes, err := s.cleanScopes(ctx, p, in.Scopes.Value)
	if err != nil {
		return APIKey{}, err
	}
	// A system key belongs to the service, not to the super admin who made
	// it: it keeps working when that account is banned or deleted.
	var owner any
	if p.UserID != "" && !system {
		owner = p.UserID
	}
	if system {
		scopes = systemScopes
	}
	now := s.Clock.Now()
	if exp := in.ExpiresAt.Ptr(); exp != nil && !exp.After(now) {
		return APIKey{}, apperr.OnField("expires_at", apperr.Invalid("expires_at must be in the future"))
	}
	key := token.New(token.PrefixAPIKey)
	id := uuid.NewString()
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, name, description, key_hash, key_prefix, scopes, is_active, is_system, expires_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, TRUE, $8, $9, $10, $10)`,
			id, owner, name, in.Description.Value, token.Hash(key), token.KeyPrefix(key), db.JSON(scopes), system, db.NullTS(in.ExpiresAt.Ptr()), db.TS(now)); err != nil {
			return err
		}
		ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = p.UserID, audit.APIKeyCreated, "api_key", id
		ev.Description, ev.Metadata = "API key "+name+" created", map[string]any{"name": name, "scopes": scopes}
		if system {
			ev.Description, ev.Metadata["is_system"] = "system API key "+name+" created", true
		}
		_, err := s.Audit.Record(ctx, tx, ev)
		return err
	})
	if err != nil {
		return APIKey{}, err
	}
	k, err := s.visibleKey(ctx, p, id)
	if err != nil {
		return APIKey{}, err
	}
	k.Key = key
	return k, nil
}

// CreateKey serves POST /v1/api-keys. The answer is the key itself (not
// enveloped, as the spec shows it), with the full key value shown this once.
func (h *Handler) CreateKey(w http.ResponseWriter, r *http.Request) {
	var in KeyInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	k, err := h.S.CreateKey(r.Context(), authn.From(r.Context()), in, audit.FromRequest(r, audit.Event{}))
	httpx.RespondJSON(w, r, http.StatusCreated, k, err)
}

// UpdateKey changes the set fields of a key: name, description, scopes,
// is_active, expires_at; scopes follow the same subset rule as creation.
// System keys are changed only by super admins.
func (s *Service) UpdateKey(ctx context.Context, p *authn.Principal, id string, in KeyInput) (APIKey, error) {
	if !in.Name.Set && !in.Description.Set && !in.Scopes.Set && !in.ExpiresAt.Set && !in.IsActive.Set {
		return APIKey{}, apperr.Invalid("give at least one of name, description, scopes, is_active, expires_at")
	}
	k, err := s.visibleKey(ctx, p, id)
	if err != nil {
		return APIKey{}, err
	}
	if k.IsSystem && !p.SuperAdmin {
		return APIKey{}, apperr.Forbiddenf("system API keys can only be changed by super admins")
	}
	// is_system is chosen at creation; a body that repeats the key's own
	// value (a key read, edited and sent back) is fine.
	if in.IsSystem.Set && in.IsSystem.Value != k.IsSystem {
		return APIKey{}, apperr.OnField("is_system", apperr.Invalid("is_system is chosen when a key is created and cannot be changed"))
	}
	if err := s.applyKeyInput(ctx, p, &k, in); err != nil {
		return APIKey{}, err
	}
	if _, err := s.DB.ExecContext(ctx, `UPDATE api_keys SET name = $1, description = $2, scopes = $3, is_active = $4, expires_at = $5, updated_at = $6 WHERE id = $7`,
		k.Name, k.Description, db.JSON(k.Scopes), k.IsActive, db.NullTS(k.ExpiresAt), db.TS(s.Clock.Now()), k.ID); err != nil {
		return APIKey{}, err
	}
	if err := s.bump(ctx); err != nil {
		return APIKey{}, err
	}
	return s.visibleKey(ctx, p, k.ID)
}

// applyKeyInput checks the set fields of an update and writes them into k.
func (s *Service) applyKeyInput(ctx context.Context, p *authn.Principal, k *APIKey, in KeyInput) error {
	if in.Name.Set {
		name := strings.TrimSpace(in.Name.Value)
		if name == "" || len(name) > 100 {
			return apperr.OnField("name", apperr.Invalid("name must be 1 to 100 characters"))
		}
		k.Name = name
	}
	if in.Description.Set {
		if err := httpx.CheckLen("description", in.Description.Value, httpx.MaxText); err != nil {
			return apperr.OnField("description", err)
		}
		k.Description = in.Description.Value
	}
	if in.Scopes.Set {
		scopes, err := s.cleanScopes(ctx, p, in.Scopes.Value)
		if err != nil {
			return err
		}
		k.Scopes = scopes
	}
	if in.IsActive.Set {
		k.IsActive = in.IsActive.Value
	}
	if in.ExpiresAt.Set {
		if exp := in.ExpiresAt.Ptr(); exp != nil && !exp.After(s.Clock.Now()) {
			return apperr.OnField("expires_at", apperr.Invalid("expires_at must be in the future"))
		}
		k.ExpiresAt = in.ExpiresAt.Ptr()
	}
	return nil
}

// UpdateKey serves PATCH /v1/api-keys/{id}.
func (h *Handler) UpdateKey(w http.ResponseWriter, r *http.Request) {
	var in KeyInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	k, err := h.S.UpdateKey(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), in)
	httpx.Respond(w, r, http.StatusOK, k, err)
}

// RegenerateKey gives a key a new secret value (same id), returned this
// once; the old value stops working at once. System keys only by super admins.
func (s *Service) RegenerateKey(ctx context.Context, p *authn.Principal, id string) (APIKey, error) {
	k, err := s.visibleKey(ctx, p, id)
	if err != nil {
		return APIKey{}, err
	}
	if k.IsSystem && !p.SuperAdmin {
		return APIKey{}, apperr.Forbiddenf("system API keys can only be regenerated by super admins")
	}
	key := token.New(token.PrefixAPIKey)
	if _, err := s.DB.ExecContext(ctx, `UPDATE api_keys SET key_hash = $1, key_prefix = $2, updated_at = $3 WHERE id = $4`,
		token.Hash(key), token.KeyPrefix(key), db.TS(s.Clock.Now()), k.ID); err != nil {
		return APIKey{}, err
	}
	if err := s.bump(ctx); err != nil {
		return APIKey{}, err
	}
	k, err = s.visibleKey(ctx, p, k.ID)
	if err != nil {
		return APIKey{}, err
	}
	k.Key = key
	return k, nil
}

// RegenerateKey serves POST /v1/api-keys/{id}/regenerate: same id, new
// secret, the old one dead at once.
func (h *Handler) RegenerateKey(w http.ResponseWriter, r *http.Request) {
	k, err := h.S.RegenerateKey(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, k, err)
}

// DeleteKey deletes a key; system keys cannot be deleted (Forbidden). ev
// carries the request's audit fields.
func (s *Service) DeleteKey(ctx context.Context, p *authn.Principal, id string, ev audit.Event) error {
	k, err := s.visibleKey(ctx, p, id)
	if err != nil {
		return err
	}
	if k.IsSystem {
		return apperr.Forbiddenf("system API keys cannot be deleted")
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM api_keys WHERE id = $1`, k.ID); err != nil {
			return err
		}
		owner := ""
		if k.UserID != nil {
			owner = *k.UserID
		}
		ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType, ev.ResourceID = owner, actorIfOther(p, owner), audit.APIKeyRevoked, "api_key", k.ID
		ev.Description, ev.Metadata = "API key "+k.Name+" deleted", map[string]any{"name": k.Name}
		_, err := s.Audit.Record(ctx, tx, ev)
		return err
	})
	if err != nil {
		return err
	}
	return s.bump(ctx)
}

// DeleteUserKeys deletes every API key of userID inside tx (a user's
// deletion) and returns how many; once tx commits the epoch is bumped, so
// the keys fail on every instance at once.
func DeleteUserKeys(ctx context.Context, tx *db.Tx, ep authn.Epoch, userID string) (int64, error) {
	return authn.EndCredentials(ctx, tx, ep, httpx.Logger(ctx), `DELETE FROM api_keys WHERE user_id = $1`, userID)
}

// DeleteKey serves DELETE /v1/api-keys/{id}; system keys answer 403.
func (h *Handler) DeleteKey(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.DeleteKey(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), audit.FromRequest(r, audit.Event{})))
}

func actorIfOther(p *authn.Principal, userID string) string {
	if p.UserID != userID {
		return p.Actor()
	}
	return ""
}

func (s *Service) keyRoles(ctx context.Context, keyID string) ([]Role, error) {
	return s.listRoles(ctx, `SELECT r.id, r.name, r.description, r.is_system, r.requires_two_factor, r.created_at, r.updated_at
		FROM api_key_roles kr JOIN roles r ON r.id = kr.role_id WHERE kr.api_key_id = $1 ORDER BY r.name`, keyID)
}

// KeyRoles lists the roles of a key the caller may manage.
func (s *Service) KeyRoles(ctx context.Context, p *authn.Principal, id string) ([]Role, error) {
	k, err := s.visibleKey(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return s.keyRoles(ctx, k.ID)
}

// ListKeyRoles serves GET /v1/api-keys/{id}/roles: {data: [role], _links}.
func (h *Handler) ListKeyRoles(w http.ResponseWriter, r *http.Request) {
	roles, err := h.S.KeyRoles(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, roles, err)
}

// mayAssignKeyRole is the rule of key roles: super admins and system keys
// assign any role; anyone else only a role they hold themselves, and when
// acting with an API key rather than a session, only a role whose every
// permission that key holds too (no escalation through a narrower key).
func (s *Service) mayAssignKeyRole(ctx context.Context, p *authn.Principal, roleID string) (bool, error) {
	if p.IsAdmin() {
		return true, nil
	}
	var n int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM user_roles WHERE user_id = $1 AND role_id = $2`, p.UserID, roleID).Scan(&n); err != nil {
		return false, err
	}
	return n > 0 && (p.Kind == authn.KindSession || CanGrantRole(ctx, s.DB, p, roleID) == nil), nil
}

// AssignableKeyRoles lists the roles p may give a key: every role for super
// admins and system keys, else the roles p holds that mayAssignKeyRole
// allows. It is the choice a form offers; AddKeyRole checks the same rule.
func (s *Service) AssignableKeyRoles(ctx context.Context, p *authn.Principal) ([]Role, error) {
	if p.IsAdmin() {
		return s.listRoles(ctx, `SELECT `+roleCols+` FROM roles ORDER BY name`)
	}
	held, err := s.listRoles(ctx, `SELECT r.id, r.name, r.description, r.is_system, r.requires_two_factor, r.created_at, r.updated_at
		FROM user_roles ur JOIN roles r ON r.id = ur.role_id WHERE ur.user_id = $1 ORDER BY r.name`, p.UserID)
	if err != nil {
		return nil, err
	}
	out := []Role{}
	for _, role := range held {
		ok, err := s.mayAssignKeyRole(ctx, p, role.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, role)
		}
	}
	return out, nil
}

// AddKeyRole gives a key a role; the caller may assign only roles they hold
// themselves (super admins and system keys any). It returns the key's roles.
func (s *Service) AddKeyRole(ctx context.Context, p *authn.Principal, id, roleID string) ([]Role, error) {
	if roleID == "" {
		return nil, apperr.OnField("role_id", apperr.Invalid("role_id is required"))
	}
	k, err := s.visibleKey(ctx, p, id)
	if err != nil {
		return nil, err
	}
	role, err := s.GetRole(ctx, roleID)
	if err != nil {
		return nil, err
	}
	ok, err := s.mayAssignKeyRole(ctx, p, role.ID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.OnField("role_id", apperr.Forbiddenf("you can only assign roles you hold yourself"))
	}
	if err := s.link(ctx, keyRoleLinks, k.ID, role.ID); err != nil {
		return nil, err
	}
	return s.keyRoles(ctx, k.ID)
}

// AddKeyRole serves POST /v1/api-keys/{id}/roles with {role_id}.
func (h *Handler) AddKeyRole(w http.ResponseWriter, r *http.Request) {
	var b struct {
		RoleID string `json:"role_id"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	id := chi.URLParam(r, "id")
	roles, err := h.S.AddKeyRole(r.Context(), authn.From(r.Context()), id, b.RoleID)
	httpx.RespondAt(w, r, http.StatusCreated, roles, "/v1/api-keys/"+id+"/roles", err)
}

// RemoveKeyRole takes a role from a key (NotFound when the key lacks it).
func (s *Service) RemoveKeyRole(ctx context.Context, p *authn.Principal, id, roleID string) error {
	k, err := s.visibleKey(ctx, p, id)
	if err != nil {
		return err
	}
	return s.unlink(ctx, keyRoleLinks, k.ID, roleID)
}

// RemoveKeyRole serves DELETE /v1/api-keys/{id}/roles/{role_id}.
func (h *Handler) RemoveKeyRole(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.RemoveKeyRole(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "role_id")))
}
