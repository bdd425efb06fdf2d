package cache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
)

// testLimiter is what both limiters are: a GCRA limiter and a sliding
// window one.
type testLimiter interface {
	cache.Limiter
	cache.WindowLimiter
}

// limiters returns the in-process limiter on clk and, when
// HMID_TEST_REDIS_URL is set, the Redis limiter, whose windows read clk too
// (its GCRA keeps Redis's clock).
func limiters(t *testing.T, clk *clocktest.Fake) map[string]testLimiter {
	out := map[string]testLimiter{"memory": cache.NewMemoryLimiter(clk.Now)}
	if r := testRedis(t); r != nil {
		rl := cache.NewRedisLimiter(r)
		rl.Now = clk.Now
		out["redis"] = rl
	}
	return out
}

// TestLimiterNoWindowBoundary: a full burst just before a minute boundary and
// another just after it must not add up (a fixed window aligned on the clock
// let both through).
func TestLimiterNoWindowBoundary(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 12, 0, 59, 900_000_000, time.UTC))
	lim := cache.NewMemoryLimiter(clk.Now)
	l := cache.PerPeriod(30, time.Minute)
	allowed := 0
	for _, at := range []time.Duration{0, 200 * time.Millisecond} {
		clk.Advance(at)
		for range 30 {
			d, err := cache.Allow(context.Background(), lim, "gps", l)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				allowed++
			}
		}
	}
	if allowed != 30 {
		t.Fatalf("%d allowed within 0.2 s across a minute boundary, want 30", allowed)
	}
	// The allowance comes back at one event per 2 s, not all at once.
	clk.Advance(2 * time.Second)
	d, _ := cache.Allow(context.Background(), lim, "gps", l)
	if !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after 2 s: %+v", d)
	}
	if d, _ = cache.Allow(context.Background(), lim, "gps", l); d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 2*time.Second {
		t.Fatalf("second after 2 s: %+v", d)
	}
}

// limiterStep is one call of the equivalence table: wait, then take n
// events (or give n back).
type limiterStep struct {
	wait         time.Duration
	n            int
	refund       bool
	allowed      bool
	remaining    int
	reset, retry time.Duration // expected, within tolerance on Redis
}

// TestLimiterSameDecisions runs one sequence against the memory limiter (on
// a fake clock) and the Redis limiter (in real time) and wants the same
// decisions from both. Every decision is at least half an emission interval
// from its turning point, so the small real delays of Redis do not matter.
func TestLimiterSameDecisions(t *testing.T) {
	l := cache.Limit{Rate: 4, Period: 4 * time.Second, Burst: 4} // one event per second
	s := time.Second
	steps := []limiterStep{
		{n: 1, allowed: true, remaining: 3, reset: 1 * s},
		{n: 1, allowed: true, remaining: 2, reset: 2 * s},
		{n: 2, allowed: true, remaining: 0, reset: 4 * s},
		{n: 1, allowed: false, reset: 4 * s, retry: 1 * s},
		{n: 5, allowed: false, reset: 4 * s, retry: 5 * s},
		{wait: 1500 * time.Millisecond, n: 1, allowed: true, remaining: 0, reset: 3500 * time.Millisecond},
		{n: 1, allowed: false, reset: 3500 * time.Millisecond, retry: 500 * time.Millisecond},
		{n: 1, refund: true, allowed: true, remaining: 1, reset: 2500 * time.Millisecond},
		{n: 2, allowed: false, reset: 2500 * time.Millisecond, retry: 500 * time.Millisecond},
		{n: 1, allowed: true, remaining: 0, reset: 3500 * time.Millisecond},
		{wait: 4 * s, n: 4, refund: true, allowed: true, remaining: 4, reset: 0},
		{n: 4, allowed: true, remaining: 0, reset: 4 * s},
	}
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	lims := limiters(t, clk)
	ctx := context.Background()
	for i, st := range steps {
		if st.wait > 0 {
			clk.Advance(st.wait)
			if len(lims) > 1 {
				time.Sleep(st.wait)
			}
		}
		for name, lim := range lims {
			var d cache.Decision
			var err error
			if st.refund {
				d, err = lim.Refund(ctx, "same", l, st.n)
			} else {
				d, err = lim.AllowN(ctx, "same", l, st.n)
			}
			if err != nil {
				t.Fatalf("%s step %d: %v", name, i, err)
			}
			tol := time.Duration(0)
			if name == "redis" {
				tol = 300 * time.Millisecond
			}
			if d.Allowed != st.allowed || d.Remaining != st.remaining || d.Limit != 4 ||
				!near(d.Reset, st.reset, tol) || !near(d.RetryAfter, st.retry, tol) {
				t.Fatalf("%s step %d: %+v, want allowed %v remaining %d reset %v retry %v",
					name, i, d, st.allowed, st.remaining, st.reset, st.retry)
			}
		}
	}
}

