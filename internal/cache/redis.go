package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"hmid/internal/deadline"

	"hmid/internal/apperr"
	"hmid/internal/telemetry"
)

// Redis is the Cache shared by every instance through one Redis server.
// All keys carry Prefix so several deployments (or tests) can share a server.
type Redis struct {
	Client *redis.Client
	Prefix string
}

var _ Cache = (*Redis)(nil)

// Redis's "cannot answer now" errors are ServiceUnavailable for every caller,
// also for code that uses the client directly (the real-time fan-out).
func init() { apperr.RegisterUnavailable(IsUnavailable) }

// IsUnavailable reports whether err means the Redis server cannot answer
// now: it is held as not answering (ErrNotAnswering), the client's pool is
// exhausted, timed out or closed, the server is loading its data set or is
// a replica without a master, or (caught by apperr for every store) the
// network failed. Replies to a wrong command do not count.
func IsUnavailable(err error) bool {
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, ErrNotAnswering) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "MASTERDOWN") ||
			strings.HasPrefix(msg, "READONLY") || strings.HasPrefix(msg, "BUSY ") || strings.HasPrefix(msg, "TRYAGAIN")
	}
	return false
}

// errUnavailable is what Redis's methods return when the server cannot
// answer: a ServiceUnavailable error keeping the cause for the log. A
// connection the server closed (EOF) counts here, where it can only come
// from Redis, and not in IsUnavailable, which sees every error.
func errUnavailable(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	if !apperr.IsUnavailable(err) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	return &apperr.Error{Kind: apperr.ServiceUnavailable, Message: "the cache is unavailable; try again later", Err: err}
}

// DefaultRedisTimeout is RedisOptions.Timeout's default, the default of
// HMID_DEPENDENCY_TIMEOUT.
const DefaultRedisTimeout = 2 * time.Second

// RedisOptions tune NewRedisWith. The zero value is the default of each field.
type RedisOptions struct {
	// Timeout is what a frozen Redis (a stopped process, a network that
	// swallows packets) may cost a request (0: DefaultRedisTimeout): each
	// command gets three quarters of it from the moment it is issued to its
	// reply, the wait for a free connection, a new connection's dial and
	// handshake, the write, the read and go-redis's retries together, not
	// the sum of the client's separate timeouts and retries.
	Timeout time.Duration
}

// NewRedis connects to the server at url ("redis://…") with the default
// options and checks it answers.
func NewRedis(ctx context.Context, url, prefix string) (*Redis, error) {
	return NewRedisWith(ctx, url, prefix, RedisOptions{})
}

// NewRedisWith connects to the server at url ("redis://…") and checks it
// answers.
func NewRedisWith(ctx context.Context, url, prefix string, o RedisOptions) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("cache: HMID_REDIS_URL: %w", err)
	}
	// A command gets three quarters of the timeout: a request that meets a
	// frozen Redis then still has the rest to fall back on the database or
	// to answer 503 within the timeout.
	bound := cmp.Or(o.Timeout, DefaultRedisTimeout) * 3 / 4
	opt.PoolSize = 64
	// Each of the client's own limits is the bound too, so none of them
	// alone outlasts it; guard caps their sum. With
	// ContextTimeoutEnabled the socket deadlines, the wait for a pooled
	// connection and the backoff between retries all follow the command's
	// context.
	opt.DialTimeout = bound
	opt.ReadTimeout = bound
	opt.WriteTimeout = bound
	opt.PoolTimeout = bound
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	c.AddHook(&guard{bound: bound, bounds: deadline.New(bound), client: c})
	if telemetry.On() {
		c.AddHook(traceHook{})
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("cache: connect to Redis: %w", err)
	}
	return &Redis{Client: c, Prefix: prefix}, nil
}

// ErrNotAnswering is the error of every Redis command while the client holds
// the server as not answering: a command ran out of its time, and the
// server has not answered a PING since. IsUnavailable counts it.
var ErrNotAnswering = errors.New("cache: Redis is not answering")

