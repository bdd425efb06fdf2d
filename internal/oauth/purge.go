package oauth

import (
	"context"
	"time"

	"hmid/internal/db"
)

// Retention of spent rows. Codes and pending authorizations are kept a day
// past expiry so a late replay is still recognised as one; refresh tokens
// are kept 30 days past expiry so a stolen, long-rotated token presented
// late still revokes its family (RFC 9700 §4.14.2).
const (
	shortRetention   = 24 * time.Hour
	refreshRetention = 30 * 24 * time.Hour
)

// Purge deletes expired codes, pending authorizations and tokens past their
// retention. It is idempotent and safe to run on several instances.
func (s *Service) Purge(ctx context.Context) error {
	now := s.Clock.Now()
	short, long := db.TS(now.Add(-shortRetention)), db.TS(now.Add(-refreshRetention))
	for _, q := range []struct {
		sql string
		arg int64
	}{
		{`DELETE FROM oauth_codes WHERE expires_at < $1`, short},
		{`DELETE FROM oauth_pending_authorizations WHERE expires_at < $1`, short},
		{`DELETE FROM oauth_tokens WHERE kind = 'access' AND expires_at < $1`, short},
		{`DELETE FROM oauth_tokens WHERE kind = 'refresh' AND expires_at < $1`, long},
	} {
		if _, err := s.DB.ExecContext(ctx, q.sql, q.arg); err != nil {
			return err
		}
	}
	return nil
}

// RunPurge runs Purge every interval until ctx ends, on one instance at a
// time (DB.TryLock), logging failures through logf.
func (s *Service) RunPurge(ctx context.Context, interval time.Duration, logf func(err error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		release, ok, err := s.DB.TryLock(ctx, "oauth-purge")
		if err != nil {
			logf(err)
			continue
		}
		if !ok {
			continue
		}
		if err := s.Purge(ctx); err != nil && ctx.Err() == nil {
			logf(err)
		}
		release()
	}
}
