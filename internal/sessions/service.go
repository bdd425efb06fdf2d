package sessions

import (
	"context"
	"errors"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/policy"
)

// Service lists and revokes sessions; the REST endpoints and the account
// console call it.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Epoch authn.Epoch // bumped after every revocation so the token dies on every instance
	Audit *audit.Writer
	// Policy gives the lifetime of sessions created without an expiry
	// (session.absolute_timeout_seconds; nil: DefaultTTL).
	Policy *policy.Store
}

// ErrCurrent refuses to revoke the session making the request: logging out
// is the way to end it (it also clears the browser's cookie).
var ErrCurrent = errors.New("the current session cannot be revoked; log out instead")

// List returns p's active (neither revoked nor expired) sessions, most
// recently used first, the current one marked.
func (s *Service) List(ctx context.Context, p *authn.Principal) ([]Session, error) {
	return s.list(ctx, p.UserID, p.SessionID)
}

// list returns userID's active sessions, most recently used first, with
// current marked.
func (s *Service) list(ctx context.Context, userID, current string) ([]Session, error) {
	scan := func(row db.Scanner) (Session, error) {
		var x Session
		var last, created, expires int64
		err := row.Scan(&x.ID, &x.IPAddress, &x.UserAgent, &x.DeviceType, &x.BrowserName, &x.OSName, &x.Provider,
			&x.ProviderName, &last, &created, &expires)
		x.LastActivityAt, x.CreatedAt, x.ExpiresAt = db.FromTS(last), db.FromTS(created), db.FromTS(expires)
		x.IsCurrent = x.ID == current
		return x, err
	}
	return db.All(ctx, s.DB, scan, `SELECT s.id, s.ip_address, s.user_agent, s.device_type, s.browser_name, s.os_name, s.provider,
		COALESCE(pl.name, s.provider), s.last_activity_at, s.created_at, s.expires_at
		FROM sessions s LEFT JOIN platforms pl ON pl.slug = s.provider
		WHERE s.user_id = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND s.last_activity_at > $3
		ORDER BY s.last_activity_at DESC, s.id`, userID, db.TS(s.Clock.Now()), s.idleCutoff())
}

// CountActive returns the number of sessions of all users that are neither
// revoked nor expired nor idle past the timeout: the admin console's
// overview shows it.
func (s *Service) CountActive(ctx context.Context) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL AND expires_at > $1 AND last_activity_at > $2`,
		db.TS(s.Clock.Now()), s.idleCutoff()).Scan(&n)
	return n, err
}

// idleCutoff is the last activity a session must be newer than not to be
// idle past the policy's timeout (session.idle_timeout_seconds), as a
// statement argument; 0 when no session is.
func (s *Service) idleCutoff() int64 {
	cut := s.Policy.Current().IdleCutoff(s.Clock.Now())
	if cut.IsZero() {
		return 0
	}
	return db.TS(cut)
}

// Revoke revokes p's session id (not the current one: ErrCurrent). Another
// user's, an unknown or an ended session is NotFound. ev carries the
// request's address, user agent and source for the session_revoked event.
func (s *Service) Revoke(ctx context.Context, p *authn.Principal, id string, ev audit.Event) error {
	if id == p.SessionID {
		return ErrCurrent
	}
	now := s.Clock.Now()
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := endOne(ctx, tx, s.Epoch, p.UserID, id, now); err != nil {
			return err
		}
		ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = p.UserID, audit.SessionRevoked, "session", id
		ev.Description, ev.Metadata = "session revoked by its user", map[string]any{"session_id": id, "revoked_by_session": p.SessionID}
		_, err := s.Audit.Record(ctx, tx, ev)
		return err
	})
}

// endOne ends the active session id of userID; an unknown, ended or
// other user's session is NotFound.
func endOne(ctx context.Context, tx *db.Tx, ep authn.Epoch, userID, id string, now time.Time) error {
	ended, err := End(ctx, tx, ep, userID, id, now)
	if err == nil && !ended {
		err = apperr.NotFoundf("session not found")
	}
	return err
}

// RevokeOthers revokes every active session of p except the current one
// and returns how many ended.
func (s *Service) RevokeOthers(ctx context.Context, p *authn.Principal, ev audit.Event) (int64, error) {
	now := s.Clock.Now()
	var n int64
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if n, err = EndAll(ctx, tx, s.Epoch, p.UserID, p.SessionID, now); err != nil || n == 0 {
			return err
		}
		ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = p.UserID, audit.SessionRevoked, "session", p.SessionID
		ev.Description, ev.Metadata = "all other sessions revoked", map[string]any{"revoked_count": n, "kept_session_id": p.SessionID}
		_, err = s.Audit.Record(ctx, tx, ev)
		return err
	})
	return n, err
}
