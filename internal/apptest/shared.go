package apptest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"hmid/internal/app"
	"hmid/internal/clock/clocktest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
)

// NewOnURL starts another hmid instance on the database of eng, sharing the
// Redis key prefix cachePrefix, so that several instances of one deployment
// (same PostgreSQL, same Redis) can be tested together. The instance has its
// own fake clock, starting at Start. The system key printed at first start
// exists only on the instance that created it: copy SystemKey across.
func NewOnURL(t *testing.T, eng dbtest.Engine, cachePrefix string, opts ...Option) *Env {
	t.Helper()
	e := &Env{T: t, Engine: eng, Clock: clocktest.NewFake(Start)}
	e.HTTP = httptest.NewUnstartedServer(nil)
	e.URL = "http://" + e.HTTP.Listener.Addr().String()
	cfg := config.Config{
		Addr:        ":0",
		PublicURL:   e.URL,
		DatabaseURL: eng.URL,
		RedisURL:    eng.RedisURL,
		SecretKey:   "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		MailFrom:    "hmid@localhost",
		LogLevel:    "error",
	}
	for _, o := range opts {
		o(&cfg)
	}
	// A new SQLite file starts as a copy of the schema migrated once per
	// process, which app.New then finds up to date; it still seeds it, so
	// the instance is what a first start on an empty file makes.
	dbtest.Premigrate(t, cfg.DatabaseURL)
	srv, err := app.New(context.Background(), cfg, app.Options{
		Clock:       e.Clock,
		Logger:      slog.New(slog.NewJSONHandler(io.Discard, nil)),
		CachePrefix: cachePrefix,
	})
	if err != nil {
		t.Fatalf("start hmid: %v", err)
	}
	e.Server = srv
	e.SystemKey = srv.SystemKey
	e.HTTP.Config.Handler = srv
	e.HTTP.Start()
	e.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(func() {
		e.HTTP.Close()
		srv.Close()
	})
	e.router = contractRouter(t, e.URL)
	return e
}

// NewPair starts two instances on one fresh PostgreSQL database, sharing the
// Redis at redisURL ("" for none: the authentication epoch then lives in the
// database). The first holds the system key that both then use. It skips the
// test without HMID_TEST_POSTGRES_URL.
func NewPair(t *testing.T, redisURL string, opts ...Option) (a, b *Env) {
	t.Helper()
	eng := dbtest.Engine{Name: "postgres", URL: dbtest.PostgresMigrated(t), RedisURL: redisURL}
	prefix := dbtest.Key()
	a = NewOnURL(t, eng, prefix, opts...)
	b = NewOnURL(t, eng, prefix, opts...)
	b.SystemKey = a.SystemKey
	return a, b
}

// NewRedisPair is NewPair on the Redis of HMID_TEST_REDIS_URL, for what only
// Redis carries from one instance to the other (the real-time channel, the
// chat bot's requests). It skips the test unless both HMID_TEST_POSTGRES_URL
// and HMID_TEST_REDIS_URL are set.
func NewRedisPair(t *testing.T, opts ...Option) (a, b *Env) {
	t.Helper()
	if dbtest.PostgresURL() == "" || dbtest.RedisURL() == "" {
		t.Skip("needs HMID_TEST_POSTGRES_URL and HMID_TEST_REDIS_URL")
	}
	return NewPair(t, dbtest.RedisURL(), opts...)
}
