package cache_test

// The Redis client's own behaviour: bounded when Redis freezes, traced
// when tracing is on. Both need HMID_TEST_REDIS_URL.

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"hmid/internal/apperr"
	"hmid/internal/cache"
	"hmid/internal/dbtest"
	"hmid/internal/faultproxy"
	"hmid/internal/telemetry"
)

// needRedis is HMID_TEST_REDIS_URL; the test is skipped without it.
func needRedis(t *testing.T) string {
	t.Helper()
	u := dbtest.RedisURL()
	if u == "" {
		t.Skip("HMID_TEST_REDIS_URL is not set")
	}
	return u
}

// TestFrozenRedisIsBounded freezes Redis behind a proxy and expects a
// command to fail as unavailable within the timeout (in three quarters of
// it, not the sum of go-redis's pool, dial, read timeouts and retries), the
// next ones at once, and commands to work again soon after Redis answers,
// without a new client.
func TestFrozenRedisIsBounded(t *testing.T) {
	u := needRedis(t)
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

// TestRedisSpans checks that a Redis client made while tracing is on gives
// each command a child span named by the command, without keys or values,
// and that a missing key is not a failure.
func TestRedisSpans(t *testing.T) {
	u := needRedis(t)
	exp := tracetest.NewInMemoryExporter()
	tr := telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	defer tr.Shutdown(context.Background())
	r, err := cache.NewRedis(context.Background(), u, dbtest.Key())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	exp.Reset() // the connect's PING has no parent; start afresh

	ctx, parent := telemetry.StartClient(context.Background(), "request")
	if err := r.Set(ctx, "trace-key", []byte("secret-value"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Get(ctx, "trace-absent"); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("get: %q %v", v, err)
	}
	if err := r.SetMany(ctx, map[string][]byte{"trace-m": []byte("x")}, time.Minute); err != nil {
		t.Fatal(err)
	}
	parent.End()

	var names []string
	for _, s := range exp.GetSpans() {
		if s.Name == "request" {
			continue
		}
		names = append(names, s.Name)
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the caller's span", s.Name)
		}
		if s.Status.Code == codes.Error {
			t.Errorf("%s failed: %v", s.Name, s.Status)
		}
		for _, kv := range s.Attributes {
			if v := kv.Value.Emit(); v == "secret-value" || v == dbtest.Key()+"trace-key" {
				t.Errorf("%s records %s", s.Name, kv.Key)
			}
		}
	}
	if len(names) != 3 || names[0] != "SET" || names[1] != "GET" {
		t.Fatalf("spans %v, want SET, GET and the SetMany round trip", names)
	}
}
