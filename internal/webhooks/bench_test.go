package webhooks_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"hmid/internal/audit"
	"hmid/internal/clock/clocktest"
	"hmid/internal/dbtest"
)

// benchEngines are the engines a benchmark runs on: SQLite, and PostgreSQL
// when HMID_TEST_POSTGRES_URL is set.
func benchEngines(b *testing.B, fn func(b *testing.B, eng dbtest.Engine)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(b)}) })
	if dbtest.PostgresURL() != "" {
		b.Run("postgres", func(b *testing.B) { fn(b, dbtest.Engine{Name: "postgres", URL: dbtest.Postgres(b)}) })
	}
}

// BenchmarkAuditWrite measures the audit write path (audit.Writer.Record in
// a transaction of its own) with no endpoint and with 10 enabled endpoints
// subscribed to the event's type, reporting the 99th percentile besides the
// mean. Nothing is sent: delivery happens after commit, in the worker, so
// what the request pays is the queueing.
//
//	go test ./internal/webhooks -run '^$' -bench AuditWrite -benchtime 2000x
func BenchmarkAuditWrite(b *testing.B) {
	benchEngines(b, func(b *testing.B, eng dbtest.Engine) {
		for _, subscribers := range []int{0, 10} {
			b.Run(map[int]string{0: "0-endpoints", 10: "10-endpoints"}[subscribers], func(b *testing.B) {
				clk := clocktest.NewFake(start)
				in := newInstance(b, eng.Open(b), clk, loopback)
				for range subscribers {
					in.endpoint(b, "https://receiver.example/hook", audit.Login)
				}
				ctx := context.Background()
				ev := audit.Event{EventType: audit.Login, UserAgent: "bench", IPAddress: "203.0.113.9", Metadata: map[string]any{"method": "password"}}
				// The first write after a change loads the subscriptions.
				if _, err := in.audit.Record(ctx, in.d, ev); err != nil {
					b.Fatal(err)
				}
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					if _, err := in.audit.Record(ctx, in.d, ev); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(t0))
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
			})
		}
	})
}

// BenchmarkDeliveries measures how many deliveries per second one instance's
// worker makes to a local receiver that answers at once: b.N messages are
// queued first, then passes run until all are delivered.
//
//	go test ./internal/webhooks -run '^$' -bench Deliveries -benchtime 2000x
func BenchmarkDeliveries(b *testing.B) {
	benchEngines(b, func(b *testing.B, eng dbtest.Engine) {
		clk := clocktest.NewFake(start)
		in := newInstance(b, eng.Open(b), clk, loopback)
		rc := newReceiver(b, 0)
		in.endpoint(b, rc.URL, audit.Login)
		ctx := context.Background()
		for range b.N {
			in.record(b, audit.Login)
		}
		b.ResetTimer()
		t0 := time.Now()
		sent := 0
		for sent < b.N {
			n, err := in.worker.RunOnce(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sent += n
		}
		b.StopTimer()
		b.ReportMetric(float64(sent)/time.Since(t0).Seconds(), "deliveries/s")
	})
}
