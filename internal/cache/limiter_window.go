package cache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Window is a sliding-window limit: at most Max events in any interval of
// length Size. Unlike a GCRA Limit, which lets a full burst through and then
// refills continuously (so an interval of length Size can admit almost twice
// the burst), a window counts exactly the events of the last Size: "30
// requests per 60 seconds" read literally. It is kept as a sliding log (the
// time of every counted event in the window), so it costs memory per event
// and suits small limits such as Max 30.
type Window struct {
	Max  int
	Size time.Duration
}

func (w Window) valid() error {
	if w.Max < 1 || w.Size < time.Millisecond {
		return fmt.Errorf("cache: invalid window limit %+v", w)
	}
	return nil
}

// WindowLimiter decides events under sliding-window limits. MemoryLimiter
// (one instance) and RedisLimiter (shared by every instance) implement it.
type WindowLimiter interface {
	// AllowWindow counts one event for key at the limiter's now when fewer
	// than w.Max events of key happened in the w.Size before it; otherwise
	// it refuses and counts nothing. The decision's Limit is w.Max,
	// Remaining what is left in the window, Reset the time until the
	// newest counted event leaves it (the whole allowance is back), and
	// RetryAfter, when refused, the time until the oldest counted event
	// leaves it.
	AllowWindow(ctx context.Context, key string, w Window) (Decision, error)
}

// windowDecision is the Decision for a window in which count events are
// counted after the call, the oldest at oldest and the newest at newest.
func windowDecision(allowed bool, count int, oldest, newest, now time.Time, w Window) Decision {
	d := Decision{Allowed: allowed, Limit: w.Max, Remaining: max(0, w.Max-count)}
	if count > 0 {
		d.Reset = max(0, newest.Add(w.Size).Sub(now))
	}
	if !allowed {
		d.RetryAfter = max(0, oldest.Add(w.Size).Sub(now))
	}
	return d
}

// memWindow is one key's log in the MemoryLimiter, oldest first.
type memWindow struct {
	log  []time.Time
	size time.Duration
}

// AllowWindow counts one event of key under w, or refuses it. An event at t
// stays counted while now < t + w.Size.
func (m *MemoryLimiter) AllowWindow(_ context.Context, key string, w Window) (Decision, error) {
	if err := w.valid(); err != nil {
		return Decision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.win == nil {
		m.win = map[string]*memWindow{}
	}
	lw := m.win[key]
	if lw == nil {
		lw = &memWindow{}
		m.win[key] = lw
	}
	lw.size = w.Size
	cut := now.Add(-w.Size)
	i, _ := slices.BinarySearchFunc(lw.log, cut, func(t, c time.Time) int {
		if t.After(c) {
			return 1
		}
		return -1
	})
	lw.log = lw.log[i:]
	allowed := len(lw.log) < w.Max
	if allowed {
		lw.log = append(lw.log, now)
	}
	var d Decision
	if len(lw.log) == 0 {
		d = windowDecision(allowed, 0, now, now, now, w)
	} else {
		d = windowDecision(allowed, len(lw.log), lw.log[0], lw.log[len(lw.log)-1], now, w)
	}
	m.sweepWindowsLocked(now)
	return d, nil
}

// sweepWindowsLocked drops, every few thousand calls, the logs whose newest
// event has left its window, so the map stays bounded by the keys active
// within one window.
func (m *MemoryLimiter) sweepWindowsLocked(now time.Time) {
	sweep(m.win, &m.winOps, func(lw *memWindow) bool {
		return len(lw.log) == 0 || !lw.log[len(lw.log)-1].Add(lw.size).After(now)
	})
}

// WindowKeyPrefix is the prefix of the Redis sorted sets of the sliding
// windows, apart from redis_rate's keys (RateKeyPrefix), which hold strings.
const WindowKeyPrefix = "window:"

// windowScript is the sliding log of one key in a sorted set (member: a
// unique event id, score: its time in microseconds), decided atomically in
// one round trip: drop what left the window, count, add when under the
// limit, and report the count and the oldest and newest times.
// ARGV: now in µs (empty: Redis's clock, TIME), window size in µs, max,
// the member to add.
var windowScript = redis.NewScript(`
redis.replicate_commands()
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local size = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - size)
local count = redis.call("ZCARD", KEYS[1])
local allowed = 0
if count < limit then
  redis.call("ZADD", KEYS[1], now, ARGV[4])
  redis.call("PEXPIRE", KEYS[1], math.ceil(size / 1000))
  count = count + 1
  allowed = 1
end
local oldest, newest = now, now
if count > 0 then
  oldest = tonumber(redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")[2])
  newest = tonumber(redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")[2])
end
return {allowed, count, string.format("%.0f", oldest), string.format("%.0f", newest), string.format("%.0f", now)}`)

// AllowWindow counts one event of key under w in Redis, shared by every
// instance, in one round trip. The time is Redis's own clock (TIME), so
// instances whose clocks differ still agree, unless l.Now is set (an
// injected clock, for tests).
func (l *RedisLimiter) AllowWindow(ctx context.Context, key string, w Window) (Decision, error) {
	if err := w.valid(); err != nil {
		return Decision{}, err
	}
	now := ""
	if l.Now != nil {
		now = strconv.FormatInt(l.Now().UnixMicro(), 10)
	}
	member := strconv.FormatUint(rand.Uint64(), 36)
	v, err := windowScript.Run(ctx, l.client, []string{WindowKeyPrefix + l.prefix + key},
		now, w.Size.Microseconds(), w.Max, member).Slice()
	if err != nil {
		return Decision{}, errUnavailable(err)
	}
	if len(v) != 5 {
		return Decision{}, fmt.Errorf("cache: window script answered %v", v)
	}
	allowed, _ := v[0].(int64)
	count, _ := v[1].(int64)
	var t [3]time.Time
	for i := range t {
		s, _ := v[2+i].(string)
		us, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Decision{}, fmt.Errorf("cache: window script answered %v", v)
		}
		t[i] = time.UnixMicro(us)
	}
	return windowDecision(allowed == 1, int(count), t[0], t[1], t[2], w), nil
}
