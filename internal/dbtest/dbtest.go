// Package dbtest runs a test once per database engine: always on a fresh
// SQLite file, and on a fresh PostgreSQL schema when HMID_TEST_POSTGRES_URL
// is set. Redis-backed variants use HMID_TEST_REDIS_URL.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"hmid/internal/db"
)

// Engine is one database to run a test on.
type Engine struct {
	Name     string // "sqlite" or "postgres"
	URL      string // HMID_DATABASE_URL form
	RedisURL string // set on the postgres engine when HMID_TEST_REDIS_URL is set
}

// PostgresURL returns HMID_TEST_POSTGRES_URL.
func PostgresURL() string { return os.Getenv("HMID_TEST_POSTGRES_URL") }

// RedisURL returns HMID_TEST_REDIS_URL.
func RedisURL() string { return os.Getenv("HMID_TEST_REDIS_URL") }

// Each runs fn as a subtest per engine, each with its own empty database.
func Each(t *testing.T, fn func(t *testing.T, e Engine)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		fn(t, Engine{Name: "sqlite", URL: SQLite(t)})
	})
	if PostgresURL() != "" {
		t.Run("postgres", func(t *testing.T) {
			fn(t, Engine{Name: "postgres", URL: Postgres(t), RedisURL: RedisURL()})
		})
	}
}

// Open opens and migrates the engine's database, closing it when the test
// and its cleanups registered later have finished.
func (e Engine) Open(t testing.TB) *db.DB {
	t.Helper()
	ctx := context.Background()
	d, err := db.OpenWith(ctx, e.URL, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

// SQLite returns the URL of a fresh SQLite database file removed after the test.
func SQLite(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "hmid.db")
}

// Postgres returns the URL of a fresh PostgreSQL schema dropped after the
// test; it skips the test when HMID_TEST_POSTGRES_URL is unset.
func Postgres(t testing.TB) string {
	base := PostgresURL()
	if base == "" {
		t.Skip("HMID_TEST_POSTGRES_URL is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(context.Background(), `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("postgres: create schema: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer a.Close()
		_, _ = a.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("HMID_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Key returns a random key prefix for isolating a test's Redis keys.
func Key() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "hmidtest:" + hex.EncodeToString(b[:]) + ":"
}
