// Package cache holds the shared state that must be one across instances:
// a key/value cache with expiry, a GCRA rate limiter (limiter.go), and the
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
