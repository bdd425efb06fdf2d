package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Cache shared by every instance through one Redis server.
// All keys carry Prefix so several deployments (or tests) can share a server.
type Redis struct {
	Client *redis.Client
	Prefix string
}

var _ Cache = (*Redis)(nil)

// NewRedis connects to the server at url ("redis://…") and checks it answers.
func NewRedis(ctx context.Context, url, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("cache: HMID_REDIS_URL: %w", err)
	}
	opt.PoolSize = 64
	opt.DialTimeout = 2 * time.Second
	opt.ReadTimeout = 2 * time.Second
	opt.WriteTimeout = 2 * time.Second
	c := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("cache: connect to Redis: %w", err)
	}
	return &Redis{Client: c, Prefix: prefix}, nil
}

// Name returns "redis".
func (r *Redis) Name() string { return "redis" }

// Ping checks the server.
func (r *Redis) Ping(ctx context.Context) error { return r.Client.Ping(ctx).Err() }

// Get returns the value or ErrMiss.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := r.Client.Get(ctx, r.Prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrMiss
	}
	return b, err
}

// Set stores value for ttl (0 means no expiry).
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return r.Client.Set(ctx, r.Prefix+key, value, ttl).Err()
}

// GetMany reads keys with one MGET.
func (r *Redis) GetMany(ctx context.Context, keys []string) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = r.Prefix + k
	}
	vals, err := r.Client.MGet(ctx, full...).Result()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[i] = []byte(s)
		}
	}
	return out, nil
}

// SetMany stores entries with one pipeline of SETs (MSET has no expiry).
func (r *Redis) SetMany(ctx context.Context, entries map[string][]byte, ttl time.Duration) error {
	if len(entries) == 0 {
		return nil
	}
	_, err := r.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, v := range entries {
			p.Set(ctx, r.Prefix+k, v, ttl)
		}
		return nil
	})
	return err
}

// SetNX stores value only if key is absent.
func (r *Redis) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	return r.Client.SetNX(ctx, r.Prefix+key, value, ttl).Result()
}

// Delete removes keys.
func (r *Redis) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = r.Prefix + k
	}
	return r.Client.Del(ctx, full...).Err()
}

// incrScript increments and sets the expiry only on creation, atomically, so a
// crash between the two cannot leave a counter that never expires.
var incrScript = redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) and tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return n`)

// Incr adds delta to the counter at key.
func (r *Redis) Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	if delta == 0 {
		n, err := r.Client.Get(ctx, r.Prefix+key).Int64()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		return n, err
	}
	return incrScript.Run(ctx, r.Client, []string{r.Prefix + key}, delta, ttl.Milliseconds()).Int64()
}

// Close closes the connection pool.
func (r *Redis) Close() error { return r.Client.Close() }
