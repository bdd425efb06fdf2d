package oauth

import (
	"context"
	"time"

	"hmid/internal/db"
	"hmid/internal/oauth/store"
)

// Purge deletes the codes, tokens, pending and device authorizations and
// open registrations nothing needs any more (store.Store.Purge says which),
// in batches with s.PurgePause between them. It is idempotent and safe to
// run on several instances; it returns the database's errors, or ctx's.
func (s *Service) Purge(ctx context.Context) error {
	expiry := s.RegistrationExpiry
	if expiry <= 0 {
		expiry = DefaultRegistrationExpiry
	}
	deleted, err := s.Store.Purge(ctx, store.PurgeOptions{Now: s.Clock.Now(), Pause: s.PurgePause, RegistrationExpiry: expiry})
	if deleted {
		s.clientsChanged()
	}
	return err
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

// RunKeyMaintenance runs the signing keys' job (signing.Keys.Maintain: age
// rotation after maxAge, deletion past the grace) every interval until ctx
// ends, on one instance at a time (DB.TryLock), logging failures through logf.
func (s *Service) RunKeyMaintenance(ctx context.Context, interval, maxAge time.Duration, logf func(error)) {
	s.every(ctx, interval, "oauth-signing-keys", logf, func(ctx context.Context) error { return s.Keys.Maintain(ctx, maxAge) })
}
