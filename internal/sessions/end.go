package sessions

import (
	"context"
	"time"

	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Ending a session is written here once. Revoked rows are kept (revoked_at
// set) for the audit trail and the data export. Every function takes the
// authentication epoch and bumps it itself once the transaction commits, so
// a principal cached by any instance is reloaded and the ended session
// refused at once (docs/decisions.md, "Authentication cache"); no caller can
// forget it, and a rolled-back transaction bumps nothing (see
// authn.BumpAfterCommit).

// EndAll ends every active (unexpired, unrevoked) session of userID except
// exceptID ("" for none) inside tx, and returns how many ended. Logout
// everywhere, password changes and resets, bans, deletions and the
// administrator's "sign out everywhere" all use it.
func EndAll(ctx context.Context, tx *db.Tx, ep authn.Epoch, userID, exceptID string, now time.Time) (int64, error) {
	return authn.EndCredentials(ctx, tx, ep, httpx.Logger(ctx),
		`UPDATE sessions SET revoked_at = $1 WHERE user_id = $2 AND id <> $3 AND revoked_at IS NULL AND expires_at > $1`,
		db.TS(now), userID, exceptID)
}

// End ends the active session id of userID inside tx and reports whether it
// did: false when the session is unknown, another user's, expired or
// already ended (by a concurrent request, which then audited it). The
// conditional UPDATE makes two racing ends change the row once.
func End(ctx context.Context, tx *db.Tx, ep authn.Epoch, userID, id string, now time.Time) (bool, error) {
	n, err := authn.EndCredentials(ctx, tx, ep, httpx.Logger(ctx),
		`UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL AND expires_at > $1`,
		db.TS(now), id, userID)
	return n > 0, err
}
