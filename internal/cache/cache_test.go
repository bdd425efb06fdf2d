package cache_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
	"hmid/internal/dbtest"
)

// testRedis connects to the Redis of HMID_TEST_REDIS_URL under a key
// prefix of its own, closed when tb ends; nil when the variable is unset.
func testRedis(tb testing.TB) *cache.Redis {
	u := dbtest.RedisURL()
	if u == "" {
		return nil
	}
	r, err := cache.NewRedis(context.Background(), u, dbtest.Key())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

func caches(t *testing.T, clk *clocktest.Fake) map[string]cache.Cache {
	out := map[string]cache.Cache{"memory": cache.NewMemory(clk.Now)}
	if r := testRedis(t); r != nil {
		out["redis"] = r
	}
	return out
}

func TestCacheBasics(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for name, c := range caches(t, clk) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if _, err := c.Get(ctx, "a"); !errors.Is(err, cache.ErrMiss) {
				t.Fatalf("miss: %v", err)
			}
			if err := c.Set(ctx, "a", []byte("1"), time.Minute); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(ctx, "a"); err != nil || string(v) != "1" {
				t.Fatalf("get = %q, %v", v, err)
			}
			ok, err := c.SetNX(ctx, "a", []byte("2"), time.Minute)
			if err != nil || ok {
				t.Fatalf("SetNX on present key = %v, %v", ok, err)
			}
			if err := c.Delete(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if ok, _ := c.SetNX(ctx, "a", []byte("2"), time.Minute); !ok {
				t.Fatal("SetNX on absent key refused")
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestGetManySetMany(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for name, c := range caches(t, clk) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if err := c.SetMany(ctx, map[string][]byte{"m1": []byte("one"), "m3": []byte("three")}, time.Minute); err != nil {
				t.Fatal(err)
			}
			got, err := c.GetMany(ctx, []string{"m1", "m2", "m3"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || string(got[0]) != "one" || got[1] != nil || string(got[2]) != "three" {
				t.Fatalf("GetMany = %q", got)
			}
			if v, err := c.Get(ctx, "m3"); err != nil || string(v) != "three" {
				t.Fatalf("Get after SetMany = %q, %v", v, err)
			}
			if got, err := c.GetMany(ctx, nil); err != nil || len(got) != 0 {
				t.Fatalf("GetMany(nil) = %q, %v", got, err)
			}
		})
	}
}

func TestIncrIsAtomic(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for name, c := range caches(t, clk) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := c.Incr(context.Background(), "n", 1, time.Minute); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if n, _ := c.Incr(context.Background(), "n", 0, time.Minute); n != 50 {
				t.Fatalf("n = %d", n)
			}
		})
	}
}
