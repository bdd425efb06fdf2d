package cache_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
)

// TestWindowAtMostMaxInAnyWindow: 30 per 60 s means 30 in any 60-second
// interval. 30 posts spread over 15 s are allowed and the 31st within the
// minute is refused (a GCRA with a burst of 30 let one more through every
// 2 s); as the window slides, exactly as many are allowed again as have
// left it, and Retry-After is when the oldest counted one leaves.
func TestWindowAtMostMaxInAnyWindow(t *testing.T) {
	for name := range limiters(t, clocktest.NewFake(time.Now())) {
		t.Run(name, func(t *testing.T) {
			start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
			clk := clocktest.NewFake(start)
			lim := limiters(t, clk)[name]
			ctx := context.Background()
			w := cache.Window{Max: 30, Size: time.Minute}
			allow := func() cache.Decision {
				t.Helper()
				d, err := lim.AllowWindow(ctx, "gps:user:a", w)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			// 30 posts, one every 500 ms: t = 0 … 14.5 s.
			for i := range 30 {
				d := allow()
				if !d.Allowed || d.Limit != 30 || d.Remaining != 29-i {
					t.Fatalf("post %d: %+v", i+1, d)
				}
				if i < 29 {
					clk.Advance(500 * time.Millisecond)
				}
			}
			// Every 500 ms up to 59.5 s: all refused, the oldest leaves at 60 s.
			for clk.Now().Before(start.Add(60 * time.Second)) {
				d := allow()
				if d.Allowed || d.Remaining != 0 || d.RetryAfter != start.Add(time.Minute).Sub(clk.Now()) {
					t.Fatalf("post at %s: %+v", clk.Now().Sub(start), d)
				}
				clk.Advance(500 * time.Millisecond)
			}
			// At 60 s exactly one has left the window (the one of t = 0).
			if d := allow(); !d.Allowed || d.Remaining != 0 || d.Reset != time.Minute {
				t.Fatalf("at 60 s: %+v", d)
			}
			if d := allow(); d.Allowed || d.RetryAfter != 500*time.Millisecond {
				t.Fatalf("second at 60 s: %+v", d)
			}
			// At 65 s the posts of 0.5 s … 5 s (10 of them) have left: 10 more, not 11.
			clk.Advance(5 * time.Second)
			for i := range 10 {
				if d := allow(); !d.Allowed || d.Remaining != 9-i {
					t.Fatalf("post %d at 65 s: %+v", i+1, d)
				}
			}
			if d := allow(); d.Allowed || d.RetryAfter != 500*time.Millisecond {
				t.Fatalf("11th at 65 s: %+v", d)
			}
			// Another key is not affected.
			if d, err := lim.AllowWindow(ctx, "gps:user:b", w); err != nil || !d.Allowed || d.Remaining != 29 {
				t.Fatalf("other key: %+v %v", d, err)
			}
			// After a full quiet window everything is back.
			clk.Advance(time.Minute)
			if d := allow(); !d.Allowed || d.Remaining != 29 || d.Reset != time.Minute {
				t.Fatalf("after a quiet minute: %+v", d)
			}
		})
	}
}

// TestWindowConcurrent: concurrent events never exceed the limit.
func TestWindowConcurrent(t *testing.T) {
	for name, lim := range limiters(t, clocktest.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			allowed := 0
			for range 100 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := lim.AllowWindow(context.Background(), "gps:key:k", cache.Window{Max: 30, Size: time.Minute})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						mu.Lock()
						allowed++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if allowed != 30 {
				t.Fatalf("%d of 100 concurrent events allowed, want 30", allowed)
			}
		})
	}
}

// TestWindowInvalid: a window without room or length is an error, not a limit.
func TestWindowInvalid(t *testing.T) {
	for name, lim := range limiters(t, clocktest.NewFake(time.Now())) {
		for _, w := range []cache.Window{{Max: 0, Size: time.Minute}, {Max: 1, Size: 0}} {
			if _, err := lim.AllowWindow(context.Background(), "k", w); err == nil {
				t.Fatalf("%s: %+v accepted", name, w)
			}
		}
	}
}

// TestWindowRedisClock: without an injected clock the Redis window keeps
// Redis's own time (TIME), which every instance shares.
func TestWindowRedisClock(t *testing.T) {
	r := testRedis(t)
	if r == nil {
		t.Skip("HMID_TEST_REDIS_URL not set")
	}
	lim := cache.NewRedisLimiter(r)
	w := cache.Window{Max: 3, Size: 300 * time.Millisecond}
	for i := range 3 {
		if d, err := lim.AllowWindow(context.Background(), "k", w); err != nil || !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("event %d: %+v %v", i+1, d, err)
		}
	}
	d, err := lim.AllowWindow(context.Background(), "k", w)
	if err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > w.Size {
		t.Fatalf("4th: %+v %v", d, err)
	}
	time.Sleep(d.RetryAfter + 20*time.Millisecond)
	if d, err := lim.AllowWindow(context.Background(), "k", w); err != nil || !d.Allowed {
		t.Fatalf("after the window slid: %+v %v", d, err)
	}
}

// BenchmarkWindowVsGCRA compares one sliding-window decision with one GCRA
// decision on the same store (both one round trip on Redis).
func BenchmarkWindowVsGCRA(b *testing.B) {
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	lims := map[string]cache.Limiter{"memory": cache.NewMemoryLimiter(clk.Now)}
	if r := testRedis(b); r != nil {
		lims["redis"] = cache.NewRedisLimiter(r)
	}
	ctx := context.Background()
	for name, lim := range lims {
		b.Run(name+"/window", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := lim.AllowWindow(ctx, "gps:key:"+strconv.Itoa(i%64), cache.Window{Max: 30, Size: time.Minute}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/gcra", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := cache.Allow(ctx, lim, "gps:key:"+strconv.Itoa(i%64), cache.PerPeriod(30, time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