func near(got, want, tol time.Duration) bool { return got <= want && got >= want-tol }

// TestReserveIsAtomic: however many reservations arrive at once, no more
// than the burst get one; a released one comes back.
func TestReserveIsAtomic(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	for name, lim := range limiters(t, clk) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			q := cache.Quota{Key: "atomic", Limit: cache.PerPeriod(5, 15*time.Minute)}
			var (
				mu  sync.Mutex
				got []*cache.Reservation
				wg  sync.WaitGroup
			)
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, d, err := cache.Reserve(ctx, lim, q)
					if err != nil {
						t.Error(err)
						return
					}
					if (r != nil) != d.Allowed {
						t.Errorf("reservation %v with decision %+v", r != nil, d)
					}
					if r != nil {
						mu.Lock()
						got = append(got, r)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if len(got) != 5 {
				t.Fatalf("%d of 50 concurrent reservations granted, want 5", len(got))
			}
			d, err := got[0].Release(ctx)
			if err != nil || d.Remaining != 1 {
				t.Fatalf("release: %+v %v", d, err)
			}
			if _, err := got[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			if r, _, _ := cache.Reserve(ctx, lim, q); r == nil {
				t.Fatal("released attempt not given back")
			}
			if r, _, _ := cache.Reserve(ctx, lim, q); r != nil {
				t.Fatal("a second release gave back more than was taken")
			}
		})
	}
}

// TestReserveSeveralQuotas: a refusal by a later quota gives back what the
// earlier ones took; the decision is the tightest.
func TestReserveSeveralQuotas(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	for name, lim := range limiters(t, clk) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			acct := func(k string) cache.Quota { return cache.Quota{Key: "acct:" + k, Limit: cache.PerPeriod(2, time.Hour)} }
			addr := cache.Quota{Key: "addr", Limit: cache.PerPeriod(3, time.Hour)}
			for i, want := range []int{1, 0} {
				if r, d, err := cache.Reserve(ctx, lim, acct("a"), addr); err != nil || r == nil || d.Remaining != want || d.Limit != 2 {
					t.Fatalf("reservation %d: %v %+v %v", i, r != nil, d, err)
				}
			}
			if r, d, _ := cache.Reserve(ctx, lim, acct("a"), addr); r != nil || d.Allowed || d.RetryAfter <= 0 {
				t.Fatalf("account over its allowance: %+v", d)
			}
			// The refused account took nothing from the address: one is left.
			if r, d, _ := cache.Reserve(ctx, lim, acct("b"), addr); r == nil || d.Remaining != 0 || d.Limit != 3 {
				t.Fatalf("address's last: %+v", d)
			}
			// The address refuses; account c's event is given back.
			if r, d, _ := cache.Reserve(ctx, lim, acct("c"), addr); r != nil || d.Allowed || d.Limit != 3 {
				t.Fatalf("address over its allowance: %+v", d)
			}
			if d, _ := cache.Allow(ctx, lim, "acct:c", cache.PerPeriod(2, time.Hour)); !d.Allowed || d.Remaining != 1 {
				t.Fatalf("account c after the address refused: %+v", d)
			}
		})
	}
}
