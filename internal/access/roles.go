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
	httpx.RespondList(w, r, roles, p, total, err)
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
	httpx.Respond(w, r, http.StatusOK, role, err)
}

// RoleInput is the body of POST and PATCH /v1/roles: a field changes only
// when it is set (on creation name is required).
type RoleInput struct {
	Name              httpx.Opt[string] `json:"name"`
	Description       httpx.Opt[string] `json:"description"`
	RequiresTwoFactor httpx.Opt[bool]   `json:"requires_two_factor"`
}

func validRoleName(name string) error {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return apperr.OnField("name", apperr.Invalid("name is required and at most 100 characters"))
	}
	return nil
}

// CreateRole creates a role that is not a system role. The callers (REST and
// the admin console) require roles:write.
func (s *Service) CreateRole(ctx context.Context, in RoleInput) (Role, error) {
	if !in.Name.Set || in.Name.Null {
		return Role{}, apperr.OnField("name", apperr.Invalid("name is required"))
	}
	if err := validRoleName(in.Name.Value); err != nil {
		return Role{}, err
	}
	now := db.TS(s.Clock.Now())
	id := uuid.NewString()
	err := s.execUnique(ctx, apperr.OnField("name", apperr.Conflictf("a role named %q already exists", in.Name.Value)),
		`INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at)
		VALUES ($1, $2, $3, FALSE, $4, $5, $5)`, id, strings.TrimSpace(in.Name.Value), in.Description.Value, in.RequiresTwoFactor.Value, now)
	if err != nil {
		return Role{}, err
	}
	return s.GetRole(ctx, id)
}

// execUnique runs a statement that may break a uniqueness rule (a taken
// name); breaking it is the error taken, any other failure passes through.
func (s *Service) execUnique(ctx context.Context, taken error, query string, args ...any) error {
	_, err := s.DB.ExecContext(ctx, query, args...)
	if db.IsUniqueViolation(err) {
		return taken
	}
	return err
}

// CreateRole serves POST /v1/roles.
func (h *Handler) CreateRole(w http.ResponseWriter, r *http.Request) {
	var in RoleInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	role, err := h.S.CreateRole(r.Context(), in)
	httpx.RespondAt(w, r, http.StatusCreated, role, "/v1/roles/"+role.ID, err)
}

// UpdateRole changes the set fields of a role. System roles keep their
// name (a rename answers 403); their description and requires_two_factor
// may change. The callers require roles:write.
func (s *Service) UpdateRole(ctx context.Context, id string, in RoleInput) (Role, error) {
	if !in.Name.Set && !in.Description.Set && !in.RequiresTwoFactor.Set {
		return Role{}, apperr.Invalid("give at least one of name, description, requires_two_factor")
	}
	if in.Name.Set {
		if err := validRoleName(in.Name.Value); err != nil {
			return Role{}, err
		}
	}
	role, err := s.GetRole(ctx, id)
	if err != nil {
		return Role{}, err
	}
	if in.Name.Set {
		if role.IsSystem && !strings.EqualFold(strings.TrimSpace(in.Name.Value), role.Name) {
			return Role{}, apperr.OnField("name", apperr.Forbiddenf("system roles cannot be renamed"))
		}
		role.Name = strings.TrimSpace(in.Name.Value)
	}
	if in.Description.Set {
		role.Description = in.Description.Value
	}
	if in.RequiresTwoFactor.Set {
		role.RequiresTwoFactor = in.RequiresTwoFactor.Value
	}
	err = s.execUnique(ctx, apperr.OnField("name", apperr.Conflictf("a role named %q already exists", role.Name)),
		`UPDATE roles SET name = $1, description = $2, requires_two_factor = $3, updated_at = $4 WHERE id = $5`,
		role.Name, role.Description, role.RequiresTwoFactor, db.TS(s.Clock.Now()), id)
	if err != nil {
		return Role{}, err
	}
	return s.GetRole(ctx, id)
}

// UpdateRole serves PATCH /v1/roles/{id}.
func (h *Handler) UpdateRole(w http.ResponseWriter, r *http.Request) {
	var in RoleInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	role, err := h.S.UpdateRole(r.Context(), chi.URLParam(r, "id"), in)
	httpx.Respond(w, r, http.StatusOK, role, err)
}

// DeleteRole deletes a role that is not a system role (403 for those). The
// callers require roles:delete.
func (s *Service) DeleteRole(ctx context.Context, id string) error {
	role, err := s.GetRole(ctx, id)
	if err != nil {
		return err
	}
	if role.IsSystem {
		return apperr.Forbiddenf("role %q is a system role and cannot be deleted", role.Name)
	}
	if _, err := s.DB.ExecContext(ctx, `DELETE FROM roles WHERE id = $1 AND NOT is_system`, role.ID); err != nil {
		return err
	}
	return s.bump(ctx)
}

