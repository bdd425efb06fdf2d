package authn

import (
	"context"
	"sync/atomic"

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

// CacheEpoch keeps the epoch in a shared cache (Redis), for several instances.
type CacheEpoch struct{ Cache cache.Cache }

const epochKey = "auth:epoch"

// Current returns the epoch.
func (e CacheEpoch) Current(ctx context.Context) (int64, error) {
	return e.Cache.Incr(ctx, epochKey, 0, 0)
}

// Bump advances the epoch.
func (e CacheEpoch) Bump(ctx context.Context) error {
	_, err := e.Cache.Incr(ctx, epochKey, 1, 0)
	return err
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

var (
	_ Epoch = (*MemoryEpoch)(nil)
	_ Epoch = CacheEpoch{}
	_ Epoch = DBEpoch{}
)
