package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"hmid/internal/db"
)

// Migrating is most of what starting hmid costs a test: with the race
// detector the pure-Go SQLite engine spends seconds parsing the schema after
// every DDL statement. So each test process migrates a database once, the
// template, and a test that wants a migrated database gets a copy of it: a
// file copy on SQLite, CREATE DATABASE … TEMPLATE on PostgreSQL. The copy is
// the test's own, exactly as Migrate would have left an empty database.

// sqliteTemplate holds the bytes of a migrated SQLite database, made once
// per process.
var sqliteTemplate struct {
	once sync.Once
	data []byte
	err  error
}

// migratedSQLite returns the bytes of a freshly migrated SQLite database file.
func migratedSQLite() ([]byte, error) {
	sqliteTemplate.once.Do(func() {
		sqliteTemplate.data, sqliteTemplate.err = buildSQLiteTemplate()
	})
	return sqliteTemplate.data, sqliteTemplate.err
}

// buildSQLiteTemplate migrates a database in a directory of its own and
// returns a consistent snapshot of it. VACUUM INTO writes one self-contained
// file, with whatever the write-ahead log still held folded in, so a copy of
// its bytes is a complete database and needs no -wal or -shm file beside it.
func buildSQLiteTemplate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "hmid-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	src := filepath.Join(dir, "migrate.db")
	d, err := db.OpenWith(ctx, "sqlite:"+src, db.Options{})
	if err != nil {
		return nil, err
	}
	err = d.Migrate(ctx)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("dbtest: migrate the SQLite template: %w", err)
	}
	// A plain connection: VACUUM cannot run inside the transactions that
	// db.DB's group commit wraps writes in.
	out := filepath.Join(dir, "template.db")
	c, err := sql.Open("sqlite", "file:"+src)
	if err != nil {
		return nil, err
	}
	_, err = c.ExecContext(ctx, `VACUUM INTO '`+strings.ReplaceAll(out, "'", "''")+`'`)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("dbtest: snapshot the SQLite template: %w", err)
	}
	return os.ReadFile(out)
}

// sqlitePath returns the file of a sqlite: URL, or "" for any other URL.
func sqlitePath(url string) string {
	if !strings.HasPrefix(url, "sqlite:") {
		return ""
	}
	return strings.TrimPrefix(url, "sqlite:")
}

// Premigrate gives the database of a sqlite: URL that does not exist yet
// the migrated schema, by copying the template made once per process, so
// that migrating it afterwards (db.Migrate, app.New) finds nothing to do.
// Any other URL, and a file that exists, is left alone: the caller's own
// migration then runs as before. It returns whether it copied.
func Premigrate(t testing.TB, url string) bool {
	t.Helper()
	path := sqlitePath(url)
	if path == "" {
		return false
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		// A directory that is not there yet is the opener's to create.
		return false
	}
	data, err := migratedSQLite()
	if err != nil {
		t.Fatal(err)
	}
	// Written beside and linked into place, which fails when the file
	// exists: should two instances start on one new file at once, neither
	// opens a half-written copy, and the second leaves the first's alone.
	f, err := os.CreateTemp(filepath.Dir(path), ".template-*")
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("dbtest: copy the SQLite template: %v", err)
	}
	if err := os.Link(f.Name(), path); errors.Is(err, os.ErrExist) {
		return false
	} else if err != nil {
		t.Fatalf("dbtest: copy the SQLite template: %v", err)
	}
	return true
}

// SQLiteMigrated returns the URL of a new SQLite database file, a copy of
// the migrated template, removed after the test.
func SQLiteMigrated(t testing.TB) string {
	t.Helper()
	u := SQLite(t)
	Premigrate(t, u)
	return u
}
