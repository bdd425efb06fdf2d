package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies every embedded migration not applied yet, in file-name order,
// each in its own transaction. It is idempotent, and safe when several instances
// start at once on PostgreSQL: they serialize on an advisory lock.
func (d *DB) Migrate(ctx context.Context) error {
	if d.Flavor == Postgres {
		conn, err := d.w.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		// Waiting for another instance's migration, and a migration itself,
		// may take longer than the statement_timeout that bounds requests.
		if _, err := conn.ExecContext(ctx, "SET statement_timeout = 0"); err != nil {
			return err
		}
		defer conn.ExecContext(context.Background(), "RESET statement_timeout")
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(hashtext('hmid.migrate'))"); err != nil {
			return fmt.Errorf("db: migration lock: %w", err)
		}
		defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(hashtext('hmid.migrate'))")
		return migrateOn(ctx, conn, d.Flavor)
	}
	conn, err := d.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return migrateOn(ctx, conn, d.Flavor)
}

// migrateOn applies the migrations of engine f on conn. A migration is a file
// NNNN_name.sql for both engines, or a pair NNNN_name.postgres.sql and
// NNNN_name.sqlite.sql where the engines need different SQL; the pair is one
// version, NNNN_name, of which each engine applies its own file.
func migrateOn(ctx context.Context, conn *sql.Conn, f Flavor) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("db: create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		if v, engine, ok := strings.Cut(version, "."); ok {
			if Flavor(engine) != f {
				continue
			}
			version = v
		}
		var n int
		if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = $1`, version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, stmt := range splitStatements(string(body)) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				tx.Rollback()
				return fmt.Errorf("db: migration %s: %w\n%s", version, err, stmt)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, version, TS(time.Now())); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("db: migration %s: %w", version, err)
		}
	}
	return nil
}

// splitStatements splits a migration file on semicolons that end a line.
// Migrations hold plain DDL, so no statement contains such a semicolon inside
// a string literal; "--" comment lines are dropped.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
