package users

import (
	"context"
	"strings"

	"hmid/internal/access"
	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/oauth"
	"hmid/internal/sessions"
)

// The operations on a user that holders of users:write and users:delete do
// for others: role assignment and soft deletion. The REST handlers and the
// admin console call them, so both apply the same rules and write the same
// audit events (ev carries the request's address, user agent and source).

// Roles returns the roles of user id (soft-deleted users included), by
// name. Errors: NotFound.
func (s *Service) Roles(ctx context.Context, id string) ([]RoleRef, error) {
	u, err := s.Get(ctx, s.DB, id)
	if err != nil {
		return nil, err
	}
	return s.roles(ctx, s.DB, u.ID)
}

// AddRole gives user id the role roleID on behalf of p. p must hold every
// permission of the role (spec 1, Authentication 7), and only a super
// admin changes another super admin. It reports whether the role was newly
// assigned (false: the user held it already, nothing is recorded).
// Errors: Validation (no role_id), NotFound (user or role), Forbidden.
func (s *Service) AddRole(ctx context.Context, p *authn.Principal, id, roleID string, ev audit.Event) (bool, error) {
	if strings.TrimSpace(roleID) == "" {
		return false, apperr.OnField("role_id", apperr.Invalid("role_id is required"))
	}
	added := false
	err := s.manageActive(ctx, p, id, func(tx *db.Tx, _ User) error {
		var name string
		if err := tx.QueryRowContext(ctx, `SELECT name FROM roles WHERE id = $1`, roleID).Scan(&name); err != nil {
			return apperr.OnField("role_id", db.NotFoundOr(err, "role"))
		}
		if err := access.CanGrantRole(ctx, tx, p, roleID); err != nil {
			return apperr.OnField("role_id", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			id, roleID, db.TS(s.Clock.Now()))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		added = true
		return s.recordUserEvent(ctx, tx, p, id, audit.UserUpdated, "role "+name+" assigned", map[string]any{"role_id": roleID, "change": "role_added"}, ev)
	})
	if err != nil || !added {
		return false, err
	}
	return true, s.Epoch.Bump(ctx)
}

// RemoveRole takes the role roleID from user id on behalf of p. Taking a
// role away needs the same standing as giving it, so a holder of
// users:write cannot strip a more powerful role from someone else.
// Errors: NotFound (user, or a role the user does not hold), Forbidden.
func (s *Service) RemoveRole(ctx context.Context, p *authn.Principal, id, roleID string, ev audit.Event) error {
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		u, err := s.Get(ctx, tx, id)
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
		return s.recordUserEvent(ctx, tx, p, id, audit.UserUpdated, "role removed", map[string]any{"role_id": roleID, "change": "role_removed"}, ev)
	})
	if err != nil {
		return err
	}
	return s.Epoch.Bump(ctx)
}

// Delete soft-deletes user id on behalf of p: deleted_at is set, the purge
// is scheduled DeletionGrace later, every session is revoked and every API
// key of the user deleted, all in one transaction; the epoch bump makes
// their tokens fail on every instance at once. Only a super admin deletes
// another super admin. Errors: NotFound (unknown or already deleted), Forbidden.
func (s *Service) Delete(ctx context.Context, p *authn.Principal, id string, ev audit.Event) error {
	now := s.Clock.Now()
	var revoked, keys int64
	err := s.manageActive(ctx, p, id, func(tx *db.Tx, _ User) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET deleted_at = $1, scheduled_deletion_at = $2, updated_at = $1 WHERE id = $3 AND deleted_at IS NULL`,
			db.TS(now), db.TS(now.Add(DeletionGrace)), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.NotFoundf("user not found")
		}
		if revoked, err = sessions.EndAll(ctx, tx, s.Epoch, id, "", now); err != nil {
			return err
		}
		if err := oauth.EndUserTokens(ctx, tx, id, now); err != nil {
			return err
		}
		if keys, err = access.DeleteUserKeys(ctx, tx, s.Epoch, id); err != nil {
			return err
		}
		return s.recordUserEvent(ctx, tx, p, id, audit.UserDeleted, "user deleted; permanent deletion scheduled",
			map[string]any{"scheduled_deletion_at": now.Add(DeletionGrace), "sessions_revoked": revoked, "api_keys_deleted": keys}, ev)
	})
	if err != nil {
		return err
	}
	// The deletion itself takes access away (OAuth tokens of a deleted user
	// are refused), sessions and keys or not.
	return s.Epoch.Bump(ctx)
}