// DeleteRole serves DELETE /v1/roles/{id}; system roles answer 403.
func (h *Handler) DeleteRole(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.DeleteRole(r.Context(), chi.URLParam(r, "id")))
}

func (s *Service) rolePermissionList(ctx context.Context, roleID string) ([]Permission, error) {
	return db.All(ctx, s.DB, scanPermission, `SELECT p.id, p.resource, p.action, p.description, p.created_at, p.updated_at
		FROM role_permissions rp JOIN permissions p ON p.id = rp.permission_id WHERE rp.role_id = $1 ORDER BY p.resource, p.action`, roleID)
}

// ListRolePermissions returns the permissions of a role (404 for an
// unknown role). The callers require roles:read.
func (s *Service) ListRolePermissions(ctx context.Context, roleID string) ([]Permission, error) {
	role, err := s.GetRole(ctx, roleID)
	if err != nil {
		return nil, err
	}
	return s.rolePermissionList(ctx, role.ID)
}

// ListRolePermissions serves GET /v1/roles/{id}/permissions: {data: [permission], _links}.
func (h *Handler) ListRolePermissions(w http.ResponseWriter, r *http.Request) {
	perms, err := h.S.ListRolePermissions(r.Context(), chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, perms, err)
}

// RolePermissionCounts returns how many permissions each role holds, by
// role id (roles without any are absent).
func (s *Service) RolePermissionCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT role_id, COUNT(*) FROM role_permissions GROUP BY role_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// rolePermission loads the role and the permission a change of the role's
// permissions names (404 for either unknown).
func (s *Service) rolePermission(ctx context.Context, roleID, permID string) (Role, Permission, error) {
	role, err := s.GetRole(ctx, roleID)
	if err != nil {
		return Role{}, Permission{}, err
	}
	perm, err := s.GetPermission(ctx, permID)
	return role, perm, err
}

// AddRolePermission gives a role a permission and returns the role's
// permissions. The caller p must be allowed to change it (see
// mayChangeRolePermission: no escalation through roles); the callers
// require roles:write.
func (s *Service) AddRolePermission(ctx context.Context, p *authn.Principal, roleID, permID string) ([]Permission, error) {
	if permID == "" {
		return nil, apperr.OnField("permission_id", apperr.Invalid("permission_id is required"))
	}
	role, perm, err := s.rolePermission(ctx, roleID, permID)
	if err != nil {
		return nil, err
	}
	if err := mayChangeRolePermission(p, role, perm, "grant"); err != nil {
		return nil, err
	}
	if err := s.link(ctx, rolePermissionLinks, role.ID, perm.ID); err != nil {
		return nil, err
	}
	return s.rolePermissionList(ctx, role.ID)
}

