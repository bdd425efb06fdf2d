package access

import (
	"context"
	"net/http"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Handler serves the roles, permissions and API keys endpoints.
type Handler struct {
	S *Service
}

// ListRoles serves GET /v1/roles.
func (h *Handler) ListRoles(w http.ResponseWriter, r *http.Request) {
	p := httpx.ParsePage(r, 100)
	roles, total, err := h.S.ListRoles(r.Context(), p)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteList(w, r, roles, p, total)
}

// ListRoles returns a page of roles, system roles first, and the total
// count. The callers (REST and GraphQL) require roles:read.
func (s *Service) ListRoles(ctx context.Context, p httpx.Page) ([]Role, int, error) {
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM roles`).Scan(&total); err != nil {
		return nil, 0, err
	}
	roles, err := s.listRoles(ctx, `SELECT `+roleCols+` FROM roles ORDER BY is_system DESC, name LIMIT $1 OFFSET $2`, p.Limit, p.Offset())
	if err != nil {
		return nil, 0, err
	}
	return roles, total, nil
}

func (s *Service) listRoles(ctx context.Context, q string, args ...any) ([]Role, error) {
	return db.All(ctx, s.DB, scanRole, q, args...)
}

// GetRole serves GET /v1/roles/{id}.
func (h *Handler) GetRole(w http.ResponseWriter, r *http.Request) {
	role, err := h.S.GetRole(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, role)
}

type roleBody struct {
	Name              httpx.Opt[string] `json:"name"`
	Description       httpx.Opt[string] `json:"description"`
	RequiresTwoFactor httpx.Opt[bool]   `json:"requires_two_factor"`
}

func validRoleName(name string) error {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return apperr.Invalid("name is required and at most 100 characters")
	}
	return nil
}

// CreateRole serves POST /v1/roles.
func (h *Handler) CreateRole(w http.ResponseWriter, r *http.Request) {
	var b roleBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !b.Name.Set || b.Name.Null {
		httpx.Error(w, r, apperr.Invalid("name is required"))
		return
	}
	if err := validRoleName(b.Name.Value); err != nil {
		httpx.Error(w, r, err)
		return
	}
	now := db.TS(h.S.Clock.Now())
	id := uuid.NewString()
	_, err := h.S.DB.ExecContext(r.Context(), `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at)
		VALUES ($1, $2, $3, FALSE, $4, $5, $5)`, id, strings.TrimSpace(b.Name.Value), b.Description.Value, b.RequiresTwoFactor.Value, now)
	if db.IsUniqueViolation(err) {
		httpx.Error(w, r, apperr.Conflictf("a role named %q already exists", b.Name.Value))
		return
	}
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	role, err := h.S.GetRole(r.Context(), id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusCreated, role, "/v1/roles/"+id)
}

// UpdateRole serves PATCH /v1/roles/{id}.
func (h *Handler) UpdateRole(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	var b roleBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !b.Name.Set && !b.Description.Set && !b.RequiresTwoFactor.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, description, requires_two_factor"))
		return
	}
	if b.Name.Set {
		if err := validRoleName(b.Name.Value); err != nil {
			httpx.Error(w, r, err)
			return
		}
	}
	ctx := r.Context()
	role, err := h.S.GetRole(ctx, id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if b.Name.Set {
		if role.IsSystem && !strings.EqualFold(strings.TrimSpace(b.Name.Value), role.Name) {
			httpx.Error(w, r, apperr.Forbiddenf("system roles cannot be renamed"))
			return
		}
		role.Name = strings.TrimSpace(b.Name.Value)
	}
	if b.Description.Set {
		role.Description = b.Description.Value
	}
	if b.RequiresTwoFactor.Set {
		role.RequiresTwoFactor = b.RequiresTwoFactor.Value
	}
	_, err = h.S.DB.ExecContext(ctx, `UPDATE roles SET name = $1, description = $2, requires_two_factor = $3, updated_at = $4 WHERE id = $5`,
		role.Name, role.Description, role.RequiresTwoFactor, db.TS(h.S.Clock.Now()), id)
	if db.IsUniqueViolation(err) {
		httpx.Error(w, r, apperr.Conflictf("a role named %q already exists", role.Name))
		return
	}
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	role, err = h.S.GetRole(ctx, id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, role)
}

// DeleteRole serves DELETE /v1/roles/{id}; system roles answer 403.
func (h *Handler) DeleteRole(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	role, err := h.S.GetRole(ctx, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if role.IsSystem {
		httpx.Error(w, r, apperr.Forbiddenf("role %q is a system role and cannot be deleted", role.Name))
		return
	}
	if _, err := h.S.DB.ExecContext(ctx, `DELETE FROM roles WHERE id = $1 AND NOT is_system`, role.ID); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.NoContent(w)
}

func (s *Service) rolePermissionList(ctx context.Context, roleID string) ([]Permission, error) {
	return db.All(ctx, s.DB, scanPermission, `SELECT p.id, p.resource, p.action, p.description, p.created_at, p.updated_at
		FROM role_permissions rp JOIN permissions p ON p.id = rp.permission_id WHERE rp.role_id = $1 ORDER BY p.resource, p.action`, roleID)
}

// ListRolePermissions serves GET /v1/roles/{id}/permissions: {data: [permission], _links}.
func (h *Handler) ListRolePermissions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	role, err := h.S.GetRole(ctx, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	perms, err := h.S.rolePermissionList(ctx, role.ID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, perms)
}

// AddRolePermission serves POST /v1/roles/{id}/permissions with {permission_id}.
// The caller must hold the permission being granted (no escalation through roles).
func (h *Handler) AddRolePermission(w http.ResponseWriter, r *http.Request) {
	var b struct {
		PermissionID string `json:"permission_id"`
	}
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if b.PermissionID == "" {
		httpx.Error(w, r, apperr.Invalid("permission_id is required"))
		return
	}
	ctx := r.Context()
	role, err := h.S.GetRole(ctx, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	perm, err := scanPermission(h.S.DB.QueryRowContext(ctx, `SELECT `+permCols+` FROM permissions WHERE id = $1`, b.PermissionID))
	if err != nil {
		httpx.Error(w, r, db.NotFoundOr(err, "permission"))
		return
	}
	if err := mayChangeRolePermission(authn.From(ctx), role, perm, "grant"); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if _, err := h.S.DB.ExecContext(ctx, `INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		role.ID, perm.ID, db.TS(h.S.Clock.Now())); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	perms, err := h.S.rolePermissionList(ctx, role.ID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusCreated, perms, "/v1/roles/"+role.ID+"/permissions")
}

