package db_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"hmid/internal/db"
	"hmid/internal/telemetry"
)

// TestStatementSpans checks that, with tracing on, every statement run
// through DB and Tx is a child span of the caller's span carrying the
// statement's text (placeholders, no values) and its outcome.
func TestStatementSpans(t *testing.T) {
	eachDB(t, func(t *testing.T, _ context.Context, d *db.DB) {
		exp := tracetest.NewInMemoryExporter()
		tr := telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
		defer tr.Shutdown(context.Background())

		ctx, parent := telemetry.StartClient(context.Background(), "request")
		const (
			insert  = `INSERT INTO settings (key, value, created_at, updated_at) VALUES ($1, $2, 1, 1)`
			missing = `SELECT value FROM settings WHERE key = $1`
			list    = `SELECT key FROM settings WHERE key = $1`
			broken  = `SELECT nope FROM settings`
		)
		if _, err := d.ExecContext(ctx, insert, "trace-a", "secret-value"); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := d.QueryRowContext(ctx, missing, "absent").Scan(&v); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("scan: %v", err)
		}
		rows, err := d.QueryContext(ctx, list, "trace-a")
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if err := d.Tx(ctx, func(tx *db.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE settings SET value = $1 WHERE key = $2`, "other-secret", "trace-a")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.QueryContext(ctx, broken); err == nil {
			t.Fatal("a broken statement ran")
		}
		parent.End()

		system := map[db.Flavor]string{db.SQLite: "sqlite", db.Postgres: "postgresql"}[d.Flavor]
		want := []struct {
			name, text string
			failed     bool
		}{
			{"INSERT", insert, false}, {"SELECT", missing, false}, {"SELECT", list, false},
			{"UPDATE", `UPDATE settings SET value = $1 WHERE key = $2`, false}, {"SELECT", broken, true},
		}
		var got []sdktrace.ReadOnlySpan
		for _, s := range exp.GetSpans().Snapshots() {
			if s.Name() != "request" {
				got = append(got, s)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d statement spans, want %d", len(got), len(want))
		}
		for i, w := range want {
			s := got[i]
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.Emit()
				if kv.Value.Emit() == "secret-value" || kv.Value.Emit() == "other-secret" {
					t.Errorf("span %d carries a bound value", i)
				}
			}
			if s.Name() != w.name || attrs["db.query.text"] != w.text || attrs["db.system.name"] != system {
				t.Errorf("span %d: %q %v, want %q %q", i, s.Name(), attrs, w.name, w.text)
			}
			if s.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("span %d is not a child of the caller's span", i)
			}
			if (s.Status().Code == codes.Error) != w.failed {
				t.Errorf("span %d status %v, failed want %v", i, s.Status(), w.failed)
			}
		}
	})
}
