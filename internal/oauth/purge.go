package oauth

import (
	"context"
	"strconv"
	"strings"
	"time"

	"hmid/internal/db"
)

// Retention of spent codes and pending authorizations: a day past expiry, so
// a late replay of a code is still recognised as one and revokes the tokens
// it bought (RFC 6749 §4.1.2).
const shortRetention = 24 * time.Hour

// PurgeBatch is the most rows one purge statement deletes. Each batch is its
// own short statement, so the single SQLite writer (and PostgreSQL's row
// locks) are held for milliseconds and requests interleave between batches.
const PurgeBatch = 1000

// DefaultPurgePause is the pause between two purge batches of the hourly job.
const DefaultPurgePause = 20 * time.Millisecond

// Purge deletes what nothing needs any more, in batches of at most
// PurgeBatch rows with s.PurgePause between them:
//   - codes and pending authorizations a day past expiry;
//   - access tokens once expired or revoked (a revoked or expired access
//     token is refused whether or not its row exists);
//   - the authentication context (oauth_auth_context) of a family with no
//     token left, a day after its code was issued;
//   - every token of a family with no live token left. A spent refresh
//     token matters only while its family can still be used: presenting it
//     then revokes the family (reuse detection, RFC 9700 §4.14.2). Once the
//     family is revoked or expired there is nothing left to revoke, and the
//     answer to the spent token, invalid_grant, is the same without its row.
//
// Spent refresh tokens of live families are kept. A family cannot come back
// to life: new tokens join it only by rotating a live refresh token. Purge is
// idempotent and safe to run on several instances.
func (s *Service) Purge(ctx context.Context) error {
	now := s.Clock.Now()
	// Before tokens go: their times are the last use of dynamic clients.
	if err := s.expireRegistrations(ctx, now); err != nil {
		return err
	}
	short := db.TS(now.Add(-shortRetention))
	for _, q := range []string{
		`DELETE FROM oauth_codes WHERE code_hash IN (SELECT code_hash FROM oauth_codes WHERE expires_at < $1 LIMIT ` + strconv.Itoa(PurgeBatch) + `)`,
		`DELETE FROM oauth_pending_authorizations WHERE id IN (SELECT id FROM oauth_pending_authorizations WHERE expires_at < $1 LIMIT ` + strconv.Itoa(PurgeBatch) + `)`,
	} {
		if err := s.purgeBatches(ctx, q, short); err != nil {
			return err
		}
	}
	if err := s.purgeTokens(ctx, db.TS(now)); err != nil {
		return err
	}
	if err := s.purgeMachine(ctx, now); err != nil {
		return err
	}
	// The authentication context of a family goes with its last token.
	return s.purgeBatches(ctx, `DELETE FROM oauth_auth_context WHERE family_id IN (SELECT c.family_id FROM oauth_auth_context c
		WHERE c.created_at < $1 AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.family_id = c.family_id) LIMIT `+strconv.Itoa(PurgeBatch)+`)`, short)
}

// purgeBatches runs the batched DELETE q (with $1 = arg) until a batch
// deletes less than PurgeBatch rows.
func (s *Service) purgeBatches(ctx context.Context, q string, arg int64) error {
	for {
		res, err := s.DB.ExecContext(ctx, q, arg)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n < PurgeBatch {
			return nil
		}
		if err := s.pause(ctx); err != nil {
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

// purgeTokens deletes the dead access tokens, then every token of the dead
// families. Each walk is a keyset cursor, so the kept rows are read once per
// run, not once per batch; up to PurgeBatch ids are selected on the readers
// and deleted by id.
func (s *Service) purgeTokens(ctx context.Context, now int64) error {
	if err := s.purgeWalk(ctx, deadAccessSQL, "id", now); err != nil {
		return err
	}
	return s.purgeWalk(ctx, deadFamiliesSQL, "family_id", now)
}

// purgeWalk runs the keyset query sel (with $1 = now and $2 = the cursor),
// deleting the oauth_tokens whose column col is among each batch's keys.
func (s *Service) purgeWalk(ctx context.Context, sel, col string, now int64) error {
	cursor := ""
	for {
		keys, err := db.All(ctx, s.DB, db.ScanString, sel, now, cursor)
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
		if _, err := s.DB.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE `+col+` IN (`+strings.Join(marks, ", ")+`)`, args...); err != nil {
			return err
		}
		if len(keys) < PurgeBatch {
			return nil
		}
		cursor = keys[len(keys)-1]
		if err := s.pause(ctx); err != nil {
			return err
		}
	}
}

// pause waits s.PurgePause between batches, or returns ctx's error.
func (s *Service) pause(ctx context.Context) error {
	if s.PurgePause <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(s.PurgePause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RunPurge runs Purge every interval until ctx ends, on one instance at a
// time (DB.TryLock: a PostgreSQL advisory lock), logging failures through logf.
func (s *Service) RunPurge(ctx context.Context, interval time.Duration, logf func(err error)) {
	s.every(ctx, interval, "oauth-purge", logf, s.Purge)
}

// every runs job every interval until ctx ends, on one instance at a time
// (DB.TryLock under lock: a PostgreSQL advisory lock), logging failures
// through logf.
func (s *Service) every(ctx context.Context, interval time.Duration, lock string, logf func(error), job func(context.Context) error) {
	db.Every(ctx, interval, func() {
		release, ok, err := s.DB.TryLock(ctx, lock)
		if err != nil {
			logf(err)
			return
		}
		if !ok {
			return
		}
		if err := job(ctx); err != nil && ctx.Err() == nil {
			logf(err)
		}
		release()
	})
}

// expireRegistrations records when a token was last issued to each
// dynamically registered client (last_used_at, for the admin console),
// then deletes the open registrations with no token issued for
// RegistrationExpiry (RFC 7591 leaves the life of a registration to the
// server; an unused open registration is only clutter, or abuse).
func (s *Service) expireRegistrations(ctx context.Context, now time.Time) error {
	if _, err := s.DB.ExecContext(ctx, `UPDATE oauth_clients SET last_used_at = (SELECT MAX(t.created_at) FROM oauth_tokens t WHERE t.client_id = oauth_clients.id)
		WHERE registration_kind IS NOT NULL AND EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id
			AND t.created_at > COALESCE(oauth_clients.last_used_at, 0))`); err != nil {
		return err
	}
	expiry := s.RegistrationExpiry
	if expiry <= 0 {
		expiry = DefaultRegistrationExpiry
	}
	cutoff := db.TS(now.Add(-expiry))
	res, err := s.DB.ExecContext(ctx, `DELETE FROM oauth_clients WHERE registration_kind = 'open' AND COALESCE(last_used_at, created_at) < $1
		AND NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.client_id = oauth_clients.id AND t.created_at >= $1)`, cutoff)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		s.clientsChanged()
	}
	return nil
}