// RemoveRolePermission serves DELETE /v1/roles/{id}/permissions/{permission_id}.
// Taking a permission away follows the rule of granting it, so roles:write
// alone cannot strip an administrator's role of what the caller never held.
func (h *Handler) RemoveRolePermission(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	role, err := h.S.GetRole(ctx, chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	perm, err := scanPermission(h.S.DB.QueryRowContext(ctx, `SELECT `+permCols+` FROM permissions WHERE id = $1`, chi.URLParam(r, "permission_id")))
	if err != nil {
		httpx.Error(w, r, db.NotFoundOr(err, "permission"))
		return
	}
	if err := mayChangeRolePermission(authn.From(ctx), role, perm, "remove"); err != nil {
		httpx.Error(w, r, err)
		return
	}
	res, err := h.S.DB.ExecContext(ctx, `DELETE FROM role_permissions WHERE role_id = $1 AND permission_id = $2`, role.ID, perm.ID)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		httpx.Error(w, r, apperr.NotFoundf("the role does not hold that permission"))
		return
	}
	if err := h.S.bump(ctx); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.NoContent(w)
}

// mayChangeRolePermission is the one rule for adding a permission to a role
// and for removing one from it (spec 1, Authentication 7: no escalation). The
// permission sets of system roles (Admin, User, …) are changed only by super
// admins and system keys; on other roles the caller must hold the permission
// itself, so a key with roles:write can neither hand out nor take away what it
// does not have. verb ("grant", "remove") words the Forbidden message.
func mayChangeRolePermission(p *authn.Principal, role Role, perm Permission, verb string) error {
	if p.IsAdmin() {
		return nil
	}
	if role.IsSystem {
		return apperr.Forbiddenf("only a super admin can change the permissions of the system role %q", role.Name)
	}
	if !p.Can(perm.String()) {
		return apperr.Forbiddenf("you cannot %s %s, which you do not hold", verb, perm.String())
	}
	return nil
}

// ListPermissions serves GET /v1/permissions.
func (h *Handler) ListPermissions(w http.ResponseWriter, r *http.Request) {
	p := httpx.ParsePage(r, 100)
	ctx := r.Context()
	var total int
	if err := h.S.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM permissions`).Scan(&total); err != nil {
		httpx.Error(w, r, err)
		return
	}
	out, err := db.All(ctx, h.S.DB, scanPermission, `SELECT `+permCols+` FROM permissions ORDER BY resource, action LIMIT $1 OFFSET $2`, p.Limit, p.Offset())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteList(w, r, out, p, total)
}

// GetPermission serves GET /v1/permissions/{id}.
func (h *Handler) GetPermission(w http.ResponseWriter, r *http.Request) {
	perm, err := scanPermission(h.S.DB.QueryRowContext(r.Context(), `SELECT `+permCols+` FROM permissions WHERE id = $1`, chi.URLParam(r, "id")))
	if err != nil {
		httpx.Error(w, r, db.NotFoundOr(err, "permission"))
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, perm)
}

var permPart = regexp.MustCompile(`^(\*|[a-z][a-z0-9_.]{0,62})$`)

// CreatePermission serves POST /v1/permissions.
func (h *Handler) CreatePermission(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Resource    string `json:"resource"`
		Action      string `json:"action"`
		Description string `json:"description"`
	}
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !permPart.MatchString(b.Resource) || !permPart.MatchString(b.Action) {
		httpx.Error(w, r, apperr.Invalid("resource and action are required: lowercase letters, digits, '_' and '.', or '*'"))
		return
	}
	now := db.TS(h.S.Clock.Now())
	id := uuid.NewString()
	_, err := h.S.DB.ExecContext(r.Context(), `INSERT INTO permissions (id, resource, action, description, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
		id, b.Resource, b.Action, b.Description, now)
	if db.IsUniqueViolation(err) {
		httpx.Error(w, r, apperr.Conflictf("permission %s:%s already exists", b.Resource, b.Action))
		return
	}
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	perm, err := scanPermission(h.S.DB.QueryRowContext(r.Context(), `SELECT `+permCols+` FROM permissions WHERE id = $1`, id))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusCreated, perm, "/v1/permissions/"+id)
}
