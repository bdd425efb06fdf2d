package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"hmid/internal/cache"
	"hmid/internal/dbtest"
	"hmid/internal/telemetry"
)

// TestRedisSpans checks that a Redis client made while tracing is on gives
// each command a child span named by the command, without keys or values,
// and that a missing key is not a failure.
func TestRedisSpans(t *testing.T) {
	u := dbtest.RedisURL()
	if u == "" {
		t.Skip("HMID_TEST_REDIS_URL is not set")
	}
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
