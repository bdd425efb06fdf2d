package twofactor

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/authn"
)

// Access is what an operation does to a user's two-factor settings.
type Access int

// The two access levels of the two-factor permissions.
const (
	Read  Access = iota // status, requirement: two_factor:read
	Write               // setup, verify, disable, regenerate: two_factor:write
)

func (a Access) perm() string {
	if a == Write {
		return "two_factor:write"
	}
	return "two_factor:read"
}

// Authorize applies the one access rule of every two-factor operation
// (DECISIONS.md, Accounts) and returns the id of the user acted on:
//
//   - userID empty means the caller's own user; a caller without a user (a
//     system key, an ownerless API key) must name one (400).
//   - A user acting on themself with a session token needs no permission.
//   - An API key acting on its owner needs two_factor:read (Read) or
//     two_factor:write (Write).
//   - Acting on another user needs two_factor:manage; super admins and
//     system keys hold every permission.
//
// The permission is checked before the user is looked up, so a caller
// without it cannot probe which user ids exist. An unknown or deleted user
// is a 404.
func (s *Service) Authorize(ctx context.Context, p *authn.Principal, userID string, a Access) (string, error) {
	if p == nil {
		return "", apperr.Unauthorizedf("authentication required")
	}
	userID = strings.TrimSpace(userID)
	if userID == "" {
		if p.SystemKey || p.UserID == "" {
			return "", apperr.Invalid("user_id is required when calling with a system API key or an API key without a user")
		}
		userID = p.UserID
	}
	switch {
	case p.IsSelf(userID) && p.Kind == authn.KindSession:
		// Self-service with the user's own session: no permission needed.
	case p.IsSelf(userID) && !p.SystemKey:
		if !p.Can(a.perm()) {
			return "", apperr.Forbiddenf("missing permission %s", a.perm())
		}
	default:
		if err := mayActOnOthers(p); err != nil {
			return "", err
		}
	}
	var deleted bool
	err := s.DB.QueryRowContext(ctx, `SELECT deleted_at IS NOT NULL FROM users WHERE id = $1`, userID).Scan(&deleted)
	if errors.Is(err, sql.ErrNoRows) || err == nil && deleted {
		return "", apperr.NotFoundf("user not found")
	}
	if err != nil {
		return "", err
	}
	return userID, nil
}

// mayActOnOthers is the rule for acting on another user's two-factor
// settings, or reading them: two_factor:manage (super admins and system
// keys hold every permission).
func mayActOnOthers(p *authn.Principal) error {
	if !p.Can("two_factor:manage") {
		return apperr.Forbiddenf("missing permission two_factor:manage to act on another user")
	}
	return nil
}
