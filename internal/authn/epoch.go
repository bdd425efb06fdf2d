package authn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/cache"
	"hmid/internal/db"
)

// Epoch is the shared counter whose change invalidates cached principals.
type Epoch interface {
	Current(ctx context.Context) (int64, error)
	Bump(ctx context.Context) error
}

// MemoryEpoch is the epoch of a single instance.
type MemoryEpoch struct{ n atomic.Int64 }

// Current returns the epoch.
func (e *MemoryEpoch) Current(context.Context) (int64, error) { return e.n.Load(), nil }

// Bump advances the epoch.
func (e *MemoryEpoch) Bump(context.Context) error { e.n.Add(1); return nil }

// CacheEpoch keeps the epoch in a shared cache (Redis), for several
// instances. The epoch only tells when a cached principal must be reloaded,
// and the database, not Redis, says whether a credential is valid; so an
// unreachable Redis degrades to reading every principal from the database
// (Current fails and the Resolver bypasses its cache), never to refusing
// sessions and API keys (docs/decisions.md, "Authentication without Redis").
type CacheEpoch struct {
	Cache cache.Cache

	mu      sync.Mutex
	retryAt time.Time // after a failure, Redis is left alone until then
	pending bool      // a Bump did not reach Redis: it is made up on recovery
}

const epochKey = "auth:epoch"

// epochRetry is how long an unreachable Redis is not asked for the epoch
// again, so that a frozen server costs one timeout a second, not one a request.
const epochRetry = time.Second

// ErrEpochUnknown is returned by Current when the shared epoch cannot be
// read; cached principals must then not be trusted.
var ErrEpochUnknown = errors.New("authn: the authentication epoch is unknown")

// Current returns the epoch, first making up a Bump that failed.
func (e *CacheEpoch) Current(ctx context.Context) (int64, error) {
	e.mu.Lock()
	wait, pending := time.Now().Before(e.retryAt), e.pending
	e.mu.Unlock()
	if wait {
		return 0, ErrEpochUnknown
	}
	delta := int64(0)
	if pending {
		delta = 1
	}
	n, err := e.Cache.Incr(ctx, epochKey, delta, 0)
	if err != nil {
		e.failed(false)
		return 0, fmt.Errorf("%w: %w", ErrEpochUnknown, err)
	}
	if pending {
		e.mu.Lock()
		e.pending = false
		e.mu.Unlock()
	}
	return n, nil
}

// Bump advances the epoch. When Redis cannot be reached the change is
// already in the database, which every instance reads while Redis is down;
// the bump is remembered and made when Redis answers again, so principals
// cached before the outage are reloaded then.
func (e *CacheEpoch) Bump(ctx context.Context) error {
	_, err := e.Cache.Incr(ctx, epochKey, 1, 0)
	if err != nil && apperr.IsUnavailable(err) {
		e.failed(true)
		return nil
	}
	return err
}

// failed records that Redis did not answer.
func (e *CacheEpoch) failed(missedBump bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.retryAt = time.Now().Add(epochRetry)
	e.pending = e.pending || missedBump
}

// DBEpoch keeps the epoch in the auth_epoch table, for several instances on
// PostgreSQL without Redis.
type DBEpoch struct{ DB *db.DB }

// Current returns the epoch.
func (e DBEpoch) Current(ctx context.Context) (int64, error) {
	var n int64
	err := e.DB.QueryRowContext(ctx, `SELECT epoch FROM auth_epoch WHERE id = 1`).Scan(&n)
	return n, err
}

// Bump advances the epoch.
func (e DBEpoch) Bump(ctx context.Context) error {
	_, err := e.DB.ExecContext(ctx, `UPDATE auth_epoch SET epoch = epoch + 1 WHERE id = 1`)
	return err
}

// BumpAfterCommit bumps ep once tx commits, for the owners of credentials
// (sessions, API keys) that end them inside a transaction: a rolled-back
// transaction bumps nothing, and no caller has to remember the bump. The
// credentials have ended by then whatever the bump does: a failure only
// lets other instances serve their cached principal until cacheTTL runs out
// (CacheEpoch even makes a missed bump up on recovery), so it goes to log,
// not to the caller. A nil ep is a process that caches no principals (a
// command-line run).
func BumpAfterCommit(ctx context.Context, tx *db.Tx, ep Epoch, log *slog.Logger) {
	if ep == nil {
		return
	}
	tx.AfterCommit(func() {
		if err := ep.Bump(context.WithoutCancel(ctx)); err != nil {
			log.WarnContext(ctx, "authentication epoch not bumped after credentials ended", slog.String("error", err.Error()))
		}
	})
}

// EndCredentials runs query (an UPDATE or DELETE that ends credentials)
// inside tx and returns how many rows it changed; when any did, ep is bumped
// once tx commits (BumpAfterCommit). The owners of sessions and API keys end
// them through it.
func EndCredentials(ctx context.Context, tx *db.Tx, ep Epoch, log *slog.Logger, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if n > 0 {
		BumpAfterCommit(ctx, tx, ep, log)
	}
	return n, err
}

var (
	_ Epoch = (*MemoryEpoch)(nil)
	_ Epoch = (*CacheEpoch)(nil)
	_ Epoch = DBEpoch{}
)