// AddRolePermission serves POST /v1/roles/{id}/permissions with {permission_id}.
// The caller must hold the permission being granted (no escalation through roles).
func (h *Handler) AddRolePermission(w http.ResponseWriter, r *http.Request) {
	var b struct {
		PermissionID string `json:"permission_id"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	id := chi.URLParam(r, "id")
	perms, err := h.S.AddRolePermission(r.Context(), authn.From(r.Context()), id, b.PermissionID)
	httpx.RespondAt(w, r, http.StatusCreated, perms, "/v1/roles/"+id+"/permissions", err)
}

// RemoveRolePermission takes a permission from a role (404 when the role
// does not hold it). Taking a permission away follows the rule of granting
// it, so roles:write alone cannot strip an administrator's role of what the
// caller never held.
func (s *Service) RemoveRolePermission(ctx context.Context, p *authn.Principal, roleID, permID string) error {
	role, perm, err := s.rolePermission(ctx, roleID, permID)
	if err != nil {
		return err
	}
	if err := mayChangeRolePermission(p, role, perm, "remove"); err != nil {
		return err
	}
	return s.unlink(ctx, rolePermissionLinks, role.ID, perm.ID)
}

// RemoveRolePermission serves DELETE /v1/roles/{id}/permissions/{permission_id}.
func (h *Handler) RemoveRolePermission(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.RemoveRolePermission(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), chi.URLParam(r, "permission_id")))
}

// mayChangeRolePermission is the one rule for adding a permission to a role
// and for removing one from it (spec 1, Authentication 7: no escalation). The
// permission sets of system roles (Admin, User, …) are changed only by super
// admins and system keys (mayChangeRolePermissions); on other roles the
// caller must hold the permission itself, so a key with roles:write can
// neither hand out nor take away what it does not have. verb ("grant",
// "remove") words the Forbidden message.
func mayChangeRolePermission(p *authn.Principal, role Role, perm Permission, verb string) error {
	if err := mayChangeRolePermissions(p, role); err != nil || p.IsAdmin() {
		return err
	}
	if !p.Can(perm.String()) {
		return apperr.Forbiddenf("you cannot %s %s, which you do not hold", verb, perm.String())
	}
	return nil
}

// mayChangeRolePermissions is the first half of mayChangeRolePermission:
// whether p may change the permission set of role at all.
func mayChangeRolePermissions(p *authn.Principal, role Role) error {
	if role.IsSystem && !p.IsAdmin() {
		return apperr.Forbiddenf("only a super admin can change the permissions of the system role %q", role.Name)
	}
	return nil
}

// MayChangeRolePermissions reports whether p may change the permission set
// of role at all (a system role's only as a super admin or system key), for
// pages that leave out the forms their reader could not use.
func MayChangeRolePermissions(p *authn.Principal, role Role) bool {
	return mayChangeRolePermissions(p, role) == nil
}

// MayChangeRolePermission reports whether p may add perm to role or remove
// it from role: the rule AddRolePermission and RemoveRolePermission enforce,
// for forms that offer only what their reader may send.
func MayChangeRolePermission(p *authn.Principal, role Role, perm Permission) bool {
	return mayChangeRolePermission(p, role, perm, "change") == nil
}

// AddablePermissions lists the known permissions role lacks that p may add
// to it (MayChangeRolePermission), in the catalogue's order: the choice a
// form offers; AddRolePermission checks the same rule.
func (s *Service) AddablePermissions(ctx context.Context, p *authn.Principal, role Role) ([]Permission, error) {
	all, err := db.All(ctx, s.DB, scanPermission, `SELECT `+permCols+` FROM permissions
		WHERE id NOT IN (SELECT permission_id FROM role_permissions WHERE role_id = $1) ORDER BY resource, action`, role.ID)
	if err != nil {
		return nil, err
	}
	out := []Permission{}
	for _, perm := range all {
		if MayChangeRolePermission(p, role, perm) {
			out = append(out, perm)
		}
	}
	return out, nil
}

// ListPermissions returns a page of the permission catalogue, ordered by
// resource and action, and the total count. The callers require
// permissions:read.
func (s *Service) ListPermissions(ctx context.Context, p httpx.Page) ([]Permission, int, error) {
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM permissions`).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := db.All(ctx, s.DB, scanPermission, `SELECT `+permCols+` FROM permissions ORDER BY resource, action LIMIT $1 OFFSET $2`, p.Limit, p.Offset())
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// ListPermissions serves GET /v1/permissions.
func (h *Handler) ListPermissions(w http.ResponseWriter, r *http.Request) {
	p := httpx.ParsePage(r, 100)
	out, total, err := h.S.ListPermissions(r.Context(), p)
	httpx.RespondList(w, r, out, p, total, err)
}

// GetPermission returns one permission (404 when unknown).
func (s *Service) GetPermission(ctx context.Context, id string) (Permission, error) {
	perm, err := scanPermission(s.DB.QueryRowContext(ctx, `SELECT `+permCols+` FROM permissions WHERE id = $1`, id))
	return perm, db.NotFoundOr(err, "permission")
}

// GetPermission serves GET /v1/permissions/{id}.
func (h *Handler) GetPermission(w http.ResponseWriter, r *http.Request) {
	perm, err := h.S.GetPermission(r.Context(), chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, perm, err)
}

var permPart = regexp.MustCompile(`^(\*|[a-z][a-z0-9_.]{0,62})$`)

// PermissionInput is the body of POST /v1/permissions.
type PermissionInput struct {
	Resource    string `json:"resource"`
	Action      string `json:"action"`
	Description string `json:"description"`
}

// CreatePermission adds a permission to the catalogue. The callers require
// permissions:write.
func (s *Service) CreatePermission(ctx context.Context, in PermissionInput) (Permission, error) {
	const rule = "resource and action are required: lowercase letters, digits, '_' and '.', or '*'"
	if !permPart.MatchString(in.Resource) {
		return Permission{}, apperr.OnField("resource", apperr.Invalid(rule))
	}
	if !permPart.MatchString(in.Action) {
		return Permission{}, apperr.OnField("action", apperr.Invalid(rule))
	}
	now := db.TS(s.Clock.Now())
	id := uuid.NewString()
	err := s.execUnique(ctx, apperr.OnField("action", apperr.Conflictf("permission %s:%s already exists", in.Resource, in.Action)),
		`INSERT INTO permissions (id, resource, action, description, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)`,
		id, in.Resource, in.Action, in.Description, now)
	if err != nil {
		return Permission{}, err
	}
	return s.GetPermission(ctx, id)
}

// CreatePermission serves POST /v1/permissions.
func (h *Handler) CreatePermission(w http.ResponseWriter, r *http.Request) {
	var in PermissionInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	perm, err := h.S.CreatePermission(r.Context(), in)
	httpx.RespondAt(w, r, http.StatusCreated, perm, "/v1/permissions/"+perm.ID, err)
}