// guard is the go-redis hook that bounds every command and pipeline, the
// one place the bound is applied, so callers that use the client directly
// (the rate limiter's scripts, the real-time fan-out's PUBLISH) have it too.
// Pub/sub receives do not pass through it: a subscriber waits for messages
// for as long as it likes.
//
// A command gets at most the bound, unless its context ends sooner. One
// that runs out of it (and not of its caller's time) marks the server as
// not answering: commands then fail at once with ErrNotAnswering instead
// of each waiting the bound again (a request that uses Redis three times
// would wait three times), while a PING every twentieth of the bound checks
// for the server's return, which ends the mark without a restart.
type guard struct {
	bound  time.Duration
	bounds *deadline.Bounds // bound, with one timer per window of commands (package deadline)
	client *redis.Client
	down   atomic.Bool // the server is held as not answering
}

// probeKey marks the context of the guard's own PING, which passes the mark.
type probeKey struct{}

// DialHook leaves dialling to the command's context.
func (g *guard) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook bounds one command.
func (g *guard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if g.refuses(ctx) {
			cmd.SetErr(ErrNotAnswering)
			return ErrNotAnswering
		}
		return bounded(g, ctx, next, cmd)
	}
}

// ProcessPipelineHook bounds one pipeline or transaction as a whole.
func (g *guard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		// The probe's PING passes, and so does the handshake of the
		// connection it opens (HELLO, CLIENT SETINFO: a pipeline).
		if g.refuses(ctx) {
			for _, c := range cmds {
				c.SetErr(ErrNotAnswering)
			}
			return ErrNotAnswering
		}
		return bounded(g, ctx, next, cmds)
	}
}

// refuses reports whether a command is refused at once: Redis is known not
// to answer and the command is not the probe's.
func (g *guard) refuses(ctx context.Context) bool {
	return g.down.Load() && ctx.Value(probeKey{}) == nil
}

// bounded runs next on cmds within the guard's bound and lets the guard see
// the outcome: a command or a pipeline alike.
func bounded[C any](g *guard, ctx context.Context, next func(context.Context, C) error, cmds C) error {
	bctx, cancel := g.within(ctx)
	defer cancel()
	err := next(bctx, cmds)
	g.observe(ctx, err)
	return err
}

// within returns ctx bounded by the guard's bound (or up to a twentieth
// more, package deadline), and the function that releases it.
func (g *guard) within(ctx context.Context) (context.Context, func()) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= g.bound {
		return ctx, func() {}
	}
	b := g.bounds.Start(ctx)
	return b, b.End
}

// observe marks the server as not answering when a command whose caller
// still waits timed out, and starts checking for its return.
func (g *guard) observe(caller context.Context, err error) {
	if err == nil || caller.Err() != nil || caller.Value(probeKey{}) != nil {
		return
	}
	var ne net.Error
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, redis.ErrPoolTimeout) && !(errors.As(err, &ne) && ne.Timeout()) {
		return
	}
	if g.down.CompareAndSwap(false, true) {
		go g.watch()
	}
}

// watch pings the server until it answers, then lifts the mark; it gives
// up when the client is closed.
func (g *guard) watch() {
	ctx := context.WithValue(context.Background(), probeKey{}, true)
	t := time.NewTicker(g.bound / 20)
	defer t.Stop()
	for range t.C {
		pctx, cancel := context.WithTimeout(ctx, g.bound/4)
		err := g.client.Ping(pctx).Err()
		cancel()
		if err == nil || errors.Is(err, redis.ErrClosed) {
			g.down.Store(false)
			return
		}
	}
}

// Name returns "redis".
func (r *Redis) Name() string { return "redis" }

// Ping checks the server.
func (r *Redis) Ping(ctx context.Context) error { return errUnavailable(r.Client.Ping(ctx).Err()) }

// Get returns the value or ErrMiss.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := r.Client.Get(ctx, r.Prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrMiss
	}
	return b, errUnavailable(err)
}

// Set stores value for ttl (0 means no expiry).
func (r *Redis) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return errUnavailable(r.Client.Set(ctx, r.Prefix+key, value, ttl).Err())
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
		return nil, errUnavailable(err)
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
	return errUnavailable(err)
}

