package dbtest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"hmid/internal/db"
)

// TestTemplateMatchesMigration holds a copy of the template to what
// migrating an empty database makes, on every engine: same tables,
// columns, indexes, constraints, triggers, functions and applied versions.
func TestTemplateMatchesMigration(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		fresh := Engine{Name: "sqlite", URL: SQLite(t)}
		migrateEmpty(t, fresh.URL)
		copied := Engine{Name: "sqlite", URL: SQLiteMigrated(t)}
		sameSchema(t, schemaOf(t, fresh), schemaOf(t, copied))
	})
	if PostgresURL() == "" {
		return
	}
	t.Run("postgres", func(t *testing.T) {
		fresh := Engine{Name: "postgres", URL: Postgres(t)}
		migrateEmpty(t, fresh.URL)
		copied := Engine{Name: "postgres", URL: PostgresMigrated(t)}
		sameSchema(t, schemaOf(t, fresh), schemaOf(t, copied))
	})
}

// sameSchema fails the test unless the schema of a copy, got, is that of a
// migration, want; it names what only one of them has.
func sameSchema(t *testing.T, want, got []string) {
	t.Helper()
	if len(want) < 50 {
		t.Fatalf("a migration made only %d schema objects: %q", len(want), want)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("the template's copy lacks %q", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("the template's copy has %q, which a migration does not make", g)
		}
	}
}

// migrateEmpty migrates the database at url the way app.New does.
func migrateEmpty(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	d, err := db.OpenWith(ctx, url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
}

// schemaOf lists the engine's schema objects and applied migrations, one
// string each, sorted, with schema names left out.
func schemaOf(t *testing.T, e Engine) []string {
	t.Helper()
	ctx := context.Background()
	d, err := db.OpenWith(ctx, e.URL, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var q string
	if e.Name == "sqlite" {
		q = `SELECT type || ' ' || name || ' ' || tbl_name || ' ' || COALESCE(sql, '') FROM sqlite_master
			UNION ALL SELECT 'version ' || version FROM schema_migrations`
	} else {
		q = `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || COALESCE(column_default, '')
				FROM information_schema.columns WHERE table_schema = current_schema()
			UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
			UNION ALL SELECT 'constraint ' || conrelid::regclass::text || ' ' || pg_get_constraintdef(oid)
				FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
			UNION ALL SELECT 'trigger ' || event_object_table || ' ' || trigger_name || ' ' || action_statement
				FROM information_schema.triggers WHERE trigger_schema = current_schema()
			UNION ALL SELECT 'function ' || proname || ' ' || prosrc FROM pg_proc p WHERE pronamespace = current_schema()::regnamespace
				-- an extension's own functions live wherever it was first
				-- created (in the shared test database, an earlier schema)
				AND NOT EXISTS (SELECT 1 FROM pg_depend WHERE objid = p.oid AND deptype = 'e')
			UNION ALL SELECT 'version ' || version FROM schema_migrations`
	}
	rows, err := d.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	schema := ""
	if u := strings.Split(e.URL, "search_path="); len(u) == 2 {
		schema, _, _ = strings.Cut(u[1], "&")
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if schema != "" {
			s = strings.ReplaceAll(s, schema+".", "")
		}
		out = append(out, strings.ReplaceAll(s, "public.", ""))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestPremigrateLeavesExistingAlone: a database that exists is the
// caller's, and any other URL than a SQLite file is left to migrate itself.
func TestPremigrateLeavesExistingAlone(t *testing.T) {
	u := SQLite(t)
	path := strings.TrimPrefix(u, "sqlite:")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if Premigrate(t, u) {
		t.Fatal("Premigrate overwrote an existing file")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("existing file changed: %v %v", fi, err)
	}
	if Premigrate(t, "memory") || Premigrate(t, "postgres://x/y") {
		t.Fatal("Premigrate acted on a URL that is not a SQLite file")
	}
	if !Premigrate(t, SQLite(t)) {
		t.Fatal("Premigrate left a new file empty")
	}
}

// TestSQLitePathWithHash: the URLs of subtests that share a name ("x#01")
// are files of their own, not one file cut off at the "#".
func TestSQLitePathWithHash(t *testing.T) {
	var urls []string
	for range 2 {
		t.Run("x", func(t *testing.T) {
			u := SQLite(t)
			if strings.ContainsAny(u, "?#") {
				t.Errorf("SQLite URL %s holds a character that ends a file: URI's path", u)
			}
			urls = append(urls, u)
		})
	}
	if len(urls) == 2 && urls[0] == urls[1] {
		t.Fatalf("two subtests got one file: %s", urls[0])
	}
}

// TestPGToken reads the maker's token from the names of the databases this
// package makes, and from no other.
func TestPGToken(t *testing.T) {
	for name, want := range map[string]string{
		"hmidttpl_0123456789ab":  "0123456789ab",
		"hmidt_0123456789ab_17":  "0123456789ab",
		"hmidt_0123456789ab":     "0123456789ab",
		"hmidt_0123456789a_1":    "",
		"hmidt_0123456789aZ_1":   "",
		"test":                   "",
		"hmid_0123456789ab_1":    "",
		"hmidttpl_0123456789abc": "",
	} {
		if got := pgToken(name); got != want {
			t.Errorf("pgToken(%q) = %q, want %q", name, got, want)
		}
	}
}
