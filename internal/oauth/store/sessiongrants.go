package store

import (
	"context"
	"time"

	"hmid/internal/db"
)

// The session grants (oauth_session_grants) say which client got tokens in
// which browser session, so the client is told when the session ends
// (Back-Channel Logout 1.0 §2.5): RecordSessionGrant writes one at the code
// exchange, the back-channel worker (package backchannel) closes them and
// queues the logout tokens. Triggers on sessions queue each session revoked
// or deleted with grants open in oauth_session_ends.

// EndedSession is a browser session whose open grant records are to be
// closed. Notify: it was revoked or deleted, and its clients get logout
// tokens; a session that merely expired is closed without (nobody ended
// it, and the clients' own token lifetimes apply).
type EndedSession struct {
	SessionID string
	Notify    bool
}

func scanEnded(r db.Scanner) (EndedSession, error) {
	var e EndedSession
	var notify int
	err := r.Scan(&e.SessionID, &notify)
	e.Notify = notify == 1
	return e, err
}

// EndedSessions returns up to 500 sessions with grant records still open
// that are revoked, deleted or expired at now: every open grant joined with
// its session, so it costs in proportion to the sessions in use.
func (s *Store) EndedSessions(ctx context.Context, now time.Time) ([]EndedSession, error) {
	return db.All(ctx, s.db, scanEnded, `SELECT DISTINCT g.session_id, CASE WHEN s.id IS NULL OR s.revoked_at IS NOT NULL THEN 1 ELSE 0 END
		FROM oauth_session_grants g LEFT JOIN sessions s ON s.id = g.session_id
		WHERE g.ended_at IS NULL AND (s.id IS NULL OR s.revoked_at IS NOT NULL OR s.expires_at <= $1)
		LIMIT 500`, db.TS(now))
}

// QueuedSessionEnds returns up to 500 of the sessions the triggers queued as
// revoked or deleted with grants open (oauth_session_ends), each to notify.
func (s *Store) QueuedSessionEnds(ctx context.Context) ([]EndedSession, error) {
	return db.All(ctx, s.db, scanEnded, `SELECT session_id, 1 FROM oauth_session_ends LIMIT 500`)
}

// EndSessionGrants closes, in tx, the open grant records of the session and
// takes it off the queue of ended sessions. It returns the user of each
// client that got tokens in it, by client; the conditional UPDATE decides
// which instance closes them: a second one finds no open record.
func (s *Store) EndSessionGrants(ctx context.Context, tx db.Querier, sessionID string, now time.Time) (map[string]string, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_session_ends WHERE session_id = $1`, sessionID); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `UPDATE oauth_session_grants SET ended_at = $1 WHERE session_id = $2 AND ended_at IS NULL RETURNING client_id, user_id`,
		db.TS(now), sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	users := map[string]string{} // client → user
	for rows.Next() {
		var client, user string
		if err := rows.Scan(&client, &user); err != nil {
			return nil, err
		}
		users[client] = user
	}
	return users, rows.Err()
}

// Logout is a logout token to deliver: the session of a user that ended,
// for a client that got tokens in it.
type Logout struct {
	ClientID, UserID, SessionID string
}

// QueueLogout queues l in the back-channel outbox (oauth_backchannel_outbox,
// a queue of package outbox), in tx, when its client takes logout tokens:
// active, with a back-channel logout URI. It reports whether it queued one.
func (s *Store) QueueLogout(ctx context.Context, tx db.Querier, l Logout, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO oauth_backchannel_outbox (id, client_id, user_id, session_id, created_at, next_attempt_at)
				SELECT $1, c.id, $3, $4, $5, $5 FROM oauth_clients c WHERE c.id = $2 AND c.backchannel_logout_uri IS NOT NULL AND c.is_active`,
		db.NewID(), l.ClientID, l.UserID, l.SessionID, db.TS(now))
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// DeleteEndedSessionGrants deletes the grant records closed before cutoff
// (they only serve the sid of a late refresh).
func (s *Store) DeleteEndedSessionGrants(ctx context.Context, cutoff time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM oauth_session_grants WHERE ended_at IS NOT NULL AND ended_at < $1`, db.TS(cutoff))
	return err
}
