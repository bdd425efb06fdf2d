// Package access implements roles, permissions and API keys (spec 1): the
// permission catalogue and default roles seeded at start, role and permission
// management, and API keys with the scope-escalation rule (Authentication 7).
package access

import (
	"context"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
)

// Service holds the dependencies of the access area.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Epoch authn.Epoch // bumped on every change that can take a permission away
	Audit *audit.Writer
}

// Role is a role resource.
type Role struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	Description       string    `json:"description"`
	IsSystem          bool      `json:"is_system"`
	RequiresTwoFactor bool      `json:"requires_two_factor"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// Permission is a permission resource.
type Permission struct {
	ID          string    `json:"id"`
	Resource    string    `json:"resource"`
	Action      string    `json:"action"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// String returns resource:action.
func (p Permission) String() string { return p.Resource + ":" + p.Action }

// permNamespace makes seeded permission ids the same on every database, so
// concurrent first starts of several instances agree.
var permNamespace = uuid.MustParse("6f1c2a44-4a3e-4f7e-9a59-0d7b1c7a3e10")

// PermissionID returns the deterministic id of a catalogue permission.
func PermissionID(resource, action string) string {
	return uuid.NewSHA1(permNamespace, []byte(resource+":"+action)).String()
}

func (s *Service) bump(ctx context.Context) error { return s.Epoch.Bump(ctx) }

// links is a table of pairs through which a principal gets rights: a key's
// roles, a role's permissions. absent is the NotFound message for a pair
// that is not there.
type links struct{ table, owner, item, absent string }

var (
	keyRoleLinks        = links{"api_key_roles", "api_key_id", "role_id", "the API key does not hold that role"}
	rolePermissionLinks = links{"role_permissions", "role_id", "permission_id", "the role does not hold that permission"}
)

// link stores the pair (owner, item) in l, keeping one that is already
// there, and bumps the epoch, as every change of rights does.
func (s *Service) link(ctx context.Context, l links, owner, item string) error {
	if _, err := s.DB.ExecContext(ctx, `INSERT INTO `+l.table+` (`+l.owner+`, `+l.item+`, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		owner, item, db.TS(s.Clock.Now())); err != nil {
		return err
	}
	return s.bump(ctx)
}

// unlink deletes the pair (owner, item) from l, NotFound when it is not
// there, and bumps the epoch.
func (s *Service) unlink(ctx context.Context, l links, owner, item string) error {
	res, err := s.DB.ExecContext(ctx, `DELETE FROM `+l.table+` WHERE `+l.owner+` = $1 AND `+l.item+` = $2`, owner, item)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.NotFoundf("%s", l.absent)
	}
	return s.bump(ctx)
}

const roleCols = `id, name, description, is_system, requires_two_factor, created_at, updated_at`

func scanRole(row db.Scanner) (Role, error) {
	var r Role
	var c, u int64
	err := row.Scan(&r.ID, &r.Name, &r.Description, &r.IsSystem, &r.RequiresTwoFactor, &c, &u)
	r.CreatedAt, r.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return r, err
}

const permCols = `id, resource, action, description, created_at, updated_at`

func scanPermission(row db.Scanner) (Permission, error) {
	var p Permission
	var c, u int64
	err := row.Scan(&p.ID, &p.Resource, &p.Action, &p.Description, &c, &u)
	p.CreatedAt, p.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return p, err
}

// RolePermissions returns the permission strings of a role.
func RolePermissions(ctx context.Context, q db.Querier, roleID string) (authn.PermSet, error) {
	s := authn.PermSet{}
	if err := authn.AddPerms(ctx, q, s, `SELECT p.resource, p.action FROM role_permissions rp JOIN permissions p ON p.id = rp.permission_id WHERE rp.role_id = $1`, roleID); err != nil {
		return nil, err
	}
	return s, nil
}

// CanGrantRole enforces the scope-escalation rule for assigning a role: the
// caller must hold every permission of the role (super admins and system keys
// are exempt). It returns a Forbidden error naming the first missing permission.
func CanGrantRole(ctx context.Context, q db.Querier, p *authn.Principal, roleID string) error {
	if p.IsAdmin() {
		return nil
	}
	perms, err := RolePermissions(ctx, q, roleID)
	if err != nil {
		return err
	}
	for _, perm := range perms.List() {
		if !p.Can(perm) {
			return apperr.Forbiddenf("you cannot assign a role holding %s, which you do not hold", perm)
		}
	}
	return nil
}

// GrantableRoles lists, by name, the roles p may assign to a user: those
// CanGrantRole allows (every role for super admins and system keys). It is
// the choice a form offers; assigning checks the same rule.
func (s *Service) GrantableRoles(ctx context.Context, p *authn.Principal) ([]Role, error) {
	all, err := s.listRoles(ctx, `SELECT `+roleCols+` FROM roles ORDER BY name`)
	if err != nil {
		return nil, err
	}
	out := []Role{}
	for _, role := range all {
		err := CanGrantRole(ctx, s.DB, p, role.ID)
		if apperr.Is(err, apperr.Forbidden) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, role)
	}
	return out, nil
}

// GetRole returns one role.
func (s *Service) GetRole(ctx context.Context, id string) (Role, error) {
	r, err := scanRole(s.DB.QueryRowContext(ctx, `SELECT `+roleCols+` FROM roles WHERE id = $1`, id))
	return r, db.NotFoundOr(err, "role")
}
