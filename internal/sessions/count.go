package sessions

import (
	"context"

	"hmid/internal/db"
)

// CountActive returns the number of sessions of all users that are neither
// revoked nor expired nor idle past the timeout: the admin console's
// overview shows it.
func (s *Service) CountActive(ctx context.Context) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL AND expires_at > $1 AND last_activity_at > $2`,
		db.TS(s.Clock.Now()), s.idleCutoff()).Scan(&n)
	return n, err
}
