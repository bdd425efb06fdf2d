package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/cache"
	"hmid/internal/dbtest"
	"hmid/internal/faultproxy"
)

// TestFrozenRedisIsBounded freezes Redis behind a proxy and expects a
// command to fail as unavailable within the timeout (in three quarters of
// it, not the sum of go-redis's pool, dial, read timeouts and retries), the
// next ones at once, and commands to work again soon after Redis answers,
// without a new client.
func TestFrozenRedisIsBounded(t *testing.T) {
	u := dbtest.RedisURL()
	if u == "" {
		t.Skip("HMID_TEST_REDIS_URL is not set")
	}
	px := faultproxy.New(t, faultproxy.HostOf(t, u))
	const bound = 500 * time.Millisecond
	r, err := cache.NewRedisWith(context.Background(), px.Via(t, u), dbtest.Key(), cache.RedisOptions{Timeout: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if err := r.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}

	px.Freeze()
	for i, within := range []time.Duration{bound, 50 * time.Millisecond} {
		start := time.Now()
		_, err := r.Get(ctx, "k")
		took := time.Since(start)
		t.Logf("command %d on a frozen Redis: %v after %v", i+1, err, took)
		if err == nil || !apperr.IsUnavailable(err) {
			t.Fatalf("command %d on a frozen Redis: %v, want unavailable", i+1, err)
		}
		if took > within {
			t.Fatalf("command %d on a frozen Redis took %v, want under %v", i+1, took, within)
		}
	}
	if err := r.Ping(ctx); !apperr.IsUnavailable(err) {
		t.Fatalf("Ping on a frozen Redis: %v", err)
	}

	px.Thaw()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := r.Get(ctx, "k")
		if err == nil && string(v) == "v" {
			break
		}
		if time.Now().After(deadline) || (err != nil && !errors.Is(err, cache.ErrNotAnswering) && !apperr.IsUnavailable(err)) {
			t.Fatalf("after Redis thawed: %q, %v", v, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A caller's own shorter deadline is its own: running out of it does
	// not mark Redis as not answering.
	short, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-short.Done()
	_, _ = r.Get(short, "k")
	if _, err := r.Get(ctx, "k"); err != nil {
		t.Fatalf("after a caller's own deadline passed: %v", err)
	}

	// A stopped Redis (connections cut and refused) is bounded the same way.
	px.Close()
	start := time.Now()
	_, err = r.Get(ctx, "k")
	t.Logf("a command on a stopped Redis: %v after %v", err, time.Since(start))
	if !apperr.IsUnavailable(err) || time.Since(start) > bound {
		t.Fatalf("a command on a stopped Redis: %v after %v, want unavailable within %v", err, time.Since(start), bound)
	}
}
