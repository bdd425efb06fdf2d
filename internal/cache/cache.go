// Package cache holds the shared state that must be one across instances:
// a key/value cache with expiry, a fixed-window rate limiter, and the
// authentication epoch. Each has an in-process implementation (one instance,
// the default) and a Redis implementation (HMID_REDIS_URL, several instances).
package cache

import (
	"context"
	"errors"
	"time"
)

// ErrMiss is returned by Get when the key is absent or expired.
var ErrMiss = errors.New("cache: miss")

// Cache is a byte-value cache with expiry.
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Delete(ctx context.Context, keys ...string) error
	// GetMany returns the values of keys in one round trip, nil for each
	// absent or expired key.
	GetMany(ctx context.Context, keys []string) ([][]byte, error)
	// SetMany stores every entry for ttl in one round trip.
	SetMany(ctx context.Context, entries map[string][]byte, ttl time.Duration) error
	// SetNX stores value only when key is absent, reporting whether it did;
	// it is the building block of single-use markers and short leases.
	SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
	// Incr adds delta to an integer counter, creating it with ttl when absent,
	// and returns the new value. The ttl is not extended by later increments.
	Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error)
	// Ping checks the backing store.
	Ping(ctx context.Context) error
	// Name is "memory" or "redis".
	Name() string
}

// Decision is the outcome of a rate-limit check.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Duration // until the window resets
}

// Limiter is a fixed-window rate limiter: at most limit hits per window for a key.
// Windows are aligned on the injected clock, so tests move time to open a new one.
type Limiter struct {
	Cache Cache
	Now   func() time.Time
}

// Allow counts one hit for key and tells whether it is within limit per window.
func (l *Limiter) Allow(ctx context.Context, key string, limit int, window time.Duration) (Decision, error) {
	now := l.Now()
	start := now.Truncate(window)
	reset := start.Add(window).Sub(now)
	n, err := l.Cache.Incr(ctx, "rl:"+key+":"+start.Format("20060102T150405"), 1, window+time.Second)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{Allowed: n <= int64(limit), Limit: limit, Remaining: max(0, limit-int(n)), Reset: reset}
	return d, nil
}

// Count reports the hits recorded for key in the current window without adding one.
func (l *Limiter) Count(ctx context.Context, key string, window time.Duration) (int64, error) {
	start := l.Now().Truncate(window)
	return l.Cache.Incr(ctx, "rl:"+key+":"+start.Format("20060102T150405"), 0, window+time.Second)
}
