package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"hmid/internal/db"
)

// Retention of spent codes, pending authorizations and finished device
// authorizations: a day past expiry, so a late replay of a code is still
// recognised as one and revokes the tokens it bought (RFC 6749 §4.1.2), and
// a late poll still hears expired_token rather than invalid_grant.
const shortRetention = 24 * time.Hour

// PurgeBatch is the most rows one purge statement deletes. Each batch is its
// own short statement, so the single SQLite writer (and PostgreSQL's row
// locks) are held for milliseconds and requests interleave between batches.
const PurgeBatch = 1000

// DefaultPurgePause is the pause between two purge batches of the hourly job.
const DefaultPurgePause = 20 * time.Millisecond

// PurgeOptions say how one purge runs.
type PurgeOptions struct {
	Now time.Time
	// Pause is the pause between batches (0: none).
	Pause time.Duration
	// RegistrationExpiry is how long an open registration lives without a
	// token issued to it.
	RegistrationExpiry time.Duration
}

// Purge deletes what nothing needs any more, in batches of at most
// PurgeBatch rows with p.Pause between them:
//   - codes and pending authorizations a day past expiry;
//   - access tokens once expired or revoked (a revoked or expired access
//     token is refused whether or not its row exists);
//   - the authentication context (oauth_auth_context) of a family with no
//     token left, a day after its code was issued;
//   - every token of a family with no live token left. A spent refresh
//     token matters only while its family can still be used: presenting it
//     then revokes the family (reuse detection, RFC 9700 §4.14.2). Once the
//     family is revoked or expired there is nothing left to revoke, and the
//     answer to the spent token, invalid_grant, is the same without its row;
//   - client credentials tokens once expired or revoked, and device
//     authorizations a day past expiry;
//   - open registrations without a token for p.RegistrationExpiry, after
//     noting when a token was last issued to each dynamically registered
//     client (last_used_at).
//
// Spent refresh tokens of live families are kept. A family cannot come back
// to life: new tokens join it only by rotating a live refresh token. Purge is
// idempotent and safe to run on several instances. It reports whether it
// deleted a client. It stops with ctx's error when ctx ends.
func (s *Store) Purge(ctx context.Context, p PurgeOptions) (clientsDeleted bool, err error) {
	// Before tokens go: their times are the last use of dynamic clients.
	if clientsDeleted, err = s.expireRegistrations(ctx, p); err != nil {
		return clientsDeleted, err
	}
	short := db.TS(p.Now.Add(-shortRetention))
	for _, q := range []string{
		`DELETE FROM oauth_codes WHERE code_hash IN (SELECT code_hash FROM oauth_codes WHERE expires_at < $1 LIMIT ` + strconv.Itoa(PurgeBatch) + `)`,
		`DELETE FROM oauth_pending_authorizations WHERE id IN (SELECT id FROM oauth_pending_authorizations WHERE expires_at < $1 LIMIT ` + strconv.Itoa(PurgeBatch) + `)`,
	} {
		if err := s.purgeBatches(ctx, p, q, short); err != nil {
			return clientsDeleted, err
		}
	}
	for _, walk := range []struct{ sel, col string }{{deadAccessSQL, "id"}, {deadFamiliesSQL, "family_id"}} {
		if err := s.purgeWalk(ctx, p, walk.sel, walk.col); err != nil {
			return clientsDeleted, err
		}
	}
	if err := s.purgeBatches(ctx, p, `DELETE FROM oauth_client_tokens WHERE id IN (SELECT id FROM oauth_client_tokens
		WHERE expires_at <= $1 OR revoked_at IS NOT NULL LIMIT `+strconv.Itoa(PurgeBatch)+`)`, db.TS(p.Now)); err != nil {
		return clientsDeleted, err
	}
	if err := s.purgeBatches(ctx, p, `DELETE FROM oauth_device_authorizations WHERE id IN (SELECT id FROM oauth_device_authorizations
		WHERE expires_at < $1 LIMIT `+strconv.Itoa(PurgeBatch)+`)`, short); err != nil {
		return clientsDeleted, err
	}
	// The authentication context of a family goes with its last token.
	return clientsDeleted, s.purgeBatches(ctx, p, `DELETE FROM oauth_auth_context WHERE family_id IN (SELECT c.family_id FROM oauth_auth_context c
		WHERE c.created_at < $1 AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.family_id = c.family_id) LIMIT `+strconv.Itoa(PurgeBatch)+`)`, short)
}

