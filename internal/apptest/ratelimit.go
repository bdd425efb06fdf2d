package apptest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"hmid/internal/cache"
)

// Advance lets d pass for the server: it moves the fake clock, and with it
// the rate limiter. The in-process limiter reads the fake clock. The Redis
// limiter (redis_rate) reads Redis's own clock, which a test cannot move, so
// there every stored theoretical arrival time under this server's prefix is
// moved back by d instead, which for the GCRA is the same as d passing.
func (e *Env) Advance(t testing.TB, d time.Duration) {
	t.Helper()
	e.Clock.Advance(d)
	rc, ok := e.Server.Cache.(*cache.Redis)
	if !ok {
		return
	}
	ctx := context.Background()
	var keys []string
	iter := rc.Client.Scan(ctx, 0, cache.RateKeyPrefix+rc.Prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		return
	}
	if err := shiftScript.Run(ctx, rc.Client, keys, d.Seconds()).Err(); err != nil && err != redis.Nil {
		t.Fatal(err)
	}
}

// shiftScript moves redis_rate TATs (seconds since 2017-01-01 by Redis's
// clock) back by ARGV[1] seconds, dropping those that fall into the past.
var shiftScript = redis.NewScript(`
redis.replicate_commands()
local t = redis.call("TIME")
local now = (t[1] - 1483228800) + (t[2] / 1000000)
for _, k in ipairs(KEYS) do
  local tat = tonumber(redis.call("GET", k))
  if tat then
    local shifted = tat - tonumber(ARGV[1])
    if shifted > now then
      redis.call("SET", k, shifted, "EX", math.ceil(shifted - now))
    else
      redis.call("DEL", k)
    end
  end
end
return 0`)
