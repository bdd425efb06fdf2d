// Package dbtest runs a test once per database engine: always on a fresh
// SQLite file, and on a fresh PostgreSQL schema or database when
// HMID_TEST_POSTGRES_URL is set. Redis-backed variants use
// HMID_TEST_REDIS_URL. A test that wants a migrated database gets a copy of
// one migrated once per process (EachMigrated, Premigrate), since migrating
// is what a test's database costs most.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
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

// EachMigrated is Each with every database already migrated: each
// subtest's own copy of the template migrated once per process (see
// Premigrate and PostgresMigrated), which costs a file copy instead of a
// migration.
func EachMigrated(t *testing.T, fn func(t *testing.T, e Engine)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		fn(t, Engine{Name: "sqlite", URL: SQLiteMigrated(t)})
	})
	if PostgresURL() != "" {
		t.Run("postgres", func(t *testing.T) {
			fn(t, Engine{Name: "postgres", URL: PostgresMigrated(t), RedisURL: RedisURL()})
		})
	}
}

// Open opens and migrates the engine's database, closing it when the test
// and its cleanups registered later have finished. A SQLite file that does
// not exist yet starts as a copy of the migrated template (Premigrate).
func (e Engine) Open(t testing.TB) *db.DB {
	t.Helper()
	ctx := context.Background()
	Premigrate(t, e.URL)
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
	dir := t.TempDir()
	if strings.ContainsAny(dir, "?#") {
		// The driver reads the URL as a file: URI, whose path ends at "?"
		// or "#": a subtest named twice ("x#01") would otherwise open
		// a shared file beside the temporary directory.
		d, err := os.MkdirTemp("", "hmid-sqlite-")
		if err != nil {
			t.Fatalf("dbtest: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	return "sqlite:" + filepath.Join(dir, "hmid.db")
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