// purgeBatches runs the batched DELETE q (with $1 = arg) until a batch
// deletes less than PurgeBatch rows.
func (s *Store) purgeBatches(ctx context.Context, p PurgeOptions, q string, arg int64) error {
	for {
		res, err := s.db.ExecContext(ctx, q, arg)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n < PurgeBatch {
			return nil
		}
		if err := pause(ctx, p.Pause); err != nil {
			return err
		}
	}
}

// deadAccessSQL selects, in id order after a cursor, the access tokens no
// longer usable (revoked or expired).
var deadAccessSQL = `SELECT id FROM oauth_tokens WHERE id > $2 AND kind = 'access' AND (revoked_at IS NOT NULL OR expires_at <= $1)
	ORDER BY id LIMIT ` + strconv.Itoa(PurgeBatch)

// deadFamiliesSQL selects, in family order after a cursor, the families
// without a live token (neither revoked nor expired). It groups over the
// family index (oauth_tokens_family) once per run; an index whose predicate
// names revoked_at would keep every rotation from being a heap-only update
// on PostgreSQL (migration 0850).
var deadFamiliesSQL = `SELECT family_id FROM oauth_tokens WHERE family_id > $2 GROUP BY family_id
	HAVING MAX(CASE WHEN revoked_at IS NULL AND expires_at > $1 THEN 1 ELSE 0 END) = 0
	ORDER BY family_id LIMIT ` + strconv.Itoa(PurgeBatch)

// purgeWalk runs the keyset query sel (with $1 = now and $2 = the cursor),
// deleting the oauth_tokens whose column col is among each batch's keys.
// The walk is a keyset cursor, so the kept rows are read once per run, not
// once per batch; up to PurgeBatch ids are selected on the readers and
// deleted by id.
func (s *Store) purgeWalk(ctx context.Context, p PurgeOptions, sel, col string) error {
	now, cursor := db.TS(p.Now), ""
	for {
		keys, err := db.All(ctx, s.db, db.ScanString, sel, now, cursor)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			return nil
		}
		marks := make([]string, len(keys))
		args := make([]any, len(keys))
		for i, k := range keys {
			marks[i], args[i] = "$"+strconv.Itoa(i+1), k
		}
		if _, err := s.db.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE `+col+` IN (`+strings.Join(marks, ", ")+`)`, args...); err != nil {
			return err
		}
		if len(keys) < PurgeBatch {
			return nil
		}
		cursor = keys[len(keys)-1]
		if err := pause(ctx, p.Pause); err != nil {
			return err
		}
	}
}

// pause waits d between batches, or returns ctx's error.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// expireRegistrations records when a token was last issued to each
// dynamically registered client (last_used_at, for the admin console),
// then deletes the open registrations with no token issued for
// p.RegistrationExpiry (RFC 7591 leaves the life of a registration to the
// server; an unused open registration is only clutter, or abuse). It
// reports whether it deleted one.
func (s *Store) expireRegistrations(ctx context.Context, p PurgeOptions) (bool, error) {
	if _, err := s.db.ExecContext(ctx, `UPDATE oauth_clients SET last_used_at = (SELECT MAX(t.created_at) FROM oauth_tokens t WHERE t.client_id = oauth_clients.id)
		WHERE registration_kind IS NOT NULL AND EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id
			AND t.created_at > COALESCE(oauth_clients.last_used_at, 0))`); err != nil {
		return false, err
	}
	cutoff := db.TS(p.Now.Add(-p.RegistrationExpiry))
	res, err := s.db.ExecContext(ctx, `DELETE FROM oauth_clients WHERE registration_kind = 'open' AND COALESCE(last_used_at, created_at) < $1
		AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id AND t.created_at >= $1)`, cutoff)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}