// SetNX stores value only if key is absent.
func (r *Redis) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	ok, err := r.Client.SetNX(ctx, r.Prefix+key, value, ttl).Result()
	return ok, errUnavailable(err)
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
	return errUnavailable(r.Client.Del(ctx, full...).Err())
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
		return n, errUnavailable(err)
	}
	n, err := incrScript.Run(ctx, r.Client, []string{r.Prefix + key}, delta, ttl.Milliseconds()).Int64()
	return n, errUnavailable(err)
}

// Close closes the connection pool.
func (r *Redis) Close() error { return r.Client.Close() }

// RateKeyPrefix is the prefix redis_rate puts before every limiter key (its
// unexported redisPrefix); the Redis limiter's own scripts must use the same.
const RateKeyPrefix = "rate:"

// RedisLimiter is the Limiter shared by every instance through Redis:
// github.com/go-redis/redis_rate's GCRA script. The script reads Redis's own
// clock (TIME), so instances whose clocks differ still agree; it does not
// follow an injected clock.
type RedisLimiter struct {
	rate   *redis_rate.Limiter
	client *redis.Client
	prefix string
	// Now, when set, is the clock of the sliding windows (AllowWindow)
	// instead of Redis's TIME: an injected clock, so tests can move it.
	// The GCRA limits always read Redis's clock.
	Now func() time.Time
}

var _ Limiter = (*RedisLimiter)(nil)

// NewRedisLimiter returns the limiter on r's server, under r's prefix.
func NewRedisLimiter(r *Redis) *RedisLimiter {
	return &RedisLimiter{rate: redis_rate.NewLimiter(r.Client), client: r.Client, prefix: r.Prefix}
}

// AllowN takes n events from key's allowance, or none.
func (l *RedisLimiter) AllowN(ctx context.Context, key string, lim Limit, n int) (Decision, error) {
	if err := lim.valid(); err != nil {
		return Decision{}, err
	}
	res, err := l.rate.AllowN(ctx, l.prefix+key, redis_rate.Limit{Rate: lim.Rate, Burst: lim.Burst, Period: lim.Period}, n)
	if err != nil {
		return Decision{}, errUnavailable(err)
	}
	return Decision{
		Allowed: res.Allowed == n, Limit: lim.Burst, Remaining: res.Remaining,
		Reset: max(0, res.ResetAfter), RetryAfter: max(0, res.RetryAfter),
	}, nil
}

// refundScript moves a key's theoretical arrival time back by cost emission
// intervals, atomically. redis_rate cannot do this: AllowN with a negative
// cost stores nothing when the result is not in the future, so the last
// event of a key could never be given back. Keys and values are
// redis_rate's: RateKeyPrefix + key, the TAT in seconds since 2017-01-01 by
// Redis's clock, expiring when the TAT passes.
var refundScript = redis.NewScript(`
redis.replicate_commands()
local burst = tonumber(ARGV[1])
local emission_interval = tonumber(ARGV[3]) / tonumber(ARGV[2])
local cost = tonumber(ARGV[4])
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)
local tat = tonumber(redis.call("GET", KEYS[1]) or now)
local new_tat = math.max(tat - emission_interval * cost, now)
local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", KEYS[1], new_tat, "EX", math.ceil(reset_after))
else
  redis.call("DEL", KEYS[1])
end
local remaining = (emission_interval * burst - reset_after) / emission_interval
return {remaining, tostring(reset_after)}`)

// Refund gives back n events of key.
func (l *RedisLimiter) Refund(ctx context.Context, key string, lim Limit, n int) (Decision, error) {
	if err := lim.valid(); err != nil {
		return Decision{}, err
	}
	v, err := refundScript.Run(ctx, l.client, []string{RateKeyPrefix + l.prefix + key},
		lim.Burst, lim.Rate, lim.Period.Seconds(), n).Slice()
	if err != nil {
		return Decision{}, errUnavailable(err)
	}
	remaining, _ := v[0].(int64)
	resetS, _ := v[1].(string)
	reset, err := strconv.ParseFloat(resetS, 64)
	if err != nil {
		return Decision{}, fmt.Errorf("cache: refund script answered %v", v)
	}
	return Decision{Allowed: true, Limit: lim.Burst, Remaining: int(remaining), Reset: time.Duration(reset * float64(time.Second))}, nil
}
