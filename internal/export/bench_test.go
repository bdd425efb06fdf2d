package export_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock/clocktest"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/export"
)

// discard is a ResponseWriter that drops the body, so the benchmark measures
// the export rather than a buffer holding it.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkExport measures GET /v1/user/export for a user with 10,000 audit
// events and 100 active sessions: time per export and how far the heap grows
// above its level before the exports. Targets: below 2 s and 64 MiB.
func BenchmarkExport(b *testing.B) {
	engines := []struct{ name, url string }{{"sqlite", dbtest.SQLite(b)}}
	if dbtest.PostgresURL() != "" {
		engines = append(engines, struct{ name, url string }{"postgres", dbtest.Postgres(b)})
	}
	for _, eng := range engines {
		ctx := context.Background()
		d := dbtest.Engine{URL: eng.url}.Open(b)
		clk := clocktest.NewFake(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
		w := &audit.Writer{DB: d, Clock: clk}
		const userID = "00000000-0000-4000-8000-000000000001"
		now := db.TS(clk.Now())
		err := d.Tx(ctx, func(tx *db.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO users (id, username, email, preferred_locale, created_at, updated_at) VALUES ($1, 'bench', 'bench@example.test', 'de', $2, $2)`, userID, now); err != nil {
				return err
			}
			for i := range 100 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, user_id, token_hash, ip_address, user_agent, browser_name, os_name, provider, auth_time, created_at, expires_at, last_activity_at)
					VALUES ($1, $2, $3, '203.0.113.5', 'Mozilla/5.0', 'Firefox', 'Linux', 'email', $4, $4, $5, $4)`,
					fmt.Sprintf("s-%03d", i), userID, fmt.Sprintf("hash-%03d", i), now, now+int64(30*24*time.Hour/time.Microsecond)); err != nil {
					return err
				}
			}
			for i := range 10_000 {
				if _, err := w.Record(ctx, tx, audit.Event{UserID: userID, EventType: audit.Login, ResourceType: "session", IPAddress: "203.0.113.5",
					Metadata: map[string]any{"n": i}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		h := &export.Handler{DB: d, Clock: clk, Audit: w, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		b.Run(eng.name, func(b *testing.B) {
			b.ReportAllocs()
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base, peak := ms.HeapAlloc, ms.HeapAlloc
			for b.Loop() {
				r := httptest.NewRequest("GET", "/v1/user/export", nil)
				r = r.WithContext(authn.WithPrincipal(r.Context(), authn.NewPrincipal(authn.Principal{Kind: authn.KindSession, UserID: userID}, nil)))
				out := &discard{h: http.Header{}}
				h.Export(out, r)
				if out.h.Get("Content-Type") != "application/zip" {
					b.Fatalf("export failed: %v", out.h)
				}
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
			b.ReportMetric(float64(peak-base)/(1<<20), "heap-growth-MiB")
		})
	}
}
