package apptest

import (
	"context"
	"fmt"
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
	e := newEnv(eng)
	cfg := baseConfig(eng, e.URL)
	for _, o := range opts {
		o(&cfg)
	}
	// A new SQLite file starts as a copy of the schema migrated once per
	// process, which app.New then finds up to date; it still seeds it, so
	// the instance is what a first start on an empty file makes.
	dbtest.Premigrate(t, cfg.DatabaseURL)
	if err := e.start(cfg, cachePrefix); err != nil {
		t.Fatal(err)
	}
	e.T = t
	t.Cleanup(e.stop)
	return e
}

// newEnv makes the Env of an instance on eng with its listener, not yet
// serving: the options see its address as PublicURL.
func newEnv(eng dbtest.Engine) *Env {
	e := &Env{Engine: eng, Clock: clocktest.NewFake(Start)}
	e.HTTP = httptest.NewUnstartedServer(nil)
	e.URL = "http://" + e.HTTP.Listener.Addr().String()
	return e
}

// baseConfig is the configuration of every test instance on eng at
// publicURL before the test's options: a fixed secret key (so no key file
// is written), the mail outbox, and errors only, into a discarded log.
func baseConfig(eng dbtest.Engine, publicURL string) config.Config {
	return config.Config{
		Addr:        ":0",
		PublicURL:   publicURL,
		DatabaseURL: eng.URL,
		RedisURL:    eng.RedisURL,
		SecretKey:   "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		MailFrom:    "hmid@localhost",
		LogLevel:    "error",
	}
}

// start starts hmid with cfg and serves it on e's listener; e.stop stops
// it. On an error the listener is closed.
func (e *Env) start(cfg config.Config, cachePrefix string) error {
	srv, err := app.New(context.Background(), cfg, app.Options{
		Clock:       e.Clock,
		Logger:      slog.New(slog.NewJSONHandler(io.Discard, nil)),
		CachePrefix: cachePrefix,
	})
	if err != nil {
		e.HTTP.Listener.Close()
		return fmt.Errorf("start hmid: %w", err)
	}
	e.Server = srv
	e.SystemKey = srv.SystemKey
	e.HTTP.Config.Handler = srv
	e.HTTP.Start()
	e.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if e.router, err = contractRouter(e.URL); err != nil {
		e.stop()
		return err
	}
	return nil
}

// stop closes the listener and the server.
func (e *Env) stop() {
	e.HTTP.Close()
	e.Server.Close()
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
