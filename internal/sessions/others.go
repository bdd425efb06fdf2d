package sessions

import (
	"context"
	"database/sql"
	"errors"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
)

// An operator's view of another user's sessions: the admin console lists
// them and signs them out. The REST API has only the caller's own session
// routes and the system key's by-token ones, so these are the operations
// bans and deletions do (EndAll, End) for one session or all, each audited
// as session_revoked with the operator as actor.

// mayRevokeFor returns NotFound for an unknown user and Forbidden when p,
// who is not a super admin (or system key), acts on another super admin's
// sessions: signing an administrator out takes the standing that banning
// one does.
func mayRevokeFor(ctx context.Context, q db.Querier, p *authn.Principal, userID string) error {
	var super bool
	err := q.QueryRowContext(ctx, `SELECT is_super_admin FROM users WHERE id = $1`, userID).Scan(&super)
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.NotFoundf("user not found")
	}
	if err != nil {
		return err
	}
	if super && !p.IsAdmin() && !p.IsSelf(userID) {
		return apperr.Forbiddenf("only a super admin can sign out another super admin")
	}
	return nil
}

// OfUser returns userID's active sessions, most recently used first; the
// session p is using is marked current (when p looks at themself).
func (s *Service) OfUser(ctx context.Context, p *authn.Principal, userID string) ([]Session, error) {
	return s.list(ctx, userID, p.SessionID)
}

// RevokeOf revokes session id of userID on behalf of p (not p's current
// session: ErrCurrent). An unknown, ended or other user's session is
// NotFound; see mayRevokeFor for the other refusals.
func (s *Service) RevokeOf(ctx context.Context, p *authn.Principal, userID, id string, ev audit.Event) error {
	if id == p.SessionID {
		return ErrCurrent
	}
	now := s.Clock.Now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := mayRevokeFor(ctx, tx, p, userID); err != nil {
			return err
		}
		if err := endOne(ctx, tx, s.Epoch, userID, id, now); err != nil {
			return err
		}
		ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType, ev.ResourceID = userID, actorOf(p, userID), audit.SessionRevoked, "session", id
		ev.Description, ev.Metadata = "session revoked by an administrator", map[string]any{"session_id": id}
		_, err := s.Audit.Record(ctx, tx, ev)
		return err
	})
}

// RevokeAllOf revokes every active session of userID on behalf of p (but
// p's current one) and returns how many ended; none is no event. See
// mayRevokeFor for the refusals.
func (s *Service) RevokeAllOf(ctx context.Context, p *authn.Principal, userID string, ev audit.Event) (int64, error) {
	now := s.Clock.Now()
	var n int64
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := mayRevokeFor(ctx, tx, p, userID); err != nil {
			return err
		}
		var err error
		if n, err = EndAll(ctx, tx, s.Epoch, userID, p.SessionID, now); err != nil || n == 0 {
			return err
		}
		ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType, ev.ResourceID = userID, actorOf(p, userID), audit.SessionRevoked, "session", ""
		ev.Description, ev.Metadata = "all sessions revoked by an administrator", map[string]any{"revoked_count": n}
		_, err = s.Audit.Record(ctx, tx, ev)
		return err
	})
	return n, err
}

// actorOf is the audit actor when p acts on userID: "" for the user
// themself, else p's user or, without one, p's API key.
func actorOf(p *authn.Principal, userID string) string {
	if p.UserID == userID {
		return ""
	}
	return p.Actor()
}
